//! `grammars`'s integration tests, one module per file, built as one test binary
//! (one link instead of one per file).

mod bad_input;
mod common;
mod examples;
mod format;
mod gbnf_files;
mod gbnf_syntax;
mod masks;
mod regex_differential;
mod samplers;
