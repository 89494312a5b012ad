//! The papers' experiments as the page shows them: the tables that `strait sweep` printed
//! for the plans in `assets/sweeps/papers/`, stored in `assets/papers/*.json` (static data:
//! reading them reruns nothing), each filled cell with the playground link that reruns it
//! live with the same grammar, prompt, sampler, parameters and seed.

use crate::detect::GrammarKind;
use crate::state::{ModelChoice, PlaygroundState};
use serde::{Deserialize, Serialize};

/// One table as a sweep printed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PaperTable {
    /// The table's heading.
    pub title: String,
    /// What the cells are, in words.
    pub measure: String,
    /// The rows' axis (`sampler`).
    pub rows_axis: String,
    /// The columns' axis (`constraint`; `steps` makes the table a curve too).
    pub columns_axis: String,
    /// Row headings.
    pub rows: Vec<String>,
    /// Column headings.
    pub columns: Vec<String>,
    /// `cells[row][column]`; `None` where the sweep had not reached the cell.
    pub cells: Vec<Vec<Option<PaperCell>>>,
}

/// One filled cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PaperCell {
    /// The figure as printed.
    pub text: String,
    /// The figure, where the measure has one.
    pub value: Option<f64>,
    /// The hash (`v=1&s=…`) of the playground state that reruns the cell's first seed.
    pub link: Option<String>,
}

/// One plan's results as stored for the page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PaperResults {
    /// The plan's title.
    pub title: String,
    /// The plan's file in the repository.
    pub plan: String,
    /// Cells finished of the plan's cells.
    pub finished: usize,
    /// Cells in the plan.
    pub cells: usize,
    /// Its tables.
    pub tables: Vec<PaperTable>,
}

/// A sweep cell's run as a playground state: the real model, its grammar and prompt, the
/// sampler with its parameters and the seed.
#[derive(Clone, Debug)]
pub struct CellRun<'a> {
    /// The constraint's text (a regex or a grammar).
    pub grammar: &'a str,
    /// Its format's name (`gbnf`, `lark`, `json-schema`, `regex`); `None`: detected.
    pub format: Option<&'a str>,
    /// The prompt.
    pub prompt: &'a str,
    /// Whether the prompt is wrapped in the chat template.
    pub chat: bool,
    /// The sampler's command-line name.
    pub method: &'a str,
    /// Samples (chains, runs).
    pub n: usize,
    /// MCMC steps.
    pub steps: usize,
    /// SMC particles.
    pub particles: usize,
    /// Rejection samplers' batch.
    pub batch: usize,
    /// Most tokens per sequence.
    pub max_tokens: usize,
    /// The seed.
    pub seed: u64,
}

impl CellRun<'_> {
    /// The playground state that reruns the cell, or why the page cannot hold it (a field
    /// beyond the page's caps).
    pub fn state(&self) -> Result<PlaygroundState, String> {
        let grammar_kind = self
            .format
            .and_then(GrammarKind::from_name)
            .unwrap_or_else(|| crate::detect::detect_kind(self.grammar));
        let state = PlaygroundState {
            grammar: self.grammar.to_string(),
            grammar_kind,
            prompt: self.prompt.to_string(),
            chat: self.chat,
            method: self.method.to_string(),
            n: self.n,
            steps: self.steps,
            particles: self.particles,
            batch: self.batch,
            max_tokens: self.max_tokens,
            seed: self.seed,
            model: ModelChoice::Real { url: None },
            compare: Vec::new(),
            example: None,
            ..PlaygroundState::default()
        };
        state.validate()?;
        Ok(state)
    }

    /// The cell's playground link (hash body), or why there is none.
    pub fn link(&self) -> Result<String, String> {
        Ok(crate::permalink::encode(&self.state()?))
    }
}

/// The stored results, one file per plan, in reading order.
const FILES: [&str; 3] = [
    include_str!("../../assets/papers/cars_table7.json"),
    include_str!("../../assets/papers/mcmc_kl.json"),
    include_str!("../../assets/papers/asap_kl.json"),
];

/// Every plan's stored results (a file that does not read is left out; a test reads all).
pub fn results() -> Vec<PaperResults> {
    FILES
        .iter()
        .filter_map(|f| serde_json::from_str(f).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stored file reads, every table is rectangular, and every link opens a valid
    /// playground state on the real model with the sampler its row names.
    #[test]
    fn stored_results_read_and_their_links_open_the_cell() {
        let all = results();
        assert_eq!(all.len(), FILES.len(), "every file reads");
        let mut links = 0;
        for r in &all {
            assert!(r.plan.starts_with("assets/sweeps/papers/"), "{}", r.plan);
            for t in &r.tables {
                assert_eq!(t.cells.len(), t.rows.len(), "{}", t.title);
                for (row, cells) in t.rows.iter().zip(&t.cells) {
                    assert_eq!(cells.len(), t.columns.len(), "{}", t.title);
                    for c in cells.iter().flatten() {
                        let Some(link) = &c.link else { continue };
                        let state = crate::permalink::decode(link).expect("the link decodes");
                        assert_eq!(state.model, ModelChoice::Real { url: None });
                        if t.rows_axis == "sampler" {
                            assert_eq!(&state.method, row, "{}", t.title);
                        }
                        links += 1;
                    }
                }
            }
        }
        assert!(links > 0, "some cell has finished and links to its rerun");
    }

    #[test]
    fn a_cell_beyond_the_pages_caps_has_no_link_and_says_why() {
        let run = CellRun {
            grammar: "root ::= \"a\"",
            format: Some("gbnf"),
            prompt: "p",
            chat: true,
            method: "cars",
            n: 10,
            steps: 1,
            particles: 1,
            batch: 1,
            max_tokens: 192,
            seed: 3,
        };
        let state = crate::permalink::decode(&run.link().unwrap()).unwrap();
        assert_eq!(
            (state.grammar_kind, state.seed, state.n, state.chat),
            (GrammarKind::Gbnf, 3, 10, true)
        );
        let too_long = CellRun {
            max_tokens: 5000,
            ..run
        };
        assert!(too_long.link().unwrap_err().contains("max tokens"));
    }
}
