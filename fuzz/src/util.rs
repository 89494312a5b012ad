//! Small helpers shared by the targets.

use sampler_core::Vocabulary;
use std::sync::OnceLock;

/// The input as text: targets whose front end takes a `&str` read the valid UTF-8 prefix
/// (the browser and the CLI hand them strings, never raw bytes).
pub fn text(data: &[u8]) -> &str {
    match std::str::from_utf8(data) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// A byte-level vocabulary: the 256 single bytes, a few multi-byte tokens that straddle
/// grammar terminals, and EOS last.
pub fn vocab() -> &'static Vocabulary {
    static V: OnceLock<Vocabulary> = OnceLock::new();
    V.get_or_init(|| {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for t in ["ab", "the", " {", "\":", "12", "true", "\"a\"", "<|eos|>"] {
            tokens.push(t.as_bytes().to_vec());
        }
        let eos = tokens.len() as u32 - 1;
        Vocabulary::new(tokens, eos, &[eos])
    })
}

/// Token choices read from the input's tail: a few steps to walk a compiled constraint.
pub fn steps(data: &[u8]) -> impl Iterator<Item = usize> + '_ {
    data.iter().rev().take(16).map(|&b| b as usize)
}
