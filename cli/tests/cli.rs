//! The `strait` binary against the command-line contract (docs/cli.md).
//!
//! Toy models (`toy:gsk`, `toy:random:SEED`, `toy:letters:N:SEED`) make these run in milliseconds; the tests on
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
    // SmolLM2 with its architecture renamed: the line the page shows too
    // (e2e/messages.test.mjs).
    let gemma = dir.join("gemma.gguf");
    let mut renamed = bytes.clone();
    let at = renamed.windows(5).position(|w| w == b"llama").unwrap();
    renamed[at..at + 5].copy_from_slice(b"gemma");
    std::fs::write(&gemma, renamed).unwrap();
    let e = error(&strait(&[
        "score",
        "--model",
        gemma.to_str().unwrap(),
        "--prompt",
        "x",
        "--text",
        "y",
    ]));
    assert!(
        e.ends_with(
            "model: architecture \"gemma\" is not supported (supported: llama, qwen2, qwen3)"
        ),
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
    assert!(
        e.contains("toy:gsk") && e.contains("toy:letters:N:SEED"),
        "{e}"
    );
    let e = error(&strait(&[
        "score",
        "--model",
        "toy:letters:9:1",
        "--text",
        "a",
    ]));
    assert!(e.contains("2 to 8 letters"), "{e}");
    // The page's random toy, by the name the page shows under its model picker.
    let out = strait(&[
        "sample",
        "--model",
        "toy:letters:3:5",
        "--regex",
        "[abc]{2}",
        "--method",
        "cars",
        "--n",
        "4",
        "--seed",
        "1",
    ]);
    let samples = lines(&out);
    assert_eq!(samples.len(), 4);
    assert!(
        samples
            .iter()
            .all(|s| s["text"].as_str().is_some_and(|t| t.len() == 2))
    );
    // Argument errors too are one line (clap's usage text is left to --help), exit code 2.
    let out = strait(&["sample", "--model", "toy:gsk", "--regex", "0", "--n", "x"]);
    let e = error(&out);
    assert!(e.starts_with("strait: ") && e.contains("'x'"), "{e}");
    assert_eq!(out.status.code(), Some(2));
    let help = strait(&["sample", "--help"]);
    assert!(help.status.success() && String::from_utf8_lossy(&help.stdout).contains("--method"));
}

/// A reader that goes away (`strait … | head -1`) ends the command quietly, not in a panic.
#[test]
fn a_closed_stdout_ends_quietly() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["enumerate", "--model", "toy:gsk", "--regex", GSK])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the strait binary runs");
    // Close the pipe's only reading end before the child can write its first line.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("strait ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.trim().is_empty(),
        "{:?}: {err}",
        out.status
    );
}

const GSK: &str = "00000|1[01]{4}";

/// SMC whose particles all die says so on stderr (the lines alone, weight 0, looked like
/// an answer), and says nothing when some particle lives.
#[test]
fn smc_says_when_every_particle_died() {
    let run = |regex: &str| {
        strait(&[
            "sample",
            "--model",
            "toy:gsk",
            "--regex",
            regex,
            "--method",
            "awrs-smc",
            "--particles",
            "3",
        ])
    };
    let dead = run("2");
    assert!(dead.status.success());
    let err = String::from_utf8_lossy(&dead.stderr);
    assert!(
        err.contains("strait: awrs-smc: every particle ended without a valid output"),
        "{err}"
    );
    let alive = run(GSK);
    assert!(alive.status.success() && alive.stderr.is_empty());
}

/// A closed stderr loses the messages, not the exit status: a refused regex still exits 1
/// (a message written with `eprintln!` would panic, exit 101), and a run that succeeds
/// while writing notes still exits 0.
#[test]
fn a_closed_stderr_keeps_the_exit_status() {
    use std::process::Stdio;
    let status = |args: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strait"))
            .args(args)
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the strait binary runs");
        drop(child.stderr.take());
        child.wait().expect("strait ends").code()
    };
    let bad = [
        "sample", "--model", "toy:gsk", "--regex", "0(", "--method", "lcd",
    ];
    assert_eq!(status(&bad), Some(1));
    let (dir, plan, out) = toy_plan("closed-stderr", "lcd", "1[01]{4}");
    let sweep = [
        "sweep",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    assert_eq!(
        status(&sweep),
        Some(0),
        "the sweep's summary line goes to stderr"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sample_lines_follow_the_contract() {
    let v = lines(&strait(&[
        "sample", "--model", "toy:gsk", "--regex", GSK, "--method", "lcd", "--n", "4", "--seed",
        "7",
    ]));
    assert_eq!(v.len(), 4);
    for l in &v {
        for key in [
            "text",
            "tokens",
            "logp",
            "valid",
            "weight",
            "lm_calls",
            "forward_tokens",
            "constraint_checks",
            "elapsed_ms",
        ] {
            // Present, and a number where one is due: NaN or ±∞ would be written as null.
            let v = &l[key];
            let typed = match key {
                "text" => v.is_string(),
                "tokens" => v.is_array(),
                "valid" => v.is_boolean(),
                "weight" => v.is_null(), // lcd has no weights; SMC's are checked below
                "logp" => v.as_f64().is_some_and(f64::is_finite),
                "elapsed_ms" => v.as_f64().is_some_and(|ms| ms >= 0.0),
                _ => v.is_u64(),
            };
            assert!(l.get(key).is_some() && typed, "{key} is {v} in {l}");
        }
        let text = l["text"].as_str().unwrap();
        assert!(
            text == "00000" || (text.len() == 5 && text.starts_with('1')),
            "{text}"
        );
        assert_eq!(l["valid"], true);
    }
    // Counters are cumulative over the run.
    assert!(v[3]["lm_calls"].as_u64() > v[0]["lm_calls"].as_u64());
    // The same seed gives the same samples.
    let again = lines(&strait(&[
        "sample", "--model", "toy:gsk", "--regex", GSK, "--method", "lcd", "--n", "4", "--seed",
        "7",
    ]));
    let texts = |v: &[Value]| v.iter().map(|l| l["text"].clone()).collect::<Vec<_>>();
    assert_eq!(texts(&v), texts(&again));
}

#[test]
fn events_are_json_lines_with_a_type() {
    let v = lines(&strait(&[
        "sample", "--model", "toy:gsk", "--regex", GSK, "--method", "lcd", "--events",
    ]));
    let tokens = v.iter().filter(|l| l["type"] == "token").count();
    assert_eq!(tokens, 6, "five symbols and EOS");
    assert!(v.iter().any(|l| l["type"] == "sample_finished"));
    assert!(
        v.iter()
            .any(|l| l.get("type").is_none() && l["valid"] == true)
    );
}

#[test]
fn regex_errors_are_one_line_with_position() {
    let e = error(&strait(&[
        "sample", "--model", "toy:gsk", "--regex", "(0|1", "--method", "lcd",
    ]));
    assert!(e.contains("column"), "{e}");
    let e = error(&strait(&[
        "sample",
        "--model",
        "toy:gsk",
        "--regex",
        "[^\\x00-\\x{10FFFF}]",
        "--method",
        "lcd",
    ]));
    assert!(e.contains("the constraint matches no string"), "{e}");
    let e = error(&strait(&[
        "sample", "--model", "toy:gsk", "--regex", "0", "--method", "lcd", "--n", "0",
    ]));
    assert!(e.contains("--n"), "{e}");
    // Nothing in the toy vocabulary spells a letter: the first step is a dead end.
    let e = error(&strait(&[
        "sample", "--model", "toy:gsk", "--regex", "[a-z]+", "--method", "lcd",
    ]));
    assert!(e.contains("dead end after"), "{e}");
    // A format for a regex is a mistake, not silently ignored.
    let e = error(&strait(&[
        "sample",
        "--model",
        "toy:gsk",
        "--regex",
        GSK,
        "--grammar-format",
        "lark",
        "--method",
        "lcd",
    ]));
    assert!(e.contains("--regex is always a regex"), "{e}");
}

/// A grammar file over the compiler's source limit is refused before it is read, with the
/// size and the limit named.
#[test]
fn an_oversized_grammar_file_names_the_limit() {
    let dir = std::env::temp_dir().join(format!("strait-big-grammar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.gbnf");
    let body = format!("root ::= \"0\"\n# {}\n", "x".repeat(1 << 20));
    std::fs::write(&path, &body).unwrap();
    let e = error(&strait(&[
        "sample",
        "--model",
        "toy:gsk",
        "--grammar",
        path.to_str().unwrap(),
        "--method",
        "lcd",
    ]));
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        e.contains(&format!(
            "{} bytes, above the limit of 1048576 bytes",
            body.len()
        )),
        "{e}"
    );
    assert!(e.contains("max_source_bytes"), "{e}");
}

#[test]
fn lcd_on_the_real_model_matches_the_regex() {
    let v = lines(&strait(&[
        "sample",
        "--model",
        MODEL,
        "--chat",
        "--prompt",
        "Is the sky blue? Answer yes, no or maybe.",
        "--regex",
        "(yes|no|maybe)",
        "--method",
        "lcd",
        "--n",
        "2",
        "--seed",
        "3",
    ]));
    for l in &v {
        let t = l["text"].as_str().unwrap();
        assert!(["yes", "no", "maybe"].contains(&t), "{t}");
        assert_eq!(
            l["tokens"].as_array().unwrap().last().unwrap(),
            2,
            "ends with EOS"
        );
    }
}

/// A prompt and `--max-tokens` that could outgrow the model's context are refused before
/// the run (whether it failed used to depend on the lengths drawn), saying what fits.
#[test]
fn max_tokens_past_the_context_is_refused_up_front() {
    let e = error(&strait(&[
        "sample",
        "--model",
        MODEL,
        "--cpu",
        "--prompt",
        "Count:",
        "--regex",
        "( [a-z]+)+",
        "--method",
        "rs",
        "--max-tokens",
        "9000",
    ]));
    assert!(
        e.contains("more than the context of 8192") && e.contains("(--max-tokens) to 81"),
        "{e}"
    );
}

/// `enumerate` and `sample --method cars` on the real model agree: CARS is exact, so the
/// share of each answer among its samples matches the enumerated P^L (binomial bounds at
/// 4 standard deviations; P^L comes from `enumerate`, which never samples).
#[test]
fn cars_samples_match_enumerate_on_the_real_model() {
    let common = [
        "--model",
        MODEL,
        "--chat",
        "--prompt",
        "Is the sky blue? Answer yes, no or maybe.",
        "--regex",
        "(yes|no|maybe)",
    ];
    let mut args = vec!["enumerate"];
    args.extend(common);
    let exact = lines(&strait(&args));
    let total: f64 = exact.iter().map(|l| l["p"].as_f64().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-9, "P^L sums to {total}");
    let p_of = |text: &str| -> f64 {
        exact
            .iter()
            .filter(|l| l["text"] == text)
            .map(|l| l["p"].as_f64().unwrap())
            .sum()
    };
    let n = 60;
    let mut args = vec!["sample"];
    args.extend(common);
    let n_arg = n.to_string();
    args.extend(["--method", "cars", "--n", &n_arg, "--seed", "11"]);
    let samples = lines(&strait(&args));
    assert_eq!(samples.len(), n);
    assert!(samples.iter().all(|l| l["valid"] == true));
    for text in ["yes", "no"] {
        let p = p_of(text);
        let count = samples.iter().filter(|l| l["text"] == text).count() as f64;
        let sd = (n as f64 * p * (1.0 - p)).sqrt().max(0.5);
        assert!(
            (count - n as f64 * p).abs() <= 4.0 * sd,
            "{text}: {count} of {n} samples, P^L = {p}"
        );
    }
}

/// The WGSL forward pass (`--gpu`, lavapipe where there is no GPU) scores like the CPU
/// forward pass: same tokens, log-probabilities within 1e-3 nats (f32 sums in another
/// order); with `--kv-cache f16` (where the adapter has shader-f16) and `--fold-output`
/// within 0.1 nats a token (the f16 cache moves logits up to 0.04); `--kv-cache f16` or
/// `--fold-output` beside `--cpu` is refused. Scoring holds one KV cache on the GPU.
#[test]
fn gpu_and_cpu_scores_agree() {
    let run = |flags: &[&str]| {
        let mut args = vec!["score", "--model", MODEL];
        args.extend(flags);
        args.extend(["--prompt", "The capital of France is", "--text", " Paris."]);
        strait(&args)
    };
    let on_gpu = run(&["--gpu"]);
    // One sequence to score: one KV cache, not the samplers' eight.
    let said = String::from_utf8_lossy(&on_gpu.stderr);
    assert!(said.contains(", 1 KV cache of "), "{said}");
    let (cpu, gpu) = (lines(&run(&["--cpu"])).remove(0), lines(&on_gpu).remove(0));
    assert_eq!(cpu["tokens"], gpu["tokens"]);
    let (a, b) = (cpu["logp"].as_f64().unwrap(), gpu["logp"].as_f64().unwrap());
    assert!((a - b).abs() < 1e-3, "cpu {a}, gpu {b}");
    let half = run(&["--gpu", "--kv-cache", "f16", "--fold-output"]);
    let c = lines(&half).remove(0)["logp"].as_f64().unwrap();
    let tokens = cpu["tokens"].as_array().unwrap().len() as f64;
    assert!(
        (a - c).abs() < 0.1 * tokens,
        "cpu {a}, gpu with an f16 cache {c}"
    );
    eprintln!("{}", String::from_utf8_lossy(&half.stderr));
    for flag in [&["--kv-cache", "f16"][..], &["--fold-output"]] {
        let refused = run(&[&["--cpu"][..], flag].concat());
        assert!(
            error(&refused).contains("--cpu runs the CPU pass"),
            "{}",
            error(&refused)
        );
    }
}

/// `strait bench gpu --profile`: the decode line with the engine's dispatches per token,
/// then one line per kernel whose dispatches add up to it, or (an adapter without timestamp
/// queries inside passes) one line saying why there is no profile. With `--fold-output`
/// (and the profile) a block is four dispatches, one fewer than without (SmolLM2: 30
/// blocks).
#[test]
fn bench_gpu_profiles_each_kernel_or_says_why_not() {
    let bench = |flags: &[&str]| {
        let mut args = vec!["bench", "gpu", "--tokens", "2", "--model", MODEL];
        args.extend(flags);
        lines(&strait(&args))
    };
    let plain = bench(&["--profile"]);
    let folded = bench(&["--profile", "--fold-output"]);
    assert_eq!(folded[0]["fold_output"], true, "{:?}", folded[0]);
    let per_token = |out: &[Value]| out[0]["dispatches_per_token"].as_f64().unwrap();
    assert_eq!(per_token(&plain) - per_token(&folded), 30.0);
    assert!(per_token(&folded) <= 4.0 * 30.0 + 2.0, "{:?}", folded[0]);
    for out in [plain, folded] {
        if out[0]["profiled"] == false {
            assert!(out[1]["reason"].as_str().unwrap().contains("timestamp"));
            eprintln!("no kernel profile on this adapter: {}", out[1]["reason"]);
            continue;
        }
        let kernels: Vec<&Value> = out.iter().filter(|l| l.get("kernel").is_some()).collect();
        let sum: f64 = kernels
            .iter()
            .map(|k| k["dispatches_per_token"].as_f64().unwrap())
            .sum();
        assert_eq!(sum, per_token(&out), "{out:?}");
        assert!(
            kernels
                .iter()
                .any(|k| k["kernel"].as_str().unwrap().contains("attention"))
        );
        let total = out.last().unwrap();
        assert_eq!(total["untimed_dispatches"], 0);
        assert!(total["gpu_us_per_token"].as_f64().unwrap() > 0.0);
    }
}

/// `--engine`: the burn program (burn's CPU backend always; its wgpu backend when built
/// with `--features burn-wgpu`) scores and samples as our engine does; without the
/// feature, `--engine burn` says how to get it. (CARS draws a few dozen tokens here; a
/// sampler that draws thousands, as ARS on this prompt, may land one draw within the
/// engines' 1e-4 of a boundary and part ways, as `--cpu` and `--gpu` do.)
#[test]
fn the_burn_engines_score_and_sample_as_ours() {
    let score = |engine: &str| {
        lines(&strait(&[
            "score",
            "--model",
            MODEL,
            "--engine",
            engine,
            "--prompt",
            "The capital of France is",
            "--text",
            " Paris.",
        ]))
        .remove(0)
    };
    let sample = |engine: &str| {
        let out = lines(&strait(&[
            "sample",
            "--model",
            MODEL,
            "--engine",
            engine,
            "--prompt",
            "Name a colour.",
            "--chat",
            "--regex",
            "(red|green|blue|yellow)",
            "--method",
            "cars",
            "--n",
            "3",
            "--seed",
            "7",
        ]));
        out.iter().map(|l| l["text"].clone()).collect::<Vec<_>>()
    };
    let ours = score("strait");
    let mut engines = vec!["burn-flex"];
    if cfg!(feature = "burn-wgpu") {
        engines.push("burn");
    } else {
        let e = error(&strait(&[
            "score", "--model", MODEL, "--engine", "burn", "--prompt", "a", "--text", "b",
        ]));
        assert!(
            e.contains("--features burn-wgpu") && e.contains("burn-flex"),
            "{e}"
        );
    }
    for engine in engines {
        let theirs = score(engine);
        assert_eq!(ours["tokens"], theirs["tokens"], "{engine}");
        let (a, b) = (
            ours["logp"].as_f64().unwrap(),
            theirs["logp"].as_f64().unwrap(),
        );
        assert!((a - b).abs() < 1e-3, "{engine}: ours {a}, theirs {b}");
        assert_eq!(
            sample("strait"),
            sample(engine),
            "{engine}: same seed, same samples"
        );
    }
}

/// `p-gcd-smc` distils its HMM (progress notes in the event stream), then prints each
/// run's particles with normalized weights and a run index; a context-free grammar and
/// a zero-state HMM are refused with one line.
#[test]
fn p_gcd_smc_runs_on_a_regex_and_refuses_what_it_cannot() {
    let args = [
        "sample",
        "--model",
        "toy:gsk",
        "--regex",
        GSK,
        "--method",
        "p-gcd-smc",
        "--n",
        "2",
        "--particles",
        "4",
        "--hmm-states",
        "3",
        "--hmm-sequences",
        "8",
        "--seed",
        "3",
    ];
    let v = lines(&strait(&args));
    assert_eq!(v.len(), 8);
    for run in 0..2 {
        let lines: Vec<&Value> = v.iter().filter(|l| l["run"] == run).collect();
        assert_eq!(lines.len(), 4);
        let w: f64 = lines.iter().map(|l| l["weight"].as_f64().unwrap()).sum();
        assert!((w - 1.0).abs() < 1e-9, "run {run}: weights sum to {w}");
        assert!(lines.iter().all(|l| l["valid"] == true));
    }
    let mut with_events = args.to_vec();
    with_events.push("--events");
    let ev = lines(&strait(&with_events));
    let notes: Vec<&str> = ev
        .iter()
        .filter(|l| l["type"] == "note")
        .filter_map(|l| l["message"].as_str())
        .collect();
    assert!(
        notes[0].starts_with("p-gcd: sampling 8 sequences"),
        "{notes:?}"
    );
    assert!(ev.iter().any(|l| l["type"] == "evidence"));
    let e = error(&strait(&[
        "sample",
        "--model",
        "toy:gsk",
        "--grammar",
        "assets/examples/gsk.gbnf",
        "--method",
        "p-gcd-smc",
    ]));
    assert!(e.contains("regular"), "{e}");
    // HMM settings out of range, refused before the model is read.
    for (flag, value, says) in [
        ("--hmm-states", "0", "--hmm-states"),
        (
            "--hmm-sequences",
            "100000000",
            "--hmm-sequences must be at most 1000000",
        ),
    ] {
        // `args` up to the method, then the setting.
        let e = error(&strait(&[&args[..7], &[flag, value]].concat()));
        assert!(e.contains(says), "{e}");
    }

    // The HMM engines: the events name the one that ran (burn's CPU backend by default);
    // the CPU reference draws the same particles with the same weights; an unknown name
    // is refused with the choices.
    let fits: Vec<&Value> = ev.iter().filter(|l| l["type"] == "hmm_fit").collect();
    assert!(
        !fits.is_empty() && fits.iter().all(|l| l["engine"] == "burn-flex-f64"),
        "{fits:?}"
    );
    let mut on_cpu = args.to_vec();
    on_cpu.extend(["--hmm-engine", "cpu"]);
    let cpu = lines(&strait(&on_cpu));
    assert_eq!(cpu.len(), v.len());
    for (a, b) in cpu.iter().zip(&v) {
        assert_eq!(a["tokens"], b["tokens"]);
        let (wa, wb) = (a["weight"].as_f64().unwrap(), b["weight"].as_f64().unwrap());
        assert!((wa - wb).abs() < 1e-9, "{wa} against {wb}");
    }
    let mut unknown = args.to_vec();
    unknown.extend(["--hmm-engine", "numpy"]);
    let e = error(&strait(&unknown));
    assert!(e.contains("--hmm-engine") && e.contains("burn-flex"), "{e}");
}

/// A sweep plan on G_sk with one sampler and one regex, written in scratch folder `name`:
/// the folder, the plan and the output folder to give `strait sweep`.
fn toy_plan(name: &str, sampler: &str, regex: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "models = [\"toy:gsk\"]\nsamplers = [\"{sampler}\"]\nseeds = 1\n\
             [constraints.a]\nregex = \"{regex}\"\n"
        ),
    )
    .unwrap();
    let out = dir.join("out");
    (dir, plan, out)
}

/// A fresh folder under the system's temporary folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strait-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A folder's files (relative name → text), `.part` leftovers included.
fn files(dir: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for sub in ["cells", "exact"] {
        for e in std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = format!("{sub}/{}", e.file_name().to_string_lossy());
            out.insert(name, std::fs::read_to_string(e.path()).unwrap());
        }
    }
    out
}

/// A cell file without what differs between two runs of the same seed (wall time).
fn without_times(text: &str) -> String {
    let strip = |mut v: Value| {
        if let Some(o) = v.as_object_mut() {
            o.remove("elapsed_ms");
            o.remove("seconds");
        }
        v
    };
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return strip(v).to_string();
    }
    text.lines()
        .map(|l| strip(serde_json::from_str(l).unwrap()).to_string() + "\n")
        .collect()
}

/// `strait sweep` killed in the middle of a cell and run again ends with exactly the files
/// of an uninterrupted sweep: the finished cells kept, the cut one redone, nothing twice.
#[test]
fn a_sweep_killed_mid_cell_resumes_to_the_same_files() {
    let dir = scratch("sweep-resume");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "title = \"resume\"\nmodels = [\"toy:gsk\"]\nsamplers = [\"lcd\", \"cars\", \"awrs-smc\"]\n\
         seeds = 2\n[constraints.sk]\nregex = \"00000|1[01]{4}\"\n[params]\nn = 20\n\
         max_tokens = 8\nparticles = [2, 4]\n",
    )
    .unwrap();
    let sweep = |out: &str, exit_after: Option<u32>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strait"));
        cmd.args([
            "sweep",
            plan.to_str().unwrap(),
            "--out",
            dir.join(out).to_str().unwrap(),
        ]);
        if let Some(n) = exit_after {
            cmd.env("STRAIT_SWEEP_EXIT_AFTER_SAMPLES", n.to_string());
        }
        cmd.output().unwrap()
    };
    let whole = sweep("whole", None);
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    // 2 lcd cells of 20 samples finish; the 50th sample is the 10th of the first cars cell.
    let cut = sweep("cut", Some(50));
    assert_eq!(cut.status.code(), Some(137));
    let rows = |d: &str| {
        files(&dir.join(d))
            .keys()
            .filter(|k| k.starts_with("cells/") && k.ends_with(".json"))
            .count()
    };
    assert_eq!(rows("cut"), 2, "{:?}", files(&dir.join("cut")).keys());
    let again = sweep("cut", None);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{err}");
    assert!(err.contains("2 of 8 cells already finished"), "{err}");
    let (a, b) = (files(&dir.join("whole")), files(&dir.join("cut")));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    assert_eq!(a.len(), 8 * 2 + 1, "8 cells of two files, one exact P^L");
    for (name, text) in &a {
        assert_eq!(without_times(text), without_times(&b[name]), "{name}");
    }
    let csv = std::fs::read_to_string(dir.join("cut/summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 8, "a header and a row per cell");
    let md = std::fs::read_to_string(dir.join("cut/summary.md")).unwrap();
    assert!(md.contains("| cars | 2 | 40 | 40 |"), "{md}");
    for plot in ["kl", "generations"] {
        let svg = dir.join(format!("cut/plots/m0-gsk.sk.p0.t8.{plot}.svg"));
        assert!(
            std::fs::read_to_string(&svg).unwrap().starts_with("<svg"),
            "{plot}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plan's mistakes end `strait sweep` with one line naming the file and the key.
#[test]
fn a_bad_plan_is_named_in_one_line() {
    let (dir, plan, out) = toy_plan("sweep-bad", "carz", "0");
    let e = error(&strait(&[
        "sweep",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(e.contains("plan.toml") && e.contains("carz"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--summarize` runs nothing and still writes the summary; a plan's `[[tables]]` land in
/// `summary.md` (RS at its generation cap reads T.O., with what it found) and in
/// `page.json`, each finished figure with the playground link that reruns it.
#[test]
fn a_sweeps_tables_and_page_data_come_from_its_finished_cells() {
    let dir = scratch("sweep-tables");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "title = \"t\"\nmodels = [\"toy:gsk\"]\nsamplers = [\"rs\", \"cars\"]\nseeds = 1\n\
         [constraints.zeros]\nregex = \"00000\"\n[params]\nn = 3\nmax_tokens = 8\n\
         generation_cap = 50\n[[tables]]\ntitle = \"Generations\"\nrows = \"sampler\"\n\
         columns = \"constraint\"\nmeasure = \"generations\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "sweep",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        strait(&args)
    };
    let page = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(out.join("page.json")).unwrap()).unwrap()
    };
    let first = run(&["--summarize"]);
    assert!(first.status.success());
    assert!(String::from_utf8_lossy(&first.stderr).contains("0 of 2 cells finished"));
    assert!(!out.join("cells").exists(), "nothing ran");
    assert_eq!(page()["tables"][0]["cells"][0][0], Value::Null);
    let second = run(&[]);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("### Generations"), "{md}");
    assert!(md.contains("| rs | T.O. (0/3) |"), "{md}");
    let p = page();
    assert_eq!(p["finished"], 2);
    assert_eq!(p["tables"][0]["rows"], serde_json::json!(["rs", "cars"]));
    let cars = &p["tables"][0]["cells"][1][0];
    assert!(cars["text"].as_str().unwrap().starts_with('~'), "{cars}");
    assert!(
        cars["link"].as_str().unwrap().starts_with("v=1&s="),
        "{cars}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
