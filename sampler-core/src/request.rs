//! One sampling request and one output record, as every front end states them: the
//! `strait` command line (its flags' defaults), Python (`Model.sample(**request)`) and
//! JavaScript (`model.sample(request)`, keys in camelCase) all read a [`SampleRequest`]
//! and hand out [`Record`]s (and [`Enumerated`] and [`Scored`] lines), so an option added
//! here appears in all three.

use crate::hmm::HmmConfig;
use crate::samplers::{Counters, Method, Params, Sample};
use crate::{SampleError, Vocabulary};
use serde::{Deserialize, Serialize};

/// What to sample: the constraint (exactly one of `regex`, `grammar`, `json_schema`), the
/// prompt, the sampler and its settings. Every field has a default, so a request names only
/// what it changes; an unknown field is an error that names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SampleRequest {
    /// A regular expression the whole output matches.
    pub regex: Option<String>,
    /// A grammar's text: Lark, GBNF or a regex, detected unless `grammar_format` says.
    pub grammar: Option<String>,
    /// A JSON Schema's text.
    pub json_schema: Option<String>,
    /// The grammar's format (`lark`, `gbnf`, `regex`, `json-schema`, ...) when detection
    /// should not decide.
    pub grammar_format: Option<String>,
    /// The prompt (a GGUF model needs one; toy and function models take none).
    pub prompt: String,
    /// Wrap the prompt in the model's chat template.
    pub chat: bool,
    /// The sampler, by its command-line name (`cars`, `awrs-smc`, `auto`, ...).
    pub method: String,
    /// Samples, chains or SMC runs.
    pub n: usize,
    /// Seed of every random choice: the same seed gives the same samples in every front end.
    pub seed: u64,
    /// Most tokens in one sequence, EOS included.
    pub max_tokens: usize,
    /// SMC particles per run.
    pub particles: usize,
    /// MCMC steps per chain.
    pub steps: usize,
    /// Rejection samplers: generations drawn in lockstep.
    pub batch: usize,
    /// Exact samplers give up after this many generations in a row without a valid one.
    pub max_generations: u64,
    /// Exact samplers stop after this many generations in all, keeping what they found.
    pub generation_cap: Option<u64>,
    /// Where P-GCD's HMM work runs (`burn-flex`, `cpu`, ...).
    pub hmm_engine: String,
    /// P-GCD: hidden states of the HMM distilled from the model (`None`: the default).
    pub hmm_states: Option<usize>,
    /// P-GCD: sequences sampled from the model to fit the HMM.
    pub hmm_sequences: Option<usize>,
    /// P-GCD: Baum–Welch (EM) iterations.
    pub hmm_iterations: Option<usize>,
}

/// The defaults of [`SampleRequest`], as constants the command line's flags name too.
pub mod defaults {
    /// [`super::SampleRequest::method`].
    pub const METHOD: &str = "cars";
    /// [`super::SampleRequest::n`].
    pub const N: usize = 1;
    /// [`super::SampleRequest::seed`].
    pub const SEED: u64 = 0;
    /// [`super::SampleRequest::max_tokens`].
    pub const MAX_TOKENS: usize = 32;
    /// [`super::SampleRequest::particles`].
    pub const PARTICLES: usize = 8;
    /// [`super::SampleRequest::steps`].
    pub const STEPS: usize = 10;
    /// [`super::SampleRequest::batch`].
    pub const BATCH: usize = 1;
    /// [`super::SampleRequest::max_generations`].
    pub const MAX_GENERATIONS: u64 = 10_000;
    /// [`super::SampleRequest::hmm_engine`].
    pub const HMM_ENGINE: &str = "burn-flex";
}

impl Default for SampleRequest {
    fn default() -> Self {
        SampleRequest {
            regex: None,
            grammar: None,
            json_schema: None,
            grammar_format: None,
            prompt: String::new(),
            chat: false,
            method: defaults::METHOD.into(),
            n: defaults::N,
            seed: defaults::SEED,
            max_tokens: defaults::MAX_TOKENS,
            particles: defaults::PARTICLES,
            steps: defaults::STEPS,
            batch: defaults::BATCH,
            max_generations: defaults::MAX_GENERATIONS,
            generation_cap: None,
            hmm_engine: defaults::HMM_ENGINE.into(),
            hmm_states: None,
            hmm_sequences: None,
            hmm_iterations: None,
        }
    }
}

impl SampleRequest {
    /// Every field's name (for hosts whose deserializer skips unknown keys: JavaScript's
    /// objects are read field by field).
    pub fn field_names() -> Vec<String> {
        match serde_json::to_value(SampleRequest::default()) {
            Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The sampler named by `method`.
    pub fn sampler(&self) -> Result<Method, SampleError> {
        self.method.parse().map_err(SampleError::Unsupported)
    }

    /// The sampler's parameters, the HMM's included, checked.
    pub fn params(&self) -> Result<Params, SampleError> {
        let d = HmmConfig::default();
        let hmm = HmmConfig {
            hidden_states: self.hmm_states.unwrap_or(d.hidden_states),
            sequences: self.hmm_sequences.unwrap_or(d.sequences),
            em_iterations: self.hmm_iterations.unwrap_or(d.em_iterations),
            ..d
        };
        hmm.validate()?;
        let p = Params {
            hmm,
            n: self.n,
            steps: self.steps,
            particles: self.particles,
            max_tokens: self.max_tokens,
            batch: self.batch,
            max_generations: self.max_generations,
            generation_cap: self.generation_cap,
            ..Params::default()
        };
        p.validate()?;
        Ok(p)
    }

    /// The one constraint the request names: `(format, text)`, the format `None` where it
    /// is to be detected from the text. `Err` unless exactly one of `regex`, `grammar` and
    /// `json_schema` is given.
    pub fn constraint(&self) -> Result<(Option<&str>, &str), SampleError> {
        let bad = |m: &str| Err(SampleError::Unsupported(m.into()));
        match (&self.regex, &self.grammar, &self.json_schema) {
            (Some(r), None, None) => match self.grammar_format.as_deref() {
                None | Some("regex") => Ok((Some("regex"), r)),
                Some(_) => {
                    bad("grammar_format names the format of a grammar; a regex is always a regex")
                }
            },
            (None, Some(g), None) => Ok((self.grammar_format.as_deref(), g)),
            (None, None, Some(j)) => Ok((
                Some(self.grammar_format.as_deref().unwrap_or("json-schema")),
                j,
            )),
            (None, None, None) => bad("give a constraint: regex, grammar or json_schema"),
            _ => bad("give one constraint only: regex, grammar or json_schema"),
        }
    }
}

/// One output sample as every front end hands it out (a line of `strait sample`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The sample's text (its tokens' bytes, invalid UTF-8 replaced).
    pub text: String,
    /// Its tokens, EOS included when it ended.
    pub tokens: Vec<crate::TokenId>,
    /// log P(tokens) under the unconstrained model.
    pub logp: f64,
    /// Whether it satisfies the constraint and ended.
    pub valid: bool,
    /// Its importance weight, where the sampler has one (SMC: normalized within its run).
    pub weight: Option<f64>,
    /// Model calls of the run so far.
    pub lm_calls: u64,
    /// Tokens through the network so far.
    pub forward_tokens: u64,
    /// Constraint checks so far.
    pub constraint_checks: u64,
    /// Milliseconds since the run began.
    pub elapsed_ms: f64,
    /// Which SMC run or MCMC chain it belongs to.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub run: Option<usize>,
}

impl Record {
    /// The record of `s`, `elapsed_ms` into its run.
    pub fn new(vocab: &Vocabulary, s: &Sample, elapsed_ms: f64) -> Record {
        let Counters {
            lm_calls,
            forward_tokens,
            constraint_checks,
            ..
        } = s.counters;
        Record {
            text: String::from_utf8_lossy(&vocab.decode(&s.tokens)).into_owned(),
            tokens: s.tokens.clone(),
            logp: s.logp,
            valid: s.valid,
            weight: s.weight,
            lm_calls,
            forward_tokens,
            constraint_checks,
            elapsed_ms,
            run: s.run,
        }
    }
}

/// One sequence of an exact distribution (a line of `strait enumerate`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Enumerated {
    /// Its text.
    pub text: String,
    /// Its tokens, EOS included.
    pub tokens: Vec<crate::TokenId>,
    /// log P under the unconstrained model.
    pub logp: f64,
    /// Its probability under P^L.
    pub p: f64,
}

/// log P(text · EOS | prompt), token by token (the line of `strait score`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// The text scored.
    pub text: String,
    /// Its tokens (EOS not included).
    pub tokens: Vec<crate::TokenId>,
    /// The sum of `token_logps`.
    pub logp: f64,
    /// Each token's log-probability, EOS last.
    pub token_logps: Vec<f64>,
}

impl Enumerated {
    /// The lines of an exact distribution, most probable first.
    pub fn all(vocab: &Vocabulary, dist: &crate::exact::ExactDistribution) -> Vec<Enumerated> {
        let mut rows: Vec<Enumerated> = dist
            .entries
            .iter()
            .map(|e| Enumerated {
                text: String::from_utf8_lossy(&vocab.decode(&e.tokens)).into_owned(),
                tokens: e.tokens.clone(),
                logp: e.logp,
                p: e.p,
            })
            .collect();
        rows.sort_by(|a, b| b.p.total_cmp(&a.p));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_only_what_it_changes_and_unknown_fields_are_named() {
        let r: SampleRequest = serde_json::from_str(r#"{"regex": "a|b", "n": 3}"#).unwrap();
        assert_eq!(r.n, 3);
        assert_eq!(r.max_tokens, defaults::MAX_TOKENS);
        assert_eq!(r.constraint().unwrap(), (Some("regex"), "a|b"));
        let e = serde_json::from_str::<SampleRequest>(r#"{"regex": "a", "max_token": 3}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_token"), "{e}");
        let names = SampleRequest::field_names();
        assert!(names.iter().any(|n| n == "max_tokens") && names.iter().any(|n| n == "regex"));
        assert_eq!(names.len(), 19);
    }

    #[test]
    fn exactly_one_constraint() {
        let two = SampleRequest {
            regex: Some("a".into()),
            grammar: Some("start: \"a\"".into()),
            ..SampleRequest::default()
        };
        assert!(two.constraint().is_err());
        assert!(SampleRequest::default().constraint().is_err());
        let schema = SampleRequest {
            json_schema: Some("{}".into()),
            ..SampleRequest::default()
        };
        assert_eq!(schema.constraint().unwrap(), (Some("json-schema"), "{}"));
    }

    #[test]
    fn params_are_checked_and_the_method_parsed() {
        let r = SampleRequest {
            particles: 0,
            ..SampleRequest::default()
        };
        assert!(r.params().is_err());
        assert_eq!(SampleRequest::default().sampler().unwrap(), Method::Cars);
        let bad = SampleRequest {
            method: "carz".into(),
            ..SampleRequest::default()
        };
        assert!(bad.sampler().is_err());
    }
}
