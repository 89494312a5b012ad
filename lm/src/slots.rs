//! [`Slots`]: which KV cache ("slot") serves each sequence a prompted model is asked
//! about, and what each must run — written once for every engine's caches
//! ([`SlotCaches`]: the CPU's own KV caches, or the slots a GPU engine holds side by side).
//!
//! Each slot holds one token sequence starting with the prompt. A sequence is run only
//! after the longest prefix some slot already holds: a slot that the sequence extends grows
//! in place; a slot it branches from is left alone and its shared prefix is copied into a
//! free (or the least recently used) slot. The new tokens of up to `max` distinct
//! sequences run in one batched pass.

use crate::forward::Pause;
use crate::prefix_reuse::reuse;
use sampler_core::{LmError, TokenId};

/// The caches behind a set of slots, as [`Slots`] drives them.
#[allow(async_fn_in_trait)]
pub(crate) trait SlotCaches {
    /// Most slots these caches can hold.
    fn capacity(&self) -> usize;

    /// Positions a slot holds, and how messages name that limit ("the context").
    fn context(&self) -> (usize, &'static str);

    /// Adds an empty slot, numbered after the existing ones.
    fn add(&mut self);

    /// Makes slot `to` hold the first `keep` positions of slot `from` (`from != to`).
    fn copy_prefix(&mut self, from: usize, to: usize, keep: usize) -> Result<(), LmError>;

    /// Keeps the first `keep` positions of slot `slot`.
    fn truncate(&mut self, slot: usize, keep: usize);

    /// Runs each `(slot, tokens)` (distinct slots, in increasing order, each with at least
    /// one token) after what its slot holds, appending theirs, in one pass; returns the
    /// logits after each run's last token, in the order of `runs`. On an error the slots
    /// may hold part of their runs (the caller truncates them).
    async fn forward(
        &mut self,
        runs: &[(usize, &[TokenId])],
        pause: &mut impl Pause,
    ) -> Result<Vec<Vec<f32>>, LmError>;
}

/// What a slot holds, beside its cache.
#[derive(Debug, Clone, Default)]
pub(crate) struct SlotState {
    /// The tokens whose keys and values are in the slot's cache (prompt included).
    pub(crate) tokens: Vec<TokenId>,
    /// Logits after the last token of `tokens`.
    pub(crate) logits: Option<Vec<f32>>,
    /// When it was last used ([`Slots`]' logical clock).
    pub(crate) used: u64,
}

/// The state of every slot, and the rule that assigns sequences to them.
#[derive(Debug)]
pub(crate) struct Slots {
    /// One per slot of the caches, in order.
    pub(crate) states: Vec<SlotState>,
    /// Most slots used (at most the caches' capacity).
    pub(crate) max: usize,
    /// Logical clock for least-recently-used eviction.
    clock: u64,
    /// Tokens run through the engine so far.
    pub(crate) forward_tokens: u64,
}

/// What a call needs of one slot: the tokens to run after what it keeps.
struct Plan {
    slot: usize,
    new: Vec<TokenId>,
}

/// The sequences of one group: (index among the call's sequences, tokens, slot).
type Group = Vec<(usize, Vec<TokenId>, usize)>;

impl Slots {
    /// Slots starting from `states` (slots some earlier model left, each holding its own
    /// sequence), using at most `max`.
    pub(crate) fn new(mut states: Vec<SlotState>, max: usize) -> Self {
        let max = max.max(1);
        states.truncate(max);
        let clock = states.iter().map(|s| s.used).max().unwrap_or(0);
        Slots {
            states,
            max,
            clock,
            forward_tokens: 0,
        }
    }

    /// Tokens held by the most recently used slot.
    pub(crate) fn cached_len(&self) -> usize {
        self.states
            .iter()
            .max_by_key(|s| s.used)
            .map_or(0, |s| s.tokens.len())
    }

    /// The logits after each `prompt ++ prefix`: a slot is brought to each sequence, the
    /// new tokens of each group of up to `max` distinct sequences running in one pass.
    /// A sequence past the caches' context is refused, saying so.
    pub(crate) async fn run(
        &mut self,
        caches: &mut impl SlotCaches,
        prompt: &[TokenId],
        prefixes: &[&[TokenId]],
        pause: &mut impl Pause,
    ) -> Result<Vec<Vec<f32>>, LmError> {
        let max = self.max.min(caches.capacity()).max(1);
        let (ctx, name) = caches.context();
        let n = prompt.len();
        let mut results = vec![Vec::new(); prefixes.len()];
        let mut group: Group = Vec::new();
        let mut plans: Vec<Plan> = Vec::new();
        for (idx, prefix) in prefixes.iter().enumerate() {
            if n + prefix.len() > ctx {
                return Err(LmError(format!(
                    "prompt of {n} tokens and {} generated tokens exceed {name} of {ctx}",
                    prefix.len()
                )));
            }
            let full: Vec<TokenId> = prompt.iter().chain(*prefix).copied().collect();
            // A sequence met earlier in this group is computed once.
            if let Some(slot) = group.iter().find(|g| g.1 == full).map(|g| g.2) {
                group.push((idx, full, slot));
                continue;
            }
            let mut taken: Vec<usize> = group.iter().map(|g| g.2).collect();
            taken.sort_unstable();
            taken.dedup();
            if taken.len() >= max {
                self.flush(caches, &mut plans, &mut group, &mut results, pause)
                    .await?;
                taken.clear();
            }
            let plan = self.plan(caches, max, &full, &taken)?;
            self.clock += 1;
            self.states[plan.slot].used = self.clock;
            group.push((idx, full, plan.slot));
            if !plan.new.is_empty() {
                plans.push(plan);
            }
        }
        self.flush(caches, &mut plans, &mut group, &mut results, pause)
            .await?;
        Ok(results)
    }

    /// Runs the planned slots' new tokens in one pass and hands out the group's logits.
    async fn flush(
        &mut self,
        caches: &mut impl SlotCaches,
        plans: &mut Vec<Plan>,
        group: &mut Group,
        results: &mut [Vec<f32>],
        pause: &mut impl Pause,
    ) -> Result<(), LmError> {
        if !plans.is_empty() {
            plans.sort_by_key(|p| p.slot);
            let runs: Vec<(usize, &[TokenId])> =
                plans.iter().map(|p| (p.slot, p.new.as_slice())).collect();
            match caches.forward(&runs, pause).await {
                Ok(logits) => {
                    for (p, l) in plans.iter().zip(logits) {
                        let s = &mut self.states[p.slot];
                        s.tokens.extend_from_slice(&p.new);
                        s.logits = Some(l);
                        self.forward_tokens += p.new.len() as u64;
                    }
                }
                Err(e) => {
                    // A cache may hold part of the run; those slots start over next time.
                    for p in plans.iter() {
                        caches.truncate(p.slot, 0);
                        let s = &mut self.states[p.slot];
                        s.tokens.clear();
                        s.logits = None;
                    }
                    plans.clear();
                    group.clear();
                    return Err(e);
                }
            }
        }
        for (idx, _, slot) in group.drain(..) {
            results[idx] = self.states[slot].logits.clone().unwrap_or_default();
        }
        plans.clear();
        Ok(())
    }

    /// Picks the slot for `full` (never one of `taken`) and prepares it: the slot keeps
    /// (or receives a copy of) the longest cached prefix of `full`, and the plan's `new`
    /// tokens are what remains to run (empty when the slot already holds `full`).
    fn plan(
        &mut self,
        caches: &mut impl SlotCaches,
        max: usize,
        full: &[TokenId],
        taken: &[usize],
    ) -> Result<Plan, LmError> {
        // Any slot may lend its prefix (a slot of the current group still holds its kept
        // prefix until the pass runs); only a free one may be extended or reused.
        let best = self
            .states
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.used, reuse(&s.tokens, s.logits.is_some(), full)))
            .max_by_key(|&(i, used, r)| (r.shared, !taken.contains(&i), used))
            .map(|(i, _, r)| (i, r));
        if let Some((i, r)) = best
            && !taken.contains(&i)
            && r.answered
        {
            return Ok(Plan {
                slot: i,
                new: Vec::new(),
            });
        }
        let (source, keep) = match best {
            Some((i, r)) => (Some(i), r.keep),
            None => (None, 0),
        };
        let extends =
            source.is_some_and(|i| !taken.contains(&i) && self.states[i].tokens.len() <= keep);
        let slot = match source {
            Some(i) if extends => i,
            _ if self.states.len() < max => {
                caches.add();
                self.states.push(SlotState::default());
                self.states.len() - 1
            }
            // The least recently used slot not in the current group (`run` flushes a
            // group before it takes every slot).
            _ => self
                .states
                .iter()
                .enumerate()
                .filter(|(i, _)| !taken.contains(i))
                .min_by_key(|(_, s)| s.used)
                .map_or(0, |(i, _)| i),
        };
        match source {
            Some(src) if src != slot => {
                if let Err(e) = caches.copy_prefix(src, slot, keep) {
                    caches.truncate(slot, 0);
                    let s = &mut self.states[slot];
                    s.tokens.clear();
                    s.logits = None;
                    return Err(e);
                }
            }
            _ => caches.truncate(slot, keep),
        }
        let s = &mut self.states[slot];
        s.tokens.clear();
        s.tokens.extend_from_slice(&full[..keep]);
        s.logits = None;
        Ok(Plan {
            slot,
            new: full[keep..].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forward::NoPause;
    use sampler_core::block_on;

    /// Caches that hold token lists and answer each sequence's logits with its tokens (as
    /// floats), recording every pass.
    #[derive(Default)]
    struct Fake {
        capacity: usize,
        held: Vec<Vec<TokenId>>,
        passes: Vec<Vec<(usize, Vec<TokenId>)>>,
        /// The next pass fails after appending its tokens (as an engine may).
        fail: bool,
    }

    impl SlotCaches for Fake {
        fn capacity(&self) -> usize {
            self.capacity
        }

        fn context(&self) -> (usize, &'static str) {
            (usize::MAX, "the context")
        }

        fn add(&mut self) {
            self.held.push(Vec::new());
        }

        fn copy_prefix(&mut self, from: usize, to: usize, keep: usize) -> Result<(), LmError> {
            assert_ne!(from, to);
            self.held[to] = self.held[from][..keep].to_vec();
            Ok(())
        }

        fn truncate(&mut self, slot: usize, keep: usize) {
            self.held[slot].truncate(keep);
        }

        async fn forward(
            &mut self,
            runs: &[(usize, &[TokenId])],
            _pause: &mut impl Pause,
        ) -> Result<Vec<Vec<f32>>, LmError> {
            assert!(
                runs.windows(2).all(|w| w[0].0 < w[1].0),
                "slots in order: {runs:?}"
            );
            self.passes
                .push(runs.iter().map(|&(s, t)| (s, t.to_vec())).collect());
            if std::mem::take(&mut self.fail) {
                for &(s, t) in runs {
                    self.held[s].extend_from_slice(t);
                }
                return Err(LmError("the device was lost".into()));
            }
            Ok(runs
                .iter()
                .map(|&(s, t)| {
                    self.held[s].extend_from_slice(t);
                    self.held[s].iter().map(|&x| x as f32).collect()
                })
                .collect())
        }
    }

    fn run(slots: &mut Slots, caches: &mut Fake, prefixes: &[&[TokenId]]) -> Vec<Vec<f32>> {
        block_on(slots.run(caches, &[1, 2], prefixes, &mut NoPause)).unwrap()
    }

    /// Each sequence gets the logits of exactly its tokens; a group of up to `capacity`
    /// distinct sequences is one pass, each running only what its slot lacks; more
    /// sequences than slots take more passes.
    #[test]
    fn sequences_share_passes_and_run_only_what_their_slot_lacks() {
        let mut caches = Fake {
            capacity: 3,
            ..Fake::default()
        };
        let mut slots = Slots::new(Vec::new(), 16);
        let want =
            |p: &[TokenId]| -> Vec<f32> { [1, 2].iter().chain(p).map(|&x| x as f32).collect() };
        let step: [&[TokenId]; 3] = [&[5], &[6], &[7]];
        let got = run(&mut slots, &mut caches, &step);
        assert_eq!(got, step.map(want));
        // One pass (nothing is cached yet, so each slot runs the prompt too).
        assert_eq!(caches.passes.len(), 1);
        assert_eq!(
            caches.passes[0],
            vec![(0, vec![1, 2, 5]), (1, vec![1, 2, 6]), (2, vec![1, 2, 7])]
        );
        // Every particle grows by one token, one a duplicate of another: one pass of one
        // token each, the duplicate computed once.
        let step: [&[TokenId]; 4] = [&[5, 8], &[6, 9], &[7, 4], &[5, 8]];
        assert_eq!(run(&mut slots, &mut caches, &step), step.map(want));
        assert_eq!(caches.passes.len(), 2);
        assert_eq!(
            caches.passes[1],
            vec![(0, vec![8]), (1, vec![9]), (2, vec![4])]
        );
        // Five distinct sequences over three slots: two passes; the second group's two
        // sequences each run one token, after the prefix a slot keeps or is lent.
        let step: [&[TokenId]; 5] = [&[5, 8, 1], &[6, 9, 1], &[7, 4, 1], &[5, 8, 2], &[3]];
        assert_eq!(run(&mut slots, &mut caches, &step), step.map(want));
        assert_eq!(caches.passes.len(), 4);
        assert_eq!(slots.forward_tokens, 9 + 3 + 3 + 2);
    }

    /// A failed pass empties the slots it ran (their caches may hold part of it), says
    /// why, and the next call runs those sequences again from the start and gets them
    /// right.
    #[test]
    fn a_failed_pass_leaves_no_slot_claiming_what_it_lacks() {
        let mut caches = Fake {
            capacity: 2,
            ..Fake::default()
        };
        let mut slots = Slots::new(Vec::new(), 16);
        let want =
            |p: &[TokenId]| -> Vec<f32> { [1, 2].iter().chain(p).map(|&x| x as f32).collect() };
        let step: [&[TokenId]; 2] = [&[5], &[6]];
        assert_eq!(run(&mut slots, &mut caches, &step), step.map(want));
        caches.fail = true;
        let step: [&[TokenId]; 2] = [&[5, 7], &[6, 8]];
        let e = block_on(slots.run(&mut caches, &[1, 2], &step, &mut NoPause)).unwrap_err();
        assert!(e.0.contains("lost"), "{e}");
        assert!(caches.held.iter().all(Vec::is_empty));
        assert!(
            slots
                .states
                .iter()
                .all(|s| s.tokens.is_empty() && s.logits.is_none())
        );
        assert_eq!(run(&mut slots, &mut caches, &step), step.map(want));
        // Both sequences ran whole, in one pass (in whichever slots).
        let mut last: Vec<Vec<TokenId>> = caches
            .passes
            .last()
            .unwrap()
            .iter()
            .map(|r| r.1.clone())
            .collect();
        last.sort();
        assert_eq!(last, vec![vec![1, 2, 5, 7], vec![1, 2, 6, 8]]);
    }
}
