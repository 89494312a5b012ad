//! Shared test helpers: a small byte-level vocabulary, the real SmolLM2 vocabulary, and
//! walks of a constraint along a token sequence.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use grammars::{CfgConstraint, Compiler, Format};
use sampler_core::{Constraint, TokenId, Vocabulary};

/// Multi-byte tokens of the small vocabulary (besides the 256 single bytes).
const EXTRA: &[&str] = &[
    "ab",
    "the",
    " the",
    "12",
    "00",
    "true",
    "false",
    "null",
    "\": ",
    "{\"",
    "\"}",
    ", ",
    "  ",
    "\n",
    "int ",
    "return",
    "1. ",
    "e4",
    "O-O",
    "<!DOCTYPE",
    "</",
    "/>",
];

/// A small vocabulary: every byte, some multi-byte tokens, then EOS (last).
pub fn small_vocab() -> &'static Vocabulary {
    static V: OnceLock<Vocabulary> = OnceLock::new();
    V.get_or_init(|| {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        tokens.extend(EXTRA.iter().map(|s| s.as_bytes().to_vec()));
        tokens.push(b"<eos>".to_vec());
        let eos = tokens.len() as TokenId - 1;
        Vocabulary::new(tokens, eos, &[])
    })
}

/// Greedy longest-match tokenization over the small vocabulary.
pub fn small_encode(text: &str) -> Vec<TokenId> {
    let v = small_vocab();
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let mut best = (bytes[i] as TokenId, 1);
        for t in 256..v.len() as TokenId - 1 {
            let b = v.bytes(t);
            if b.len() > best.1 && bytes[i..].starts_with(b) {
                best = (t, b.len());
            }
        }
        out.push(best.0);
        i += best.1;
    }
    out
}

/// The model file's path.
pub fn model_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// The real SmolLM2 tokenizer.
pub fn tokenizer() -> &'static lm::Tokenizer {
    static T: OnceLock<lm::Tokenizer> = OnceLock::new();
    T.get_or_init(|| {
        let bytes = std::fs::read(model_path()).expect("model file present (assets/models)");
        let g = lm::gguf::Gguf::parse(&bytes).expect("valid gguf");
        lm::Tokenizer::from_gguf(&g).expect("tokenizer")
    })
}

/// The real SmolLM2 vocabulary.
pub fn real_vocab() -> &'static Vocabulary {
    static V: OnceLock<Vocabulary> = OnceLock::new();
    V.get_or_init(|| tokenizer().vocabulary())
}

/// A compiler for the small vocabulary.
pub fn small_compiler() -> &'static Compiler {
    static C: OnceLock<Compiler> = OnceLock::new();
    C.get_or_init(|| Compiler::new(small_vocab()).expect("compiler"))
}

/// A compiler for the real vocabulary.
pub fn real_compiler() -> &'static Compiler {
    static C: OnceLock<Compiler> = OnceLock::new();
    C.get_or_init(|| Compiler::new(real_vocab()).expect("compiler"))
}

/// Whether the constraint accepts `tokens` followed by EOS, checking at every step that
/// `allows` agrees with `advance` and that the mask contains each token walked.
pub fn accepts_tokens(c: &CfgConstraint, tokens: &[TokenId]) -> bool {
    let mut s = c.initial();
    for &t in tokens {
        let allowed = c.allows(&s, t);
        let next = c.advance(&s, t);
        assert_eq!(
            allowed,
            next.is_some(),
            "allows and advance disagree on token {t}"
        );
        assert_eq!(
            c.mask(&s).contains(t),
            allowed,
            "mask and allows disagree on token {t}"
        );
        match next {
            Some(n) => s = n,
            None => return false,
        }
    }
    let complete = c.is_complete(&s);
    assert_eq!(
        c.mask(&s).contains(c.eos()),
        complete,
        "EOS in mask iff complete"
    );
    assert_eq!(c.advance(&s, c.eos()).is_some(), complete);
    assert!(
        c.take_error().is_none(),
        "no llguidance error while walking"
    );
    complete
}

/// Whether `text` is accepted through the small vocabulary.
pub fn small_accepts(c: &CfgConstraint, text: &str) -> bool {
    accepts_tokens(c, &small_encode(text))
}

/// Whether `text` is accepted through the real tokenizer.
pub fn real_accepts(c: &CfgConstraint, text: &str) -> bool {
    let toks = tokenizer().encode(text).expect("encode");
    accepts_tokens(c, &toks)
}

/// Compiles `source` for both vocabularies and checks every accepted and rejected string
/// on both.
pub fn check_language(source: &str, format: Format, accept: &[&str], reject: &[&str]) {
    let small = small_compiler()
        .compile(source, Some(format))
        .expect("compiles (small vocab)");
    let real = real_compiler()
        .compile(source, Some(format))
        .expect("compiles (real vocab)");
    for s in accept {
        assert!(small_accepts(&small, s), "small vocab should accept {s:?}");
        assert!(real_accepts(&real, s), "SmolLM2 vocab should accept {s:?}");
    }
    for s in reject {
        assert!(!small_accepts(&small, s), "small vocab should reject {s:?}");
        assert!(!real_accepts(&real, s), "SmolLM2 vocab should reject {s:?}");
    }
}
