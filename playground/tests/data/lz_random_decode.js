// Regenerates lz_random_decode.json: node lz_random_decode.js > lz_random_decode.json
// Random strings over the link alphabet, and what lz-string 1.5.0 decodes them to.
const LZString = require("lz-string");
const A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-$";
let seed = 12345;
const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const out = [];
for (let i = 0; i < 1000; i++) {
  const len = 1 + Math.floor(rnd() * 40);
  let s = "";
  for (let j = 0; j < len; j++) s += A[Math.floor(rnd() * 64)];
  // The output as UTF-16 code units (it may hold lone surrogates), null, or "throw".
  let d;
  try {
    const r = LZString.decompressFromEncodedURIComponent(s);
    d = r === null ? null : Array.from({ length: r.length }, (_, k) => r.charCodeAt(k));
  } catch (e) {
    d = "throw";
  }
  out.push([s, d]);
}
console.log(JSON.stringify(out));
