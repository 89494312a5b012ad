//! `rs`, `sample-verify`, `ars`, `rsft` and `cars` (seed 002 Alg. 1 and §3): one loop,
//! sampling left to right from R^W(a|u) = P(a|u)·p_ua/p_u over a persistent [`Trie`], and
//! four strategies for updating the invalid prefixes W.
//!
//! Every strategy but plain `rs` stops a generation at its first non-viable prefix. Updates
//! from a generation never change the distribution that generation is drawn from: CARS
//! prunes the invalid continuations of a node only after drawing from it, so each
//! generation follows R^W for the W it started with, and accepted samples follow P^L.

use super::Ctx;
use super::cut::within;
use super::trie::{NodeId, ROOT, Trie, normalize};
use crate::{Constraint, Event, LanguageModel, SampleError, TokenId};
use std::rc::Rc;

/// How W grows after each generation (seed 002 §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Plain rejection sampling: whole sequences, no updates.
    Rs,
    /// Rejection sampling stopped at the first non-viable prefix, no updates.
    SampleVerify,
    /// Adds the shortest invalid prefix of each rejected generation.
    Ars,
    /// Adds every invalid first token (once, at the first rejection).
    Rsft,
    /// Adds, at every visited prefix of every generation, every non-viable continuation.
    Cars,
}

impl Strategy {
    fn early_stop(self) -> bool {
        self != Strategy::Rs
    }
}

/// How one generation ended.
enum Outcome {
    Accepted(Vec<TokenId>, f64),
    Rejected(Vec<TokenId>, f64, &'static str),
}

/// Vocabularies up to this size keep P(·|u) of every visited prefix for the trie's cache;
/// larger ones keep only the current prefix's (a 150k-token vector is 1.2 MB).
const KEEP_PROBS_VOCAB: usize = 4096;

/// What a generation knows about one visited prefix u (depth = its length).
struct Visit {
    /// u's trie node, once it has one.
    node: Option<NodeId>,
    /// P(·|u), while kept.
    probs: Option<Rc<[f64]>>,
    /// How many continuations have P(a|u) > 0.
    positive: usize,
    /// The token that led here and its probability P(token | parent).
    edge: (TokenId, f64),
}

/// Draws `ctx.params().n` accepted samples with `strategy`, growing (unless frozen) the
/// caller's `trie`; the trie is frozen after `freeze_after` accepted samples when given
/// (seed 002 App. E.3). Fails with [`SampleError::ZeroProbability`] once p_ε is 0, and with
/// [`SampleError::GaveUp`] after `max_generations` generations in a row without a valid one.
pub async fn rejection_sample<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    strategy: Strategy,
    trie: &mut Trie,
    freeze_after: Option<usize>,
) -> Result<(), SampleError> {
    trie.set_event_top_k(ctx.params().top_k_events);
    let mut accepted = 0;
    let mut failures = 0u64;
    while accepted < ctx.params().n {
        ctx.check_cancelled()?;
        if trie.root_is_dead() {
            return Err(SampleError::ZeroProbability);
        }
        if failures >= ctx.params().max_generations {
            return Err(SampleError::GaveUp {
                generations: failures,
            });
        }
        match generate(ctx, strategy, trie).await? {
            Outcome::Accepted(tokens, logp) => {
                ctx.finish(tokens, logp, true, None, None)?;
                accepted += 1;
                failures = 0;
                if freeze_after == Some(accepted) {
                    trie.freeze();
                }
            }
            Outcome::Rejected(tokens, logp, reason) => {
                failures += 1;
                ctx.emit(Event::Rejected {
                    tokens,
                    logp,
                    reason: reason.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// `run` for the five rejection methods: a fresh trie per run.
pub async fn run<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    strategy: Strategy,
) -> Result<(), SampleError> {
    let mut trie = Trie::new(ctx.vocab_size());
    rejection_sample(ctx, strategy, &mut trie, None).await
}

/// The trie node of the prefix of `visits` (creating nodes for every visited prefix).
fn materialize(trie: &mut Trie, visits: &mut [Visit], sink: &mut dyn crate::EventSink) -> NodeId {
    let mut parent = ROOT;
    for v in visits.iter_mut() {
        parent = match v.node {
            Some(n) => n,
            None => {
                let (t, p) = v.edge;
                let n = trie.ensure_child_with(parent, t, p, v.positive, v.probs.as_deref(), sink);
                v.node = Some(n);
                n
            }
        };
    }
    parent
}

/// Next-token probabilities at a visited prefix: the trie's cache or a counted model call.
async fn probs_at<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    trie: &Trie,
    node: Option<NodeId>,
    tokens: &[TokenId],
) -> Result<(Rc<[f64]>, Vec<f64>), SampleError> {
    if let Some(p) = node.and_then(|n| trie.cached_probs(n)) {
        let lp = p.iter().map(|x| x.ln()).collect();
        return Ok((p, lp));
    }
    let lp = ctx.logprobs(tokens).await?;
    Ok((normalize(&lp).into(), lp))
}

/// One generation from R^W, then the strategy's updates.
async fn generate<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    strategy: Strategy,
    trie: &mut Trie,
) -> Result<Outcome, SampleError> {
    let eos = ctx.eos();
    let max = ctx.params().max_tokens;
    let updating = !trie.is_frozen();
    ctx.count_generations(1);
    let mut tokens: Vec<TokenId> = Vec::new();
    let mut logp = 0.0;
    let mut state = Some(ctx.initial());
    let mut visits: Vec<Visit> = Vec::new();
    // The trie node of the current prefix while the generation is still inside the trie.
    let mut node: Option<NodeId> = None;
    // The last token drawn and its probability.
    let mut edge = (0, 1.0);
    loop {
        if !within(tokens.len() + 1, max) {
            return Ok(Outcome::Rejected(tokens, logp, "max tokens reached"));
        }
        let (probs, lp) = probs_at(ctx, trie, node, &tokens).await?;
        if tokens.is_empty() {
            node = Some(trie.ensure_root(&probs, ctx.sink()));
        }
        if let Some(prev) = visits.last_mut().filter(|_| probs.len() > KEEP_PROBS_VOCAB) {
            prev.probs = None;
        }
        visits.push(Visit {
            node,
            probs: Some(probs.clone()),
            positive: probs.iter().filter(|&&x| x > 0.0).count(),
            edge,
        });
        let weights = match node {
            Some(n) => trie.weights(n, &probs),
            None => probs.to_vec(),
        };
        let z: f64 = weights.iter().sum();
        if z <= 0.0 {
            return Ok(Outcome::Rejected(tokens, logp, "dead end"));
        }
        let a = ctx.rng().categorical(&weights) as TokenId;
        ctx.emit_token(0, tokens.len(), a, &lp, node.map(|_| z), None);
        edge = (a, probs[a as usize]);
        if strategy == Strategy::Cars && updating {
            expand(ctx, trie, &mut visits, &probs, state.as_ref(), tokens.len());
        }
        // Is u·a still a viable prefix (of a sequence within max tokens)?
        let next = match &state {
            Some(s) if a == eos => ctx.allows(s, eos).then(|| s.clone()),
            Some(s) if within(tokens.len() + 2, max) => ctx.advance(s, a),
            _ => None,
        };
        logp += lp[a as usize];
        tokens.push(a);
        if next.is_none() && state.is_some() && updating {
            let depth = tokens.len() - 1;
            match strategy {
                Strategy::Ars => {
                    let u = materialize(trie, &mut visits[..=depth], ctx.sink());
                    trie.prune(u, &[(a, probs[a as usize])], ctx.sink());
                }
                Strategy::Rsft => {
                    let init = ctx.initial();
                    let root = trie.cached_probs(ROOT).unwrap_or_else(|| probs.clone());
                    expand(ctx, trie, &mut visits[..1], &root, Some(&init), 0);
                }
                _ => {}
            }
        }
        if next.is_none() && strategy.early_stop() {
            return Ok(Outcome::Rejected(tokens, logp, "non-viable prefix"));
        }
        state = next;
        if a == eos {
            return Ok(match state {
                Some(_) => Outcome::Accepted(tokens, logp),
                None => Outcome::Rejected(tokens, logp, "non-viable prefix"),
            });
        }
        node = node.and_then(|n| trie.child(n, a));
    }
}

/// Prunes every non-viable continuation of the last visited prefix u (once per node),
/// given P(·|u): the full mask, plus every non-EOS token where only EOS fits within max
/// tokens.
fn expand<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    trie: &mut Trie,
    visits: &mut [Visit],
    probs: &[f64],
    state: Option<&C::State>,
    depth: usize,
) {
    let Some(state) = state else {
        return;
    };
    let u = materialize(trie, visits, ctx.sink());
    if trie.is_expanded(u) {
        return;
    }
    let mask = ctx.mask(state);
    let eos = ctx.eos();
    let room = within(depth + 2, ctx.params().max_tokens);
    let invalid: Vec<(TokenId, f64)> = (0..probs.len() as TokenId)
        .filter(|&t| !mask.contains(t) || (t != eos && !room))
        .map(|t| (t, probs[t as usize]))
        .collect();
    trie.prune(u, &invalid, ctx.sink());
    trie.set_expanded(u);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::{Limits, chi_square, enumerate, explore, total_variation};
    use crate::samplers::{Params, Sample};
    use crate::toy::{FiniteLanguage, RandomLm, gsk_constraint, gsk_lm};
    use crate::{EventSink, NullSink, RandomSource, SeededRng, VecSink, Vocabulary, block_on};
    use std::collections::HashMap;

    fn drive(
        strategy: Strategy,
        params: &Params,
        trie: &mut Trie,
        rng: &mut dyn RandomSource,
        sink: &mut dyn EventSink,
        freeze_after: Option<usize>,
    ) -> (Result<(), SampleError>, Vec<Sample>) {
        let (mut lm, c) = (gsk_lm(), gsk_constraint());
        drive_on(&mut lm, &c, strategy, params, trie, rng, sink, freeze_after)
    }

    /// Tokens a, b, ab and EOS over a seeded random bigram model; "ab" has two
    /// tokenizations, "aab" and "abb" three.
    fn random_problem() -> (RandomLm, FiniteLanguage) {
        let w = |ws: &[&str]| ws.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
        let vocab = Vocabulary::new(w(&["a", "b", "ab", ""]), 3, &[3]);
        let c = FiniteLanguage::new(vocab, w(&["ab", "b", "abb", "ba", "aab"]));
        (RandomLm::new(4, 3, 2, 11), c)
    }

    #[allow(clippy::too_many_arguments)]
    fn drive_on<L: LanguageModel, C: Constraint>(
        lm: &mut L,
        c: &C,
        strategy: Strategy,
        params: &Params,
        trie: &mut Trie,
        rng: &mut dyn RandomSource,
        sink: &mut dyn EventSink,
        freeze_after: Option<usize>,
    ) -> (Result<(), SampleError>, Vec<Sample>) {
        let mut out = Vec::new();
        let mut push = |s: &Sample| out.push(s.clone());
        let mut ctx = Ctx::new(lm, c, rng, sink, params, None, &mut push);
        let r = block_on(rejection_sample(&mut ctx, strategy, trie, freeze_after));
        (r, out)
    }

    fn params(n: usize) -> Params {
        Params {
            n,
            max_tokens: 8,
            ..Params::default()
        }
    }

    fn random_exact() -> crate::exact::ExactDistribution {
        let (mut lm, c) = random_problem();
        let limits = Limits {
            max_tokens: 8,
            max_sequences: 100,
        };
        block_on(enumerate(&mut lm, &c, limits)).unwrap()
    }

    /// TV between P^L and what one generation from `trie` accepts (renormalized), on the
    /// random problem.
    fn one_generation_tv(trie: &Trie) -> f64 {
        let exact = random_exact();
        let (lm, c) = random_problem();
        let p = Params {
            max_generations: 1,
            ..params(1)
        };
        let e = explore(0.0, 10_000, |rng, sink| {
            let mut t = trie.clone();
            let mut lm = lm.clone();
            let (_, s) = drive_on(&mut lm, &c, Strategy::Cars, &p, &mut t, rng, sink, None);
            s.first().map(|s| s.tokens.clone())
        })
        .unwrap();
        let mut dist = HashMap::new();
        let mut acc = 0.0;
        for (o, q) in e.outcomes {
            if let Some(t) = o {
                *dist.entry(t).or_insert(0.0) += q;
                acc += q;
            }
        }
        dist.values_mut().for_each(|q| *q /= acc);
        let (q, _) = exact.align(&dist);
        total_variation(&q, &exact.probs())
    }

    /// The mutant (CARS without upward propagation) must fail the checks the real CARS
    /// passes: the exact per-generation distribution and the chi-square test. (On G_sk the
    /// mutant's error hides in 00000's 10⁻⁹ mass, so the witness is a random model.)
    #[test]
    fn cars_without_propagation_is_caught() {
        let (lm, c) = random_problem();
        for (mutant, expect_exact) in [(false, true), (true, false)] {
            let new_trie = || {
                if mutant {
                    Trie::without_propagation(4)
                } else {
                    Trie::new(4)
                }
            };
            let mut trie = new_trie();
            let mut rng = SeededRng::new(1);
            let mut worst: f64 = 0.0;
            for _ in 0..10 {
                worst = worst.max(one_generation_tv(&trie));
                let p = Params {
                    max_generations: 1,
                    ..params(1)
                };
                let mut lm = lm.clone();
                let _ = drive_on(
                    &mut lm,
                    &c,
                    Strategy::Cars,
                    &p,
                    &mut trie,
                    &mut rng,
                    &mut NullSink,
                    None,
                );
            }
            assert_eq!(worst < 1e-9, expect_exact, "mutant {mutant}: TV {worst}");

            let mut trie = new_trie();
            let (r, s) = drive_on(
                &mut lm.clone(),
                &c,
                Strategy::Cars,
                &params(2000),
                &mut trie,
                &mut SeededRng::new(7),
                &mut NullSink,
                None,
            );
            r.unwrap();
            let exact = random_exact();
            let (counts, outside) = exact.counts(s.iter().map(|s| s.tokens.as_slice()));
            let chi = chi_square(&counts, &exact.probs(), outside);
            println!("mutant {mutant}: worst per-generation TV {worst:.3e}, chi2 {chi:?}");
            assert_eq!(chi.p_value > 1e-3, expect_exact, "mutant {mutant}: {chi:?}");
        }
    }

    #[test]
    fn frozen_trie_stops_growing_and_n_counts_accepted_samples() {
        let mut trie = Trie::new(3);
        let mut sink = VecSink::default();
        let (r, s) = drive(
            Strategy::Ars,
            &params(50),
            &mut trie,
            &mut SeededRng::new(3),
            &mut sink,
            Some(1),
        );
        r.unwrap();
        assert_eq!(s.len(), 50);
        assert!(s.iter().all(|s| s.valid));
        assert!(trie.is_frozen());
        let rejected = sink
            .0
            .iter()
            .filter(|e| matches!(e, Event::Rejected { .. }))
            .count();
        assert!(rejected > 0, "G_sk rejects 45% of first tokens");
        // Nothing joined the trie after the first accepted sample.
        let first_accept = sink
            .0
            .iter()
            .position(|e| matches!(e, Event::SampleFinished { .. }))
            .unwrap();
        assert!(
            !sink.0[first_accept..]
                .iter()
                .any(|e| matches!(e, Event::TriePrune { .. } | Event::TrieInsert { .. }))
        );
    }

    #[test]
    fn rs_runs_to_max_tokens_and_rejects_without_eos() {
        // Max 3 tokens: no G_sk sentence (5 tokens + EOS) fits, so every generation fails.
        let p = Params {
            n: 1,
            max_tokens: 3,
            max_generations: 20,
            ..Params::default()
        };
        let mut sink = VecSink::default();
        let (r, _) = drive(
            Strategy::Rs,
            &p,
            &mut Trie::new(3),
            &mut SeededRng::new(0),
            &mut sink,
            None,
        );
        assert_eq!(r, Err(SampleError::GaveUp { generations: 20 }));
        let reasons: Vec<_> = sink
            .0
            .iter()
            .filter_map(|e| match e {
                Event::Rejected { tokens, reason, .. } => Some((tokens.len(), reason.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(reasons.len(), 20);
        assert!(
            reasons
                .iter()
                .all(|r| r == &(3, "max tokens reached".to_string()))
        );
        // CARS proves it: after pruning, p_ε reaches exactly 0 and the run stops early.
        let mut trie = Trie::new(3);
        let (r, _) = drive(
            Strategy::Cars,
            &p,
            &mut trie,
            &mut SeededRng::new(0),
            &mut NullSink,
            None,
        );
        assert_eq!(r, Err(SampleError::ZeroProbability));
        assert_eq!(trie.p_root(), 0.0);
    }
}
