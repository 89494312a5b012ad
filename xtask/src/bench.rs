//! `cargo xtask bench samplers|decode|masks|smc|hmm|page [FLAGS]`: makes sure the model is present,
//! builds the `strait` command line in release and runs `strait bench WHAT` on the model,
//! passing any further flags through. `samplers` writes its markdown report to
//! `docs/bench/samplers.md` unless `--out` is given. `decode` first installs llama.cpp's
//! Python binding (PyPI `llama-cpp-python`, built from its sdist) when it is missing, so
//! our figures print beside llama.cpp's. `page` (in `bench_page.rs`) builds and serves
//! the page and times it beside wllama in headless Chromium.

use crate::setup::{ensure_model, model_path};
use crate::util::{self, Result, gpu_env, root, step};
use std::process::{Command, ExitCode};

/// Where `cargo xtask bench samplers` writes its report by default.
const SAMPLERS_REPORT: &str = "docs/bench/samplers.md";

/// The benchmarks `strait bench` knows.
const KNOWN: [&str; 6] = ["samplers", "decode", "masks", "smc", "hmm", "page"];

/// The llama.cpp binding `decode` compares against (built from source: docs/environment.md).
const LLAMA_CPP_PYTHON: &str = "llama-cpp-python==0.3.36";

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
    if what == "page" {
        return crate::bench_page::command();
    }
    let rest = &flags[1..];
    ensure_model()?;
    if what == "decode" {
        ensure_llama_cpp();
    }
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root())
        .args([
            "run",
            "--release",
            "--package",
            "cli",
            // burn's wgpu backend: the burn engine and P-GCD's HMM on burn-wgpu get their
            // rows beside ours (`bench decode`, `bench hmm`, `bench samplers` §6).
            "--features",
            "burn-wgpu",
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

/// Installs llama.cpp's Python binding when `import llama_cpp` fails. A failed install
/// is reported and the benchmark goes on without the comparison.
fn ensure_llama_cpp() {
    let python = std::env::var("STRAIT_LLAMA_PYTHON").unwrap_or_else(|_| "python3".into());
    let present = Command::new(&python)
        .args(["-c", "import llama_cpp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if present {
        step("llama.cpp's Python binding present");
        return;
    }
    step(format!(
        "installing {LLAMA_CPP_PYTHON} with pip: it builds llama.cpp from source, about 7-15 \
         minutes on 2 cores, once"
    ));
    let t = std::time::Instant::now();
    let mut pip = Command::new(&python);
    pip.args(["-m", "pip", "install", "--quiet", LLAMA_CPP_PYTHON]);
    match util::run(&mut pip) {
        Ok(()) => step(format!(
            "llama.cpp installed in {:.0} s",
            t.elapsed().as_secs_f64()
        )),
        Err(e) => eprintln!("xtask: llama.cpp could not be installed ({e}); comparing without it"),
    }
}
