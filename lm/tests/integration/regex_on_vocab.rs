//! Regex constraints on the real SmolLM2 vocabulary (V = 49152): trie masks against
//! per-token checks, tensorized budget masks against plain masks, and timings (printed
//! only; run with `--nocapture` to see them).

use lm::Tokenizer;
use lm::gguf::Gguf;
use sampler_core::{ByteAutomaton, Constraint, RegexConstraint, TokenId, TokenSet, Vocabulary};
use std::path::PathBuf;
use std::time::Instant;

fn vocabulary() -> (Tokenizer, Vocabulary) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let bytes = std::fs::read(&p)
        .unwrap_or_else(|e| panic!("{}: {e}; fetch it with `cargo xtask setup`", p.display()));
    let tok = Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).unwrap();
    let v = tok.vocabulary();
    (tok, v)
}

fn example(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/examples")
        .join(name);
    std::fs::read_to_string(&p).unwrap().trim_end().to_string()
}

/// States along the tokenization of `text` and after each of its byte prefixes (every
/// byte is a token of this vocabulary, so these are token-boundary states too).
fn states_along(c: &RegexConstraint, tok: &Tokenizer, text: &str) -> Vec<u32> {
    let a = c.automaton();
    let mut out: Vec<u32> = (0..=text.len())
        .filter_map(|i| a.walk(a.initial(), &text.as_bytes()[..i]))
        .collect();
    let mut s = c.initial();
    for t in tok.encode(text).unwrap() {
        match c.advance(&s, t) {
            Some(n) => {
                s = n;
                out.push(s);
            }
            None => break,
        }
    }
    out
}

fn per_token(c: &RegexConstraint, s: &u32) -> TokenSet {
    let mut m = TokenSet::empty(c.vocab_size());
    for t in 0..c.vocab_size() as TokenId {
        if c.allows(s, t) {
            m.insert(t);
        }
    }
    m
}

fn micros_per_call(iters: u32, f: impl Fn()) -> f64 {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed().as_secs_f64() * 1e6 / iters as f64
}

fn check(pattern: &str, texts: &[&str]) {
    let (tok, v) = vocabulary();
    assert_eq!(v.len(), 49152);
    let start = Instant::now();
    let c = RegexConstraint::from_regex(pattern, &v).unwrap();
    let total_compile = start.elapsed();
    let t = c.tensorized().unwrap();
    let mut states: Vec<u32> = texts
        .iter()
        .flat_map(|x| states_along(&c, &tok, x))
        .collect();
    states.sort_unstable();
    states.dedup();
    assert!(
        states.len() >= 4,
        "{pattern}: too few states reached: {states:?}"
    );
    for s in &states {
        let mask = c.mask(s);
        assert_eq!(
            mask,
            per_token(&c, s),
            "{pattern}: trie mask differs at state {s}"
        );
        assert!(!mask.is_empty(), "{pattern}: empty mask at state {s}");
        assert_eq!(
            c.budget_mask(s, 1000).unwrap(),
            mask,
            "{pattern}: budget mask at {s}"
        );
    }
    // The budget is tight: the start needs exactly dist tokens (EOS counted).
    let d = t.dist[t.initial as usize] as usize;
    assert!(c.budget_mask(&0, d).unwrap().count() > 0);
    assert!(c.budget_mask(&0, d - 1).unwrap().is_empty());

    let iters = 200;
    let mean = |f: &dyn Fn(u32)| -> f64 {
        let per: f64 = states
            .iter()
            .map(|&s| micros_per_call(iters, || f(s)))
            .sum();
        per / states.len() as f64
    };
    let trie_us = mean(&|s| {
        std::hint::black_box(c.trie_mask(&s));
    });
    let plain_us = mean(&|s| {
        std::hint::black_box(c.mask(&s));
    });
    let tensor_us = mean(&|s| {
        std::hint::black_box(c.budget_mask(&s, 1000));
    });
    let kernel_us = mean(&|s| {
        let flags = t.edge_flags(&t.one_hot(c.tensor_state(&s).unwrap()), 1000);
        std::hint::black_box(t.mask_from_edge_flags(&flags));
    });
    println!(
        "{pattern}: V={} trie nodes={} states={} edges={} B_f={} bytes, tensorize {:?} (regex+trie+tensor {:?}), \
         min tokens from start {d}; per full-vocabulary mask (mean over {} states): \
         trie walk {trie_us:.1} us, tensorized plain {plain_us:.1} us, tensorized budget {tensor_us:.1} us, edge flags + kernel reference {kernel_us:.1} us",
        v.len(),
        c.trie().num_nodes(),
        t.num_states,
        t.num_edges(),
        t.bf_bytes(),
        t.compile_time,
        total_compile,
        states.len(),
    );
}

#[test]
fn date_regex_on_smollm2_vocabulary() {
    check(&example("date.regex"), &["2024-01-15", "1999-12-31"]);
}

#[test]
fn choice_regex_on_smollm2_vocabulary() {
    check("(yes|no|maybe)", &["maybe", "yes", "no"]);
}

#[test]
fn phone_regex_on_smollm2_vocabulary() {
    check(&example("phone.regex"), &["(555) 123-4567"]);
}

#[test]
fn permissive_regex_on_smollm2_vocabulary() {
    // Many tokens allowed at every state: the trie walk cannot prune much here.
    check("[a-z ]{1,30}", &["hello world", "the quick brown fox"]);
}
