//! `strait`: faithful constrained sampling from a language model, headless.
//!
//! Every result is a JSON line on stdout; human messages go to stderr; errors are one line
//! and a non-zero exit code (DESIGN.md §6 is the contract).

mod args;
mod commands;
mod constraint_source;
mod failure;
mod model_source;

use args::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sample(a) => commands::sample::run(&a),
        Command::Score(a) => commands::score::run(&a),
        Command::Enumerate(a) => commands::enumerate::run(&a),
        Command::Bench(a) => commands::bench::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strait: {e}");
            ExitCode::FAILURE
        }
    }
}
