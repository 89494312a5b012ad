//! `sampler-core`'s integration tests, one module per file, built as one test binary
//! (one link instead of one per file).

mod constraints;
mod exactness;
mod mcmc_smc;
