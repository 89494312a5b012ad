//! One module per subcommand.

pub mod bench;
mod bench_masks;
mod bench_samplers;
pub mod enumerate;
pub mod sample;
pub mod score;
