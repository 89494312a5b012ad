//! What `strait` does without a page: load a model ([`Source`]), build a constraint
//! ([`build`]), run a sampler ([`sample`]), score a text, enumerate a finite language, and
//! run a sweep of sampler runs over a grid ([`sweep`]). The `strait` command line parses
//! flags into these calls and prints their JSON lines; the Python package (`py/`) calls
//! the same functions and returns the same lines as dictionaries.

#![forbid(unsafe_code)]

pub mod constraint_source;
pub mod enumerate;
pub mod failure;
pub mod function_model;
pub mod hmm_engine;
pub mod model_source;
pub mod note;
pub mod sample;
pub mod score;
pub mod sweep;

pub use constraint_source::{ConstraintSpec, build};
pub use failure::{Failure, Result, fail};
pub use model_source::{ModelSpec, Source, with_lm};
pub use sample::{SampleJob, sample, sample_request};
