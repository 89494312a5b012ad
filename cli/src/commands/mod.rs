//! One module per subcommand.

pub mod bench;
mod bench_masks;
pub mod enumerate;
pub mod sample;
pub mod score;
