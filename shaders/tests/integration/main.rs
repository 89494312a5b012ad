//! `shaders`'s integration tests, one module per file, built as one test binary
//! (one link instead of one per file).

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod common;
mod folded_output;
mod fused_matvec;
mod kernels;
mod mask_kernel_automata;
mod profile;
