//! `asap` (seed 004 Alg. 1, Eq. 3 and 5): adaptive sampling with approximate expected
//! futures.
//!
//! The trie holds c̃(u), an over-approximation of the expected future grammaticality
//! c(u) = E_{P(·|u)}[1[w ∈ L]]; off the trie c̃(ua) = 1[ua viable] (GCD's approximation).
//! Tokens are drawn from Q̃(a|u) ∝ P(a|u)·c̃(ua) (Eq. 5). Every prefix of every sample joins
//! the trie with its non-viable continuations set to 0, and c̃(u) = Σ_a P(a|u)·c̃(ua) (Eq. 3)
//! is maintained by the same upward propagation as the rejection samplers' p_u, which gives
//! the values of Alg. 1's backward walk. Approximate: every sample is output, and the
//! distribution approaches P^L as c̃ converges (Theorem 2).

use super::Ctx;
use super::cut::within;
use super::trie::{NodeId, ROOT, Trie};
use crate::math::normalize;
use crate::{Constraint, Event, LanguageModel, SampleError, TokenId};

/// Draws `ctx.params().n` ASAp samples in order, refining the caller's `trie` of c̃ after
/// each. A generation that reaches a prefix with no allowed mass (a dead end) updates c̃
/// and is retried; once c̃(ε) = 0 the run stops with [`SampleError::ZeroProbability`], after
/// `max_generations` of those in a row with [`SampleError::GaveUp`].
pub async fn asap_sample<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    trie: &mut Trie,
) -> Result<(), SampleError> {
    trie.set_event_top_k(ctx.params().top_k_events);
    let mut produced = 0;
    let mut failures = 0u64;
    while produced < ctx.params().n {
        ctx.check_cancelled()?;
        if trie.root_is_dead() {
            return Err(SampleError::ZeroProbability);
        }
        if failures >= ctx.params().max_generations {
            return Err(SampleError::GaveUp {
                generations: failures,
            });
        }
        let (tokens, logp, path, complete) = generate(ctx, trie).await?;
        for &n in path.iter().rev() {
            ctx.emit(Event::EfgUpdate {
                prefix: trie.prefix(n),
                efg: trie.node_mass(n),
            });
        }
        if complete {
            ctx.finish(tokens, logp, true, None, None)?;
            produced += 1;
            failures = 0;
        } else {
            failures += 1;
            ctx.emit(Event::Rejected {
                tokens,
                logp,
                reason: "dead end".into(),
            });
        }
    }
    Ok(())
}

/// `run` for `asap`: a fresh trie per run.
pub async fn run<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
) -> Result<(), SampleError> {
    let mut trie = Trie::new(ctx.vocab_size());
    asap_sample(ctx, &mut trie).await
}

/// One sample from Q̃; returns its tokens, log P, the trie nodes of its prefixes and whether
/// it ended with EOS (false at a dead end).
async fn generate<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    trie: &mut Trie,
) -> Result<(Vec<TokenId>, f64, Vec<NodeId>, bool), SampleError> {
    let eos = ctx.eos();
    let max = ctx.params().max_tokens;
    ctx.count_generations(1);
    let mut tokens: Vec<TokenId> = Vec::new();
    let mut logp = 0.0;
    let mut state = ctx.initial();
    let mut path: Vec<NodeId> = Vec::new();
    // P(last token | the prefix before it).
    let mut edge_p = 1.0;
    loop {
        let cached = match path.last() {
            None if !trie.is_empty() => trie.cached_probs(ROOT),
            None => None,
            Some(&n) => trie
                .child(n, tokens[tokens.len() - 1])
                .and_then(|c| trie.cached_probs(c)),
        };
        let (probs, lp): (Vec<f64>, Vec<f64>) = match cached {
            Some(p) => (p.to_vec(), p.iter().map(|x| x.ln()).collect()),
            None => {
                let lp = ctx.logprobs(&tokens).await?;
                (normalize(&lp), lp)
            }
        };
        let node = match path.last() {
            None => trie.ensure_root(&probs, ctx.sink()),
            Some(&parent) => {
                let t = tokens[tokens.len() - 1];
                trie.ensure_child(parent, t, edge_p, &probs, ctx.sink())
            }
        };
        path.push(node);
        if !trie.is_expanded(node) {
            let mask = ctx.mask(&state);
            let room = within(tokens.len() + 2, max);
            let invalid: Vec<(TokenId, f64)> = (0..probs.len() as TokenId)
                .filter(|&t| !mask.contains(t) || (t != eos && !room))
                .map(|t| (t, probs[t as usize]))
                .collect();
            trie.prune(node, &invalid, ctx.sink());
            trie.set_expanded(node);
        }
        let weights = trie.weights(node, &probs);
        let z: f64 = weights.iter().sum();
        if z <= 0.0 {
            return Ok((tokens, logp, path, false));
        }
        let a = ctx.rng().categorical(&weights) as TokenId;
        ctx.emit_token(0, tokens.len(), a, &lp, Some(z), None);
        logp += lp[a as usize];
        edge_p = probs[a as usize];
        tokens.push(a);
        if a == eos {
            return Ok((tokens, logp, path, true));
        }
        state = ctx.advance(&state, a).ok_or_else(|| {
            SampleError::Unsupported(format!(
                "the constraint allowed token {a} in its mask but refused it when advancing"
            ))
        })?;
    }
}

#[cfg(test)]
mod tests {
    use crate::samplers::{Io, Method, Params, Sampler};
    use crate::toy::{gsk_constraint, gsk_lm};
    use crate::{Event, SeededRng, VecSink, block_on};

    /// Every method of this module and of `rejection` runs through `run`, gives `n` valid
    /// G_sk samples, and reports its trie work as events.
    #[test]
    fn methods_dispatch_and_emit_trie_events() {
        for m in [
            Method::Rs,
            Method::SampleVerify,
            Method::Ars,
            Method::Rsft,
            Method::Cars,
            Method::Asap,
        ] {
            let (mut lm, c) = (gsk_lm(), gsk_constraint());
            let p = Params {
                n: 20,
                ..Params::default()
            };
            let mut sink = VecSink::default();
            let mut out = Vec::new();
            let counters = block_on(Sampler::new(m).params(&p).run(
                &mut lm,
                &c,
                Io {
                    rng: &mut SeededRng::new(9),
                    sink: &mut sink,
                    out: &mut |s| out.push(s.clone()),
                },
            ))
            .unwrap();
            assert_eq!(out.len(), 20, "{m}");
            assert!(out.iter().all(|s| s.valid && s.tokens.len() == 6), "{m}");
            assert!(counters.generations >= 20, "{m}");
            let inserts = sink
                .0
                .iter()
                .filter(|e| matches!(e, Event::TrieInsert { .. }))
                .count();
            let efg = sink
                .0
                .iter()
                .filter(|e| matches!(e, Event::EfgUpdate { .. }))
                .count();
            let prunes = sink
                .0
                .iter()
                .filter(|e| matches!(e, Event::TriePrune { .. }))
                .count();
            // rs and sample-verify keep only the root (it caches P(·|ε)); rsft prunes
            // first tokens at the root (pruned tokens are bits, not nodes).
            match m {
                Method::Rs | Method::SampleVerify => assert_eq!((inserts, prunes), (1, 0), "{m}"),
                Method::Rsft => assert!(inserts == 1 && prunes == 1, "{m}"),
                _ => assert!(inserts > 1 && prunes > 1, "{m}"),
            }
            assert_eq!(efg > 0, m == Method::Asap, "{m}");
        }
    }
}
