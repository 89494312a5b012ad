//! The mask agrees with per-token checks at every step of random walks, EOS is in it
//! exactly when the prefix is complete, and dead ends are never offered.

use crate::common;

use common::{small_compiler, small_vocab};
use grammars::{CfgConstraint, Format};
use sampler_core::{Constraint, RandomSource, SeededRng, TokenId};

/// Walks `steps` random allowed tokens from the start, checking at each step that the mask
/// equals `{t : allows(t)}` and `{t : advance(t).is_some()}`.
fn random_walks(c: &CfgConstraint, walks: usize, steps: usize, seed: u64) -> usize {
    let mut rng = SeededRng::new(seed);
    let v = c.vocab_size() as TokenId;
    let mut checked = 0;
    for _ in 0..walks {
        let mut s = c.initial();
        for _ in 0..steps {
            let mask = c.mask(&s);
            for t in 0..v {
                assert_eq!(
                    mask.contains(t),
                    c.allows(&s, t),
                    "mask vs allows at token {t}"
                );
                assert_eq!(
                    mask.contains(t),
                    c.advance(&s, t).is_some(),
                    "mask vs advance at {t}"
                );
            }
            assert_eq!(mask.contains(c.eos()), c.is_complete(&s));
            checked += 1;
            let allowed: Vec<TokenId> = mask.iter().filter(|&t| t != c.eos()).collect();
            if allowed.is_empty() {
                assert!(c.is_complete(&s), "a reachable state must be live");
                break;
            }
            let t = allowed[(rng.uniform() * allowed.len() as f64) as usize % allowed.len()];
            s = c.advance(&s, t).expect("masked token advances");
        }
    }
    assert!(c.take_error().is_none());
    checked
}

#[test]
fn mask_matches_per_token_checks_on_gbnf_and_lark() {
    for (src, f) in [
        (include_str!("../data/gbnf/arithmetic.gbnf"), Format::Gbnf),
        (include_str!("../data/gbnf/json.gbnf"), Format::Gbnf),
        ("start: \"(\" start \")\" | \"ab\"\n", Format::Lark),
    ] {
        let c = small_compiler().compile(src, Some(f)).expect("compiles");
        assert!(random_walks(&c, 4, 12, 7) >= 12);
    }
}

#[test]
fn unproductive_alternatives_are_never_offered() {
    let c = small_compiler()
        .compile(
            "root ::= \"a\" | \"b\" loop\nloop ::= \"x\" loop\n",
            Some(Format::Gbnf),
        )
        .expect("compiles");
    let m = c.mask(&c.initial());
    assert!(m.contains(b'a' as TokenId));
    assert!(!m.contains(b'b' as TokenId), "`b` leads only to a dead end");
}

#[test]
fn eos_only_after_a_complete_sentence_and_nothing_after_eos() {
    let c = small_compiler()
        .compile("root ::= \"ab\" \"c\"?\n", Some(Format::Gbnf))
        .expect("ok");
    let v = small_vocab();
    let s0 = c.initial();
    assert!(!c.is_complete(&s0));
    let s1 = c.advance(&s0, b'a' as TokenId).expect("a");
    assert!(!c.mask(&s1).contains(v.eos()));
    let s2 = c.advance(&s1, b'b' as TokenId).expect("b");
    assert!(c.is_complete(&s2) && c.mask(&s2).contains(v.eos()));
    assert!(c.mask(&s2).contains(b'c' as TokenId));
    let s3 = c.advance(&s2, b'c' as TokenId).expect("c");
    // Nothing can follow "abc" but EOS.
    let m3 = c.mask(&s3);
    assert_eq!(m3.iter().collect::<Vec<_>>(), vec![v.eos()]);
    let done = c.advance(&s3, v.eos()).expect("EOS");
    assert!(c.mask(&done).is_empty() && c.advance(&done, b'c' as TokenId).is_none());
    // Forking: the earlier state is untouched by advancing a clone.
    assert!(c.mask(&s2).contains(b'c' as TokenId) && c.is_complete(&s2));
}

#[test]
fn multi_byte_tokens_are_allowed_not_only_forced_ones() {
    // A token spanning several grammar characters is allowed, and so is the one-byte
    // token for the same start: masks are faithful, never narrowed to a forced token.
    let c = small_compiler()
        .compile("root ::= \"the cat\"\n", Some(Format::Gbnf))
        .expect("ok");
    let v = small_vocab();
    let m = c.mask(&c.initial());
    let the = (0..v.len() as TokenId)
        .find(|&t| v.bytes(t) == b"the")
        .expect("token `the`");
    assert!(m.contains(the) && m.contains(b't' as TokenId));
    assert_eq!(m.count(), 2);
}

/// The exact mask for a finite language: tokens whose bytes keep the prefix a prefix of
/// some sentence, and EOS when the prefix is a sentence.
fn brute_force_mask(lang: &[&str], prefix: &[u8]) -> Vec<TokenId> {
    let v = small_vocab();
    let mut out = Vec::new();
    for t in 0..v.len() as TokenId {
        let ok = if t == v.eos() {
            lang.iter().any(|s| s.as_bytes() == prefix)
        } else {
            let mut p = prefix.to_vec();
            p.extend_from_slice(v.bytes(t));
            lang.iter().any(|s| s.as_bytes().starts_with(&p))
        };
        if ok {
            out.push(t);
        }
    }
    out
}

/// Checks the mask against brute force at every reachable state.
fn exact_on_finite_language(c: &CfgConstraint, lang: &[&str]) -> usize {
    let v = small_vocab();
    let mut stack = vec![(c.initial(), Vec::new())];
    let mut states = 0;
    while let Some((s, prefix)) = stack.pop() {
        let mask: Vec<TokenId> = c.mask(&s).iter().collect();
        assert_eq!(
            mask,
            brute_force_mask(lang, &prefix),
            "prefix {:?}",
            String::from_utf8_lossy(&prefix)
        );
        states += 1;
        for t in mask.into_iter().filter(|&t| t != v.eos()) {
            let mut p = prefix.clone();
            p.extend_from_slice(v.bytes(t));
            stack.push((c.advance(&s, t).expect("allowed"), p));
        }
    }
    states
}

#[test]
fn gsk_masks_are_exact() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/examples/gsk.gbnf"
    ))
    .expect("gsk.gbnf");
    let c = small_compiler().compile(&src, None).expect("compiles");
    let mut lang = vec!["00000".to_string()];
    for i in 0..16 {
        lang.push(format!("1{i:04b}"));
    }
    let lang: Vec<&str> = lang.iter().map(String::as_str).collect();
    assert!(exact_on_finite_language(&c, &lang) > 30);
}

#[test]
fn gbnf_keeps_character_level_meaning_where_lark_lexes_greedily() {
    // {abc, abbc}: "abc" needs the short literal "a" before "bc".
    let lang = ["abc", "abbc"];
    let c = small_compiler()
        .compile("root ::= (\"a\" | \"ab\") \"bc\"\n", Some(Format::Gbnf))
        .expect("ok");
    exact_on_finite_language(&c, &lang);
    // llguidance's Lark lexes "ab" greedily and so loses "abc" (documented behaviour of
    // its lexer, kept as written for Lark input).
    let lark = small_compiler()
        .compile("start: (\"a\" | \"ab\") \"bc\"\n", Some(Format::Lark))
        .expect("ok");
    assert!(common::small_accepts(&lark, "abbc"));
    assert!(!common::small_accepts(&lark, "abc"));
}

#[test]
fn constraints_and_states_can_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<grammars::Compiler>();
    send_sync::<CfgConstraint>();
    send::<grammars::CfgState>();
    // A forked state advanced on another thread leaves the original untouched.
    let c = small_compiler()
        .compile("root ::= \"ab\" | \"ac\"\n", Some(Format::Gbnf))
        .expect("ok");
    let s = c.advance(&c.initial(), b'a' as TokenId).expect("a");
    let fork = s.clone();
    let done = std::thread::scope(|sc| {
        sc.spawn(|| c.advance(&fork, b'b' as TokenId).is_some())
            .join()
            .expect("thread")
    });
    assert!(done && c.allows(&s, b'c' as TokenId));
}

#[test]
fn regex_reference_matches_whole_strings() {
    let c = small_compiler()
        .compile_regex_reference("[0-9]{4}-[0-9]{2}-[0-9]{2}")
        .expect("regex compiles");
    assert!(common::small_accepts(&c, "2024-01-31"));
    for bad in ["2024-1-31", "x2024-01-31", "2024-01-311", ""] {
        assert!(!common::small_accepts(&c, bad), "{bad}");
    }
    let e = small_compiler()
        .compile_regex_reference("(")
        .expect_err("bad regex");
    assert_eq!(e.kind, grammars::ErrorKind::Syntax, "{e}");
}
