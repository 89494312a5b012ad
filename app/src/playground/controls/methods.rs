//! The samplers the page offers, and one line on what each does.

use sampler_core::samplers::Method;

/// The methods the page offers by family, in the order the sampler menu shows them:
/// `auto` first (the faithful sampler that finishes is what a new grammar should start
/// with), then masking, exact rejection, MCMC, weighted SMC, budget and HMM, and the
/// unconstrained model. Every implemented method is in exactly one family.
pub const FAMILIES: [(&str, &[Method]); 7] = [
    ("Start here", &[Method::Auto]),
    (
        "Token masking (fast, biased)",
        &[Method::Lcd, Method::Asap, Method::AwrsLcd],
    ),
    (
        "Exact rejection",
        &[
            Method::Cars,
            Method::Rsft,
            Method::Ars,
            Method::SampleVerify,
            Method::Rs,
        ],
    ),
    (
        "MCMC (faithful as steps grow)",
        &[
            Method::McmcRestart,
            Method::McmcPriority,
            Method::McmcUniform,
        ],
    ),
    (
        "Weighted SMC (faithful with its weights)",
        &[
            Method::SmcGcd,
            Method::AwrsSmc,
            Method::WrsSmc,
            Method::TwistedSmc,
        ],
    ),
    (
        "Budget and HMM (regexes only)",
        &[Method::GcdBudget, Method::PGcdSmc],
    ),
    ("No constraint", &[Method::Lm]),
];

/// The methods the page offers (every implemented one), in the families' order.
pub fn methods() -> impl Iterator<Item = Method> {
    FAMILIES.into_iter().flat_map(|(_, ms)| ms.iter().copied())
}

/// The name a method is offered under.
pub fn method_label(m: Method) -> &'static str {
    match m {
        Method::Auto => "auto (faithful)",
        m => m.name(),
    }
}

/// One line on what a method does, for the select's tooltip and the hint under it.
pub fn method_hint(m: &str) -> &'static str {
    match m {
        "lm" => "unconstrained ancestral sampling (ignores the grammar)",
        "rs" => "rejection: whole sequences from P, keep the valid ones (exact up to max tokens)",
        "sample-verify" => {
            "rejection stopping at the first non-viable prefix (exact up to max tokens)"
        }
        "ars" => {
            "adaptive rejection: the shortest invalid prefix joins the trie (exact up to max tokens)"
        }
        "rsft" => "rejection with forbidden first tokens (exact up to max tokens)",
        "cars" => {
            "constrained adaptive rejection: every non-viable token joins the trie (exact up to max tokens)"
        }
        "lcd" => "token masking: fast, but biased",
        "gcd-budget" => "token masking with the budget-aware mask (regular grammars)",
        "asap" => "ASAp: masking reweighted by c̃, learned sample after sample",
        "mcmc-uniform" | "mcmc-priority" | "mcmc-restart" => {
            "MCMC over masked proposals: k steps per chain; stationary for P restricted to max tokens"
        }
        "wrs-smc" | "awrs-smc" | "twisted-smc" | "smc-gcd" => {
            "SMC: M weighted particles, resampled when ESS < τ·M"
        }
        "p-gcd-smc" => {
            "SMC guided by an HMM distilled from the model × the regex's automaton (regexes)"
        }
        "awrs-lcd" => "adaptive weighted rejection per token, without the weight",
        "auto" => {
            "faithful, and it finishes: exact CARS while it needs few generations a sample, else weighted SMC (says which and why)"
        }
        _ => "",
    }
}
