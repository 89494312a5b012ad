//! The sampler names of the command-line contract (docs/cli.md).

use std::fmt;
use std::str::FromStr;

/// Every sampling method Strait knows, by its command-line name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Method {
    /// Unconstrained ancestral sampling.
    Lm,
    /// Rejection sampling: whole sequences from P, keep the valid ones.
    Rs,
    /// Rejection sampling that stops a generation at its first non-viable prefix.
    SampleVerify,
    /// Adaptive rejection sampling: the shortest invalid prefix joins the trie.
    Ars,
    /// Rejection sampling with forbidden first tokens (seed 002).
    Rsft,
    /// Constrained adaptive rejection sampling (seed 002).
    Cars,
    /// Token masking (locally constrained decoding).
    Lcd,
    /// Token masking with the budget-aware mask of the tensorized automaton (seed 001).
    GcdBudget,
    /// Approximately aligned sampling with expected future grammaticality (seed 004).
    Asap,
    /// MCMC with a uniformly drawn truncation point (seed 000).
    McmcUniform,
    /// MCMC with the truncation point drawn by per-position perplexity (seed 000).
    McmcPriority,
    /// MCMC that always regenerates from scratch (an independence sampler, seed 000).
    McmcRestart,
    /// SMC with weighted rejection sampling token proposals (seed 003).
    WrsSmc,
    /// Adaptive weighted rejection per token, without the weight (ARS-LCD, seed 003).
    AwrsLcd,
    /// SMC with adaptive weighted rejection sampling token proposals (seed 003).
    AwrsSmc,
    /// SMC with the LM as proposal and the constraint as twist.
    TwistedSmc,
    /// SMC with token masking (or the budget mask) as proposal and weight Z.
    SmcGcd,
    /// SMC with the HMM-guided P-GCD proposal (seed 001).
    PGcdSmc,
    /// The faithful sampler that will finish: a pilot SMC run estimates how much of the
    /// model's mass the constraint keeps, then exact CARS or weighted SMC runs.
    Auto,
}

impl Method {
    /// Every method, in the order of the command-line contract.
    pub const ALL: [Method; 19] = [
        Method::Lm,
        Method::Rs,
        Method::Ars,
        Method::Rsft,
        Method::Cars,
        Method::Lcd,
        Method::GcdBudget,
        Method::Asap,
        Method::McmcUniform,
        Method::McmcPriority,
        Method::McmcRestart,
        Method::WrsSmc,
        Method::AwrsLcd,
        Method::AwrsSmc,
        Method::TwistedSmc,
        Method::SampleVerify,
        Method::SmcGcd,
        Method::PGcdSmc,
        Method::Auto,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Lm => "lm",
            Method::Rs => "rs",
            Method::SampleVerify => "sample-verify",
            Method::Ars => "ars",
            Method::Rsft => "rsft",
            Method::Cars => "cars",
            Method::Lcd => "lcd",
            Method::GcdBudget => "gcd-budget",
            Method::Asap => "asap",
            Method::McmcUniform => "mcmc-uniform",
            Method::McmcPriority => "mcmc-priority",
            Method::McmcRestart => "mcmc-restart",
            Method::WrsSmc => "wrs-smc",
            Method::AwrsLcd => "awrs-lcd",
            Method::AwrsSmc => "awrs-smc",
            Method::TwistedSmc => "twisted-smc",
            Method::SmcGcd => "smc-gcd",
            Method::PGcdSmc => "p-gcd-smc",
            Method::Auto => "auto",
        }
    }

    /// Whether the method samples exactly from P^L (given enough effort).
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            Method::Rs | Method::SampleVerify | Method::Ars | Method::Rsft | Method::Cars
        )
    }

    /// Whether the method needs a regular constraint (a budget-aware mask).
    pub fn needs_regular(self) -> bool {
        matches!(self, Method::GcdBudget | Method::PGcdSmc)
    }

    /// Whether the method runs particles (`--particles`).
    pub fn is_smc(self) -> bool {
        matches!(
            self,
            Method::WrsSmc
                | Method::AwrsSmc
                | Method::TwistedSmc
                | Method::SmcGcd
                | Method::PGcdSmc
        )
    }

    /// Whether the method is an MCMC chain (`--steps`).
    pub fn is_mcmc(self) -> bool {
        matches!(
            self,
            Method::McmcUniform | Method::McmcPriority | Method::McmcRestart
        )
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Method::ALL.iter().map(|m| m.name()).collect();
                format!("unknown method {s:?}; expected one of {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_an_error() {
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>(), Ok(m));
        }
        assert!(
            "mcmc"
                .parse::<Method>()
                .unwrap_err()
                .contains("mcmc-uniform")
        );
    }
}
