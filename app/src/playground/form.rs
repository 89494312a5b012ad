//! The form behind the controls: one signal per field of [`PlaygroundState`], and the
//! conversions both ways (a permalink or an example fills it; Run reads it).

use leptos::prelude::*;
use playground::detect::GrammarKind;
use playground::state::{ModelChoice, PlaygroundState, ToyModel};

/// Grammar kinds as the kind select lists them: (key, label).
pub const KINDS: &[(&str, &str)] = &[
    ("regex", "regex"),
    ("lark", "Lark"),
    ("gbnf", "GBNF"),
    ("json-schema", "JSON Schema"),
];

/// The select key of a grammar kind.
pub fn kind_key(k: GrammarKind) -> &'static str {
    match k {
        GrammarKind::Regex => "regex",
        GrammarKind::Lark => "lark",
        GrammarKind::Gbnf => "gbnf",
        GrammarKind::JsonSchema => "json-schema",
    }
}

/// The grammar kind of a select key.
pub fn kind_of(key: &str) -> Option<GrammarKind> {
    match key {
        "regex" => Some(GrammarKind::Regex),
        "lark" => Some(GrammarKind::Lark),
        "gbnf" => Some(GrammarKind::Gbnf),
        "json-schema" => Some(GrammarKind::JsonSchema),
        _ => None,
    }
}

/// Every field of the playground's state as a signal; numbers are kept as the text the
/// user typed and parsed on Run, so a half-typed number is not an error while typing.
#[derive(Clone, Copy)]
pub struct Form {
    pub grammar: RwSignal<String>,
    /// `auto` or a [`KINDS`] key.
    pub kind: RwSignal<String>,
    pub prompt: RwSignal<String>,
    pub chat: RwSignal<bool>,
    pub method: RwSignal<String>,
    pub n: RwSignal<String>,
    pub steps: RwSignal<String>,
    pub particles: RwSignal<String>,
    /// Rejection samplers' generations per lockstep batch.
    pub batch: RwSignal<String>,
    pub ess: RwSignal<String>,
    pub max_tokens: RwSignal<String>,
    pub seed: RwSignal<String>,
    /// `gsk`, `random` or `real`.
    pub model: RwSignal<String>,
    pub toy_seed: RwSignal<String>,
    pub toy_vocab: RwSignal<String>,
    pub model_url: RwSignal<Option<String>>,
    pub compare: RwSignal<Vec<String>>,
    /// LM calls per sampler in compare mode.
    pub budget: RwSignal<String>,
    pub example: RwSignal<Option<String>>,
}

impl Form {
    /// A form holding `s`.
    pub fn new(s: &PlaygroundState) -> Form {
        let f = Form {
            grammar: RwSignal::new(String::new()),
            kind: RwSignal::new(String::new()),
            prompt: RwSignal::new(String::new()),
            chat: RwSignal::new(false),
            method: RwSignal::new(String::new()),
            n: RwSignal::new(String::new()),
            steps: RwSignal::new(String::new()),
            particles: RwSignal::new(String::new()),
            batch: RwSignal::new(String::new()),
            ess: RwSignal::new(String::new()),
            max_tokens: RwSignal::new(String::new()),
            seed: RwSignal::new(String::new()),
            model: RwSignal::new(String::new()),
            toy_seed: RwSignal::new("1".into()),
            toy_vocab: RwSignal::new("4".into()),
            model_url: RwSignal::new(None),
            compare: RwSignal::new(Vec::new()),
            budget: RwSignal::new(String::new()),
            example: RwSignal::new(None),
        };
        f.set(s);
        f
    }

    /// Fills every field from `s`.
    pub fn set(&self, s: &PlaygroundState) {
        self.grammar.set(s.grammar.clone());
        // `auto` when detection agrees, so later edits keep being detected.
        let detected = playground::detect::detect_kind(&s.grammar);
        self.kind.set(if detected == s.grammar_kind {
            "auto".to_string()
        } else {
            kind_key(s.grammar_kind).to_string()
        });
        self.prompt.set(s.prompt.clone());
        self.chat.set(s.chat);
        self.method.set(s.method.clone());
        self.n.set(s.n.to_string());
        self.steps.set(s.steps.to_string());
        self.particles.set(s.particles.to_string());
        self.batch.set(s.batch.to_string());
        self.ess.set(s.ess_threshold.to_string());
        self.max_tokens.set(s.max_tokens.to_string());
        self.seed.set(s.seed.to_string());
        match &s.model {
            ModelChoice::Toy(ToyModel::Gsk) => self.model.set("gsk".into()),
            ModelChoice::Toy(ToyModel::Random { seed, vocab }) => {
                self.model.set("random".into());
                self.toy_seed.set(seed.to_string());
                self.toy_vocab.set(vocab.to_string());
            }
            ModelChoice::Toy(ToyModel::RandomAb { seed }) => {
                self.model.set("random-ab".into());
                self.toy_seed.set(seed.to_string());
            }
            ModelChoice::Real { url } => {
                self.model.set("real".into());
                self.model_url.set(url.clone());
            }
        }
        self.compare.set(s.compare.clone());
        self.budget.set(s.budget.to_string());
        self.example.set(s.example.clone());
    }

    /// The state the form shows, checked by [`PlaygroundState::validate`]; the error
    /// names the field.
    pub fn state(&self) -> Result<PlaygroundState, String> {
        fn num<T: std::str::FromStr>(sig: RwSignal<String>, what: &str) -> Result<T, String> {
            sig.get_untracked()
                .trim()
                .parse()
                .map_err(|_| format!("{what} must be a number (got {:?})", sig.get_untracked()))
        }
        let text = self.grammar.get_untracked();
        let kind = match kind_of(&self.kind.get_untracked()) {
            Some(k) => k,
            None => playground::detect::detect_kind(&text),
        };
        let model = match self.model.get_untracked().as_str() {
            "gsk" => ModelChoice::Toy(ToyModel::Gsk),
            "random" => ModelChoice::Toy(ToyModel::Random {
                seed: num(self.toy_seed, "The toy model's seed")?,
                vocab: num(self.toy_vocab, "The toy vocabulary size")?,
            }),
            "random-ab" => ModelChoice::Toy(ToyModel::RandomAb {
                seed: num(self.toy_seed, "The toy model's seed")?,
            }),
            _ => ModelChoice::Real {
                url: self.model_url.get_untracked(),
            },
        };
        let s = PlaygroundState {
            grammar: text,
            grammar_kind: kind,
            prompt: self.prompt.get_untracked(),
            chat: self.chat.get_untracked(),
            method: self.method.get_untracked(),
            n: num(self.n, "Samples n")?,
            steps: num(self.steps, "MCMC steps k")?,
            particles: num(self.particles, "Particles M")?,
            batch: num(self.batch, "Batch B")?,
            ess_threshold: num(self.ess, "The ESS threshold")?,
            max_tokens: num(self.max_tokens, "Max tokens")?,
            seed: num(self.seed, "The seed")?,
            model,
            compare: self.compare.get_untracked(),
            budget: num(self.budget, "LM calls per sampler")?,
            example: self.example.get_untracked(),
        };
        s.validate()?;
        Ok(s)
    }
}
