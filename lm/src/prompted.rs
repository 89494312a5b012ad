//! [`PromptedModel`]: the model conditioned on a prompt, as the samplers see it.

use crate::forward::{KvCache, NoPause, Pause, log_softmax};
use crate::kv_stash::Slot;
use crate::model::Model;
use crate::slots::{SlotCaches, Slots};
use sampler_core::{LanguageModel, LmError, TokenId, block_on};
use std::sync::Arc;

/// KV caches a [`PromptedModel`] keeps unless told otherwise ([`PromptedModel::with_slots`]).
pub const DEFAULT_SLOTS: usize = 16;

/// A [`Model`] holding a prompt, implementing [`LanguageModel`] on the CPU.
///
/// It keeps several KV caches ("slots"), each the keys and values of one token sequence
/// starting with the prompt. A call runs only the tokens after the longest prefix some
/// slot already holds: a slot that the new sequence extends grows in place; a slot it
/// branches from is left alone and its shared prefix is copied into a free (or the least
/// recently used) slot (the rule is `crate::slots`, which the GPU engines' slots follow
/// too). So SMC particles, CARS restarts and MCMC truncations each find their own history,
/// and going back to an earlier branch costs nothing while its slot lives.
/// [`LanguageModel::logprobs_batch`] runs the new tokens of every sequence in one pass
/// whose matrix products take them together.
pub struct PromptedModel {
    prompt: Vec<TokenId>,
    slots: Slots,
    caches: CpuCaches,
}

/// The CPU KV caches behind a [`PromptedModel`]'s slots.
struct CpuCaches {
    model: Arc<Model>,
    caches: Vec<KvCache>,
}

impl SlotCaches for CpuCaches {
    fn capacity(&self) -> usize {
        usize::MAX
    }

    fn context(&self) -> (usize, &'static str) {
        (self.model.config().context_length, "the context")
    }

    fn add(&mut self) {
        self.caches.push(self.model.new_cache());
    }

    fn copy_prefix(&mut self, from: usize, to: usize, keep: usize) -> Result<(), LmError> {
        let (a, b) = two_mut(&mut self.caches, to, from);
        a.clone_prefix_from(b, keep);
        Ok(())
    }

    fn truncate(&mut self, slot: usize, keep: usize) {
        self.caches[slot].truncate(keep);
    }

    async fn forward(
        &mut self,
        runs: &[(usize, &[TokenId])],
        pause: &mut impl Pause,
    ) -> Result<Vec<Vec<f32>>, LmError> {
        // The runs' caches in slot order (the runs come in that order).
        let tokens: Vec<&[TokenId]> = runs.iter().map(|r| r.1).collect();
        let mut caches: Vec<&mut KvCache> = self
            .caches
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| runs.iter().any(|r| r.0 == *i))
            .map(|(_, c)| c)
            .collect();
        self.model
            .forward_batch_pausing(&mut caches, &tokens, pause)
            .await
    }
}

impl std::fmt::Debug for PromptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptedModel")
            .field("prompt_tokens", &self.prompt.len())
            .field("slots", &self.slots.states.len())
            .field("forward_tokens", &self.slots.forward_tokens)
            .finish_non_exhaustive()
    }
}

impl PromptedModel {
    /// Conditions `model` on `prompt`; the prompt must be non-empty and fit the context.
    pub fn new(model: Arc<Model>, prompt: Vec<TokenId>) -> Result<Self, LmError> {
        let ctx = model.config().context_length;
        crate::prefix_reuse::check_prompt(&prompt, ctx, "the context")?;
        // The slots a previous model left (each holds its own sequence, which the slot
        // rule matches against this prompt's sequences like any other).
        let mut kept = model.stash.take();
        kept.truncate(DEFAULT_SLOTS);
        let (states, caches) = kept.into_iter().map(|s| (s.state, s.cache)).unzip();
        Ok(PromptedModel {
            prompt,
            slots: Slots::new(states, DEFAULT_SLOTS),
            caches: CpuCaches { model, caches },
        })
    }

    /// Keeps at most `n` KV caches (at least 1; 1 is a single cache reused by longest
    /// common prefix).
    pub fn with_slots(mut self, n: usize) -> Self {
        self.slots.max = n.max(1);
        self.slots.states.truncate(self.slots.max);
        self.caches.caches.truncate(self.slots.max);
        self
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.caches.model
    }

    /// The prompt tokens.
    pub fn prompt(&self) -> &[TokenId] {
        &self.prompt
    }

    /// Tokens cached in the most recently used slot (prompt included).
    pub fn cached_len(&self) -> usize {
        self.slots.cached_len()
    }

    /// Bytes of keys and values held in all slots, each page shared between slots (the
    /// prompt, common prefixes) counted once.
    pub fn cache_bytes(&self) -> usize {
        KvCache::unique_bytes(self.caches.caches.iter())
    }

    /// What the slots would hold if each kept its own copy of every position (no page
    /// shared): the memory the shared pages save, for benchmarks.
    pub fn cache_bytes_unshared(&self) -> usize {
        self.caches.caches.iter().map(KvCache::bytes).sum()
    }

    /// Next-token logits (not normalized) after `prompt ++ prefix`.
    pub fn logits(&mut self, prefix: &[TokenId]) -> Result<Vec<f32>, LmError> {
        block_on(self.logits_pausing(prefix, &mut NoPause))
    }

    /// Next-token log-probabilities after `prompt ++ prefix`, asking `pause` at every pause
    /// point of the forward pass whether to hand control back (see [`Pause`]).
    pub async fn logprobs_pausing(
        &mut self,
        prefix: &[TokenId],
        pause: &mut impl Pause,
    ) -> Result<Vec<f64>, LmError> {
        Ok(log_softmax(&self.logits_pausing(prefix, pause).await?))
    }

    /// [`PromptedModel::logits`], pausing as `pause` says.
    pub async fn logits_pausing(
        &mut self,
        prefix: &[TokenId],
        pause: &mut impl Pause,
    ) -> Result<Vec<f32>, LmError> {
        Ok(self.run(&[prefix], pause).await?.remove(0))
    }

    /// Log-probabilities after each of `prefixes`, their new tokens run in one batched
    /// pass (or one per [`PromptedModel::with_slots`] distinct sequences), pausing as
    /// `pause` says.
    pub async fn logprobs_batch_pausing(
        &mut self,
        prefixes: &[&[TokenId]],
        pause: &mut impl Pause,
    ) -> Result<Vec<Vec<f64>>, LmError> {
        let logits = self.run(prefixes, pause).await?;
        // Resampling repeats prefixes (the slots ran each once): normalize each distinct
        // one once and copy it to its repeats.
        let group = sampler_core::samplers::util::first_appearance(prefixes);
        let mut firsts: Vec<&[f32]> = Vec::with_capacity(prefixes.len());
        for (l, &g) in logits.iter().zip(&group) {
            if g == firsts.len() {
                firsts.push(l);
            }
        }
        let mut left = vec![0usize; firsts.len()];
        group.iter().for_each(|&g| left[g] += 1);
        let mut distinct: Vec<Option<Vec<f64>>> =
            crate::forward::parallel_map(&firsts, |l| Some(log_softmax(l)));
        Ok(group
            .iter()
            .map(|&g| {
                left[g] -= 1;
                if left[g] == 0 {
                    distinct[g].take().expect("each group's last use takes it")
                } else {
                    distinct[g]
                        .clone()
                        .expect("taken only at the group's last use")
                }
            })
            .collect())
    }

    /// The logits after each `prompt ++ prefix` (the slot rule of `crate::slots`).
    async fn run(
        &mut self,
        prefixes: &[&[TokenId]],
        pause: &mut impl Pause,
    ) -> Result<Vec<Vec<f32>>, LmError> {
        self.slots
            .run(&mut self.caches, &self.prompt, prefixes, pause)
            .await
    }
}

impl Drop for PromptedModel {
    /// Leaves the caches to the next model when the model keeps them.
    fn drop(&mut self) {
        let states = std::mem::take(&mut self.slots.states);
        let caches = std::mem::take(&mut self.caches.caches);
        let slots = states
            .into_iter()
            .zip(caches)
            .map(|(state, cache)| Slot { state, cache })
            .collect();
        self.caches.model.stash.keep(slots);
    }
}

/// Mutable access to two different elements.
fn two_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &T) {
    debug_assert_ne!(a, b);
    if a < b {
        let (l, r) = v.split_at_mut(b);
        (&mut l[a], &r[0])
    } else {
        let (l, r) = v.split_at_mut(a);
        (&mut r[0], &l[b])
    }
}

impl LanguageModel for PromptedModel {
    fn vocab_size(&self) -> usize {
        self.caches.model.config().vocab_size
    }

    fn eos(&self) -> TokenId {
        self.caches.model.tokenizer().eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        self.logprobs_pausing(prefix, &mut NoPause).await
    }

    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        self.logprobs_batch_pausing(prefixes, &mut NoPause).await
    }

    fn forward_tokens(&self) -> u64 {
        self.slots.forward_tokens
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

    use crate::gguf::GgmlType;

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
        let s = m.summary();
        assert!(s.starts_with("llama · 0.0"), "{s}");
        assert!(s.ends_with("Q4_1 ×14, F32 ×5, Q8_0 ×1"), "{s}");
        let k = Model::from_bytes(crate::test_gguf::tiny_llama_typed(
            256,
            &[GgmlType::Q8_0, GgmlType::Q4K],
        ))
        .unwrap();
        assert!(
            k.summary().ends_with(
                "Q4_K ×14, F32 ×5, Q8_0 ×1 (types without kernels decoded to f32 row by row)"
            ),
            "{}",
            k.summary()
        );
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

    /// With the model keeping caches, the next prompted model starts from the last one's
    /// slots: the same prompt runs nothing again, a prompt sharing a prefix runs only its
    /// tail, the answers are those of a fresh run; without, nothing is shared.
    #[test]
    fn kept_caches_carry_over_to_the_next_prompted_model() {
        for keep in [false, true] {
            let mut m = Model::from_bytes(tiny_llama()).unwrap();
            m.set_keep_caches(keep);
            let m = Arc::new(m);
            let run = |prompt: Vec<TokenId>, p: &[TokenId]| {
                let mut lm = PromptedModel::new(m.clone(), prompt.clone()).unwrap();
                let got = block_on(lm.logprobs(p)).unwrap();
                let full: Vec<TokenId> = prompt.iter().chain(p).copied().collect();
                assert!(close(&got, &fresh(&m, &full)), "{prompt:?} {p:?}");
                lm.forward_tokens()
            };
            assert_eq!(run(vec![2, 3, 4], &[5, 6]), 5);
            let kept = |cost: u64| if keep { cost } else { u64::MAX };
            let again = run(vec![2, 3, 4], &[]);
            assert_eq!(again, kept(1).min(3), "keep {keep}: the prompt again");
            let tail = run(vec![2, 3, 7], &[5]);
            assert_eq!(tail, kept(2).min(4), "keep {keep}: a prompt sharing [2, 3]");
        }
    }

    #[test]
    fn branches_keep_their_caches() {
        let m = tiny();
        let mut lm = PromptedModel::new(m.clone(), vec![2, 3])
            .unwrap()
            .with_slots(4);
        let mut step = |p: &[TokenId], cost: u64| {
            let before = lm.forward_tokens();
            let got = block_on(lm.logprobs(p)).unwrap();
            let full: Vec<TokenId> = [2, 3].iter().chain(p).copied().collect();
            assert!(close(&got, &fresh(&m, &full)), "prefix {p:?}");
            assert_eq!(lm.forward_tokens() - before, cost, "tokens run for {p:?}");
        };
        step(&[5, 6, 7], 5);
        step(&[5, 2], 1); // branches after [2, 3, 5]: its prefix is copied, not re-run
        step(&[5, 6, 7], 0); // the first branch is still cached
        step(&[5, 6], 1); // a prefix of a branch: its last token runs again, in a copy
        step(&[5, 6, 7, 4], 1);
        step(&[5, 2, 6], 1);
        assert!(lm.cache_bytes() > 0);
    }

    #[test]
    fn batches_match_one_sequence_at_a_time_and_share_work() {
        let m = tiny();
        for slots in [1, 2, 3, 16] {
            let mut lm = PromptedModel::new(m.clone(), vec![2, 3])
                .unwrap()
                .with_slots(slots);
            let batches: [&[&[TokenId]]; 3] = [
                &[&[5], &[5, 6], &[4, 4, 4], &[5]],
                &[&[5, 6, 7], &[5, 2], &[4, 4, 4, 4], &[], &[5, 6, 7]],
                &[&[7], &[6], &[5], &[4], &[3]],
            ];
            for b in batches {
                let got = block_on(lm.logprobs_batch(b)).unwrap();
                assert_eq!(got.len(), b.len());
                for (p, g) in b.iter().zip(&got) {
                    let full: Vec<TokenId> = [2, 3].iter().chain(*p).copied().collect();
                    assert!(close(g, &fresh(&m, &full)), "slots {slots}, prefix {p:?}");
                }
            }
            if slots == 16 {
                // Batch 1: 3 + 4 + 5 (nothing cached yet; the duplicate [5] runs once);
                // batch 2: one token each after its cached prefix, and the prompt's last
                // token for [] (copied from a slot of the batch); batch 3: one token each.
                assert_eq!(lm.forward_tokens(), 12 + 4 + 5);
            }
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
        assert_eq!(
            e.to_string(),
            "model: architecture \"gpt2x\" is not supported (supported: llama, qwen2, qwen3)"
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
