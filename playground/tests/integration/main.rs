//! `playground`'s integration tests, one module per file, built as one test binary
//! (one link instead of one per file).

mod runner;
mod views_from_samplers;
mod wasm;
