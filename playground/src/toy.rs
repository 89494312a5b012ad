//! Toy mode: the analytic language models of `sampler_core::toy` (its registry,
//! [`ToyModel`], is the one the command line reads `--model toy:…` from), built instantly
//! with no download.

pub use sampler_core::toy::{RANDOM_ORDER, ToyLm, ToyModel};
use sampler_core::{TokenId, Vocabulary};

/// G_sk as a regex over the toy vocabulary `0`, `1`: `00000` or five digits starting with 1.
pub const GSK_REGEX: &str = "00000|1[01]{4}";

/// The model and its vocabulary, ready for a run.
pub fn build(toy: ToyModel) -> (ToyLm, Vocabulary) {
    (toy.lm(), toy.vocabulary())
}

/// A display name for a token of a toy vocabulary (`⟨eos⟩` for EOS).
pub fn token_label(vocab: &Vocabulary, t: TokenId) -> String {
    if (t as usize) >= vocab.len() {
        return format!("⟨{t}⟩");
    }
    if t == vocab.eos() {
        return "⟨eos⟩".into();
    }
    String::from_utf8_lossy(vocab.bytes(t)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_labels_name_eos_and_letters() {
        let v = ToyModel::Random { seed: 0, vocab: 3 }.vocabulary();
        assert_eq!(token_label(&v, 3), "⟨eos⟩");
        assert_eq!(token_label(&v, 1), "b");
        assert_eq!(token_label(&v, 9), "⟨9⟩");
    }
}
