//! The llguidance token environment (token trie) built from a [`Vocabulary`].

use std::sync::Arc;

use llguidance::toktrie::{TokEnv, TokRxInfo, TokTrie, TokenizerEnv};
use sampler_core::{TokenId, Vocabulary};

/// A token environment whose tokens are the vocabulary's byte strings.
///
/// EOS and special tokens get llguidance's special-token marker (byte 0xFF) in front, so
/// grammars never match them; EOS is allowed exactly when the grammar accepts. It reports
/// itself as non-canonical, so llguidance never narrows a mask to one "forced" token:
/// every token whose bytes continue a valid prefix stays allowed (faithful masks).
struct VocabEnv {
    trie: TokTrie,
}

impl TokenizerEnv for VocabEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }
    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie.greedy_tokenize(s)
    }
    fn tokenize_is_canonical(&self) -> bool {
        false
    }
}

/// Builds the token environment for `vocab`.
pub fn tok_env(vocab: &Vocabulary) -> TokEnv {
    let words: Vec<Vec<u8>> = (0..vocab.len() as TokenId)
        .map(|t| {
            if t == vocab.eos() || vocab.is_special(t) {
                let mut w = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                if vocab.bytes(t).is_empty() {
                    w.extend_from_slice(format!("[{t}]").as_bytes());
                } else {
                    w.extend_from_slice(vocab.bytes(t));
                }
                w
            } else {
                vocab.bytes(t).to_vec()
            }
        })
        .collect();
    let info = TokRxInfo::new(words.len() as u32, vocab.eos());
    Arc::new(VocabEnv {
        trie: TokTrie::from(&info, &words),
    })
}
