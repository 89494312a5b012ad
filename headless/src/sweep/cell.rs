//! One cell of a sweep's grid (a sampler run with everything it needs) and its
//! constraint's definition: plain data that a plan expands to and every other part reads.

use crate::constraint_source::ConstraintSpec;
use sampler_core::samplers::Method;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One sampler run of the grid: everything needed to run it anywhere (grammar files are
/// read into `constraint.text` when the plan is read, so a cell needs no file of the
/// plan's folder).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The model: a GGUF path (made absolute, so that a worker in another folder finds it)
    /// or a toy name.
    pub model: String,
    /// The model's position in the plan's list (cells ids use it).
    pub model_index: usize,
    /// The constraint's name in the plan.
    pub constraint: String,
    /// What the constraint is.
    pub definition: Definition,
    /// The prompt text.
    pub prompt: String,
    /// The prompt's position in the plan's list.
    pub prompt_index: usize,
    /// Whether the prompt is wrapped in the model's chat template.
    pub chat: bool,
    /// The sampler (written by its command-line name).
    #[serde(with = "method_name")]
    pub method: Method,
    /// Samples, chains or SMC runs (as `strait sample --n`).
    pub n: usize,
    /// MCMC steps per chain (1 for other samplers).
    pub steps: usize,
    /// SMC particles per run (1 for other samplers).
    pub particles: usize,
    /// Most tokens per sequence, EOS included.
    pub max_tokens: usize,
    /// Rejection samplers' batch (1 for other samplers).
    pub batch: usize,
    /// The seed.
    pub seed: u64,
    /// Exact samplers give up after this many generations in a row without a valid one.
    pub max_generations: u64,
    /// Exact samplers stop after this many generations in all (the papers' cap).
    #[serde(default)]
    pub generation_cap: Option<u64>,
    /// Where P-GCD's HMM work runs.
    pub hmm_engine: String,
}

/// A constraint of the plan: a regex, or a grammar's text with its format (`None`: detect).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// A regex the whole output must match.
    pub regex: Option<String>,
    /// A grammar's text (inline, or read from the file the plan names).
    pub text: Option<String>,
    /// The grammar's format (`lark`, `gbnf`, `json-schema`, `regex`).
    pub format: Option<String>,
    /// Whether the summary tries exact P^L by enumeration (finite languages only).
    pub exact: bool,
}

impl Definition {
    /// The constraint as [`constraint_source::build`] takes it, with its format; errors
    /// name it `constraints.NAME` (a regex goes as text in the regex format, so its errors do
    /// too).
    pub fn spec(&self, name: &str) -> (ConstraintSpec, Option<&str>) {
        let (text, format) = match &self.regex {
            Some(re) => (Some(re.clone()), Some("regex")),
            None => (self.text.clone(), self.format.as_deref()),
        };
        let spec = ConstraintSpec {
            text,
            name: Some(format!("constraints.{name}")),
            ..ConstraintSpec::default()
        };
        (spec, format)
    }
}

impl Cell {
    /// A name for the cell's files, unique within its plan: model, constraint, prompt,
    /// sampler, the parameters it uses, seed.
    pub fn id(&self) -> String {
        let mut id = format!(
            "{}.{}.p{}.{}.n{}.t{}",
            self.model_slug(),
            slug(&self.constraint),
            self.prompt_index,
            self.method,
            self.n,
            self.max_tokens
        );
        if self.method.is_mcmc() {
            id += &format!(".k{}", self.steps);
        }
        if self.method.is_smc() {
            id += &format!(".m{}", self.particles);
        }
        if self.method.is_exact() {
            id += &format!(".b{}", self.batch);
            if let Some(cap) = self.generation_cap {
                id += &format!(".g{cap}");
            }
        }
        id + &format!(".s{}", self.seed)
    }

    /// The cells that share exact P^L (same model, constraint, prompt and token limit).
    pub fn group(&self) -> String {
        format!(
            "{}.{}.p{}.t{}",
            self.model_slug(),
            slug(&self.constraint),
            self.prompt_index,
            self.max_tokens
        )
    }

    /// The sampler and the parameters it uses, as the summary names a row.
    pub fn setting(&self) -> String {
        let mut s = self.method.to_string();
        if self.method.is_mcmc() {
            s += &format!(" k={}", self.steps);
        }
        if self.method.is_smc() {
            s += &format!(" M={}", self.particles);
        }
        if self.method.is_exact() && self.batch > 1 {
            s += &format!(" B={}", self.batch);
        }
        s
    }

    /// `m0-gsk` for `toy:gsk`, `m1-SmolLM2-135M-Instruct-Q4_1` for a file.
    fn model_slug(&self) -> String {
        let stem = Path::new(&self.model)
            .file_stem()
            .map_or_else(|| self.model.clone(), |s| s.to_string_lossy().into_owned());
        format!(
            "m{}-{}",
            self.model_index,
            slug(stem.trim_start_matches("toy:"))
        )
    }
}

/// A [`Method`] in a sweep's files: its command-line name (`mcmc-uniform`).
mod method_name {
    use sampler_core::samplers::Method;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(m: &Method, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Method, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Letters, digits, `-` and `_` kept; anything else becomes `-`.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}
