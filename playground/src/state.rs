//! Everything a playground setup consists of: what a permalink carries and a run needs.

use crate::detect::GrammarKind;
pub use crate::toy::ToyModel;
use sampler_core::samplers::{Method, Params};
use serde::{Deserialize, Serialize};

/// Caps on a state's fields: a permalink is untrusted input, and each field drives work.
pub mod caps {
    /// Longest grammar text, in bytes.
    pub const GRAMMAR_BYTES: usize = 64 * 1024;
    /// Longest prompt, in bytes.
    pub const PROMPT_BYTES: usize = 16 * 1024;
    /// Longest model URL, in bytes.
    pub const URL_BYTES: usize = 2048;
    /// Longest example id or method name, in bytes.
    pub const NAME_BYTES: usize = 64;
    /// Most samples (chains, SMC runs) in one run.
    pub const N: usize = 10_000;
    /// Most MCMC steps per chain.
    pub const STEPS: usize = 1_000;
    /// Most SMC particles.
    pub const PARTICLES: usize = 256;
    /// Most generations in one rejection-sampler batch.
    pub const BATCH: usize = 16;
    /// Most tokens per sequence.
    pub const MAX_TOKENS: usize = 1_024;
    /// Most methods side by side in compare mode.
    pub const COMPARE: usize = 4;
    /// Largest LM-call budget per method in compare mode.
    pub const BUDGET: u64 = 1_000_000;
    /// Smallest and largest toy random vocabulary (tokens besides EOS).
    pub const TOY_VOCAB: std::ops::RangeInclusive<u8> = sampler_core::toy::LETTERS;
}

/// LM calls per compared method unless the state says otherwise.
pub const DEFAULT_BUDGET: u64 = 2_000;

/// Which language model a run uses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelChoice {
    /// An analytic toy model.
    Toy(ToyModel),
    /// A real GGUF model on WebGPU: the embedded SmolLM2 when `url` is `None`.
    Real {
        /// Where to fetch another llama-architecture GGUF (http or https only).
        url: Option<String>,
    },
}

impl ModelChoice {
    /// The toy model, if this is toy mode.
    pub fn toy(&self) -> Option<ToyModel> {
        match self {
            ModelChoice::Toy(t) => Some(*t),
            ModelChoice::Real { .. } => None,
        }
    }
}

/// The whole setup of the page: grammar, prompt, sampler, parameters, seed and model.
///
/// Missing fields take their [`Default`] values when deserialized, so older links keep
/// working when fields are added.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlaygroundState {
    /// The constraint's source text.
    pub grammar: String,
    /// How to read `grammar` (detected on input, switchable).
    pub grammar_kind: GrammarKind,
    /// The prompt (ignored by toy models).
    pub prompt: String,
    /// Whether to wrap the prompt in the model's chat template.
    pub chat: bool,
    /// The sampler, by its command-line name (`cars`, `lcd`, `mcmc-uniform`, …).
    pub method: String,
    /// Samples (chains, SMC runs) to draw.
    pub n: usize,
    /// MCMC steps per chain.
    pub steps: usize,
    /// SMC particles.
    pub particles: usize,
    /// Rejection samplers: generations drawn in lockstep, their model calls batched (and
    /// shared by the worker pool), their trie updates applied after the batch in order.
    pub batch: usize,
    /// SMC resamples when ESS < threshold · M.
    pub ess_threshold: f64,
    /// Most tokens per sequence, EOS included.
    pub max_tokens: usize,
    /// The sampler's seed: the same link reproduces the same samples.
    pub seed: u64,
    /// Toy or real model.
    pub model: ModelChoice,
    /// Methods run side by side in compare mode (0 to 4; empty means single mode).
    pub compare: Vec<String>,
    /// LM calls each compared method may make (the equal budget of compare mode).
    pub budget: u64,
    /// The example this state came from, by id.
    pub example: Option<String>,
}

impl Default for PlaygroundState {
    /// The first-click example, `toy-gsk`: toy G_sk, CARS, compared with token masking
    /// (the examples' test checks the two agree).
    fn default() -> Self {
        PlaygroundState {
            grammar: crate::toy::GSK_REGEX.to_string(),
            grammar_kind: GrammarKind::Regex,
            prompt: String::new(),
            chat: false,
            method: "cars".into(),
            n: 200,
            steps: 10,
            particles: 8,
            batch: 1,
            ess_threshold: 0.5,
            max_tokens: 8,
            seed: 1,
            model: ModelChoice::Toy(ToyModel::Gsk),
            compare: vec!["lcd".into(), "cars".into()],
            budget: DEFAULT_BUDGET,
            example: Some("toy-gsk".into()),
        }
    }
}

impl PlaygroundState {
    /// The sampler method, parsed.
    pub fn method(&self) -> Result<Method, String> {
        self.method.parse()
    }

    /// The compare-mode methods, parsed.
    pub fn compare_methods(&self) -> Result<Vec<Method>, String> {
        self.compare.iter().map(|m| m.parse()).collect()
    }

    /// One sample of a regex on the loaded real model under `method`: what the page's quick
    /// form hands to the playground (its prompt, chat template, seed and budget of tokens,
    /// the budget capped at the playground's).
    pub fn regex_on_real_model(
        regex: &str,
        prompt: &str,
        chat: bool,
        max_tokens: usize,
        seed: u64,
        method: &str,
    ) -> Self {
        PlaygroundState {
            grammar: regex.into(),
            grammar_kind: GrammarKind::Regex,
            prompt: prompt.into(),
            chat,
            method: method.into(),
            n: 1,
            max_tokens: max_tokens.min(caps::MAX_TOKENS),
            seed,
            model: ModelChoice::Real { url: None },
            compare: Vec::new(),
            example: None,
            ..PlaygroundState::default()
        }
    }

    /// The sampler parameters this state asks for.
    pub fn params(&self) -> Params {
        Params {
            n: self.n,
            steps: self.steps,
            particles: self.particles,
            batch: self.batch,
            max_tokens: self.max_tokens,
            ess_threshold: self.ess_threshold,
            ..Params::default()
        }
    }

    /// Checks every field against its range and cap; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        let too_long = |what: &str, len: usize, cap: usize| {
            Err(format!("{what} is {len} bytes, above the limit of {cap}"))
        };
        if self.grammar.len() > caps::GRAMMAR_BYTES {
            return too_long("the grammar", self.grammar.len(), caps::GRAMMAR_BYTES);
        }
        if self.prompt.len() > caps::PROMPT_BYTES {
            return too_long("the prompt", self.prompt.len(), caps::PROMPT_BYTES);
        }
        if self.method.len() > caps::NAME_BYTES {
            return too_long("the method name", self.method.len(), caps::NAME_BYTES);
        }
        self.method()?;
        let range = |what: &str, v: usize, max: usize| {
            if (1..=max).contains(&v) {
                Ok(())
            } else {
                Err(format!("{what} must be between 1 and {max}, not {v}"))
            }
        };
        range("n", self.n, caps::N)?;
        range("steps", self.steps, caps::STEPS)?;
        range("particles", self.particles, caps::PARTICLES)?;
        range("batch", self.batch, caps::BATCH)?;
        range("max tokens", self.max_tokens, caps::MAX_TOKENS)?;
        if !(0.0..=1.0).contains(&self.ess_threshold) {
            return Err(format!(
                "the ESS threshold must be between 0 and 1, not {}",
                self.ess_threshold
            ));
        }
        if !(1..=caps::BUDGET).contains(&self.budget) {
            return Err(format!(
                "the LM-call budget must be between 1 and {}, not {}",
                caps::BUDGET,
                self.budget
            ));
        }
        if self.compare.len() > caps::COMPARE {
            return Err(format!(
                "compare mode runs at most {} methods, not {}",
                caps::COMPARE,
                self.compare.len()
            ));
        }
        for m in &self.compare {
            if m.len() > caps::NAME_BYTES {
                return too_long("a compared method name", m.len(), caps::NAME_BYTES);
            }
            m.parse::<Method>()?;
        }
        if let Some(id) = &self.example
            && id.len() > caps::NAME_BYTES
        {
            return too_long("the example id", id.len(), caps::NAME_BYTES);
        }
        match &self.model {
            ModelChoice::Toy(ToyModel::Random { vocab, .. }) => {
                if !caps::TOY_VOCAB.contains(vocab) {
                    return Err(format!(
                        "a toy random model has {} to {} tokens, not {vocab}",
                        caps::TOY_VOCAB.start(),
                        caps::TOY_VOCAB.end()
                    ));
                }
            }
            ModelChoice::Toy(ToyModel::Gsk | ToyModel::RandomAb { .. })
            | ModelChoice::Real { url: None } => {}
            ModelChoice::Real { url: Some(url) } => {
                if url.len() > caps::URL_BYTES {
                    return too_long("the model URL", url.len(), caps::URL_BYTES);
                }
                let lower = url.to_ascii_lowercase();
                if !(lower.starts_with("https://") || lower.starts_with("http://")) {
                    return Err("the model URL must start with https:// or http://".into());
                }
                if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
                    return Err("the model URL contains spaces or control characters".into());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_toy_gsk_cars_against_lcd() {
        let s = PlaygroundState::default();
        s.validate().unwrap();
        assert_eq!(s.model, ModelChoice::Toy(ToyModel::Gsk));
        assert_eq!(s.method().unwrap(), Method::Cars);
        assert_eq!(
            s.compare_methods().unwrap(),
            vec![Method::Lcd, Method::Cars]
        );
        // The default is the first example, written out so that state needs no examples.
        assert_eq!(s, crate::examples::example("toy-gsk").unwrap().state());
    }

    #[test]
    fn a_regex_on_the_real_model_round_trips_through_a_link_with_its_budget_capped() {
        let s = PlaygroundState::regex_on_real_model(
            "zq[0-9]{2}",
            "Name a zebra.",
            true,
            24,
            9,
            "auto",
        );
        s.validate().unwrap();
        let back = crate::permalink::decode(&crate::permalink::encode(&s)).unwrap();
        assert_eq!(back, s);
        assert_eq!(
            (back.method.as_str(), back.grammar.as_str()),
            ("auto", "zq[0-9]{2}")
        );
        assert_eq!(
            (back.grammar_kind, back.prompt.as_str()),
            (GrammarKind::Regex, "Name a zebra.")
        );
        assert_eq!(
            (back.chat, back.seed, back.max_tokens, back.n),
            (true, 9, 24, 1)
        );
        assert_eq!(back.model, ModelChoice::Real { url: None });
        assert!(back.compare.is_empty() && back.example.is_none());
        let long = PlaygroundState::regex_on_real_model("a", "", false, 4096, 1, "auto");
        assert_eq!(long.max_tokens, caps::MAX_TOKENS);
        long.validate().unwrap();
    }

    #[test]
    fn validate_names_the_bad_field() {
        let bad = |f: &dyn Fn(&mut PlaygroundState)| {
            let mut s = PlaygroundState::default();
            f(&mut s);
            s.validate().unwrap_err()
        };
        assert!(bad(&|s| s.n = 0).contains("n must be"));
        assert!(bad(&|s| s.particles = 100_000).contains("particles"));
        assert!(bad(&|s| s.batch = 0).contains("batch"));
        assert!(bad(&|s| s.batch = 17).contains("batch"));
        assert!(bad(&|s| s.method = "mcmc".into()).contains("unknown method"));
        assert!(bad(&|s| s.ess_threshold = f64::NAN).contains("ESS"));
        assert!(bad(&|s| s.compare = vec!["lcd".into(); 5]).contains("at most 4"));
        assert!(bad(&|s| s.budget = 0).contains("budget"));
        assert!(bad(&|s| s.grammar = "a".repeat(caps::GRAMMAR_BYTES + 1)).contains("grammar"));
        assert!(
            bad(&|s| s.model = ModelChoice::Real {
                url: Some("javascript:alert(1)".into())
            })
            .contains("https://")
        );
        assert!(
            bad(&|s| s.model = ModelChoice::Toy(ToyModel::Random { seed: 0, vocab: 40 }))
                .contains("toy random")
        );
    }

    #[test]
    fn serde_shape_is_stable() {
        let s = PlaygroundState::default();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["grammar_kind"], "regex");
        assert_eq!(v["model"], serde_json::json!({"toy": "gsk"}));
        let r = ModelChoice::Toy(ToyModel::Random { seed: 3, vocab: 4 });
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"toy": {"random": {"seed": 3, "vocab": 4}}})
        );
        // Missing fields take defaults.
        let partial: PlaygroundState = serde_json::from_str(r#"{"n": 7}"#).unwrap();
        assert_eq!(partial.n, 7);
        assert_eq!(partial.method, s.method);
    }
}
