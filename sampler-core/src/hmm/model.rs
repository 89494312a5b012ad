//! A hidden Markov model over the token vocabulary, its scaled forward-backward pass and
//! Baum–Welch (EM) with an optional Dirichlet pseudo-count.

use crate::{RandomSource, TokenId};

/// An HMM with `hidden` states over `vocab` tokens: z₁ ~ π, x_t ~ B[z_t], z_{t+1} ~ A[z_t].
///
/// Probabilities are stored plainly (row-major); sequences are scored with the scaled
/// forward pass, so long sequences do not underflow.
#[derive(Clone, Debug, PartialEq)]
pub struct Hmm {
    /// Number of hidden states H.
    pub hidden: usize,
    /// Number of tokens V.
    pub vocab: usize,
    /// Initial distribution π (H).
    pub initial: Vec<f64>,
    /// Transitions A, H×H row-major: `transition[h * H + h2]` = P(z' = h2 | z = h).
    pub transition: Vec<f64>,
    /// Emissions B, H×V row-major: `emission[h * V + v]` = P(x = v | z = h).
    pub emission: Vec<f64>,
}

/// One EM iteration's outcome.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmStep {
    /// Σ log P(x) of the data under the model *before* the update.
    pub log_likelihood: f64,
    /// The MAP objective before the update: log-likelihood + log prior (the pseudo-count
    /// times the sum of every log parameter); EM never decreases it.
    pub objective: f64,
}

/// Draws a probability vector of length `n` (normalized exponentials, a flat Dirichlet).
fn random_simplex(n: usize, rng: &mut dyn RandomSource) -> Vec<f64> {
    let mut p: Vec<f64> = (0..n).map(|_| -(1.0 - rng.uniform()).ln() + 1e-3).collect();
    let s: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= s);
    p
}

/// Normalizes `row` in place to sum to 1 (uniform when its sum is 0).
fn normalize(row: &mut [f64]) {
    let s: f64 = row.iter().sum();
    if s > 0.0 && s.is_finite() {
        row.iter_mut().for_each(|x| *x /= s);
    } else {
        let u = 1.0 / row.len() as f64;
        row.iter_mut().for_each(|x| *x = u);
    }
}

/// The state posteriors γ_t an E-step uses.
#[derive(Clone, Copy)]
enum Posterior {
    /// Baum–Welch's smoothed α_t·β_t.
    Smoothed,
    /// Test-only mutant: the filtered α_t (the tests must catch it).
    #[cfg(test)]
    FilteredMutant,
}

/// Expected counts gathered over the data set by the E-step.
struct Counts {
    initial: Vec<f64>,
    transition: Vec<f64>,
    emission: Vec<f64>,
}

impl Hmm {
    /// A random HMM (flat Dirichlet draws for π and every row of A and B).
    pub fn random(hidden: usize, vocab: usize, rng: &mut dyn RandomSource) -> Self {
        let initial = random_simplex(hidden, rng);
        let transition = (0..hidden)
            .flat_map(|_| random_simplex(hidden, rng))
            .collect();
        let emission = (0..hidden)
            .flat_map(|_| random_simplex(vocab, rng))
            .collect();
        Hmm {
            hidden,
            vocab,
            initial,
            transition,
            emission,
        }
    }

    /// A starting point for EM on `data`: every emission row is the data's unigram
    /// frequencies (plus `floor` per token) perturbed by a random factor in (0.5, 1.5),
    /// π and A near uniform with random perturbations (the symmetry breaking EM needs).
    pub fn init_from_data(
        hidden: usize,
        vocab: usize,
        data: &[Vec<TokenId>],
        floor: f64,
        rng: &mut dyn RandomSource,
    ) -> Self {
        let mut unigram = vec![floor.max(1e-12); vocab];
        for &t in data.iter().flatten() {
            if let Some(c) = unigram.get_mut(t as usize) {
                *c += 1.0;
            }
        }
        let mut perturbed = |n: usize, base: &dyn Fn(usize) -> f64| {
            let mut row: Vec<f64> = (0..n).map(|i| base(i) * (0.5 + rng.uniform())).collect();
            normalize(&mut row);
            row
        };
        let initial = perturbed(hidden, &|_| 1.0);
        let transition = (0..hidden)
            .flat_map(|_| perturbed(hidden, &|_| 1.0))
            .collect();
        let emission = (0..hidden)
            .flat_map(|_| perturbed(vocab, &|v| unigram[v]))
            .collect();
        Hmm {
            hidden,
            vocab,
            initial,
            transition,
            emission,
        }
    }

    /// The M-step: the HMM whose π, rows of A and rows of B are the expected counts
    /// (pseudo-counts included) normalized, each uniform where its counts sum to 0.
    pub fn from_counts(
        hidden: usize,
        vocab: usize,
        mut initial: Vec<f64>,
        mut transition: Vec<f64>,
        mut emission: Vec<f64>,
    ) -> Hmm {
        normalize(&mut initial);
        transition.chunks_mut(hidden).for_each(normalize);
        emission.chunks_mut(vocab).for_each(normalize);
        Hmm {
            hidden,
            vocab,
            initial,
            transition,
            emission,
        }
    }

    /// P(z' = h2 | z = h).
    pub fn a(&self, h: usize, h2: usize) -> f64 {
        self.transition[h * self.hidden + h2]
    }

    /// P(x = v | z = h); 0 for a token outside the vocabulary.
    pub fn b(&self, h: usize, v: TokenId) -> f64 {
        if (v as usize) < self.vocab {
            self.emission[h * self.vocab + v as usize]
        } else {
            0.0
        }
    }

    /// Bytes the parameters take (f64 each).
    pub fn bytes(&self) -> usize {
        (self.initial.len() + self.transition.len() + self.emission.len()) * 8
    }

    /// Mixes every emission row with the uniform distribution: B' = (1−ε)B + ε/V, so that
    /// every token has positive probability in every state.
    pub fn smooth_emissions(&mut self, eps: f64) {
        let u = eps / self.vocab as f64;
        self.emission
            .iter_mut()
            .for_each(|b| *b = (1.0 - eps) * *b + u);
    }

    /// The predictive belief over the hidden state of the *next* token after observing
    /// `v` from `belief`: α'(h2) ∝ Σ_h α(h)·B[h, v]·A[h, h2]. Returns `None` when the model
    /// gives `v` probability 0 under `belief`.
    pub fn advance_belief(&self, belief: &[f64], v: TokenId) -> Option<Vec<f64>> {
        let h = self.hidden;
        let mut next = vec![0.0; h];
        let mut total = 0.0;
        for (i, &a) in belief.iter().enumerate() {
            let w = a * self.b(i, v);
            if w == 0.0 {
                continue;
            }
            total += w;
            for (n, t) in next.iter_mut().zip(&self.transition[i * h..(i + 1) * h]) {
                *n += w * t;
            }
        }
        if total <= 0.0 || !total.is_finite() {
            return None;
        }
        let s: f64 = next.iter().sum();
        next.iter_mut().for_each(|x| *x /= s);
        Some(next)
    }

    /// log P(x₁..x_T) (the prefix probability: the model is not asked to stop after x_T),
    /// by the scaled forward pass; −∞ when impossible, 0 for the empty sequence.
    pub fn log_likelihood(&self, seq: &[TokenId]) -> f64 {
        let mut belief = self.initial.clone();
        let mut ll = 0.0;
        for &v in seq {
            let p: f64 = belief
                .iter()
                .enumerate()
                .map(|(h, a)| a * self.b(h, v))
                .sum();
            if p <= 0.0 {
                return f64::NEG_INFINITY;
            }
            ll += p.ln();
            match self.advance_belief(&belief, v) {
                Some(b) => belief = b,
                None => return f64::NEG_INFINITY,
            }
        }
        ll
    }

    /// The log prior of the parameters under a symmetric Dirichlet(1 + `pseudo`), up to a
    /// constant: `pseudo` · Σ log θ over π, A and B.
    pub fn log_prior(&self, pseudo: f64) -> f64 {
        if pseudo == 0.0 {
            return 0.0;
        }
        let s: f64 = self
            .initial
            .iter()
            .chain(&self.transition)
            .chain(&self.emission)
            .map(|x| x.ln())
            .sum();
        pseudo * s
    }

    /// The E-step for one sequence: adds its expected counts to `c`, returns log P(x).
    fn accumulate(&self, seq: &[TokenId], c: &mut Counts, posterior: Posterior) -> f64 {
        let (h, t_len) = (self.hidden, seq.len());
        if t_len == 0 {
            return 0.0;
        }
        // Scaled forward: alpha[t] sums to 1, scale[t] = P(x_t | x_<t).
        let mut alpha = vec![0.0; t_len * h];
        let mut scale = vec![0.0; t_len];
        for t in 0..t_len {
            let v = seq[t];
            for j in 0..h {
                let prior = if t == 0 {
                    self.initial[j]
                } else {
                    (0..h).map(|i| alpha[(t - 1) * h + i] * self.a(i, j)).sum()
                };
                alpha[t * h + j] = prior * self.b(j, v);
            }
            let s: f64 = alpha[t * h..(t + 1) * h].iter().sum();
            if s <= 0.0 {
                return f64::NEG_INFINITY;
            }
            alpha[t * h..(t + 1) * h].iter_mut().for_each(|x| *x /= s);
            scale[t] = s;
        }
        // Scaled backward: beta[T-1] = 1; beta[t] = Σ A B beta[t+1] / scale[t+1].
        let mut beta = vec![1.0; t_len * h];
        for t in (0..t_len - 1).rev() {
            let v = seq[t + 1];
            for i in 0..h {
                beta[t * h + i] = (0..h)
                    .map(|j| self.a(i, j) * self.b(j, v) * beta[(t + 1) * h + j])
                    .sum::<f64>()
                    / scale[t + 1];
            }
        }
        for t in 0..t_len {
            let v = seq[t] as usize;
            for i in 0..h {
                let gamma = match posterior {
                    Posterior::Smoothed => alpha[t * h + i] * beta[t * h + i],
                    #[cfg(test)]
                    Posterior::FilteredMutant => alpha[t * h + i],
                };
                if t == 0 {
                    c.initial[i] += gamma;
                }
                if v < self.vocab {
                    c.emission[i * self.vocab + v] += gamma;
                }
            }
            if t + 1 < t_len {
                let w = seq[t + 1];
                for i in 0..h {
                    for j in 0..h {
                        c.transition[i * h + j] +=
                            alpha[t * h + i] * self.a(i, j) * self.b(j, w) * beta[(t + 1) * h + j]
                                / scale[t + 1];
                    }
                }
            }
        }
        scale.iter().map(|s| s.ln()).sum()
    }

    /// One Baum–Welch iteration on `data` with Dirichlet pseudo-count `pseudo` (0 for
    /// maximum likelihood): replaces the parameters and reports the objective before.
    pub fn em_step(&mut self, data: &[Vec<TokenId>], pseudo: f64) -> EmStep {
        self.em_step_impl(data, pseudo, Posterior::Smoothed)
    }

    /// [`Hmm::em_step`] with the state posteriors `posterior`.
    fn em_step_impl(&mut self, data: &[Vec<TokenId>], pseudo: f64, posterior: Posterior) -> EmStep {
        let h = self.hidden;
        let mut c = Counts {
            initial: vec![pseudo; h],
            transition: vec![pseudo; h * h],
            emission: vec![pseudo; h * self.vocab],
        };
        let log_likelihood: f64 = data
            .iter()
            .map(|s| self.accumulate(s, &mut c, posterior))
            .sum();
        let objective = log_likelihood + self.log_prior(pseudo);
        *self = Hmm::from_counts(h, self.vocab, c.initial, c.transition, c.emission);
        EmStep {
            log_likelihood,
            objective,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededRng;

    /// Samples `n` sequences of length `len` from `hmm`.
    fn sample(hmm: &Hmm, n: usize, len: usize, rng: &mut SeededRng) -> Vec<Vec<TokenId>> {
        (0..n)
            .map(|_| {
                let mut z = rng.categorical(&hmm.initial);
                (0..len)
                    .map(|_| {
                        let x = rng.categorical(&hmm.emission[z * hmm.vocab..(z + 1) * hmm.vocab]);
                        z = rng.categorical(&hmm.transition[z * hmm.hidden..(z + 1) * hmm.hidden]);
                        x as TokenId
                    })
                    .collect()
            })
            .collect()
    }

    /// The scaled forward pass equals the sum over every hidden path (3³ paths).
    #[test]
    fn forward_likelihood_equals_the_sum_over_hidden_paths() {
        let hmm = Hmm::random(3, 4, &mut SeededRng::new(4));
        let x = [2u32, 0, 3];
        let mut brute = 0.0;
        for z0 in 0..3 {
            for z1 in 0..3 {
                for z2 in 0..3 {
                    brute += hmm.initial[z0]
                        * hmm.b(z0, x[0])
                        * hmm.a(z0, z1)
                        * hmm.b(z1, x[1])
                        * hmm.a(z1, z2)
                        * hmm.b(z2, x[2]);
                }
            }
        }
        assert!((hmm.log_likelihood(&x) - brute.ln()).abs() < 1e-12);
        assert_eq!(hmm.log_likelihood(&[]), 0.0);
        assert_eq!(hmm.log_likelihood(&[9]), f64::NEG_INFINITY);
    }

    /// Baum–Welch never decreases its objective (the likelihood; with a pseudo-count, the
    /// likelihood plus the log prior), and it does improve on its random start. The
    /// E-step's log-likelihood agrees with the forward pass.
    #[test]
    fn em_objective_never_decreases() {
        let truth = Hmm::random(3, 6, &mut SeededRng::new(11));
        let data = sample(&truth, 40, 12, &mut SeededRng::new(12));
        for pseudo in [0.0, 0.5] {
            let mut hmm = Hmm::init_from_data(4, 6, &data, 0.1, &mut SeededRng::new(13));
            let direct: f64 = data.iter().map(|s| hmm.log_likelihood(s)).sum();
            let mut objectives = Vec::new();
            for i in 0..30 {
                let step = hmm.em_step(&data, pseudo);
                if i == 0 {
                    assert!((step.log_likelihood - direct).abs() < 1e-9 * direct.abs());
                }
                objectives.push(step.objective);
            }
            for w in objectives.windows(2) {
                assert!(
                    w[1] >= w[0] - 1e-9 * w[0].abs(),
                    "pseudo {pseudo}: objective fell from {} to {}",
                    w[0],
                    w[1]
                );
            }
            let (first, last) = (objectives[0], *objectives.last().unwrap());
            eprintln!("pseudo {pseudo}: EM objective {first:.3} → {last:.3}");
            assert!(last > first + 1.0, "EM did not improve: {first} → {last}");
            for row in hmm.transition.chunks(4).chain(hmm.emission.chunks(6)) {
                assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            }
        }
    }

    /// One EM step by brute force: expected counts from the posterior over every hidden
    /// path of every sequence, plus `pseudo`, normalized.
    fn brute_em_step(hmm: &Hmm, data: &[Vec<TokenId>], pseudo: f64) -> Hmm {
        let (h, v) = (hmm.hidden, hmm.vocab);
        let mut pi = vec![pseudo; h];
        let mut a = vec![pseudo; h * h];
        let mut b = vec![pseudo; h * v];
        for x in data {
            let n = x.len();
            let paths: Vec<Vec<usize>> = (0..h.pow(n as u32))
                .map(|mut code| {
                    (0..n)
                        .map(|_| {
                            let z = code % h;
                            code /= h;
                            z
                        })
                        .collect()
                })
                .collect();
            let joint = |z: &[usize]| {
                let mut p = hmm.initial[z[0]] * hmm.b(z[0], x[0]);
                for t in 1..n {
                    p *= hmm.a(z[t - 1], z[t]) * hmm.b(z[t], x[t]);
                }
                p
            };
            let total: f64 = paths.iter().map(|z| joint(z)).sum();
            for z in &paths {
                let w = joint(z) / total;
                pi[z[0]] += w;
                for t in 0..n {
                    b[z[t] * v + x[t] as usize] += w;
                    if t + 1 < n {
                        a[z[t] * h + z[t + 1]] += w;
                    }
                }
            }
        }
        normalize(&mut pi);
        a.chunks_mut(h).for_each(normalize);
        b.chunks_mut(v).for_each(normalize);
        Hmm {
            hidden: h,
            vocab: v,
            initial: pi,
            transition: a,
            emission: b,
        }
    }

    fn max_param_diff(x: &Hmm, y: &Hmm) -> f64 {
        x.initial
            .iter()
            .chain(&x.transition)
            .chain(&x.emission)
            .zip(y.initial.iter().chain(&y.transition).chain(&y.emission))
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max)
    }

    /// One Baum–Welch step equals EM computed by brute force over every hidden path
    /// (3⁴ paths per sequence), with and without a pseudo-count; the mutant E-step that
    /// counts with the filtered posteriors α_t instead of the smoothed α_t·β_t (a classic
    /// slip, which still happens to raise the likelihood on this data) is caught.
    #[test]
    fn em_step_equals_brute_force_em_and_the_mutant_does_not() {
        let truth = Hmm::random(2, 4, &mut SeededRng::new(21));
        let data = sample(&truth, 5, 4, &mut SeededRng::new(22));
        let start = Hmm::random(3, 4, &mut SeededRng::new(23));
        for pseudo in [0.0, 0.3] {
            let mut real = start.clone();
            real.em_step(&data, pseudo);
            let brute = brute_em_step(&start, &data, pseudo);
            let d = max_param_diff(&real, &brute);
            assert!(d < 1e-12, "pseudo {pseudo}: {d}");
            let mut mutant = start.clone();
            mutant.em_step_impl(&data, pseudo, Posterior::FilteredMutant);
            let d = max_param_diff(&mutant, &brute);
            eprintln!("pseudo {pseudo}: mutant E-step differs from brute-force EM by {d:.3}");
            assert!(d > 1e-3, "pseudo {pseudo}: {d}");
        }
    }

    #[test]
    fn beliefs_and_smoothing() {
        let mut hmm = Hmm::random(2, 3, &mut SeededRng::new(1));
        let b = hmm.advance_belief(&hmm.initial, 1).unwrap();
        assert!((b.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        hmm.emission = vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0];
        assert!(hmm.advance_belief(&hmm.initial, 2).is_none());
        hmm.smooth_emissions(0.3);
        assert!(hmm.emission.iter().all(|&b| b >= 0.1 - 1e-15));
        assert!(hmm.advance_belief(&hmm.initial, 2).is_some());
        assert_eq!(hmm.bytes(), (2 + 4 + 6) * 8);
    }
}
