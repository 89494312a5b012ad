//! [`PromptedModel`]: the model conditioned on a prompt, as the samplers see it.

use crate::forward::{KvCache, NoPause, Pause, log_softmax};
use crate::model::Model;
use sampler_core::{LanguageModel, LmError, TokenId, block_on};
use std::sync::Arc;

/// A [`Model`] holding a prompt, implementing [`LanguageModel`] on the CPU.
///
/// One KV cache is kept and reused by longest common prefix: a call whose context shares
/// a prefix with the previous one (the prompt always; MCMC truncations and CARS restarts
/// more) runs only the tokens after it.
pub struct PromptedModel {
    model: Arc<Model>,
    prompt: Vec<TokenId>,
    cache: KvCache,
    /// The tokens whose keys and values are in `cache`.
    cached: Vec<TokenId>,
    /// Logits after the last token of `cached`.
    last_logits: Option<Vec<f32>>,
    forward_tokens: u64,
}

impl std::fmt::Debug for PromptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptedModel")
            .field("prompt_tokens", &self.prompt.len())
            .field("cached", &self.cached.len())
            .field("forward_tokens", &self.forward_tokens)
            .finish_non_exhaustive()
    }
}

impl PromptedModel {
    /// Conditions `model` on `prompt`; the prompt must be non-empty and fit the context.
    pub fn new(model: Arc<Model>, prompt: Vec<TokenId>) -> Result<Self, LmError> {
        let ctx = model.config().context_length;
        if prompt.len() > ctx {
            return Err(LmError(format!(
                "prompt of {} tokens exceeds the context of {ctx}",
                prompt.len()
            )));
        }
        if prompt.is_empty() {
            return Err(LmError(
                "the prompt is empty: the model needs at least one token to condition on".into(),
            ));
        }
        let cache = model.new_cache();
        Ok(PromptedModel {
            model,
            prompt,
            cache,
            cached: Vec::new(),
            last_logits: None,
            forward_tokens: 0,
        })
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// The prompt tokens.
    pub fn prompt(&self) -> &[TokenId] {
        &self.prompt
    }

    /// Tokens whose keys and values are cached (prompt included).
    pub fn cached_len(&self) -> usize {
        self.cached.len()
    }

    /// Next-token logits (not normalized) after `prompt ++ prefix`.
    pub fn logits(&mut self, prefix: &[TokenId]) -> Result<&[f32], LmError> {
        block_on(self.logits_pausing(prefix, &mut NoPause))
    }

    /// Next-token log-probabilities after `prompt ++ prefix`, asking `pause` at every pause
    /// point of the forward pass whether to hand control back (see [`Pause`]).
    pub async fn logprobs_pausing(
        &mut self,
        prefix: &[TokenId],
        pause: &mut impl Pause,
    ) -> Result<Vec<f64>, LmError> {
        Ok(log_softmax(self.logits_pausing(prefix, pause).await?))
    }

    /// [`PromptedModel::logits`], pausing as `pause` says.
    pub async fn logits_pausing(
        &mut self,
        prefix: &[TokenId],
        pause: &mut impl Pause,
    ) -> Result<&[f32], LmError> {
        let total = self.prompt.len() + prefix.len();
        let ctx = self.model.config().context_length;
        if total > ctx {
            return Err(LmError(format!(
                "prompt of {} tokens and {} generated tokens exceed the context of {ctx}",
                self.prompt.len(),
                prefix.len()
            )));
        }
        let full = || self.prompt.iter().chain(prefix);
        let lcp = self
            .cached
            .iter()
            .zip(full())
            .take_while(|(a, b)| a == b)
            .count();
        if lcp == total && self.cached.len() == total && self.last_logits.is_some() {
            return Ok(self.last_logits.as_deref().unwrap_or_default());
        }
        // Re-run at least the last token: its logits are needed.
        let keep = lcp.min(total - 1);
        let new: Vec<TokenId> = full().skip(keep).copied().collect();
        self.cache.truncate(keep);
        self.cached.truncate(keep);
        self.last_logits = None;
        let logits = self
            .model
            .forward_pausing(&mut self.cache, &new, new.len() - 1, pause)
            .await;
        let logits = match logits {
            Ok(l) => l,
            Err(e) => {
                // The cache may hold part of the run; start over next time.
                self.cache.truncate(0);
                self.cached.clear();
                return Err(e);
            }
        };
        self.forward_tokens += new.len() as u64;
        self.cached.extend_from_slice(&new);
        Ok(self.last_logits.insert(logits))
    }
}

impl LanguageModel for PromptedModel {
    fn vocab_size(&self) -> usize {
        self.model.config().vocab_size
    }

    fn eos(&self) -> TokenId {
        self.model.tokenizer().eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        self.logprobs_pausing(prefix, &mut NoPause).await
    }

    fn forward_tokens(&self) -> u64 {
        self.forward_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_gguf::tiny_llama;
    use sampler_core::block_on;

    /// Pauses at every pause point, really suspending (one `Pending`), and counts them.
    struct EveryBlock(usize);

    impl Pause for EveryBlock {
        fn due(&mut self) -> bool {
            true
        }

        async fn pause(&mut self) {
            self.0 += 1;
            let mut pending = true;
            std::future::poll_fn(|cx| {
                if std::mem::take(&mut pending) {
                    cx.waker().wake_by_ref();
                    std::task::Poll::Pending
                } else {
                    std::task::Poll::Ready(())
                }
            })
            .await
        }
    }

    #[test]
    fn pausing_between_blocks_changes_nothing_but_hands_control_back() {
        let model = tiny();
        let layers = model.config().n_layers;
        let prefix = [5, 6, 2];
        let mut straight = PromptedModel::new(model.clone(), vec![1, 7]).unwrap();
        let expected = block_on(straight.logprobs(&prefix)).unwrap();
        let mut paused = PromptedModel::new(model, vec![1, 7]).unwrap();
        let mut pause = EveryBlock(0);
        let got = block_on(paused.logprobs_pausing(&prefix, &mut pause)).unwrap();
        assert_eq!(got, expected);
        // One forward pass of the 5 tokens, three pause points per block.
        assert_eq!(pause.0, 3 * layers);
        // The next token runs one more pass: as many pauses again.
        let got = block_on(paused.logprobs_pausing(&[5, 6, 2, 4], &mut pause)).unwrap();
        assert_eq!(got, block_on(straight.logprobs(&[5, 6, 2, 4])).unwrap());
        assert_eq!(pause.0, 6 * layers);
    }

    fn tiny() -> Arc<Model> {
        Arc::new(Model::from_bytes(tiny_llama()).unwrap())
    }

    /// Log-probabilities after `tokens`, computed from scratch one token at a time.
    fn fresh(model: &Model, tokens: &[TokenId]) -> Vec<f64> {
        let mut cache = model.new_cache();
        let mut last = Vec::new();
        for &t in tokens {
            last = model.forward(&mut cache, &[t], 0).unwrap();
        }
        log_softmax(&last)
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-4)
    }

    #[test]
    fn tiny_model_loads() {
        let m = tiny();
        let c = m.config();
        assert_eq!(
            (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim),
            (2, 64, 4, 2, 16)
        );
        assert_eq!((c.vocab_size, c.context_length, c.n_rot), (8, 16, 16));
        assert_eq!(m.tokenizer().encode("ab a").unwrap(), vec![6, 7]);
        assert_eq!(
            m.tokenizer().encode_special("<|im_start|>ab").unwrap(),
            vec![1, 6]
        );
    }

    #[test]
    fn cache_reuse_matches_fresh_runs_and_counts_tokens() {
        let m = tiny();
        let prompt = vec![2, 3, 4];
        let mut lm = PromptedModel::new(m.clone(), prompt.clone()).unwrap();
        let prefixes: [&[TokenId]; 7] = [&[], &[5], &[5, 6], &[5, 6, 7], &[5, 2], &[5, 2], &[]];
        let mut expected_forward = 0;
        let mut cached: Vec<TokenId> = Vec::new();
        for p in prefixes {
            let full: Vec<TokenId> = prompt.iter().chain(p).copied().collect();
            let lcp = cached.iter().zip(&full).take_while(|(a, b)| a == b).count();
            if !(lcp == full.len() && cached.len() == full.len()) {
                expected_forward += full.len() - lcp.min(full.len() - 1);
            }
            cached = full.clone();
            let got = block_on(lm.logprobs(p)).unwrap();
            assert!(close(&got, &fresh(&m, &full)), "prefix {p:?}");
            assert!((got.iter().map(|v| v.exp()).sum::<f64>() - 1.0).abs() < 1e-9);
            assert_eq!(lm.forward_tokens(), expected_forward as u64, "after {p:?}");
        }
    }

    #[test]
    fn batched_prefill_equals_token_by_token() {
        let m = tiny();
        let tokens = [2, 3, 4, 5, 6, 7, 2, 3, 4];
        let mut cache = m.new_cache();
        let all = m.forward(&mut cache, &tokens, 0).unwrap();
        for i in 0..tokens.len() {
            let row = log_softmax(&all[i * 8..(i + 1) * 8]);
            assert!(close(&row, &fresh(&m, &tokens[..=i])), "position {i}");
        }
    }

    #[test]
    fn score_is_the_sum_of_next_token_logprobs_with_eos() {
        let m = tiny();
        let (prompt, text) = ([2, 3], [4, 5, 6]);
        let mut lm = PromptedModel::new(m.clone(), prompt.to_vec()).unwrap();
        let mut want = 0.0;
        for i in 0..=text.len() {
            let lp = block_on(lm.logprobs(&text[..i])).unwrap();
            want += lp[if i < text.len() { text[i] as usize } else { 0 }];
        }
        let got = m.score(&prompt, &text).unwrap();
        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
        assert_eq!(m.token_logprobs(&prompt, &text).unwrap().len(), 4);
        assert!(m.score(&[], &text).is_err());
    }

    #[test]
    fn context_limits_are_clear_errors() {
        let m = tiny();
        let e = PromptedModel::new(m.clone(), vec![2; 17]).unwrap_err();
        assert_eq!(e.0, "prompt of 17 tokens exceeds the context of 16");
        assert!(PromptedModel::new(m.clone(), vec![]).is_err());
        let mut lm = PromptedModel::new(m.clone(), vec![2; 10]).unwrap();
        assert!(block_on(lm.logprobs(&[3; 6])).is_ok());
        let e = block_on(lm.logprobs(&[3; 7])).unwrap_err();
        assert!(e.0.contains("exceed the context of 16"), "{e}");
        let e = block_on(lm.logprobs(&[99])).unwrap_err();
        assert!(e.0.contains("outside the vocabulary"), "{e}");
        // The model still works after an error.
        assert!(block_on(lm.logprobs(&[3])).is_ok());
    }

    #[test]
    fn missing_or_wrong_files() {
        let e = Model::load("/nonexistent/model.gguf").unwrap_err();
        assert!(
            e.to_string().contains("not found") && e.to_string().contains("cargo xtask setup"),
            "{e}"
        );
        let e = Model::from_bytes(b"not a model".to_vec()).unwrap_err();
        assert!(e.to_string().contains("not a GGUF file"), "{e}");

        let mut bytes = tiny_llama();
        let at = bytes.windows(5).position(|w| w == b"llama").unwrap();
        bytes[at..at + 5].copy_from_slice(b"gpt2x");
        let e = Model::from_bytes(bytes).unwrap_err();
        assert!(
            e.to_string()
                .contains("metadata key \"llama.block_count\" is missing")
                || e.to_string().contains("not supported"),
            "{e}"
        );

        let mut bytes = tiny_llama();
        let name = b"blk.1.ffn_down.weight";
        let at = bytes.windows(name.len()).position(|w| w == name).unwrap();
        bytes[at + 6] = b'X';
        let e = Model::from_bytes(bytes).unwrap_err();
        assert!(
            e.to_string()
                .contains("tensor \"blk.1.ffn_down.weight\" is missing"),
            "{e}"
        );
    }
}
