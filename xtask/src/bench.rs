//! `cargo xtask bench samplers|decode|masks [FLAGS]`: makes sure the model is present,
//! builds the `strait` command line in release and runs `strait bench WHAT` on the model,
//! passing any further flags through. `samplers` writes its markdown report to
//! `docs/bench/samplers.md` unless `--out` is given.

use crate::setup::{ensure_model, model_path};
use crate::util::{self, Result, gpu_env, root, step};
use std::process::{Command, ExitCode};

/// Where `cargo xtask bench samplers` writes its report by default.
const SAMPLERS_REPORT: &str = "docs/bench/samplers.md";

/// The benchmarks `strait bench` knows.
const KNOWN: [&str; 3] = ["samplers", "decode", "masks"];

/// `cargo xtask bench WHAT [FLAGS]`.
pub fn command(flags: &[String]) -> Result<ExitCode> {
    let Some(what) = flags.first().map(String::as_str) else {
        return Err(format!(
            "`cargo xtask bench` needs what to measure: one of {}",
            KNOWN.join(", ")
        ));
    };
    if !KNOWN.contains(&what) {
        return Err(format!(
            "unknown benchmark `{what}`; expected one of {}",
            KNOWN.join(", ")
        ));
    }
    let rest = &flags[1..];
    ensure_model()?;
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root())
        .args([
            "run",
            "--release",
            "--package",
            "cli",
            "--bin",
            "strait",
            "--",
        ])
        .args(["bench", what]);
    if !rest
        .iter()
        .any(|f| f == "--model" || f.starts_with("--model="))
    {
        cmd.arg("--model").arg(model_path());
    }
    let out = match rest
        .iter()
        .position(|f| f == "--out")
        .and_then(|i| rest.get(i + 1))
    {
        Some(out) => Some(out.clone()),
        None if what == "samplers" => {
            cmd.args(["--out", SAMPLERS_REPORT]);
            Some(SAMPLERS_REPORT.to_string())
        }
        None => None,
    };
    cmd.args(rest);
    step(gpu_env(&mut cmd));
    util::run(&mut cmd)?;
    if let Some(out) = out {
        let path = root().join(&out);
        step(format!("report written to {}", path.display()));
    }
    Ok(ExitCode::SUCCESS)
}
