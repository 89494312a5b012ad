// The sampling worker's entry (a module worker, copied into the built page by `cargo xtask build`).
// The page's first message carries its own compiled WebAssembly.Module; this instantiates
// it with the page's wasm-bindgen glue (`app.js`: the build gives it that fixed
// name) and hands the worker over to Rust (`worker_main`, app/src/worker/host.rs),
// which installs its own message handler and answers `{type: "ready"}`.
import init, { worker_main } from './app.js';

self.onmessage = async (event) => {
  self.onmessage = null;
  try {
    const wasm = await init({ module_or_path: event.data.module });
    // The module's memory, for the soak test (e2e/soak.test.mjs).
    self.__straitWasmBytes = () => wasm.memory.buffer.byteLength;
    worker_main();
  } catch (e) {
    // The page's `onerror` handler reports it and samples on its own thread.
    setTimeout(() => { throw e; });
  }
};
