//! Exact distributions of samplers by enumerating every random path.
//!
//! [`explore`] runs a sampler again and again with a [`RandomSource`] that replays a forced
//! prefix of branch choices and then takes the first branch of positive weight, recording
//! each choice's weights. After each run it backtracks to the deepest choice with an untried
//! branch, depth first, until every path is done. A path whose probability falls below a
//! floor is cut off: its sink reports "cancelled", the sampler stops, and the path's mass is
//! counted as truncated. Only `categorical` (and `bernoulli`) draws can be enumerated; a
//! sampler that calls `uniform` directly makes the exploration fail.

use crate::{Event, EventSink, RandomSource};
use std::cell::RefCell;
use std::rc::Rc;

/// The outcome of an exploration.
#[derive(Clone, Debug)]
pub struct Exploration<T> {
    /// Every completed path's outcome with the path's exact probability.
    pub outcomes: Vec<(T, f64)>,
    /// The mass of paths cut off below the probability floor.
    pub truncated: f64,
    /// How many runs it took.
    pub paths: usize,
}

#[derive(Default)]
struct State {
    forced: Vec<usize>,
    /// (number of branches, normalized weights, chosen) per recorded choice.
    record: Vec<(Vec<f64>, usize)>,
    prob: f64,
    floor: f64,
    cut: bool,
    error: Option<String>,
}

struct ReplayRng(Rc<RefCell<State>>);

impl RandomSource for ReplayRng {
    fn uniform(&mut self) -> f64 {
        let mut s = self.0.borrow_mut();
        s.error = Some(
            "the sampler drew a uniform number; only categorical draws can be enumerated".into(),
        );
        s.cut = true;
        0.0
    }

    fn categorical(&mut self, weights: &[f64]) -> usize {
        let mut s = self.0.borrow_mut();
        let total: f64 = weights.iter().filter(|w| **w > 0.0).sum();
        let first = weights.iter().position(|&w| w > 0.0).unwrap_or(0);
        if s.cut || total <= 0.0 {
            return first;
        }
        let norm: Vec<f64> = weights.iter().map(|&w| w.max(0.0) / total).collect();
        let pos = s.record.len();
        let idx = if pos < s.forced.len() {
            s.forced[pos]
        } else {
            first
        };
        if idx >= norm.len() || norm[idx] <= 0.0 {
            s.error = Some(format!(
                "the sampler is not deterministic: replayed choice {pos} has no branch {idx}"
            ));
            s.cut = true;
            return first;
        }
        s.prob *= norm[idx];
        s.record.push((norm, idx));
        if s.prob < s.floor && pos + 1 >= s.forced.len() {
            s.cut = true;
        }
        idx
    }

    fn categorical_tree(&mut self, tree: &crate::SumTree) -> usize {
        self.categorical(tree.weights())
    }
}

struct CutSink(Rc<RefCell<State>>);

impl EventSink for CutSink {
    fn emit(&mut self, _event: Event) {}
    fn cancelled(&self) -> bool {
        self.0.borrow().cut
    }
}

/// Runs `run` once per random path (see the module docs) and returns each path's outcome
/// with its probability. Paths below probability `floor` are cut off and counted in
/// `truncated`; more than `max_paths` runs is an error, as is a sampler that draws
/// `uniform` directly or does not replay deterministically.
pub fn explore<T>(
    floor: f64,
    max_paths: usize,
    mut run: impl FnMut(&mut dyn RandomSource, &mut dyn EventSink) -> T,
) -> Result<Exploration<T>, String> {
    let shared = Rc::new(RefCell::new(State::default()));
    let mut out = Exploration {
        outcomes: Vec::new(),
        truncated: 0.0,
        paths: 0,
    };
    let mut forced: Vec<usize> = Vec::new();
    loop {
        if out.paths >= max_paths {
            return Err(format!("more than {max_paths} random paths"));
        }
        out.paths += 1;
        *shared.borrow_mut() = State {
            forced: std::mem::take(&mut forced),
            prob: 1.0,
            floor,
            ..State::default()
        };
        let outcome = run(&mut ReplayRng(shared.clone()), &mut CutSink(shared.clone()));
        let s = std::mem::take(&mut *shared.borrow_mut());
        if let Some(e) = s.error {
            return Err(e);
        }
        if s.cut {
            out.truncated += s.prob;
        } else {
            out.outcomes.push((outcome, s.prob));
        }
        // Backtrack to the deepest choice with an untried branch of positive weight.
        let mut record = s.record;
        loop {
            let Some((w, chosen)) = record.pop() else {
                return Ok(out);
            };
            if let Some(next) = (chosen + 1..w.len()).find(|&i| w[i] > 0.0) {
                forced = record.iter().map(|r| r.1).collect();
                forced.push(next);
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two draws: a coin (0.25/0.75), then on heads a three-way draw.
    #[test]
    fn enumerates_nested_choices_exactly() {
        let e = explore(0.0, 100, |rng, _| {
            let a = rng.categorical(&[1.0, 3.0]);
            if a == 0 {
                (a, rng.categorical(&[1.0, 0.0, 1.0]))
            } else {
                (a, 9)
            }
        })
        .unwrap();
        let mut o = e.outcomes.clone();
        o.sort_by_key(|a| a.0);
        assert_eq!(o, vec![((0, 0), 0.125), ((0, 2), 0.125), ((1, 9), 0.75)]);
        assert_eq!(e.truncated, 0.0);
    }

    /// A geometric loop is infinite; the floor cuts it and reports the leftover mass.
    #[test]
    fn floor_truncates_and_uniform_is_refused() {
        let e = explore(1e-3, 1000, |rng, sink| {
            let mut k = 0;
            while !sink.cancelled() && rng.categorical(&[1.0, 1.0]) == 0 {
                k += 1;
            }
            k
        })
        .unwrap();
        let total: f64 = e.outcomes.iter().map(|o| o.1).sum::<f64>() + e.truncated;
        assert!((total - 1.0).abs() < 1e-15);
        assert!(e.truncated < 2e-3 && e.truncated > 0.0);
        assert!(explore(0.0, 10, |rng, _| rng.uniform()).is_err());
        assert!(explore(0.0, 3, |rng, _| rng.categorical(&[1.0; 5])).is_err());
    }
}
