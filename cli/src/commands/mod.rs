//! One module per subcommand.

pub mod bench;
pub mod enumerate;
pub mod sample;
pub mod score;
pub mod sweep;
