//! Differential test of the regex constraint: at every step of seeded random walks, the
//! token mask of sampler-core's `RegexConstraint` (token trie, and the tensorized
//! automaton's mask with no budget) equals llguidance's mask for the same regex, as token
//! sets, and both agree on EOS / completeness. On the real SmolLM2 vocabulary and on small
//! random vocabularies.

use crate::common;

use common::real_vocab;
use grammars::{CfgConstraint, Compiler};
use sampler_core::{
    Constraint, RandomSource, RegexConstraint, SeededRng, TokenId, TokenSet, Vocabulary,
};

/// The regexes compared, plus every `assets/examples/*.regex`.
fn regexes() -> Vec<String> {
    let mut out: Vec<String> = [
        "[0-9]{4}-[0-9]{2}-[0-9]{2}",
        "(yes|no|maybe)",
        r"\(\d{3}\) \d{3}-\d{4}",
        r#"\{"x": -?(0|[1-9][0-9]{0,15})\}"#,
        "(the|a|an) (cat|dog|bird)( and (the|a|an) (cat|dog|bird))*",
        "[a-z]+( [a-z]+){0,5}",
        "(ab|ba)*c?",
        "[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8})?, (yes|no)",
        "(hello|help|hell) (world|word)+",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/examples");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    for f in files {
        if f.extension().is_some_and(|e| e == "regex") {
            let text = std::fs::read_to_string(&f).expect("readable regex file");
            out.push(text.trim_end_matches(['\n', '\r']).to_string());
        }
    }
    out
}

/// A printable description of token `t`.
fn describe(vocab: &Vocabulary, t: TokenId) -> String {
    let b = vocab.bytes(t);
    format!(
        "token {t} bytes {:?} ({:?}){}{}",
        b,
        String::from_utf8_lossy(b),
        if t == vocab.eos() { " [EOS]" } else { "" },
        if vocab.is_special(t) {
            " [special]"
        } else {
            ""
        },
    )
}

/// The first token on which `ours` and `reference` differ, described, or `None`.
fn first_difference(
    vocab: &Vocabulary,
    what: &str,
    ours: &TokenSet,
    reference: &TokenSet,
    context: &str,
) -> Option<String> {
    if ours.words() == reference.words() {
        return None;
    }
    let first = (0..vocab.len() as TokenId)
        .find(|&t| ours.contains(t) != reference.contains(t))
        .expect("differing words differ on some token");
    let verdict = |m: &TokenSet| {
        if m.contains(first) {
            "allowed"
        } else {
            "disallowed"
        }
    };
    Some(format!(
        "{what} differs from llguidance {context}: {} is {} by ours, {} by llguidance \
         ({} tokens ours, {} llguidance)",
        describe(vocab, first),
        verdict(ours),
        verdict(reference),
        ours.count(),
        reference.count(),
    ))
}

/// Fails with the first token on which `ours` and `reference` differ.
fn assert_same_mask(
    vocab: &Vocabulary,
    what: &str,
    ours: &TokenSet,
    reference: &TokenSet,
    context: &str,
) {
    if let Some(msg) = first_difference(vocab, what, ours, reference, context) {
        panic!("{msg}");
    }
}

/// Runs `walks` seeded random walks of up to `steps` tokens (uniform over allowed non-EOS
/// tokens, stopping at a dead end), comparing masks and completeness at every step.
/// Returns the number of masks compared.
fn differential_walks(
    regex: &str,
    vocab: &Vocabulary,
    compiler: &Compiler,
    walks: usize,
    steps: usize,
    seed: u64,
) -> usize {
    let ours = RegexConstraint::from_regex(regex, vocab)
        .unwrap_or_else(|e| panic!("{regex:?} compiles (ours): {e}"));
    let reference: CfgConstraint = compiler
        .compile_regex_reference(regex)
        .unwrap_or_else(|e| panic!("{regex:?} compiles (llguidance): {e}"));
    let mut rng = SeededRng::new(seed);
    let mut compared = 0;
    for walk in 0..walks {
        let mut s = ours.initial();
        let mut r = reference.initial();
        let mut prefix: Vec<TokenId> = Vec::new();
        for _ in 0..=steps {
            let context = format!(
                "for {regex:?} after prefix {:?} (tokens {prefix:?}, walk {walk})",
                String::from_utf8_lossy(&vocab.decode(&prefix))
            );
            let m_ref = reference.mask(&r);
            assert!(
                reference.take_error().is_none(),
                "llguidance error {context}"
            );
            let m_ours = ours.mask(&s);
            assert_same_mask(vocab, "trie mask", &m_ours, &m_ref, &context);
            let m_tensor = ours
                .regular()
                .expect("regex constraints have budget masks")
                .budget_mask(&s, usize::MAX);
            assert_same_mask(
                vocab,
                "tensorized mask (no budget)",
                &m_tensor,
                &m_ref,
                &context,
            );
            assert_eq!(
                ours.is_complete(&s),
                reference.is_complete(&r),
                "is_complete differs {context}"
            );
            assert_eq!(
                m_ref.contains(vocab.eos()),
                reference.is_complete(&r),
                "llguidance: EOS in mask iff complete {context}"
            );
            compared += 1;
            if prefix.len() == steps {
                break;
            }
            let allowed: Vec<TokenId> = m_ours.iter().filter(|&t| t != vocab.eos()).collect();
            if allowed.is_empty() {
                assert!(
                    ours.is_complete(&s),
                    "dead end that is not complete {context}"
                );
                break;
            }
            let t = allowed[(rng.uniform() * allowed.len() as f64) as usize % allowed.len()];
            s = ours.advance(&s, t).expect("masked token advances (ours)");
            r = reference
                .advance(&r, t)
                .unwrap_or_else(|| panic!("llguidance refuses {} {context}", describe(vocab, t)));
            prefix.push(t);
        }
    }
    compared
}

/// A random vocabulary: the printable ASCII bytes (so every regex here stays reachable),
/// `extra` random multi-byte tokens drawn from the regexes' characters and a few others,
/// one special token and EOS.
fn random_vocab(seed: u64, extra: usize) -> Vocabulary {
    const CHARS: &[u8] = b"0123456789-() {}\":xyesnomaybthcdgirlwABCZ,\xc3\xa9\xff";
    let mut rng = SeededRng::new(seed);
    let mut tokens: Vec<Vec<u8>> = (b' '..=b'~').map(|b| vec![b]).collect();
    for _ in 0..extra {
        let len = 2 + (rng.next_u64() % 5) as usize;
        let tok: Vec<u8> = (0..len)
            .map(|_| CHARS[(rng.next_u64() % CHARS.len() as u64) as usize])
            .collect();
        if !tokens.contains(&tok) {
            tokens.push(tok);
        }
    }
    // Plausible multi-byte tokens of the regexes, so walks take long steps too.
    for w in [
        "2024", "-0", "12", "yes", "may", "be", "no", "(5", ") ", "{\"", "x\"", "\": ", "-1", "0}",
        " the", " and", "cat", "dog", "hell", "help", "o ", " wor", "ld", "ab", "ba",
    ] {
        let w = w.as_bytes().to_vec();
        if !tokens.contains(&w) {
            tokens.push(w);
        }
    }
    tokens.push(b"<special>".to_vec());
    tokens.push(b"<eos>".to_vec());
    let eos = tokens.len() as TokenId - 1;
    Vocabulary::new(tokens, eos, &[eos - 1])
}

#[test]
fn masks_equal_llguidance_on_the_real_vocabulary() {
    let vocab = real_vocab();
    let compiler = Compiler::new(vocab).expect("compiler");
    let mut total = 0;
    for (i, re) in regexes().iter().enumerate() {
        let n = differential_walks(re, vocab, &compiler, 20, 30, 1000 + i as u64);
        assert!(n >= 20, "{re:?}: only {n} masks compared");
        total += n;
    }
    eprintln!("real vocabulary: {total} masks compared");
}

#[test]
fn masks_equal_llguidance_on_small_random_vocabularies() {
    let mut total = 0;
    for seed in 0..6u64 {
        let vocab = random_vocab(seed, 40 + 40 * seed as usize);
        let compiler = Compiler::new(&vocab).expect("compiler");
        for (i, re) in regexes().iter().enumerate() {
            let n = differential_walks(re, &vocab, &compiler, 25, 40, seed * 100 + i as u64);
            assert!(n >= 25, "{re:?}: only {n} masks compared");
            total += n;
        }
    }
    eprintln!("random vocabularies: {total} masks compared");
}

#[test]
fn a_differing_mask_is_reported_with_the_token() {
    // The comparison itself must be able to fail: masks of two different regexes differ.
    let vocab = random_vocab(1, 10);
    let compiler = Compiler::new(&vocab).expect("compiler");
    let ours = RegexConstraint::from_regex("(yes|no)", &vocab).unwrap();
    let other = compiler.compile_regex_reference("(yes|maybe)").unwrap();
    let msg = first_difference(
        &vocab,
        "trie mask",
        &ours.mask(&ours.initial()),
        &other.mask(&other.initial()),
        "(test)",
    )
    .expect("different languages give different masks");
    assert!(msg.contains("token") && msg.contains("bytes"), "{msg}");
    assert!(
        first_difference(
            &vocab,
            "same",
            &ours.mask(&ours.initial()),
            &ours.mask(&ours.initial()),
            ""
        )
        .is_none()
    );
}
