//! Property tests of the regex constraint on random small vocabularies: trie masks against
//! per-token checks, tensorized masks against plain masks, and budget masks against brute
//! force over every token sequence up to the budget.

use proptest::prelude::*;
use regex::bytes::Regex;
use sampler_core::{
    Constraint, RandomSource, RegexConstraint, SeededRng, TokenId, TokenSet, Vocabulary,
};

const REGEXES: &[&str] = &[
    "(ab|c)*",
    "a+b?c",
    "[abc]{2,4}",
    "(a|b)*c(a|b)*",
    "abc|cab|bca",
    "(aa|bb)+c?",
    "a{0,3}b{1,2}",
    "(abc)+|c",
];

/// Tokens over {a, b, c} (optionally every single letter), then a special token, then EOS.
fn vocab(words: &[Vec<u8>], singles: bool) -> Vocabulary {
    let mut toks: Vec<Vec<u8>> = Vec::new();
    if singles {
        toks.extend([b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    }
    toks.extend(words.iter().cloned());
    toks.push(b"<sp>".to_vec());
    toks.push(b"</s>".to_vec());
    let n = toks.len() as TokenId;
    Vocabulary::new(toks, n - 1, &[n - 2])
}

fn words(max_len: usize, max_count: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(
        prop::collection::vec(prop::sample::select(b"abc".to_vec()), 1..=max_len),
        1..=max_count,
    )
}

/// An independent full-match oracle (regex-automata's meta engine, not our DFA path).
fn oracle(re: &str) -> Regex {
    Regex::new(&format!("^(?:{re})$")).unwrap()
}

/// A uniformly random token from a non-empty set.
fn pick(set: &TokenSet, rng: &mut SeededRng) -> TokenId {
    let toks: Vec<TokenId> = set.iter().collect();
    toks[rng.categorical(&vec![1.0; toks.len()])]
}

/// States reached by random walks through the plain mask (and their byte prefixes).
fn random_states(c: &RegexConstraint, v: &Vocabulary, seed: u64) -> Vec<(u32, Vec<u8>)> {
    let mut rng = SeededRng::new(seed);
    let mut out = vec![(c.initial(), Vec::new())];
    let (mut s, mut bytes) = (c.initial(), Vec::new());
    for _ in 0..6 {
        let mut m = c.mask(&s);
        m.remove(c.eos());
        if m.is_empty() {
            break;
        }
        let t = pick(&m, &mut rng);
        s = c.advance(&s, t).unwrap();
        bytes.extend_from_slice(v.bytes(t));
        out.push((s, bytes.clone()));
    }
    out
}

/// Brute force: can `prefix` be completed by at most `k` more tokens, the EOS counted?
fn completable(re: &Regex, v: &Vocabulary, prefix: &[u8], k: usize) -> bool {
    if k == 0 {
        return false;
    }
    if re.is_match(prefix) {
        return true;
    }
    (0..v.len() as TokenId)
        .filter(|&t| t != v.eos() && !v.is_special(t))
        .any(|t| {
            let mut p = prefix.to_vec();
            p.extend_from_slice(v.bytes(t));
            completable(re, v, &p, k - 1)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn trie_mask_equals_per_token_checks(
        ri in 0..REGEXES.len(), ws in words(4, 10), singles: bool, seed: u64
    ) {
        let v = vocab(&ws, singles);
        let c = RegexConstraint::from_regex(REGEXES[ri], &v).unwrap();
        for (s, _) in random_states(&c, &v, seed) {
            let mut brute = TokenSet::empty(v.len());
            for t in 0..v.len() as TokenId {
                if c.allows(&s, t) {
                    brute.insert(t);
                }
            }
            prop_assert_eq!(c.trie_mask(&s), brute.clone());
            prop_assert_eq!(c.mask(&s), brute);
            prop_assert!(!c.mask(&s).contains(v.len() as TokenId - 2), "special token allowed");
        }
    }

    #[test]
    fn unlimited_budget_mask_equals_plain_mask_when_bytes_are_spellable(
        ri in 0..REGEXES.len(), ws in words(4, 10), singles: bool, seed: u64
    ) {
        let v = vocab(&ws, singles);
        let c = RegexConstraint::from_regex(REGEXES[ri], &v).unwrap();
        for (s, _) in random_states(&c, &v, seed) {
            let plain = c.mask(&s);
            let budget = c.regular().unwrap().budget_mask(&s, usize::MAX);
            if singles {
                // Every byte has a token, so any live byte prefix is completable in tokens.
                prop_assert_eq!(budget, plain);
            } else {
                prop_assert!(budget.iter().all(|t| plain.contains(t)));
            }
        }
    }

    #[test]
    fn sequences_drawn_from_budget_masks_end_valid_within_budget(
        ri in 0..REGEXES.len(), ws in words(3, 8), singles: bool, n in 1usize..8, seed: u64
    ) {
        let re = REGEXES[ri];
        let v = vocab(&ws, singles);
        let c = RegexConstraint::from_regex(re, &v).unwrap();
        let mut rng = SeededRng::new(seed);
        for _ in 0..8 {
            let (mut s, mut seq) = (c.initial(), Vec::new());
            let mut remaining = n;
            loop {
                let m = c.regular().unwrap().budget_mask(&s, remaining);
                if m.is_empty() {
                    // Only possible at the start, when no sentence fits the budget at all.
                    prop_assert!(seq.is_empty(), "dead end after {seq:?}");
                    break;
                }
                let t = pick(&m, &mut rng);
                seq.push(t);
                if t == c.eos() {
                    break;
                }
                s = c.advance(&s, t).unwrap();
                remaining -= 1;
            }
            if !seq.is_empty() {
                prop_assert!(seq.len() <= n);
                prop_assert_eq!(*seq.last().unwrap(), c.eos());
                prop_assert!(oracle(re).is_match(&v.decode(&seq)));
            }
        }
    }

    #[test]
    fn budget_mask_equals_brute_force_completability(
        ri in 0..REGEXES.len(), ws in words(3, 4), singles: bool, n in 0usize..5, seed: u64
    ) {
        let re = oracle(REGEXES[ri]);
        let v = vocab(&ws, singles);
        let c = RegexConstraint::from_regex(REGEXES[ri], &v).unwrap();
        for (s, prefix) in random_states(&c, &v, seed).into_iter().take(3) {
            let m = c.regular().unwrap().budget_mask(&s, n);
            for t in 0..v.len() as TokenId {
                let expected = if t == v.eos() {
                    n >= 1 && re.is_match(&prefix)
                } else if v.is_special(t) {
                    false
                } else {
                    let mut p = prefix.clone();
                    p.extend_from_slice(v.bytes(t));
                    n >= 1 && completable(&re, &v, &p, n - 1)
                };
                prop_assert_eq!(m.contains(t), expected, "token {} prefix {:?} n {}", t, prefix, n);
            }
        }
    }
}

#[test]
fn error_messages() {
    let v = vocab(&[b"ab".to_vec()], true);
    let e = RegexConstraint::from_regex("a(b", &v)
        .unwrap_err()
        .to_string();
    assert!(e.contains("byte offset 1") && e.contains("column 2"), "{e}");
    let e = RegexConstraint::from_regex("a{3}[^\\x00-\\x{10FFFF}]", &v).unwrap_err();
    assert_eq!(e.to_string(), "the constraint matches no string");
    let limits = sampler_core::Limits::default().with_max_bf_bytes(16);
    let e = RegexConstraint::from_regex_with_limits("[abc]{1,6}", &v, &limits).unwrap_err();
    assert!(
        e.to_string().contains("max_bf_bytes = 16 (reached 20)"),
        "{e}"
    );
}
