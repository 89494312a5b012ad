//! One module per subcommand.

pub mod bench;
mod bench_hmm;
mod bench_kernels;
mod bench_masks;
mod bench_rejection;
mod bench_samplers;
mod bench_smc;
pub mod enumerate;
pub mod sample;
pub mod score;
