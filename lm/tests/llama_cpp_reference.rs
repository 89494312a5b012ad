//! `lm` against llama.cpp on the real SmolLM2-135M-Instruct Q4_1 file.
//!
//! The reference data in `lm/reference/*.json` comes from llama.cpp through
//! llama-cpp-python (`lm/reference/make_reference.py` regenerates it). The model file is
//! fetched by `cargo xtask setup`; these tests fail with that hint when it is missing.

use lm::Tokenizer;
use lm::gguf::Gguf;
use serde_json::Value;
use std::path::PathBuf;

fn model_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

fn model_bytes() -> Vec<u8> {
    let p = model_path();
    std::fs::read(&p)
        .unwrap_or_else(|e| panic!("{}: {e}; fetch it with `cargo xtask setup`", p.display()))
}

fn reference(name: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("reference")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Token ids of every reference string match llama.cpp exactly, plain and chat-templated.
#[test]
fn tokenization_matches_llama_cpp() {
    let bytes = model_bytes();
    let tok = Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).unwrap();
    let r = reference("tokenize.json");
    let mut failures = Vec::new();
    let plain = r["plain"].as_array().unwrap();
    assert!(plain.len() >= 20);
    for case in plain {
        let text = case["text"].as_str().unwrap();
        let ours = tok.encode(text).unwrap();
        if ours != ids(&case["ids"]) {
            failures.push(format!(
                "{text:?}\n  ours  {ours:?}\n  llama {:?}",
                ids(&case["ids"])
            ));
        }
        assert_eq!(tok.decode(&ours), text.as_bytes(), "round trip of {text:?}");
    }
    for case in r["chat"].as_array().unwrap() {
        let prompt = case["prompt"].as_str().unwrap();
        let rendered = tok.apply_chat_template(prompt).unwrap();
        assert_eq!(rendered, case["rendered"].as_str().unwrap());
        let ours = tok.encode_prompt(prompt, true).unwrap();
        if ours != ids(&case["ids"]) {
            failures.push(format!(
                "chat {prompt:?}\n  ours  {ours:?}\n  llama {:?}",
                ids(&case["ids"])
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The vocabulary the samplers see: bytes of every token, EOS, special tokens.
#[test]
fn vocabulary_of_smollm2() {
    let bytes = model_bytes();
    let tok = Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).unwrap();
    let v = tok.vocabulary();
    assert_eq!(v.len(), 49152);
    assert_eq!(v.eos(), 2);
    assert_eq!(tok.bos(), Some(1));
    assert!(!tok.add_bos());
    assert!(v.is_special(0) && v.is_special(1) && !v.is_special(2) && v.is_special(16));
    assert!(!v.is_special(17));
    let hello = tok.encode(" hello\n").unwrap();
    assert_eq!(v.decode(&hello), b" hello\n");
    // Every non-special token is non-empty byte-level text.
    for t in 17..v.len() as u32 {
        assert!(!v.bytes(t).is_empty(), "token {t} has no bytes");
    }
}

/// Tolerance on each top-20 log-probability, in nats.
///
/// Measured (2026-11-23, llama-cpp-python 0.3.36 on x86-64 AVX2): the largest difference
/// over the 8 prompts and the 9 continuation steps is 0.495 nats (most cases 0.16–0.47).
/// Why that much: llama.cpp rounds activations to 8 bits per 32-block before Q4_1 and Q8_0
/// dot products (Q8_1 / Q8_0) and keeps K, V, Q and the attention weights in f16; we keep
/// f32 throughout. Emulating those roundings in our forward pass moved *our own* top-20
/// log-probabilities by up to 0.42 nats on the same cases, so the difference is of the
/// size of llama.cpp's rounding, not of a modelling error (mistakes are far larger:
/// NeoX-style RoPE gave 1.8–5.6, a wrong K/V-head mapping 16–21). 0.75 is 1.5× the
/// measured worst.
const TOLERANCE: f64 = 0.75;

/// A top-1 disagreement is accepted only where llama.cpp's own top two are this close
/// (a near tie that activation rounding alone can flip; one reference prompt, "What is
/// 2+2?", has a margin of 0.066), and our top-1 must then be llama.cpp's second.
const NEAR_TIE: f64 = 0.1;

struct Comparison {
    max_diff: f64,
    ours: u32,
    theirs: u32,
    acceptable_top1: bool,
}

/// Compares our full log-probabilities with a llama.cpp top-20 list.
fn compare_top(ours: &[f64], reference: &Value) -> Comparison {
    let top: Vec<(usize, f64)> = reference
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap() as usize, p[1].as_f64().unwrap()))
        .collect();
    let max_diff = top
        .iter()
        .map(|&(t, lp)| (ours[t] - lp).abs())
        .fold(0f64, f64::max);
    let ours_top = (0..ours.len())
        .max_by(|&a, &b| ours[a].total_cmp(&ours[b]))
        .unwrap();
    let acceptable_top1 =
        ours_top == top[0].0 || (ours_top == top[1].0 && top[0].1 - top[1].1 < NEAR_TIE);
    Comparison {
        max_diff,
        ours: ours_top as u32,
        theirs: top[0].0 as u32,
        acceptable_top1,
    }
}

/// Top-20 next-token log-probabilities at 8 prompts and along a 9-step greedy
/// continuation (the KV cache reused by prefix) agree with llama.cpp within
/// [`TOLERANCE`]; the top-1 token agrees (up to [`NEAR_TIE`]).
#[test]
fn logprobs_match_llama_cpp() {
    let model = std::sync::Arc::new(lm::Model::from_bytes(model_bytes()).unwrap());
    let r = reference("logprobs.json");
    let mut cases = Vec::new();
    for case in r["prompts"].as_array().unwrap() {
        let prompt = case["prompt"].as_str().unwrap();
        let chat = case["chat"].as_bool().unwrap();
        let prompt_ids = model.tokenizer().encode_prompt(prompt, chat).unwrap();
        assert_eq!(prompt_ids, ids(&case["ids"]), "prompt tokens of {prompt:?}");
        let mut lm = lm::PromptedModel::new(model.clone(), prompt_ids).unwrap();
        let lp =
            sampler_core::block_on(sampler_core::LanguageModel::logprobs(&mut lm, &[])).unwrap();
        cases.push((format!("{prompt:?}"), compare_top(&lp, &case["top"])));
    }
    let cont = &r["continuation"];
    let mut lm = lm::PromptedModel::new(model.clone(), ids(&cont["ids"])).unwrap();
    for step in cont["steps"].as_array().unwrap() {
        let generated = ids(&step["generated"]);
        let lp = sampler_core::block_on(sampler_core::LanguageModel::logprobs(&mut lm, &generated))
            .unwrap();
        cases.push((
            format!("continuation step {}", generated.len()),
            compare_top(&lp, &step["top"]),
        ));
    }
    // Every step after the first reused the cached prompt and prefix.
    let n_steps = cont["steps"].as_array().unwrap().len() as u64;
    let prompt_len = ids(&cont["ids"]).len() as u64;
    assert_eq!(
        sampler_core::LanguageModel::forward_tokens(&lm),
        prompt_len + n_steps - 1
    );

    let mut worst = 0f64;
    for (name, c) in &cases {
        eprintln!(
            "{name}: max diff {:.4}, top-1 ours {} llama.cpp {}",
            c.max_diff, c.ours, c.theirs
        );
        worst = worst.max(c.max_diff);
    }
    eprintln!("worst top-20 log-probability difference: {worst:.4} nats");
    let bad: Vec<_> = cases
        .iter()
        .filter(|(_, c)| !c.acceptable_top1)
        .map(|(n, _)| n)
        .collect();
    assert!(bad.is_empty(), "top-1 differs from llama.cpp at {bad:?}");
    assert!(
        worst <= TOLERANCE,
        "worst difference {worst} exceeds {TOLERANCE}"
    );
}

/// Prints load time and prefill and decode speed of the CPU path (no assertion on time).
/// Run: `cargo test -p lm --test llama_cpp_reference -- --ignored --nocapture speed`
#[test]
#[ignore]
fn speed() {
    use std::time::Instant;
    let t0 = Instant::now();
    let bytes = model_bytes();
    let t_read = t0.elapsed();
    let model = lm::Model::from_bytes(bytes).unwrap();
    let t_load = t0.elapsed();
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(12);
    let prompt = model.tokenizer().encode(&text).unwrap();
    let mut cache = model.new_cache();
    let t1 = Instant::now();
    let logits = model
        .forward(&mut cache, &prompt, prompt.len() - 1)
        .unwrap();
    let prefill = t1.elapsed();
    let mut next = (0..logits.len())
        .max_by(|&a, &b| logits[a].total_cmp(&logits[b]))
        .unwrap() as u32;
    let n_decode = 32;
    let t2 = Instant::now();
    for _ in 0..n_decode {
        let l = model.forward(&mut cache, &[next], 0).unwrap();
        next = (0..l.len()).max_by(|&a, &b| l[a].total_cmp(&l[b])).unwrap() as u32;
    }
    let decode = t2.elapsed();
    eprintln!(
        "read {:.0} ms, load (parse, tokenizer, weights) {:.0} ms; prefill {} tokens: {:.1} tok/s; decode {n_decode}: {:.1} tok/s",
        t_read.as_secs_f64() * 1e3,
        (t_load - t_read).as_secs_f64() * 1e3,
        prompt.len(),
        prompt.len() as f64 / prefill.as_secs_f64(),
        n_decode as f64 / decode.as_secs_f64()
    );
}
