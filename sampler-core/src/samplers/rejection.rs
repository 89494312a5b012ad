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
use super::trie::{NodeId, ROOT, Trie};
use super::watch::{Advice, Progress, Verdict};
use crate::math::normalize;
use crate::{Constraint, Event, LanguageModel, SampleError, TokenId};
use std::cell::RefCell;
use std::collections::HashSet;
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
/// (seed 002 App. E.3). Generations run `ctx.params().batch` at a time in lockstep (see
/// [`generate_batch`]); their outcomes are taken in generation order. Fails with
/// [`SampleError::ZeroProbability`] once p_ε is 0, and with [`SampleError::GaveUp`] after
/// `max_generations` generations in a row without a valid one, or with
/// [`SampleError::CapReached`] after `generation_cap` generations in all.
pub async fn rejection_sample<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    strategy: Strategy,
    trie: &mut Trie,
    freeze_after: Option<usize>,
) -> Result<(), SampleError> {
    let mut advice = Advice::default();
    let n = ctx.params().n;
    rejection_sample_watched(ctx, strategy, trie, freeze_after, n, &mut |p| {
        advice.check(p)
    })
    .await
    .map(|_| ())
}

/// [`rejection_sample`] for `want` samples, told after every generation how it stands, in
/// generation order: what `watch` answers is emitted, and [`Verdict::HandOver`] ends the
/// run there. Returns the samples accepted (all `want` unless handed over).
pub async fn rejection_sample_watched<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    strategy: Strategy,
    trie: &mut Trie,
    freeze_after: Option<usize>,
    want: usize,
    watch: &mut dyn FnMut(&Progress) -> Verdict,
) -> Result<usize, SampleError> {
    trie.set_event_top_k(ctx.params().top_k_events);
    let batch = ctx.params().batch.max(1);
    let mut accepted = 0;
    let mut failures = 0u64;
    let mut generations = 0u64;
    while accepted < want {
        ctx.check_cancelled()?;
        if trie.root_is_dead() {
            return Err(SampleError::ZeroProbability);
        }
        if failures >= ctx.params().max_generations {
            return Err(SampleError::GaveUp {
                generations: failures,
            });
        }
        for (outcome, updates) in generate_batch(ctx, strategy, trie, batch, batch > 1).await? {
            // A batch's prunes join the trie in generation order (none while frozen).
            for u in updates {
                apply(trie, u, ctx.sink());
            }
            if accepted == want {
                continue;
            }
            // Within a batch too: no more failures in a row than allowed.
            if failures >= ctx.params().max_generations {
                return Err(SampleError::GaveUp {
                    generations: failures,
                });
            }
            // Nor more generations in all than the cap (a batch's extra ones are dropped).
            if ctx.params().generation_cap == Some(generations) {
                return Err(SampleError::CapReached {
                    generations,
                    valid: accepted,
                });
            }
            generations += 1;
            match outcome {
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
            let progress = Progress {
                accepted,
                generations,
                failures,
                p_root: trie.p_root(),
            };
            match watch(&progress) {
                Verdict::Go => {}
                Verdict::Say(e) => ctx.emit(e),
                Verdict::HandOver(e) => {
                    ctx.emit(e);
                    return Ok(accepted);
                }
            }
        }
    }
    Ok(accepted)
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

/// A change to W that a generation asks for.
enum Update {
    /// ARS: the invalid prefix u·a, as (u, [(a, P(a|u))]).
    Prune(NodeId, Vec<(TokenId, f64)>),
    /// CARS and RSFT: every non-viable continuation of u, once per node.
    Expand(NodeId, Vec<(TokenId, f64)>),
}

/// Applies `update` to `trie` (nothing while it is frozen; an expansion once per node).
fn apply(trie: &mut Trie, update: Update, sink: &mut dyn crate::EventSink) {
    if trie.is_frozen() {
        return;
    }
    match update {
        Update::Prune(u, tokens) => trie.prune(u, &tokens, sink),
        Update::Expand(u, tokens) => {
            if !trie.is_expanded(u) {
                trie.prune(u, &tokens, sink);
                trie.set_expanded(u);
            }
        }
    }
}

/// One generation in progress.
struct Generation<S> {
    /// The tokens drawn so far.
    tokens: Vec<TokenId>,
    /// log P of `tokens`.
    logp: f64,
    /// The constraint's state after `tokens` (`None` once they are not a viable prefix).
    state: Option<S>,
    /// What the generation knows about each prefix it visited.
    visits: Vec<Visit>,
    /// The trie node of the current prefix while the generation is still inside the trie.
    node: Option<NodeId>,
    /// The last token drawn and its probability.
    edge: (TokenId, f64),
    /// The changes to W it asks for, when they wait for the end of its batch.
    updates: Vec<Update>,
}

/// `count` generations from R^W in lockstep: at each step, one model call (batched when
/// several need one) for the generations whose prefix the trie has not cached, then one
/// draw each, in generation order. With `defer` (the callers': whenever `count` > 1) the
/// changes to W wait until all have ended, so every generation of the batch is drawn from
/// the W of the batch's start, which the acceptance argument needs (W fixed for a whole
/// generation); without it they are applied as asked for, which is right for one
/// generation alone (its changes never touch a prefix it still draws from).
async fn generate_batch<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    strategy: Strategy,
    trie: &mut Trie,
    count: usize,
    defer: bool,
) -> Result<Vec<(Outcome, Vec<Update>)>, SampleError> {
    let max = ctx.params().max_tokens;
    ctx.count_generations(count);
    let mut gens: Vec<Generation<C::State>> = (0..count)
        .map(|_| Generation {
            tokens: Vec::new(),
            logp: 0.0,
            state: Some(ctx.initial()),
            visits: Vec::new(),
            node: None,
            edge: (0, 1.0),
            updates: Vec::new(),
        })
        .collect();
    let mut done: Vec<Option<Outcome>> = (0..count).map(|_| None).collect();
    // Nodes whose expansion a generation of this batch has asked for already.
    let asked = RefCell::new(HashSet::new());
    loop {
        let mut live = Vec::new();
        for (i, g) in gens.iter().enumerate() {
            if done[i].is_some() {
                continue;
            }
            if !within(g.tokens.len() + 1, max) {
                done[i] = Some(Outcome::Rejected(
                    g.tokens.clone(),
                    g.logp,
                    "max tokens reached",
                ));
            } else {
                live.push(i);
            }
        }
        if live.is_empty() {
            break;
        }
        // P(·|u) from the trie's cache where it has it, else from the model: one call per
        // distinct prefix (generations of a batch often share their first tokens).
        let mut misses: Vec<&[TokenId]> = Vec::new();
        // Each live generation's cached P(·|u), or the index of its prefix in `misses`.
        let source: Vec<Result<Rc<[f64]>, usize>> = live
            .iter()
            .map(|&i| match gens[i].node.and_then(|n| trie.cached_probs(n)) {
                Some(p) => Ok(p),
                None => {
                    let t = gens[i].tokens.as_slice();
                    Err(misses.iter().position(|m| *m == t).unwrap_or_else(|| {
                        misses.push(t);
                        misses.len() - 1
                    }))
                }
            })
            .collect();
        let fetched: Vec<(Rc<[f64]>, Vec<f64>)> = match misses.as_slice() {
            [] => Vec::new(),
            [one] => vec![ctx.logprobs(one).await?],
            many => ctx.logprobs_batch(many).await?,
        }
        .into_iter()
        .map(|lp| (normalize(&lp).into(), lp))
        .collect();
        for (&i, source) in live.iter().zip(source) {
            let (probs, lp) = match source {
                Ok(p) => {
                    let lp = p.iter().map(|x| x.ln()).collect();
                    (p, lp)
                }
                Err(k) => fetched[k].clone(),
            };
            let step = Step {
                strategy,
                index: i,
                defer,
                asked: &asked,
            };
            if let Some(outcome) = step.draw(ctx, trie, &mut gens[i], probs, lp) {
                done[i] = Some(outcome);
            }
        }
    }
    Ok(done
        .into_iter()
        .zip(gens)
        .map(|(o, g)| (o.expect("every generation ended"), g.updates))
        .collect())
}

/// How one generation of a batch draws.
struct Step<'a> {
    strategy: Strategy,
    /// Its index in the batch (the `particle` of its `Token` events).
    index: usize,
    /// Whether its changes to W wait for the end of the batch.
    defer: bool,
    /// Nodes whose expansion the batch has asked for (while deferring): the first ask is
    /// the one applied, so later ones are skipped, with their masks and token lists. Every
    /// ask for a node is the same list (the node fixes the prefix, its state and P(·|u)).
    asked: &'a RefCell<HashSet<NodeId>>,
}

impl Step<'_> {
    /// One token of `g` from R^W at its prefix u, given P(·|u) (`probs`, `lp`), then the
    /// strategy's updates; the outcome when the generation ends.
    fn draw<L: LanguageModel, C: Constraint>(
        &self,
        ctx: &mut Ctx<'_, L, C>,
        trie: &mut Trie,
        g: &mut Generation<C::State>,
        probs: Rc<[f64]>,
        lp: Vec<f64>,
    ) -> Option<Outcome> {
        let (eos, max) = (ctx.eos(), ctx.params().max_tokens);
        let updating = !trie.is_frozen();
        if g.tokens.is_empty() {
            g.node = Some(trie.ensure_root(&probs, ctx.sink()));
        }
        if let Some(prev) = g
            .visits
            .last_mut()
            .filter(|_| probs.len() > KEEP_PROBS_VOCAB)
        {
            prev.probs = None;
        }
        g.visits.push(Visit {
            node: g.node,
            probs: Some(probs.clone()),
            positive: probs.iter().filter(|&&x| x > 0.0).count(),
            edge: g.edge,
        });
        let weights = match g.node {
            Some(n) => trie.weights(n, &probs),
            None => probs.to_vec(),
        };
        let z: f64 = weights.iter().sum();
        if z <= 0.0 {
            return Some(Outcome::Rejected(g.tokens.clone(), g.logp, "dead end"));
        }
        let a = ctx.rng().categorical(&weights) as TokenId;
        let depth = g.tokens.len();
        ctx.emit_token(self.index, depth, a, &lp, g.node.map(|_| z), None);
        g.edge = (a, probs[a as usize]);
        if self.strategy == Strategy::Cars && updating {
            let state = g.state.take();
            self.expand(ctx, trie, g, 0..=depth, &probs, state.as_ref(), depth);
            g.state = state;
        }
        // Is u·a still a viable prefix (of a sequence within max tokens)?
        let next = match &g.state {
            Some(s) if a == eos => ctx.allows(s, eos).then(|| s.clone()),
            Some(s) if within(depth + 2, max) => ctx.advance(s, a),
            _ => None,
        };
        g.logp += lp[a as usize];
        g.tokens.push(a);
        if next.is_none() && g.state.is_some() && updating {
            match self.strategy {
                Strategy::Ars => {
                    let u = materialize(trie, &mut g.visits[..=depth], ctx.sink());
                    self.update(trie, g, Update::Prune(u, vec![(a, probs[a as usize])]), ctx);
                }
                Strategy::Rsft => {
                    let init = ctx.initial();
                    let root = trie.cached_probs(ROOT).unwrap_or_else(|| probs.clone());
                    self.expand(ctx, trie, g, 0..=0, &root, Some(&init), 0);
                }
                _ => {}
            }
        }
        if next.is_none() && self.strategy.early_stop() {
            return Some(Outcome::Rejected(
                g.tokens.clone(),
                g.logp,
                "non-viable prefix",
            ));
        }
        g.state = next;
        if a == eos {
            return Some(match g.state {
                Some(_) => Outcome::Accepted(g.tokens.clone(), g.logp),
                None => Outcome::Rejected(g.tokens.clone(), g.logp, "non-viable prefix"),
            });
        }
        g.node = g.node.and_then(|n| trie.child(n, a));
        None
    }

    /// Applies `update` now, or keeps it for the end of the batch.
    fn update<L: LanguageModel, C: Constraint>(
        &self,
        trie: &mut Trie,
        g: &mut Generation<C::State>,
        update: Update,
        ctx: &mut Ctx<'_, L, C>,
    ) {
        if self.defer {
            g.updates.push(update);
        } else {
            apply(trie, update, ctx.sink());
        }
    }

    /// Asks to prune every non-viable continuation of the prefix of `g.visits[range]`
    /// (once per node), given its P(·|u): the full mask, plus every non-EOS token where
    /// only EOS fits within max tokens.
    #[allow(clippy::too_many_arguments)]
    fn expand<L: LanguageModel, C: Constraint>(
        &self,
        ctx: &mut Ctx<'_, L, C>,
        trie: &mut Trie,
        g: &mut Generation<C::State>,
        range: std::ops::RangeInclusive<usize>,
        probs: &[f64],
        state: Option<&C::State>,
        depth: usize,
    ) {
        let Some(state) = state else {
            return;
        };
        let u = materialize(trie, &mut g.visits[range], ctx.sink());
        if trie.is_expanded(u) || (self.defer && !self.asked.borrow_mut().insert(u)) {
            return;
        }
        let mask = ctx.mask(state);
        let eos = ctx.eos();
        let room = within(depth + 2, ctx.params().max_tokens);
        let invalid: Vec<(TokenId, f64)> = (0..probs.len() as TokenId)
            .filter(|&t| !mask.contains(t) || (t != eos && !room))
            .map(|t| (t, probs[t as usize]))
            .collect();
        self.update(trie, g, Update::Expand(u, invalid), ctx);
    }
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

    /// TV between P^L of the random problem and the distribution of the accepted outcomes
    /// of an exploration (renormalized).
    fn accepted_tv(e: crate::exact::Exploration<Option<Vec<TokenId>>>) -> f64 {
        let exact = random_exact();
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

    /// TV between P^L and what one generation from `trie` accepts (renormalized), on the
    /// random problem.
    fn one_generation_tv(trie: &Trie) -> f64 {
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
        accepted_tv(e)
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

    /// TV between P^L and what generation `member` of one batch of `count` accepts
    /// (renormalized), from `trie` on the random problem, with the batch's changes to W
    /// deferred or not.
    fn batch_member_tv(
        trie: &Trie,
        strategy: Strategy,
        count: usize,
        member: usize,
        defer: bool,
    ) -> f64 {
        let (lm, c) = random_problem();
        let e = explore(0.0, 200_000, |rng, sink| {
            let mut trie = trie.clone();
            let mut lm = lm.clone();
            let p = params(1);
            let mut keep = |_: &Sample| {};
            let mut ctx = Ctx::new(&mut lm, &c, rng, sink, &p, None, &mut keep);
            let outs = block_on(generate_batch(&mut ctx, strategy, &mut trie, count, defer));
            match outs.unwrap().swap_remove(member).0 {
                Outcome::Accepted(t, _) => Some(t),
                Outcome::Rejected(..) => None,
            }
        })
        .unwrap();
        accepted_tv(e)
    }

    /// Every generation of a lockstep batch accepts exactly P^L, computed over every random
    /// path, from a fresh trie and from one grown by earlier generations. Applying the
    /// changes to W during the batch (the mutant) is caught for ARS: a later generation
    /// then meets a W that changed under a prefix it already drew into. (For CARS the
    /// mutant happens to stay exact: every node a generation can be in is expanded already,
    /// and generations in lockstep are at the same depth, so none prunes under another.)
    #[test]
    fn every_generation_of_a_batch_is_exact_and_deferral_matters() {
        let (lm, c) = random_problem();
        let p = Params {
            max_generations: 1,
            ..params(1)
        };
        for strategy in [Strategy::Cars, Strategy::Ars] {
            let mut grown = Trie::new(4);
            for seed in 0..4 {
                let _ = drive_on(
                    &mut lm.clone(),
                    &c,
                    strategy,
                    &p,
                    &mut grown,
                    &mut SeededRng::new(seed),
                    &mut NullSink,
                    None,
                );
            }
            for trie in [&Trie::new(4), &grown] {
                for member in 0..3 {
                    let tv = batch_member_tv(trie, strategy, 3, member, true);
                    assert!(tv < 1e-9, "{strategy:?} member {member}: TV {tv}");
                }
            }
            let worst = (1..3)
                .map(|m| batch_member_tv(&grown, strategy, 3, m, false))
                .fold(0.0, f64::max);
            println!("{strategy:?} undeferred: worst member TV {worst:.3e}");
            if strategy == Strategy::Ars {
                assert!(worst > 1e-5, "the mutant went unnoticed: TV {worst}");
            }
        }
    }

    /// Whole runs in batches: each rejection method's samples against P^L (chi-square),
    /// and the same seed and batch size give the same samples.
    #[test]
    fn batched_runs_follow_p_l_and_replay_from_the_seed() {
        let exact = random_exact();
        let (lm, c) = random_problem();
        for strategy in [
            Strategy::Rs,
            Strategy::SampleVerify,
            Strategy::Ars,
            Strategy::Rsft,
            Strategy::Cars,
        ] {
            let p = Params {
                batch: 4,
                ..params(1500)
            };
            let run = |seed| {
                let (r, s) = drive_on(
                    &mut lm.clone(),
                    &c,
                    strategy,
                    &p,
                    &mut Trie::new(4),
                    &mut SeededRng::new(seed),
                    &mut NullSink,
                    None,
                );
                r.unwrap();
                s
            };
            let s = run(5);
            assert_eq!(s.len(), 1500, "{strategy:?}");
            let (counts, outside) = exact.counts(s.iter().map(|s| s.tokens.as_slice()));
            let chi = chi_square(&counts, &exact.probs(), outside);
            assert!(chi.p_value > 1e-3, "{strategy:?}: {chi:?}");
            let again: Vec<_> = run(5).into_iter().map(|s| s.tokens).collect();
            let first: Vec<_> = s.into_iter().map(|s| s.tokens).collect();
            assert_eq!(first, again, "{strategy:?} replay");
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

    /// The cap counts generations in all, accepted ones too, and keeps what was found: on
    /// G_sk, RS asked for many samples stops at exactly the cap (in a batch as well, whose
    /// extra generations are dropped), with the samples before it and their count in the
    /// error; one more generation of room changes nothing drawn before.
    #[test]
    fn the_generation_cap_stops_at_exactly_that_many_generations_and_keeps_the_samples() {
        for batch in [1, 4] {
            let p = Params {
                n: 1000,
                batch,
                generation_cap: Some(30),
                ..Params::default()
            };
            let mut sink = VecSink::default();
            let (r, samples) = drive(
                Strategy::Rs,
                &p,
                &mut Trie::new(3),
                &mut SeededRng::new(5),
                &mut sink,
                None,
            );
            let rejected = sink
                .0
                .iter()
                .filter(|e| matches!(e, Event::Rejected { .. }))
                .count();
            assert!(
                !samples.is_empty() && rejected > 0,
                "G_sk accepts about half"
            );
            assert_eq!(samples.len() + rejected, 30, "batch {batch}");
            assert_eq!(
                r,
                Err(SampleError::CapReached {
                    generations: 30,
                    valid: samples.len()
                }),
                "batch {batch}"
            );
        }
        let params = |cap| Params {
            n: 1000,
            generation_cap: Some(cap),
            ..Params::default()
        };
        let run = |p: &Params| {
            drive(
                Strategy::Cars,
                p,
                &mut Trie::new(3),
                &mut SeededRng::new(9),
                &mut VecSink::default(),
                None,
            )
            .1
        };
        let (short, long) = (run(&params(12)), run(&params(13)));
        assert_eq!(short[..], long[..short.len()]);
        assert_eq!(
            params(0).validate(),
            Err(SampleError::Unsupported(
                "--generation-cap must be at least 1".into()
            ))
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

    /// Rejection on a language that holds 1e-3 of the mass says, after 32 generations in
    /// a row without a valid one, that it may not finish and what would (once, and again
    /// only after 8 times as many), with the bound 3/32 as its estimate.
    #[test]
    fn a_rejection_sampler_that_may_not_finish_says_so_early() {
        let vocab = Vocabulary::new(vec![b"a".to_vec(), b"b".to_vec(), Vec::new()], 2, &[2]);
        let c = FiniteLanguage::new(vocab, vec![b"b".to_vec()]);
        let mut lm = crate::toy::FnLm::new(3, 2, |prefix: &[TokenId]| match prefix {
            [] => vec![0.999, 0.001, 0.0],
            _ => vec![0.0, 0.0, 1.0],
        });
        let params = Params {
            n: 1,
            ..Params::default()
        };
        let (mut sink, mut trie) = (VecSink::default(), Trie::new(3));
        let r = drive_on(
            &mut lm,
            &c,
            Strategy::Rs,
            &params,
            &mut trie,
            &mut SeededRng::new(4),
            &mut sink,
            None,
        );
        assert!(r.0.is_ok(), "{:?}", r.0);
        let advice: Vec<_> = sink
            .0
            .iter()
            .filter_map(|e| match e {
                Event::Estimate {
                    log_mass,
                    method,
                    chosen,
                    message,
                } => Some((*log_mass, method.clone(), *chosen, message.clone())),
                _ => None,
            })
            .collect();
        let rejected = sink
            .0
            .iter()
            .filter(|e| matches!(e, Event::Rejected { .. }))
            .count() as u64;
        let after = crate::samplers::watch::ADVISE_AFTER;
        assert!(rejected >= after, "{rejected} rejections");
        let expected = if rejected >= 8 * after { 2 } else { 1 };
        assert_eq!(advice.len(), expected, "{advice:?}");
        let (log_mass, method, chosen, message) = &advice[0];
        assert!(!chosen && method == "smc-gcd");
        assert!((log_mass - (3.0f64 / 32.0).ln()).abs() < 1e-12);
        assert!(
            message.starts_with("32 generations in a row without a valid output")
                && message.contains("smc-gcd"),
            "{message}"
        );
    }
}
