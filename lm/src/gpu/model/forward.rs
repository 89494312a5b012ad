//! The forward passes of a [`GpuModel`]: one sequence after slot 0's cache (logits read
//! back, or left on the GPU for what follows in the same pass), several slots' sequences in
//! one pass, and the submission they all record.

use super::GpuModel;
use super::activations::CHUNK;
use sampler_core::{LmError, TokenId};
use shaders::{GpuError, Place, Step, wgpu};

impl GpuModel {
    /// Runs `tokens` after the cached positions (appending theirs) and returns the logits
    /// of positions `logits_from..tokens.len()`, `vocab_size` each, as
    /// [`crate::Model::forward`] does on the CPU.
    pub async fn forward(
        &mut self,
        tokens: &[TokenId],
        logits_from: usize,
    ) -> Result<Vec<f32>, LmError> {
        self.check_tokens(tokens)?;
        let vocab = self.config.vocab_size;
        let mut logits = Vec::with_capacity(tokens.len().saturating_sub(logits_from) * vocab);
        for (i, chunk) in tokens.chunks(CHUNK).enumerate() {
            let from = logits_from.saturating_sub(i * CHUNK).min(chunk.len());
            let run = self.run_chunk(chunk, from).await;
            match run {
                Ok(l) => logits.extend(l),
                Err(e) => {
                    self.lens[0] = 0;
                    return Err(LmError(e.to_string()));
                }
            }
        }
        Ok(logits)
    }

    /// Runs several sequences in one pass per `CHUNK` (16) tokens: each `(slot, tokens)`
    /// (distinct slots, each with a token or more) runs `tokens` after the positions in its
    /// slot, appending theirs, and gets the logits after its last token, `vocab_size`
    /// floats. Every product takes all the runs' tokens together; each token attends to
    /// its own slot. The runs' last tokens go last, so the output head runs for them only.
    /// On an error the runs' slots are emptied.
    pub async fn forward_slots(
        &mut self,
        runs: &[(usize, &[TokenId])],
    ) -> Result<Vec<Vec<f32>>, LmError> {
        self.check_runs(runs)?;
        let base = |slot: usize| (slot * self.max_ctx) as u32;
        // Every run's tokens but its last, then every run's last token: a token's
        // predecessors run in its submission or an earlier one.
        let mut order: Vec<(TokenId, Place)> = Vec::new();
        for &(slot, tokens) in runs {
            let past = self.lens[slot];
            for (i, &t) in tokens[..tokens.len() - 1].iter().enumerate() {
                let pos = (past + i) as u32;
                order.push((
                    t,
                    Place {
                        pos,
                        base: base(slot),
                    },
                ));
            }
        }
        let heads_from = order.len();
        for &(slot, tokens) in runs {
            let pos = (self.lens[slot] + tokens.len() - 1) as u32;
            order.push((
                tokens[tokens.len() - 1],
                Place {
                    pos,
                    base: base(slot),
                },
            ));
        }
        let vocab = self.config.vocab_size;
        let mut out = Vec::with_capacity(runs.len());
        for (i, chunk) in order.chunks(CHUNK).enumerate() {
            let first = heads_from.saturating_sub(i * CHUNK).min(chunk.len());
            let (tokens, places): (Vec<TokenId>, Vec<Place>) = chunk.iter().copied().unzip();
            let run = async {
                self.dispatch(
                    &tokens,
                    &places,
                    first,
                    None::<fn(&mut wgpu::ComputePass<'_>)>,
                )?;
                match first < chunk.len() {
                    true => {
                        let n = (chunk.len() - first) * vocab;
                        self.gpu.read_f32(&self.act.logits, 0, n).await
                    }
                    false => Ok(Vec::new()),
                }
            };
            match run.await {
                Ok(l) => out.extend(l.chunks_exact(vocab).map(<[f32]>::to_vec)),
                Err(e) => {
                    for &(slot, _) in runs {
                        self.lens[slot] = 0;
                    }
                    return Err(LmError(e.to_string()));
                }
            }
        }
        for &(slot, tokens) in runs {
            self.lens[slot] += tokens.len();
        }
        Ok(out)
    }

    /// `Err` unless `runs` name distinct slots, each with a token or more that fit its
    /// slot and the vocabulary.
    fn check_runs(&self, runs: &[(usize, &[TokenId])]) -> Result<(), LmError> {
        let slots = self.slots();
        for (i, &(slot, tokens)) in runs.iter().enumerate() {
            if slot >= slots {
                return Err(LmError(format!(
                    "slot {slot} is outside the {slots} GPU KV caches"
                )));
            }
            if runs[..i].iter().any(|r| r.0 == slot) {
                return Err(LmError(format!("slot {slot} is run twice in one pass")));
            }
            if tokens.is_empty() {
                return Err(LmError(
                    "a sequence of the batch has no token to run".into(),
                ));
            }
            self.check_tokens_after(self.lens[slot], tokens)?;
        }
        Ok(())
    }

    /// Runs `tokens` (at least one) after the cached positions, as [`GpuModel::forward`]
    /// does, but leaves the logits of the last one on the GPU, at float 0 of
    /// [`GpuModel::logits_buffer`], instead of reading them back.
    pub fn forward_resident(&mut self, tokens: &[TokenId]) -> Result<(), LmError> {
        self.forward_resident_then(tokens, |_| {})
    }

    /// [`GpuModel::forward_resident`], with `then` recording more dispatches (which may
    /// read the logits) at the end of the last chunk's compute pass: one submission for
    /// the forward pass and what follows it.
    pub fn forward_resident_then(
        &mut self,
        tokens: &[TokenId],
        then: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) -> Result<(), LmError> {
        self.check_tokens(tokens)?;
        if tokens.is_empty() {
            return Err(LmError("a forward pass needs at least one token".into()));
        }
        let chunks = tokens.len().div_ceil(CHUNK);
        let mut then = Some(then);
        for (i, chunk) in tokens.chunks(CHUNK).enumerate() {
            let last = i + 1 == chunks;
            let first = if last { chunk.len() - 1 } else { chunk.len() };
            let after = if last { then.take() } else { None };
            if let Err(e) = self.dispatch_chunk(chunk, first, after) {
                self.lens[0] = 0;
                return Err(LmError(e.to_string()));
            }
        }
        Ok(())
    }

    /// The buffer the output head writes its logits to: `vocab_size` floats per token
    /// whose logits were asked for, from float 0.
    pub fn logits_buffer(&self) -> &wgpu::Buffer {
        &self.act.logits
    }

    /// `Err` when `tokens` would overflow the GPU context or hold an id outside the
    /// vocabulary.
    fn check_tokens(&self, tokens: &[TokenId]) -> Result<(), LmError> {
        self.check_tokens_after(self.lens[0], tokens)
    }

    /// [`GpuModel::check_tokens`] for `tokens` after `past` positions of a slot.
    fn check_tokens_after(&self, past: usize, tokens: &[TokenId]) -> Result<(), LmError> {
        let total = past + tokens.len();
        if total > self.max_ctx {
            return Err(LmError(format!(
                "context of {total} tokens exceeds the GPU context of {}",
                self.max_ctx
            )));
        }
        let vocab = self.config.vocab_size;
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
            return Err(LmError(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        Ok(())
    }

    /// One submission: `chunk` after the cache, logits of its tokens from `first`.
    async fn run_chunk(&mut self, chunk: &[TokenId], first: usize) -> Result<Vec<f32>, GpuError> {
        self.dispatch_chunk(chunk, first, None::<fn(&mut wgpu::ComputePass<'_>)>)?;
        let n = chunk.len();
        if first < n {
            self.gpu
                .read_f32(&self.act.logits, 0, (n - first) * self.config.vocab_size)
                .await
        } else {
            Ok(Vec::new())
        }
    }

    /// Records and submits the forward pass of `chunk` after slot 0's cache (the output
    /// head for its tokens from `first`), then what `after` records in the same pass,
    /// advancing the cache; reads nothing back.
    fn dispatch_chunk(
        &mut self,
        chunk: &[TokenId],
        first: usize,
        after: Option<impl FnOnce(&mut wgpu::ComputePass<'_>)>,
    ) -> Result<(), GpuError> {
        let past = self.lens[0];
        let places: Vec<Place> = (0..chunk.len())
            .map(|t| Place {
                pos: (past + t) as u32,
                base: 0,
            })
            .collect();
        self.dispatch(chunk, &places, first, after)?;
        self.lens[0] += chunk.len();
        Ok(())
    }

    /// Records and submits the forward pass of `tokens` (at most [`CHUNK`]), token `t` at
    /// `places[t]` (the output head for the tokens from `first`), then what `after`
    /// records in the same pass; reads nothing back and moves no slot's length.
    fn dispatch(
        &self,
        tokens: &[TokenId],
        places: &[Place],
        first: usize,
        after: Option<impl FnOnce(&mut wgpu::ComputePass<'_>)>,
    ) -> Result<(), GpuError> {
        let (n, gpu, c) = (tokens.len(), &self.gpu, &self.config);
        Step {
            first: first as u32,
            ..Step::default()
        }
        .write_placed(gpu, &self.act.step, places);
        gpu.write_words(&self.act.tokens, 0, tokens);
        let k = &self.kernels;
        gpu.run(|pass| {
            k.get_rows.dispatch(pass, &self.embd, c.d_model, n);
            for b in &self.blocks {
                b.dispatch(pass, k, c, n);
            }
            if first < n {
                self.head.dispatch(pass, k, n - first);
            }
            if let Some(after) = after {
                after(pass);
            }
        })
    }
}
