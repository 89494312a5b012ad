//! The skewed grammar G_sk of the ASAp paper (seed 004, Fig. 1, Ex. 2-3).
//!
//! G_sk accepts `00000` and every length-5 string over {0, 1} that starts with `1`. The LM
//! puts 0.45 on `0` and 0.55 on `1` at each of the five positions, except that after
//! `0000` the next `0` has probability 0.45·10⁻⁸; after five tokens it ends. Token masking
//! picks `0` first 45% of the time and is then trapped into `00000`, whose probability
//! under the constrained target P^L is about 10⁻⁹: the bias the playground teaches.

use super::{FiniteLanguage, FnLm};
use crate::{TokenId, Vocabulary};

/// Token ids of the G_sk vocabulary: `0`, `1`, EOS.
const ZERO: TokenId = 0;
const ONE: TokenId = 1;
const EOS: TokenId = 2;

/// The three-token vocabulary of G_sk: `"0"`, `"1"` and EOS.
pub fn gsk_vocabulary() -> Vocabulary {
    Vocabulary::new(vec![b"0".to_vec(), b"1".to_vec(), Vec::new()], EOS, &[EOS])
}

/// The G_sk language model's type: a plain function of the prefix.
pub type GskLm = FnLm<fn(&[TokenId]) -> Vec<f64>>;

/// The G_sk language model (see the module docs for its numbers).
pub fn gsk_lm() -> GskLm {
    FnLm::new(3, EOS, gsk_probs)
}

/// G_sk's next-token probabilities after `prefix`.
fn gsk_probs(prefix: &[TokenId]) -> Vec<f64> {
    let mut p = vec![0.0; 3];
    if prefix.len() >= 5 || prefix.contains(&EOS) {
        p[EOS as usize] = 1.0;
    } else if prefix == [ZERO; 4] {
        p[ZERO as usize] = 0.45e-8;
        p[ONE as usize] = 1.0 - 0.45e-8;
    } else {
        p[ZERO as usize] = 0.45;
        p[ONE as usize] = 0.55;
    }
    p
}

/// The G_sk constraint over [`gsk_vocabulary`].
pub fn gsk_constraint() -> FiniteLanguage {
    let mut words = vec![b"00000".to_vec()];
    for i in 0..16u8 {
        let mut w = b"1".to_vec();
        for bit in (0..4).rev() {
            w.push(if (i >> bit) & 1 == 1 { b'1' } else { b'0' });
        }
        words.push(w);
    }
    FiniteLanguage::new(gsk_vocabulary(), words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Constraint, LanguageModel, block_on};

    #[test]
    fn language_has_seventeen_strings_and_lm_sums_to_one() {
        let c = gsk_constraint();
        assert_eq!(c.words().len(), 17);
        let mut lm = gsk_lm();
        for prefix in [&[][..], &[0, 0, 0, 0], &[1, 0, 1], &[1, 1, 1, 1, 1]] {
            let lp = block_on(lm.logprobs(prefix)).unwrap();
            let s: f64 = lp.iter().map(|l| l.exp()).sum();
            assert!((s - 1.0).abs() < 1e-12);
        }
        let s = c.initial();
        assert!(c.allows(&s, ZERO) && c.allows(&s, ONE) && !c.allows(&s, EOS));
    }
}
