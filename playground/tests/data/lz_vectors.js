// Regenerates lz_vectors.json: lz-string 1.5.0's compressToEncodedURIComponent outputs.
//   npm install lz-string@1.5.0 && node lz_vectors.js > lz_vectors.json
const LZString = require("lz-string");
const inputs = [
  "",
  "a",
  "ab",
  "hello world",
  "hello hello hello hello hello",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "é ☃ \u{1d11e} 日本語 emoji 🙂 & = # ? / + % $",
  "{\"grammar\":\"00000|1[01]{4}\",\"grammar_kind\":\"regex\",\"prompt\":\"\",\"chat\":false,\"method\":\"cars\",\"n\":200}",
  "root ::= \"00000\" | \"1\" a2\na2   ::= (\"0\" | \"1\") a3\n",
  "<script>alert(1)</script>",
  Array.from({ length: 300 }, (_, i) => String.fromCharCode(32 + ((i * 7919) % 95))).join(""),
  Array.from({ length: 2000 }, (_, i) => "tok" + (i % 37) + " ").join(""),
];
const out = inputs.map((s) => [s, LZString.compressToEncodedURIComponent(s)]);
for (const [s, c] of out) {
  if (LZString.decompressFromEncodedURIComponent(c) !== s) throw new Error("round trip failed");
}
console.log(JSON.stringify(out, null, 1));
