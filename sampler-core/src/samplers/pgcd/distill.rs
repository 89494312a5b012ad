//! Distilling an HMM from the language model: sample sequences from the model given its
//! prompt, then fit the HMM to them by Baum–Welch (seed 001 §4: "HMM distillation"). The
//! model is reached through the run's [`Ctx`], so every call is counted.

use crate::hmm::{Hmm, HmmConfig, MAX_HMM_BYTES};
use crate::samplers::Ctx;
use crate::{Constraint, Event, LanguageModel, SampleError, TokenId};

/// Draws `n` sequences of at most `max_len` tokens from the model (unconstrained), one
/// sequence after another so that a model with one prefix-reusing KV cache computes each
/// token once; each ends at EOS or at `max_len`. Counted as `n` generations.
pub async fn sample_sequences<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    n: usize,
    max_len: usize,
) -> Result<Vec<Vec<TokenId>>, SampleError> {
    let eos = ctx.eos();
    ctx.count_generations(n);
    let mut seqs = Vec::with_capacity(n);
    for _ in 0..n {
        let mut seq: Vec<TokenId> = Vec::new();
        while seq.len() < max_len.max(1) {
            let lp = ctx.logprobs(&seq).await?;
            let probs: Vec<f64> = lp.iter().map(|l| l.exp()).collect();
            let t = ctx.rng().categorical(&probs) as TokenId;
            seq.push(t);
            if t == eos {
                break;
            }
        }
        seqs.push(seq);
    }
    Ok(seqs)
}

/// Distils an HMM from the model: samples `cfg.sequences` sequences (capped at
/// `min(cfg.max_len, max_tokens)` tokens), fits `cfg.hidden_states` hidden states by
/// `cfg.em_iterations` Baum–Welch iterations, and reports progress as `Note` events.
pub async fn distill<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    cfg: &HmmConfig,
) -> Result<Hmm, SampleError> {
    cfg.validate()?;
    let max_len = cfg.max_len.min(ctx.params().max_tokens).max(1);
    let note = |ctx: &mut Ctx<'_, L, C>, message: String| ctx.emit(Event::Note { message });
    note(
        ctx,
        format!(
            "p-gcd: sampling {} sequences of at most {max_len} tokens from the model to distil \
             an HMM with {} hidden states",
            cfg.sequences, cfg.hidden_states
        ),
    );
    let vocab = ctx.vocab_size();
    let (h, v) = (cfg.hidden_states as u128, vocab as u128);
    let bytes = (h * v + h * h + h) * 8;
    if bytes > MAX_HMM_BYTES as u128 {
        return Err(SampleError::Unsupported(format!(
            "an HMM with {h} hidden states over {v} tokens would need {:.1} GB, more than \
             {:.1} GB; lower --hmm-states",
            bytes as f64 / 1e9,
            MAX_HMM_BYTES as f64 / 1e9
        )));
    }
    let data = sample_sequences(ctx, cfg.sequences, max_len).await?;
    let tokens: usize = data.iter().map(Vec::len).sum();
    let mut hmm = Hmm::init_from_data(cfg.hidden_states, vocab, &data, 1e-2, ctx.rng());
    let engine = ctx.hmm_engine();
    note(
        ctx,
        format!(
            "p-gcd: {tokens} tokens sampled; fitting the HMM ({:.1} MB of parameters) by \
             {} EM iterations on {}",
            hmm.bytes() as f64 / 1e6,
            cfg.em_iterations,
            engine.name()
        ),
    );
    for i in 0..cfg.em_iterations {
        ctx.check_cancelled()?;
        let (next, step) = engine.em_step(&hmm, &data, cfg.pseudo_count).await?;
        hmm = next;
        ctx.emit(Event::HmmFit {
            iteration: i + 1,
            iterations: cfg.em_iterations,
            log_likelihood: step.log_likelihood / tokens.max(1) as f64,
            engine: engine.name(),
        });
    }
    let per_token = data.iter().map(|s| hmm.log_likelihood(s)).sum::<f64>() / tokens.max(1) as f64;
    note(
        ctx,
        format!("p-gcd: HMM ready, log-likelihood per token {per_token:.4}"),
    );
    Ok(hmm)
}
