//! The `strait` binary against the command-line contract (DESIGN.md §6).
//!
//! Toy models (`toy:gsk`, `toy:random:SEED`) make these run in milliseconds; the tests on
//! the real model need `assets/models/SmolLM2-135M-Instruct.Q4_1.gguf` (`cargo xtask setup`).

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn strait(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the strait binary runs")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

const MODEL: &str = "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf";

fn lines(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "strait failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
}

/// The one-line error of a failed run (and that it failed).
fn error(out: &Output) -> String {
    assert!(!out.status.success(), "expected a failure");
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn score_on_gsk_is_the_analytic_value() {
    let v = lines(&strait(&["score", "--model", "toy:gsk", "--text", "10101"]));
    let exact = 0.55f64.ln() * 3.0 + 0.45f64.ln() * 2.0; // EOS after five tokens: log 1
    assert!((v[0]["logp"].as_f64().unwrap() - exact).abs() < 1e-12);
    assert_eq!(v[0]["tokens"], serde_json::json!([1, 0, 1, 0, 1]));
}

#[test]
fn score_on_the_real_model_sums_token_logprobs() {
    let v = lines(&strait(&[
        "score",
        "--model",
        MODEL,
        "--prompt",
        "The capital of France is",
        "--text",
        " Paris.",
    ]));
    let per: f64 = v[0]["token_logps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum();
    let logp = v[0]["logp"].as_f64().unwrap();
    assert!((per - logp).abs() < 1e-9);
    // " Paris" is the model's top continuation: well above a uniform 1/49152 guess.
    let first = v[0]["token_logps"][0].as_f64().unwrap();
    assert!(first > -2.0, "log P(' Paris') = {first}");
}

#[test]
fn bad_model_files_say_what_is_wrong() {
    let missing = error(&strait(&[
        "score",
        "--model",
        "nope.gguf",
        "--prompt",
        "x",
        "--text",
        "y",
    ]));
    assert!(missing.contains("cargo xtask setup"), "{missing}");
    let dir = std::env::temp_dir().join(format!("strait-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let truncated = dir.join("truncated.gguf");
    let bytes = std::fs::read(root().join(MODEL)).expect("model present (cargo xtask setup)");
    std::fs::write(&truncated, &bytes[..1000]).unwrap();
    let t = truncated.to_str().unwrap();
    let e = error(&strait(&[
        "score", "--model", t, "--prompt", "x", "--text", "y",
    ]));
    assert!(e.contains("truncated"), "{e}");
    let not_gguf = dir.join("not.gguf");
    std::fs::write(&not_gguf, b"PK\x03\x04 this is a zip").unwrap();
    let e = error(&strait(&[
        "score",
        "--model",
        not_gguf.to_str().unwrap(),
        "--prompt",
        "x",
        "--text",
        "y",
    ]));
    assert!(
        e.to_lowercase().contains("magic") || e.contains("GGUF"),
        "{e}"
    );
}

#[test]
fn unknown_methods_and_toys_are_named() {
    let e = error(&strait(&[
        "sample", "--model", "toy:gsk", "--regex", "0", "--method", "mcmc",
    ]));
    assert!(
        e.contains("unknown method") && e.contains("mcmc-uniform"),
        "{e}"
    );
    let e = error(&strait(&["score", "--model", "toy:nope", "--text", "1"]));
    assert!(e.contains("toy:gsk"), "{e}");
}
