//! The example menu: every grammar in `assets/examples/` with its prompt (real-model mode),
//! and toy-mode examples that run instantly. Each is deep-linkable by its `id`.

use crate::detect::GrammarKind;
use crate::state::{ModelChoice, PlaygroundState, ToyModel};

/// One entry of the example menu.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    /// Stable id, used in links (`toy-gsk`, `json-x-integer`, …).
    pub id: &'static str,
    /// Menu title.
    pub title: &'static str,
    /// The file in `assets/examples/` it comes from (`None` for toy-only examples).
    pub file: Option<&'static str>,
    /// The constraint text.
    pub grammar: &'static str,
    /// Its kind.
    pub kind: GrammarKind,
    /// The prompt (empty for toy models, which take none).
    pub prompt: &'static str,
    /// The toy model it runs on; `None` means the real model.
    pub toy: Option<ToyModel>,
    /// The sampler it starts with.
    pub method: &'static str,
    /// Methods for compare mode (empty: single mode).
    pub compare: &'static [&'static str],
    /// Samples to draw.
    pub n: usize,
    /// Most tokens per sequence.
    pub max_tokens: usize,
}

impl Example {
    /// The playground state this example sets up (seed 1; chat template on for the real
    /// model, whose prompts are written as instructions).
    pub fn state(&self) -> PlaygroundState {
        PlaygroundState {
            grammar: self.grammar.to_string(),
            grammar_kind: self.kind,
            prompt: self.prompt.to_string(),
            chat: self.toy.is_none(),
            method: self.method.to_string(),
            n: self.n,
            steps: 10,
            particles: 8,
            batch: 1,
            ess_threshold: 0.5,
            max_tokens: self.max_tokens,
            seed: 1,
            model: match self.toy {
                Some(t) => ModelChoice::Toy(t),
                None => ModelChoice::Real { url: None },
            },
            compare: self.compare.iter().map(|m| m.to_string()).collect(),
            budget: crate::state::DEFAULT_BUDGET,
            example: Some(self.id.to_string()),
        }
    }

    /// Two lines for a first-time user: what the example shows and what to look at.
    pub fn about(&self) -> String {
        match self.id {
            "toy-gsk" => "Token masking (lcd) is biased: it writes 00000 about 45% of the time, \
                although the model restricted to the grammar gives it 3·10⁻¹⁰. CARS spends the \
                same LM calls and lands on the exact P^L (TV under each column). Press Run."
                .into(),
            "toy-gsk-gbnf" => "The same grammar in GBNF, compiled by llguidance. MCMC starts \
                from a masked sample and repairs the bias step by step; ASAp and AWRS-SMC run \
                beside it on equal LM calls. Press Run."
                .into(),
            "toy-random" => "A random bigram model over a, b, c; the strings of the regex have \
                several tokenizations each. Watch AWRS-SMC's particles, weights, ESS and \
                resampling, or tick compare to set it against lcd and cars."
                .into(),
            _ => format!(
                "{} ({}) on SmolLM2, once it has loaded above, with {}: {}, the faithful \
                sampler that finished soonest here (strait bench faithful). Tick \"compare \
                samplers\" to set token masking beside it on equal LM calls.{}",
                self.title,
                self.file.unwrap_or("your grammar"),
                self.method,
                match self.method.parse::<sampler_core::samplers::Method>() {
                    Ok(m) if m.is_exact() => "exact samples",
                    Ok(m) if m.is_smc() => "weighted particles",
                    _ => "samples that converge to the model's own",
                },
                match self.id {
                    // Measured: no valid particle in 10 SMC runs, none of 10 masked samples
                    // (docs/bench/faithful.md).
                    "sqlite-test" | "xml-doctype" => {
                        " The 135M model seldom finishes such a file within its 128 tokens: \
                        expect every particle cut off at the limit, weighing 0 (the run says \
                        so), and masking's text cut off too; the papers ran 7-8B models."
                    }
                    _ => "",
                }
            ),
        }
    }
}

/// The random toy model of the examples: 3 letters and EOS.
pub const TOY_RANDOM: ToyModel = ToyModel::Random { seed: 7, vocab: 3 };

macro_rules! file_example {
    ($id:literal, $title:literal, $file:literal, $prompt:expr, $kind:expr, $method:literal,
     $compare:expr, $n:literal, $max:literal) => {
        Example {
            id: $id,
            title: $title,
            file: Some($file),
            grammar: include_str!(concat!("../../assets/examples/", $file)),
            kind: $kind,
            prompt: $prompt,
            toy: None,
            method: $method,
            compare: $compare,
            n: $n,
            max_tokens: $max,
        }
    };
}

macro_rules! prompt {
    ($stem:literal) => {
        include_str!(concat!("../../assets/examples/", $stem, ".prompt.txt")).trim_ascii_end()
    };
}

static EXAMPLES: &[Example] = &[
    Example {
        id: "toy-gsk",
        title: "Toy: G_sk, token masking's bias vs CARS",
        file: None,
        grammar: crate::toy::GSK_REGEX,
        kind: GrammarKind::Regex,
        prompt: "",
        toy: Some(ToyModel::Gsk),
        method: "cars",
        compare: &["lcd", "cars"],
        n: 200,
        max_tokens: 8,
    },
    Example {
        id: "toy-gsk-gbnf",
        title: "Toy: G_sk as GBNF, MCMC repairing the bias",
        file: Some("gsk.gbnf"),
        grammar: include_str!("../../assets/examples/gsk.gbnf"),
        kind: GrammarKind::Gbnf,
        prompt: "",
        toy: Some(ToyModel::Gsk),
        method: "mcmc-uniform",
        compare: &["lcd", "mcmc-uniform", "asap", "awrs-smc"],
        n: 100,
        max_tokens: 8,
    },
    Example {
        id: "toy-random",
        title: "Toy: a random bigram model over a, b, c",
        file: None,
        grammar: "ab|ba|aab|c{1,2}",
        kind: GrammarKind::Regex,
        prompt: "",
        toy: Some(TOY_RANDOM),
        method: "awrs-smc",
        compare: &["lcd", "cars", "awrs-smc"],
        n: 100,
        max_tokens: 6,
    },
    file_example!(
        "gsk",
        "G_sk on SmolLM2 (ASAp)",
        "gsk.gbnf",
        prompt!("gsk"),
        GrammarKind::Gbnf,
        "cars",
        &["lcd", "cars"],
        8,
        16
    ),
    file_example!(
        "date",
        "A date, YYYY-MM-DD",
        "date.regex",
        prompt!("date"),
        GrammarKind::Regex,
        "smc-gcd",
        &[],
        4,
        16
    ),
    file_example!(
        "phone",
        "A US phone number",
        "phone.regex",
        prompt!("phone"),
        GrammarKind::Regex,
        "cars",
        &[],
        4,
        24
    ),
    file_example!(
        "arithmetic",
        "Arithmetic that equals 24",
        "arithmetic.lark",
        prompt!("arithmetic"),
        GrammarKind::Lark,
        "cars",
        &[],
        4,
        32
    ),
    file_example!(
        "json-x-integer",
        "JSON {\"x\": integer} (P-GCD paper)",
        "json_x_integer.json",
        prompt!("json_x_integer"),
        GrammarKind::JsonSchema,
        "cars",
        &[],
        2,
        24
    ),
    file_example!(
        "tool-call",
        "A tool call as JSON",
        "tool_call.json",
        prompt!("tool_call"),
        GrammarKind::JsonSchema,
        "smc-gcd",
        &[],
        2,
        64
    ),
    file_example!(
        "sqlite-test",
        "SQLite .test script (MCMC paper)",
        "sqlite_test.gbnf",
        prompt!("sqlite_test"),
        GrammarKind::Gbnf,
        "smc-gcd",
        &[],
        1,
        128
    ),
    file_example!(
        "xml-doctype",
        "XML with a DOCTYPE (MCMC paper)",
        "xml_doctype.gbnf",
        prompt!("xml_doctype"),
        GrammarKind::Gbnf,
        "awrs-smc",
        &[],
        1,
        128
    ),
    file_example!(
        "smiles-acrylate",
        "SMILES acrylates (CARS)",
        "smiles_acrylate.gbnf",
        prompt!("smiles_acrylate"),
        GrammarKind::Gbnf,
        "awrs-smc",
        &[],
        2,
        48
    ),
    file_example!(
        "sygus-slia",
        "SyGuS string term (ASAp)",
        "sygus_slia.gbnf",
        prompt!("sygus_slia"),
        GrammarKind::Gbnf,
        "cars",
        &[],
        2,
        64
    ),
    file_example!(
        "sygus-bv4",
        "SyGuS 4-bit bit-vector term (ASAp)",
        "sygus_bv4.gbnf",
        prompt!("sygus_bv4"),
        GrammarKind::Gbnf,
        "cars",
        &[],
        2,
        64
    ),
    file_example!(
        "pddl-satellite",
        "PDDL Satellite plan (CARS)",
        "pddl_satellite.lark",
        prompt!("pddl_satellite"),
        GrammarKind::Lark,
        "smc-gcd",
        &[],
        1,
        96
    ),
];

/// Every example, toy ones first.
pub fn examples() -> &'static [Example] {
    EXAMPLES
}

/// The example with this id.
pub fn example(id: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|e| e.id == id)
}

/// The example with this id (the page's deep links, `#example=<id>`).
pub fn find(id: &str) -> Option<&'static Example> {
    example(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraint::build_constraint;

    #[test]
    fn every_asset_file_is_an_example_with_its_prompt() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/examples");
        let mut grammar_files = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".prompt.txt") || name == "README.md" {
                continue;
            }
            grammar_files.push(name);
        }
        assert!(grammar_files.len() >= 12, "{grammar_files:?}");
        for name in grammar_files {
            let ex = EXAMPLES
                .iter()
                .find(|e| e.file == Some(name.as_str()) && e.toy.is_none())
                .unwrap_or_else(|| panic!("{name} has no real-model example"));
            let on_disk = std::fs::read_to_string(dir.join(&name)).unwrap();
            assert_eq!(ex.grammar, on_disk);
            assert_eq!(Some(ex.kind), GrammarKind::from_path(&name), "{name}");
            assert_eq!(crate::detect::detect_kind(ex.grammar), ex.kind, "{name}");
            let stem = name.rsplit_once('.').unwrap().0;
            let p = std::fs::read_to_string(dir.join(format!("{stem}.prompt.txt")))
                .unwrap_or_else(|e| panic!("{name} has no sibling {stem}.prompt.txt: {e}"));
            assert_eq!(ex.prompt, p.trim_end(), "{name}");
            assert!(!ex.prompt.is_empty(), "{name}");
        }
    }

    /// Token masking is what Strait argues against: no real-model example opens on it (or
    /// another biased sampler) alone; each runs a sampler that is exact, properly weighted
    /// or converges to P^L.
    #[test]
    fn real_model_examples_open_on_a_faithful_sampler() {
        use sampler_core::samplers::Method;
        let faithful = |m: &str| {
            let m: Method = m.parse().unwrap();
            m.is_exact() || m.is_smc() || m.is_mcmc() || matches!(m, Method::Auto | Method::Asap)
        };
        for e in EXAMPLES.iter().filter(|e| e.toy.is_none()) {
            assert!(faithful(e.method), "{} opens on {}", e.id, e.method);
            assert!(
                e.compare.is_empty() || e.compare.iter().any(|m| faithful(m)),
                "{} compares no faithful sampler",
                e.id
            );
        }
    }

    #[test]
    fn ids_are_unique_and_states_valid() {
        for (i, e) in EXAMPLES.iter().enumerate() {
            assert!(EXAMPLES[..i].iter().all(|o| o.id != e.id), "{}", e.id);
            e.state()
                .validate()
                .unwrap_or_else(|m| panic!("{}: {m}", e.id));
            assert_eq!(example(e.id), Some(e));
        }
        assert_eq!(example("nope"), None);
    }

    #[test]
    fn toy_examples_compile_over_their_vocabularies() {
        for e in EXAMPLES.iter().filter(|e| e.toy.is_some()) {
            let v = (e.toy.unwrap()).vocabulary();
            build_constraint(e.kind, e.grammar, &v).unwrap_or_else(|m| panic!("{}: {m}", e.id));
        }
    }
}
