//! `lm`'s integration tests, one module per file, built as one test binary
//! (one link instead of one per file).

mod gpu_forward;
mod llama_cpp_reference;
mod regex_on_vocab;
