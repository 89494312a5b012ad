//! Lessons: a guided path through the five papers' ideas, a few steps each. A step is one
//! or two plain sentences, a preset (an example's model and grammar, then the sampler or
//! the samplers to compare, with a fixed seed) that runs by itself, and the view to look
//! at. Every step has a deep link, `#lesson=<id>&step=<n>` (steps counted from 1).

use crate::examples;
use crate::state::PlaygroundState;

/// The view a step asks the reader to look at (the page highlights it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// The next-token view: the distribution, the mask, the drawn token.
    Token,
    /// The trie of CARS and its relatives.
    Trie,
    /// The MCMC chain.
    Mcmc,
    /// The SMC particles.
    Smc,
    /// The results: the samples against the exact distribution.
    Results,
    /// Compare mode: several samplers on an equal budget of model calls.
    Compare,
}

impl Look {
    /// Its name, as the page's `data-look` attribute carries it.
    pub fn name(self) -> &'static str {
        match self {
            Look::Token => "token",
            Look::Trie => "trie",
            Look::Mcmc => "mcmc",
            Look::Smc => "smc",
            Look::Results => "results",
            Look::Compare => "compare",
        }
    }
}

/// One step of a lesson.
#[derive(Clone, Debug)]
pub struct Step {
    /// One or two plain sentences.
    pub words: &'static str,
    /// The example whose model, grammar and prompt the step runs (an id of
    /// [`examples::examples`]).
    pub example: &'static str,
    /// The sampler (single mode), or the first of [`Step::compare`].
    pub method: &'static str,
    /// Samplers side by side on an equal budget of model calls (empty: single mode).
    pub compare: &'static [&'static str],
    /// Changes to the example's settings (samples, steps, budget…).
    pub tune: fn(&mut PlaygroundState),
    /// What to look at.
    pub look: Look,
}

fn keep(_: &mut PlaygroundState) {}

impl Step {
    /// The playground state this step runs: its example's, with the step's sampler(s),
    /// changes and seed 1, so the same link shows the same samples.
    pub fn state(&self) -> PlaygroundState {
        let example = examples::example(self.example)
            .unwrap_or_else(|| panic!("lesson step names a missing example {}", self.example));
        let mut s = example.state();
        s.method = self.method.to_string();
        s.compare = self.compare.iter().map(|m| m.to_string()).collect();
        s.seed = 1;
        s.example = None;
        (self.tune)(&mut s);
        s
    }

    /// Whether it runs on the real model (it waits for the download).
    pub fn real_model(&self) -> bool {
        self.state().model.toy().is_none()
    }
}

/// A lesson: a title, one line on what it shows, and its steps.
#[derive(Clone, Debug)]
pub struct Lesson {
    /// Stable id, used in links (`#lesson=<id>`).
    pub id: &'static str,
    /// Its title.
    pub title: &'static str,
    /// One line on what it shows (the lesson list).
    pub summary: &'static str,
    /// Which paper it follows, as a reader would look it up (author, title, venue).
    pub paper: &'static str,
    /// Its steps, in order.
    pub steps: &'static [Step],
}

/// Every lesson, in the order they are meant to be read.
pub fn lessons() -> &'static [Lesson] {
    LESSONS
}

/// The lesson `id`.
pub fn lesson(id: &str) -> Option<&'static Lesson> {
    LESSONS.iter().find(|l| l.id == id)
}

/// Where a link points: a lesson and a step (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The lesson's index in [`lessons`].
    pub lesson: usize,
    /// The step's index (0-based; the link counts from 1).
    pub step: usize,
}

impl Place {
    /// The lesson.
    pub fn lesson(self) -> &'static Lesson {
        &LESSONS[self.lesson]
    }

    /// The step.
    pub fn step(self) -> &'static Step {
        &LESSONS[self.lesson].steps[self.step]
    }

    /// The hash body (without `#`) of this place: `lesson=<id>&step=<n>`.
    pub fn hash(self) -> String {
        format!("lesson={}&step={}", self.lesson().id, self.step + 1)
    }

    /// The next step, going on to the next lesson after the last step.
    pub fn next(self) -> Option<Place> {
        if self.step + 1 < self.lesson().steps.len() {
            Some(Place {
                step: self.step + 1,
                ..self
            })
        } else if self.lesson + 1 < LESSONS.len() {
            Some(Place {
                lesson: self.lesson + 1,
                step: 0,
            })
        } else {
            None
        }
    }

    /// The step before, going back to the previous lesson's last step before the first.
    pub fn back(self) -> Option<Place> {
        if self.step > 0 {
            Some(Place {
                step: self.step - 1,
                ..self
            })
        } else if self.lesson > 0 {
            let lesson = self.lesson - 1;
            Some(Place {
                lesson,
                step: LESSONS[lesson].steps.len() - 1,
            })
        } else {
            None
        }
    }
}

/// Reads a hash body (with or without `#`): `None` when it is not a lesson link, else the
/// place it points to or a one-line reason it points nowhere. The link is untrusted: the
/// message quotes at most 40 escaped characters of it.
pub fn parse_link(hash: &str) -> Option<Result<Place, String>> {
    let h = hash.strip_prefix('#').unwrap_or(hash);
    let rest = h.strip_prefix("lesson=")?;
    let (id, step) = match rest.split_once('&') {
        Some((id, tail)) => (id, tail.strip_prefix("step=").map(|s| s.to_string())),
        None => (rest, None),
    };
    let quote = |s: &str| crate::permalink::quote(s, 40);
    let Some(index) = LESSONS.iter().position(|l| l.id == id) else {
        return Some(Err(format!("there is no lesson named {}", quote(id))));
    };
    let steps = LESSONS[index].steps.len();
    let step = match step {
        None => 1,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=steps).contains(&n) => n,
            _ => {
                return Some(Err(format!(
                    "lesson {id} has steps 1 to {steps}, not {}",
                    quote(&s)
                )));
            }
        },
    };
    Some(Ok(Place {
        lesson: index,
        step: step - 1,
    }))
}

static LESSONS: &[Lesson] = &[
    Lesson {
        id: "masking-bias",
        title: "Why token masking is biased",
        summary: "Masking forbidden tokens at each step changes which strings the model writes.",
        paper: "from Park et al., Grammar-Aligned Decoding (ASAp, NeurIPS 2024)",
        steps: &[
            Step {
                words: "A tiny model writes strings of 0s and 1s, and the grammar allows only \
                    00000, or a 1 followed by four digits. Token masking removes the tokens \
                    the grammar forbids at each step (struck out) and rescales the rest.",
                example: "toy-gsk",
                method: "lcd",
                compare: &[],
                tune: |s| s.n = 1,
                look: Look::Token,
            },
            Step {
                words: "Drawn 200 times, masking writes 00000 nearly half the time. The model \
                    restricted to the grammar (the exact P^L, green bars) almost never does: \
                    masking committed to a first 0 before knowing that nearly every string \
                    starting with 0 is forbidden.",
                example: "toy-gsk",
                method: "lcd",
                compare: &[],
                tune: |s| s.n = 200,
                look: Look::Results,
            },
            Step {
                words: "Beside an exact sampler with the same number of model calls, the gap \
                    is plain: the distance to P^L (TV, under each column) stays large for \
                    masking, however long it runs.",
                example: "toy-gsk",
                method: "lcd",
                compare: &["lcd", "cars"],
                tune: keep,
                look: Look::Compare,
            },
        ],
    },
    Lesson {
        id: "rejection-cars",
        title: "Rejection, and what the CARS trie saves",
        summary: "Exact samples by rejection; a trie of what was learned stops paying for \
            the same mistake twice.",
        paper: "from Constrained Adaptive Rejection Sampling (CARS, ICML 2026)",
        steps: &[
            Step {
                words: "The simplest exact sampler: let the model write freely and throw \
                    away what the grammar rejects. Exact, and the acceptance rate shows the \
                    cost: most tries are wasted.",
                example: "toy-gsk",
                method: "rs",
                compare: &[],
                tune: |s| s.n = 50,
                look: Look::Results,
            },
            Step {
                words: "Adaptive rejection remembers. Each rejected prefix joins a trie and \
                    its probability is taken out, so the same mistake is never drawn again.",
                example: "toy-gsk",
                method: "ars",
                compare: &[],
                tune: |s| s.n = 50,
                look: Look::Trie,
            },
            Step {
                words: "CARS checks every possible next token against the grammar while it \
                    walks, so all the dead ends of a node join the trie at once. Watch the \
                    acceptance rate climb toward 1.",
                example: "toy-gsk",
                method: "cars",
                compare: &[],
                tune: |s| s.n = 50,
                look: Look::Trie,
            },
            Step {
                words: "On the same number of model calls all three are exact; CARS turns \
                    the most of them into valid samples.",
                example: "toy-gsk",
                method: "rs",
                compare: &["rs", "ars", "cars"],
                tune: |s| s.budget = 600,
                look: Look::Compare,
            },
        ],
    },
    Lesson {
        id: "mcmc",
        title: "MCMC repairs the bias, step by step",
        summary: "Start from a masked sample and let Metropolis–Hastings move it toward P^L.",
        paper: "from Anaya Gonzalez et al., Constrained Sampling for Language Models Should \
            Be Easy: An MCMC Perspective (NeurIPS 2025)",
        steps: &[
            Step {
                words: "A chain starts from a masked sample. Each step cuts the string at a \
                    random point, redraws the rest with masking, and accepts the new string \
                    with the Metropolis–Hastings probability (green: accepted).",
                example: "toy-gsk",
                method: "mcmc-uniform",
                compare: &[],
                tune: |s| {
                    s.n = 1;
                    s.steps = 20;
                },
                look: Look::Mcmc,
            },
            Step {
                words: "A hundred chains of 30 steps each: their last strings are much \
                    closer to P^L than masking's samples (compare the TV line with lesson 1).",
                example: "toy-gsk",
                method: "mcmc-uniform",
                compare: &[],
                tune: |s| {
                    s.n = 100;
                    s.steps = 30;
                },
                look: Look::Results,
            },
            Step {
                words: "Masking, MCMC and an exact sampler on an equal budget of model calls: \
                    MCMC pays more calls per sample and gets closer the longer its chains.",
                example: "toy-gsk",
                method: "lcd",
                compare: &["lcd", "mcmc-uniform", "cars"],
                tune: keep,
                look: Look::Compare,
            },
        ],
    },
    Lesson {
        id: "smc",
        title: "Weighted particles: AWRS inside SMC",
        summary: "Particles carry weights that correct for the grammar; resampling keeps \
            the heavy ones.",
        paper: "from Lipkin et al., Fast Controlled Generation from Language Models with \
            Adaptive Weighted Rejection Sampling (AWRS)",
        steps: &[
            Step {
                words: "Eight particles write at once (five runs, one after another). Each \
                    picks its next token by adaptive rejection (AWRS) and carries a weight \
                    that corrects for what the grammar removed; the bars show the weights.",
                example: "toy-random",
                method: "awrs-smc",
                compare: &[],
                // One run of 8 particles is exact only on average (its TV to P^L here is
                // 0.75); five runs together are at 0.20.
                tune: |s| s.n = 5,
                look: Look::Smc,
            },
            Step {
                words: "When a few particles hold most of the weight, the effective sample \
                    size (ESS) drops; below τ·M the particles are resampled: heavy ones are \
                    copied, light ones dropped. Here τ = 0.9, so it happens often.",
                example: "toy-random",
                method: "awrs-smc",
                compare: &[],
                tune: |s| {
                    s.n = 5;
                    s.ess_threshold = 0.9;
                },
                look: Look::Smc,
            },
            Step {
                words: "Many weighted runs together match P^L; set beside masking and CARS \
                    on the same budget of model calls.",
                example: "toy-random",
                method: "lcd",
                compare: &["lcd", "cars", "awrs-smc"],
                tune: keep,
                look: Look::Compare,
            },
        ],
    },
    Lesson {
        id: "budget",
        title: "Budget-aware masks, and P-GCD's guide",
        summary: "A tensorized automaton says which tokens can still finish within the \
            tokens left; an HMM guides the proposal.",
        paper: "from Mitigating Bias in Locally Constrained Decoding via Tractable Proposals \
            (P-GCD)",
        steps: &[
            Step {
                words: "With at most 3 tokens, masking can start a string it cannot finish \
                    in time. The budget-aware mask, read from a tensorized automaton, keeps \
                    only tokens that can still reach an accepted string within the tokens \
                    left.",
                example: "toy-random",
                method: "gcd-budget",
                compare: &[],
                tune: |s| {
                    s.n = 1;
                    s.max_tokens = 3;
                },
                look: Look::Token,
            },
            Step {
                words: "P-GCD learns a small hidden Markov model from the model's own \
                    samples and multiplies it with the automaton: the guide favours tokens \
                    likely to end well, and the particles' weights keep the target exact.",
                example: "toy-random",
                method: "p-gcd-smc",
                compare: &[],
                tune: |s| {
                    s.n = 1;
                    s.max_tokens = 3;
                },
                look: Look::Smc,
            },
            Step {
                words: "The budget mask alone is still biased: it writes ab more often than \
                    c, though the model gives c about five times ab's probability (log P). \
                    With SMC's weights, smc-gcd and P-GCD agree on about 82% c, as P^L within \
                    3 tokens does.",
                example: "toy-random",
                method: "gcd-budget",
                compare: &["gcd-budget", "smc-gcd", "p-gcd-smc"],
                tune: |s| s.max_tokens = 3,
                look: Look::Compare,
            },
        ],
    },
    Lesson {
        id: "smollm2",
        title: "The same ideas on a real model",
        summary: "SmolLM2-135M, running in this tab, writes a date and a JSON object under \
            a grammar.",
        paper: "from all five papers",
        steps: &[
            Step {
                words: "A real 135M-parameter model, running in this tab. The regex allows \
                    only a date, YYYY-MM-DD; token masking strikes out every token that \
                    cannot continue one.",
                example: "date",
                method: "lcd",
                compare: &[],
                tune: |s| s.n = 2,
                look: Look::Token,
            },
            Step {
                words: "CARS on the same prompt: exact samples of what the model itself \
                    would write as a date, and the trie of what it learned on the way.",
                example: "date",
                method: "cars",
                compare: &[],
                tune: |s| s.n = 2,
                look: Look::Trie,
            },
            Step {
                words: "A JSON object {\"x\": integer} from a JSON Schema, by weighted \
                    particles (AWRS inside SMC).",
                example: "json-x-integer",
                method: "awrs-smc",
                compare: &[],
                tune: |s| {
                    s.n = 1;
                    s.particles = 4;
                },
                look: Look::Smc,
            },
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraint::build_constraint;
    use crate::exact::{ExactLimits, ground_truth_ready, tv};
    use crate::runner::{Outcome, Run};
    use crate::views::{Labels, Views};
    use sampler_core::{Constraint, TokenId};

    /// Runs a toy step (its first sampler alone) and gives TV(samples, P^L).
    fn tv_of(step: &Step, method: &str, n: usize) -> f64 {
        let mut s = step.state();
        s.method = method.into();
        s.compare.clear();
        s.n = n;
        let toy = s.model.toy().expect("a toy step");
        let vocab = toy.vocabulary();
        let c = build_constraint(s.grammar_kind, &s.grammar, &vocab).unwrap();
        let run = Run::from_state(&s).unwrap();
        let outcome = run.drive_ready(&mut toy.lm(), &c, Some(&vocab));
        assert!(matches!(outcome, Outcome::Completed(_)), "{outcome:?}");
        let mut views = Views::new(Labels::from_vocabulary(&vocab));
        for e in run.events_from(0) {
            views.apply_recorded(&e);
        }
        let exact = ground_truth_ready(&mut toy.lm(), &c, ExactLimits::toy(s.max_tokens)).unwrap();
        tv(&views.results.empirical(), &exact)
    }

    #[test]
    fn every_step_is_valid_and_every_toy_step_runs_to_its_end() {
        for l in lessons() {
            assert!(!l.steps.is_empty(), "{}", l.id);
            for (i, step) in l.steps.iter().enumerate() {
                let s = step.state();
                s.validate()
                    .unwrap_or_else(|e| panic!("{} step {}: {e}", l.id, i + 1));
                assert!(
                    step.words.len() < 400,
                    "{} step {}: a step is one or two sentences",
                    l.id,
                    i + 1
                );
                if step.look == Look::Compare {
                    assert!(!s.compare.is_empty(), "{} step {}", l.id, i + 1);
                }
                if s.model.toy().is_none() {
                    continue;
                }
                let runs = if s.compare.is_empty() {
                    vec![Run::run_toy(&s).unwrap()]
                } else {
                    Run::compare_from_state(&s)
                        .unwrap()
                        .into_iter()
                        .inspect(|r| {
                            let toy = s.model.toy().unwrap();
                            let (mut lm, vocab) = crate::toy::build(toy);
                            let c = build_constraint(s.grammar_kind, &s.grammar, &vocab).unwrap();
                            r.drive_ready(&mut lm, &c, Some(&vocab));
                        })
                        .collect()
                };
                for r in runs {
                    let o = r.outcome().unwrap();
                    assert!(
                        matches!(o, Outcome::Completed(_) | Outcome::BudgetReached),
                        "{} step {} ({:?}): {o:?}",
                        l.id,
                        i + 1,
                        r.method()
                    );
                    assert!(!r.samples().is_empty(), "{} step {}", l.id, i + 1);
                }
            }
        }
    }

    #[test]
    fn the_lessons_words_hold() {
        let step = &lesson("masking-bias").unwrap().steps[1];
        // "masking writes 00000 about half the time … P^L almost never does".
        let masked = tv_of(step, "lcd", 200);
        assert!(masked > 0.3, "masking's TV to P^L is {masked}");
        // 200 exact samples of 16 strings sit about 0.15 from P^L by chance alone.
        let exact = tv_of(step, "cars", 200);
        assert!(
            exact < masked / 2.0,
            "CARS {exact} against masking {masked}"
        );
        eprintln!("TV to P^L over 200 samples: lcd {masked:.3}, cars {exact:.3}");
        // "MCMC … much closer to P^L than masking's samples".
        let mcmc_step = &lesson("mcmc").unwrap().steps[1];
        let mcmc = tv_of(mcmc_step, "mcmc-uniform", 100);
        assert!(mcmc < masked / 2.0, "MCMC {mcmc} against masking {masked}");
        eprintln!("TV to P^L over 100 chains of 30 steps: mcmc-uniform {mcmc:.3}");
        // "On the same number of model calls … CARS turns the most of them into valid
        // samples" (rs, ars, cars on 600 calls each).
        let s = lesson("rejection-cars").unwrap().steps[3].state();
        let valid: Vec<usize> = Run::compare_from_state(&s)
            .unwrap()
            .into_iter()
            .map(|r| {
                let toy = s.model.toy().unwrap();
                let (mut lm, vocab) = crate::toy::build(toy);
                let c = build_constraint(s.grammar_kind, &s.grammar, &vocab).unwrap();
                r.drive_ready(&mut lm, &c, Some(&vocab));
                r.samples().iter().filter(|x| x.valid).count()
            })
            .collect();
        eprintln!("valid samples on 600 model calls: rs, ars, cars = {valid:?}");
        assert!(valid[0] < valid[1] && valid[1] < valid[2], "{valid:?}");

        // The budget lesson: P^L within 3 tokens, from the toy model's own probabilities
        // (the page cannot enumerate it, the language having longer strings), against each
        // sampler's share of "c".
        let s = lesson("budget").unwrap().steps[2].state();
        let toy = s.model.toy().unwrap();
        let (lm, vocab) = crate::toy::build(toy);
        let labels = Labels::from_vocabulary(&vocab);
        let eos = vocab.len() as TokenId - 1;
        let p = |w: &[TokenId]| -> f64 {
            let mut seq = w.to_vec();
            seq.push(eos);
            (0..seq.len())
                .map(|i| lm.probs(&seq[..i])[seq[i] as usize])
                .product()
        };
        let c = build_constraint(s.grammar_kind, &s.grammar, &vocab).unwrap();
        let accepted = |w: &[TokenId]| {
            let mut st = c.initial();
            for &t in w.iter().chain([eos].iter()) {
                match c.advance(&st, t) {
                    Some(n) => st = n,
                    None => return false,
                }
            }
            c.is_complete(&st)
        };
        let mut words: Vec<Vec<TokenId>> = (0..eos).map(|t| vec![t]).collect();
        for a in 0..eos {
            for b in 0..eos {
                words.push(vec![a, b]);
            }
        }
        let target: Vec<(String, f64)> = words
            .iter()
            .filter(|w| accepted(w))
            .map(|w| (labels.text(w), p(w)))
            .collect();
        let z: f64 = target.iter().map(|t| t.1).sum();
        let target_c = target.iter().find(|t| t.0 == "c").unwrap().1 / z;
        let target_ab = target.iter().find(|t| t.0 == "ab").unwrap().1 / z;
        let share = |method: &str| -> (f64, f64) {
            let run = Run::compare_from_state(&s)
                .unwrap()
                .into_iter()
                .find(|r| r.method().name() == method)
                .unwrap();
            let (mut lm, vocab) = crate::toy::build(toy);
            let c = build_constraint(s.grammar_kind, &s.grammar, &vocab).unwrap();
            run.drive_ready(&mut lm, &c, Some(&vocab));
            let mut views = Views::new(Labels::from_vocabulary(&vocab));
            for e in run.events_from(0) {
                views.apply_recorded(&e);
            }
            let r = &views.results;
            let of = |text: &str| {
                r.outputs
                    .iter()
                    .filter(|o| o.text == text)
                    .map(|o| o.weight)
                    .sum::<f64>()
                    / r.total_weight
            };
            (of("c"), of("ab"))
        };
        let (budget_c, budget_ab) = share("gcd-budget");
        eprintln!(
            "P^L within 3 tokens: c {target_c:.3}, ab {target_ab:.3}; gcd-budget: c {budget_c:.3}, ab {budget_ab:.3}"
        );
        assert!(
            (4.0..6.5).contains(&(target_c / target_ab)),
            "c is about five times ab"
        );
        assert!(
            budget_ab > budget_c,
            "the budget mask writes ab more often than c"
        );
        assert!((0.78..0.86).contains(&target_c), "about 82% c: {target_c}");
        for m in ["smc-gcd", "p-gcd-smc"] {
            let (mc, _) = share(m);
            eprintln!("{m}: c {mc:.3}");
            assert!(
                (mc - target_c).abs() < 0.04,
                "{m}: c {mc} against P^L's {target_c}"
            );
        }
    }

    #[test]
    fn links_name_a_lesson_and_a_step_counted_from_one() {
        let p = parse_link("#lesson=mcmc&step=2").unwrap().unwrap();
        assert_eq!(p.lesson().id, "mcmc");
        assert_eq!(p.step, 1);
        assert_eq!(p.hash(), "lesson=mcmc&step=2");
        assert_eq!(parse_link("lesson=smc").unwrap().unwrap().step, 0);
        assert!(parse_link("example=toy-gsk").is_none());
        assert!(parse_link("v=1&s=abc").is_none());
        let e = parse_link("lesson=mcmc&step=9").unwrap().unwrap_err();
        assert!(e.contains("steps 1 to 3"), "{e}");
        assert!(parse_link("lesson=mcmc&step=0").unwrap().is_err());
        let e = parse_link(&format!("lesson={}", "<script>".repeat(50)))
            .unwrap()
            .unwrap_err();
        assert!(e.contains("no lesson named") && e.len() < 100, "{e}");
        for l in lessons() {
            assert_eq!(
                lessons().iter().filter(|m| m.id == l.id).count(),
                1,
                "ids are unique"
            );
        }
    }

    #[test]
    fn next_and_back_walk_every_step_in_order() {
        let mut p = Place { lesson: 0, step: 0 };
        let mut seen = vec![p];
        while let Some(q) = p.next() {
            assert_eq!(q.back(), Some(p));
            seen.push(q);
            p = q;
        }
        let total: usize = lessons().iter().map(|l| l.steps.len()).sum();
        assert_eq!(seen.len(), total);
        assert_eq!(Place { lesson: 0, step: 0 }.back(), None);
        for q in &seen {
            assert_eq!(parse_link(&q.hash()), Some(Ok(*q)));
        }
    }
}
