//! Watching an exact run: after each generation a rejection sampler tells its watch how it
//! is doing ([`Progress`]), and the watch may say something to the user or end the run
//! ([`Verdict`]). A sampler chosen by hand is watched by [`Advice`], which says early,
//! with an estimate, when exact rejection may not finish and what would; `auto` watches
//! CARS with its own rule and hands over to weighted SMC (`samplers/auto.rs`).
//!
//! A watch sees counts only (generations, acceptances, the trie's live mass), never what
//! was drawn, so ending a run by its verdict selects no sample: each accepted sample is
//! P^L whatever the trie was when it was drawn and however long it took.

use super::Method;
use crate::Event;

/// How an exact run stands after a generation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Samples accepted so far in this run.
    pub accepted: usize,
    /// Generations started so far in this run.
    pub generations: u64,
    /// Generations in a row without a valid one.
    pub failures: u64,
    /// The trie's live mass p_ε: an upper bound on the mass of valid outputs.
    pub p_root: f64,
}

/// What a watch answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Carry on.
    Go,
    /// Tell the user (the event), and carry on.
    Say(Event),
    /// Tell the user, and end the run here (its samples so far stand).
    HandOver(Event),
}

/// The weighted SMC sampler `auto` hands over to, and advice names, when exact rejection
/// would not finish: SMC with the masking proposal (the budget-aware mask on a regular
/// constraint), which finishes in about one batched generation a run whatever the mass.
pub const WEIGHTED: Method = Method::SmcGcd;

/// Generations in a row without a valid sample after which [`Advice`] speaks (then again
/// at 8 times as many).
pub const ADVISE_AFTER: u64 = 32;

/// A mass as people read it: two decimals down to 0.01, then a power of ten.
pub fn mass_text(mass: f64) -> String {
    if mass >= 0.01 {
        format!("{mass:.2}")
    } else {
        format!("{mass:.0e}")
    }
}

/// A count as people read it: whole numbers below a million, then a power of ten.
pub fn count_text(x: f64) -> String {
    if x < 1e6 {
        format!("{}", x.round())
    } else {
        format!("{x:.0e}")
    }
}

/// The watch of an exact sampler chosen by hand: after [`ADVISE_AFTER`] generations in a
/// row without a valid sample (and 8 times as many, and so on) it says that valid outputs
/// hold at most about min(p_ε, 3/failures) of the model's mass (3/n: the usual 95% bound
/// after n failures), so exact rejection may need that many generations a sample, and
/// names the weighted sampler that finishes.
#[derive(Clone, Debug)]
pub struct Advice {
    next: u64,
}

impl Default for Advice {
    fn default() -> Self {
        Advice { next: ADVISE_AFTER }
    }
}

impl Advice {
    /// The verdict after a generation.
    pub fn check(&mut self, p: &Progress) -> Verdict {
        if p.failures != self.next {
            return Verdict::Go;
        }
        self.next *= 8;
        let bound = p.p_root.min(3.0 / p.failures as f64);
        Verdict::Say(Event::Estimate {
            log_mass: bound.ln(),
            method: WEIGHTED.name().into(),
            chosen: false,
            message: format!(
                "{} generations in a row without a valid output: valid outputs hold at most \
                 about {} of the model's mass, so exact rejection may need {} or more \
                 generations a sample. Stop and choose weighted SMC ({}) or auto, which \
                 finish whatever the mass.",
                p.failures,
                mass_text(bound),
                count_text(1.0 / bound),
                WEIGHTED.name()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(failures: u64) -> Progress {
        Progress {
            accepted: 0,
            generations: failures,
            failures,
            p_root: 0.5,
        }
    }

    #[test]
    fn advice_speaks_at_32_failures_then_at_256_with_the_bound() {
        let mut a = Advice::default();
        assert_eq!(a.check(&at(31)), Verdict::Go);
        let Verdict::Say(Event::Estimate {
            log_mass,
            method,
            chosen,
            message,
        }) = a.check(&at(32))
        else {
            panic!("no advice at 32");
        };
        assert!(!chosen && method == "smc-gcd");
        assert!((log_mass - (3.0f64 / 32.0).ln()).abs() < 1e-12);
        assert!(
            message.contains("about 0.09 of the model's mass"),
            "{message}"
        );
        assert!(
            message.contains("may need 11 or more generations"),
            "{message}"
        );
        assert_eq!(a.check(&at(33)), Verdict::Go);
        assert!(matches!(a.check(&at(256)), Verdict::Say(_)));
        // The trie's live mass bounds the estimate when it is the smaller.
        let mut a = Advice::default();
        let p = Progress {
            p_root: 1e-20,
            ..at(32)
        };
        let Verdict::Say(Event::Estimate { message, .. }) = a.check(&p) else {
            panic!()
        };
        assert!(
            message.contains("about 1e-20 of the model's mass"),
            "{message}"
        );
        assert!(message.contains("1e20 or more"), "{message}");
    }
}
