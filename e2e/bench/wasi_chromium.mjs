// Runs wasm32-wasip1 programs in headless Chromium, in turn, so that a kernel benchmark
// meets the V8 the page runs on (node's older V8 compiles the same wasm differently: a
// kernel faster under node can be slower in the browser). A WASI of the few calls a
// benchmark makes: arguments and environment (none), the clock, random bytes, stdout and
// stderr; anything else returns ENOSYS. The programs run in a page served (by the test's
// own route) with the cross-origin isolation headers, where `performance.now()` ticks in
// microseconds rather than in tenths of a millisecond. Figures only, nothing asserted.
//
//   node bench/wasi_chromium.mjs A.wasm [B.wasm …]   (ROUNDS=n runs them n times, alternately)
import { readFile } from 'node:fs/promises';
import { launch } from '../lib.mjs';

const files = process.argv.slice(2);
const rounds = Number(process.env.ROUNDS ?? 1);
const b = await launch({ webgpu: false, openDetails: false });
// 127.0.0.1 (never contacted: the route answers) is a secure context, as isolation needs.
const ORIGIN = 'http://127.0.0.1:9/wasi';
await b.page.route(ORIGIN, (route) => route.fulfill({
  contentType: 'text/html',
  headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
  body: '<!doctype html><title>wasi</title>',
}));
await b.page.goto(ORIGIN);
if (!await b.page.evaluate(() => crossOriginIsolated)) console.log('# not cross-origin isolated: the clock ticks in 0.1 ms');
for (let r = 0; r < rounds; r++) {
  for (const f of files) {
    const bytes = [...await readFile(f)];
    const text = await b.page.evaluate(async (bytes) => {
      let out = '';
      let memory;
      const view = () => new DataView(memory.buffer);
      const ENOSYS = 52;
      const wasi = {
        args_sizes_get: (argc, size) => { view().setUint32(argc, 0, true); view().setUint32(size, 0, true); return 0; },
        args_get: () => 0,
        environ_sizes_get: (n, size) => { view().setUint32(n, 0, true); view().setUint32(size, 0, true); return 0; },
        environ_get: () => 0,
        clock_time_get: (_id, _precision, at) => {
          view().setBigUint64(at, BigInt(Math.round(performance.now() * 1e6)), true);
          return 0;
        },
        random_get: (at, len) => { crypto.getRandomValues(new Uint8Array(memory.buffer, at, len)); return 0; },
        fd_write: (fd, iovs, n, written) => {
          let total = 0;
          for (let i = 0; i < n; i++) {
            const at = view().getUint32(iovs + 8 * i, true);
            const len = view().getUint32(iovs + 8 * i + 4, true);
            if (fd === 1 || fd === 2) out += new TextDecoder().decode(new Uint8Array(memory.buffer, at, len));
            total += len;
          }
          view().setUint32(written, total, true);
          return 0;
        },
        proc_exit: (code) => { throw new Error(`exit ${code}`); },
      };
      const imports = { wasi_snapshot_preview1: new Proxy(wasi, { get: (t, k) => t[k] ?? (() => ENOSYS) }) };
      const { instance } = await WebAssembly.instantiate(new Uint8Array(bytes), imports);
      memory = instance.exports.memory;
      try { instance.exports._start(); } catch (e) { if (!String(e).startsWith('Error: exit 0')) out += `\n${e}`; }
      return out;
    }, bytes);
    console.log(`# ${f}\n${text}`);
  }
}
await b.close();
