//! Exact enumeration of a sampler's random paths, in the shape the token-sampler and MCMC
//! tests want: every outcome with its probability. It is [`crate::exact::explore`] (the one
//! path enumerator) without a probability floor.
//!
//! Tests use it to compute the exact distribution a sampler induces (a token sampler's
//! outputs, one MCMC transition) and compare it with the target without sampling noise.
//! Only [`RandomSource::categorical`] draws can be enumerated; a path that asks for
//! [`RandomSource::uniform`] makes [`enumerate_paths`] fail.

use crate::RandomSource;

/// Runs `f` once per random path (depth first) and returns each outcome with its
/// probability; fails when a path draws a uniform or there are more than `max_paths` paths.
pub fn enumerate_paths<R>(
    max_paths: usize,
    mut f: impl FnMut(&mut dyn RandomSource) -> R,
) -> Result<Vec<(f64, R)>, String> {
    let e = crate::exact::explore(0.0, max_paths, |rng, _| f(rng))?;
    Ok(e.outcomes.into_iter().map(|(o, p)| (p, o)).collect())
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
