// Runs a wasm32-wasip1 test binary under node's WASI: node wasi_run.mjs FILE [args...].
// `cargo xtask test` uses it as cargo's runner for `lm`'s unit tests built with simd128,
// so the wasm SIMD kernels are checked against their scalar references.
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';
import { argv, env, exit } from 'node:process';
const wasi = new WASI({ version: 'preview1', args: [argv[2], ...argv.slice(3)], env, preopens: { '/': '/' }, returnOnExit: true });
const mod = await WebAssembly.compile(await readFile(argv[2]));
const inst = await WebAssembly.instantiate(mod, wasi.getImportObject());
exit(wasi.start(inst));
