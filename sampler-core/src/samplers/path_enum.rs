//! Exact enumeration of a sampler's random paths: a [`RandomSource`] that replays a script
//! of categorical choices, and a driver that visits every path with its probability.
//!
//! Tests use it to compute the exact distribution a sampler induces (a token sampler's
//! outputs, one MCMC transition) and compare it with the target without sampling noise.
//! Only [`RandomSource::categorical`] draws can be enumerated; a path that asks for
//! [`RandomSource::uniform`] makes [`enumerate_paths`] fail.

use crate::RandomSource;

/// A random source that follows a script of choices, then takes the first possible branch,
/// recording every choice and its probability.
#[derive(Debug, Default)]
pub struct PathRng {
    script: Vec<usize>,
    /// Each draw's (normalized weights, chosen index).
    draws: Vec<(Vec<f64>, usize)>,
    used_uniform: bool,
}

impl PathRng {
    /// Probability of the path followed so far.
    pub fn probability(&self) -> f64 {
        self.draws.iter().map(|(w, i)| w[*i]).product()
    }

    /// The script of the next path in depth-first order, or `None` after the last one.
    fn next_script(&self) -> Option<Vec<usize>> {
        for k in (0..self.draws.len()).rev() {
            let (w, chosen) = &self.draws[k];
            if let Some(j) = (chosen + 1..w.len()).find(|&j| w[j] > 0.0) {
                let mut s: Vec<usize> = self.draws[..k].iter().map(|(_, i)| *i).collect();
                s.push(j);
                return Some(s);
            }
        }
        None
    }
}

impl RandomSource for PathRng {
    fn uniform(&mut self) -> f64 {
        self.used_uniform = true;
        0.5
    }

    fn categorical(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let norm: Vec<f64> = weights.iter().map(|w| w / total).collect();
        let k = self.draws.len();
        let chosen = match self.script.get(k) {
            Some(&i) => i,
            None => norm.iter().position(|&w| w > 0.0).unwrap_or(0),
        };
        self.draws.push((norm, chosen));
        chosen
    }
}

/// Runs `f` once per random path (depth first) and returns each outcome with its
/// probability; fails when a path draws a uniform or there are more than `max_paths` paths.
pub fn enumerate_paths<R>(
    max_paths: usize,
    mut f: impl FnMut(&mut PathRng) -> R,
) -> Result<Vec<(f64, R)>, String> {
    let mut out = Vec::new();
    let mut script = Vec::new();
    loop {
        if out.len() >= max_paths {
            return Err(format!("more than {max_paths} random paths"));
        }
        let mut rng = PathRng {
            script,
            ..PathRng::default()
        };
        let r = f(&mut rng);
        if rng.used_uniform {
            return Err("a path drew a uniform; only categorical draws can be enumerated".into());
        }
        out.push((rng.probability(), r));
        match rng.next_script() {
            Some(s) => script = s,
            None => return Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumerates_two_dice_and_refuses_uniforms() {
        let paths = enumerate_paths(100, |r| {
            let a = r.categorical(&[1.0, 0.0, 3.0]);
            let b = r.categorical(&[1.0, 1.0]);
            (a, b)
        })
        .unwrap();
        assert_eq!(paths.len(), 4);
        let total: f64 = paths.iter().map(|(p, _)| p).sum();
        assert!((total - 1.0).abs() < 1e-15);
        let p20: f64 = paths
            .iter()
            .filter(|(_, o)| *o == (2, 0))
            .map(|(p, _)| *p)
            .sum();
        assert!((p20 - 0.375).abs() < 1e-15);
        assert!(enumerate_paths(10, |r| r.uniform()).is_err());
        assert!(enumerate_paths(3, |r| r.categorical(&[1.0; 4])).is_err());
    }
}
