//! `strait`: faithful constrained sampling from a language model, headless.
//!
//! Every result is a JSON line on stdout; human messages go to stderr; errors are one line
//! and a non-zero exit code (docs/cli.md is the contract).

#![forbid(unsafe_code)]

mod args;
mod commands;
mod stdout;

// What the commands share with the Python package lives in the `headless` library.
use headless::{constraint_source, failure, hmm_engine};

use args::{Cli, Command};
use clap::Parser;
use clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() || e.kind() == DisplayHelpOnMissingArgumentOrSubcommand => {
            e.exit() // --help, --version, or `strait` alone: clap's usage text
        }
        Err(e) => {
            headless::note!("strait: {} (see --help)", one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    if let Some(n) = cli.threads
        && let Err(e) = lm::forward::set_threads(n.into())
    {
        headless::note!("strait: {e}");
        return ExitCode::FAILURE;
    }
    // The command runs on a thread with a 16 MB stack; it is the caller of the forward
    // pass's thread pool and computes a share of every product itself.
    let result = lm::forward::run_on_pool(move || match cli.command {
        Command::Sample(a) => commands::sample::run(&a),
        Command::Score(a) => commands::score::run(&a),
        Command::Enumerate(a) => commands::enumerate::run(&a),
        Command::Bench(a) => commands::bench::run(&a),
        Command::Sweep(a) => commands::sweep::run(&a),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            headless::note!("strait: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A clap error as one line: its paragraph before the usage text, without `error: `.
fn one_line(rendered: &str) -> String {
    let head: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    let text = head.join(" ");
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_errors_fit_on_one_line_and_keep_what_is_missing() {
        let e = Cli::try_parse_from(["strait", "sample", "--model", "toy:gsk"]).unwrap_err();
        let line = one_line(&e.render().to_string());
        assert!(!line.contains('\n') && !line.starts_with("error"), "{line}");
        assert!(line.contains("--method"), "{line}");
        let e = Cli::try_parse_from(["strait", "score", "--bogus"]).unwrap_err();
        assert!(one_line(&e.render().to_string()).contains("'--bogus'"));
    }
}
