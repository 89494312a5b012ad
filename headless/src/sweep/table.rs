//! A plan's result in a paper's table shape: `[[tables]]` in the plan name what the rows
//! and the columns are (any of the grid's axes) and which measure fills the cells, so a
//! document's tables are printed by `strait sweep`, not typed.
//!
//! ```toml
//! [[tables]]
//! title = "Generations per 100 valid samples"
//! rows = "sampler"                  # model, constraint, prompt, sampler, setting, steps,
//! columns = "constraint"            #   particles, batch, n, max_tokens
//! measure = "generations"           # generations, kl_estimate, kl, seconds, valid
//! constraints = ["json", "xml"]     # optional: only these constraints' cells
//! ```

use super::cell::Cell;
use super::setting::{Setting, num};
use crate::failure::{Result, fail};
use serde::{Deserialize, Serialize};

/// One `[[tables]]` entry of a plan.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// The table's heading.
    pub title: String,
    /// What tells the rows apart.
    pub rows: Axis,
    /// What tells the columns apart.
    pub columns: Axis,
    /// What a cell shows.
    pub measure: Measure,
    /// Only these constraints' cells (all when absent).
    #[serde(default)]
    pub constraints: Option<Vec<String>>,
}

/// An axis of the grid, as a table's rows or columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// The model file's (or toy's) name.
    Model,
    /// The constraint's name in the plan.
    Constraint,
    /// The prompt's position.
    Prompt,
    /// The sampler's name alone (`mcmc-restart`).
    Sampler,
    /// The sampler with the parameters it uses (`mcmc-restart k=10`).
    Setting,
    /// MCMC steps (1 for every other sampler: GCD is MCMC with one step).
    Steps,
    /// SMC particles.
    Particles,
    /// Rejection samplers' batch.
    Batch,
    /// Samples asked per seed.
    N,
    /// The token limit.
    MaxTokens,
}

impl Axis {
    /// The axis as a plan names it (`sampler`, `max_tokens`).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The cell's value on this axis, as a row or column heading.
    pub fn label(self, c: &Cell) -> String {
        match self {
            Axis::Model => super::model_name(&c.model),
            Axis::Constraint => c.constraint.clone(),
            Axis::Prompt => format!("prompt {}", c.prompt_index),
            Axis::Sampler => c.method.to_string(),
            Axis::Setting => c.setting(),
            Axis::Steps => format!("k={}", c.steps),
            Axis::Particles => format!("M={}", c.particles),
            Axis::Batch => format!("B={}", c.batch),
            Axis::N => format!("n={}", c.n),
            Axis::MaxTokens => format!("T={}", c.max_tokens),
        }
    }
}

/// What a table's cells show, each for one setting with its seeds pooled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// LM generations per 100 valid samples (CARS's Table 7); "T.O." when the run stopped
    /// at its generation cap (or gave up) before it had every sample asked for.
    Generations,
    /// KL(q̂ ‖ P) on the observed valid samples, the papers' estimate for a target that
    /// cannot be enumerated ([`Setting::kl_estimate`]).
    KlEstimate,
    /// KL(q̂ ‖ P^L) to the exact target, where the language is finite.
    Kl,
    /// Seconds per valid sample.
    Seconds,
    /// Valid samples of those output.
    Valid,
}

impl Measure {
    /// What the cells are, in words (under the table).
    pub fn words(self) -> &'static str {
        match self {
            Measure::Generations => {
                "LM generations per 100 valid samples (T.O.: the generation cap was reached \
                 first; in brackets the valid samples found of those asked)"
            }
            Measure::KlEstimate => {
                "KL(q̂ ‖ P) in nats on the observed valid samples: the divergence from the \
                 constrained target up to one constant shared by every cell of a column (in \
                 brackets, where a run stopped early, the valid samples it stands on of those \
                 asked)"
            }
            Measure::Kl => {
                "KL(q̂ ‖ P^L) in nats to the exact constrained target (in brackets, where a \
                 run stopped early, the valid samples it stands on of those asked)"
            }
            Measure::Seconds => "seconds per valid sample",
            Measure::Valid => "valid samples of those output",
        }
    }

    /// A setting's figure (for plots and the page) and its text; `None` where there is none.
    pub fn of(self, s: &Setting) -> (Option<f64>, String) {
        let asked = s.cell.n * s.seeds;
        match self {
            Measure::Generations if s.error.is_some() && s.valid < asked => {
                let why = if s.error.as_deref().is_some_and(|e| e.contains("generation")) {
                    "T.O."
                } else {
                    "error"
                };
                (None, format!("{why} ({}/{asked})", s.valid))
            }
            Measure::Generations if s.valid == 0 => (None, "no valid sample".into()),
            Measure::Generations => {
                let g = s.generations_per_100_valid();
                (Some(g), format!("~{g:.0}"))
            }
            Measure::KlEstimate | Measure::Kl => {
                let k = match self {
                    Measure::Kl => s.distance.map(|d| d.0),
                    _ => s.kl_estimate,
                };
                let Some(k) = k else {
                    return (None, "—".into());
                };
                let text = if self == Measure::Kl {
                    num(k)
                } else {
                    format!("{k:.2}")
                };
                // A run that stopped early: the figure stands on fewer samples than asked.
                if s.error.is_some() {
                    (Some(k), format!("{text} ({}/{asked})", s.valid))
                } else {
                    (Some(k), text)
                }
            }
            Measure::Seconds if s.valid == 0 => (None, "—".into()),
            Measure::Seconds => {
                let v = s.seconds_per_valid();
                (Some(v), num(v))
            }
            Measure::Valid => (
                Some(s.valid as f64 / s.samples.max(1) as f64),
                format!("{}/{}", s.valid, s.samples),
            ),
        }
    }
}

/// A table filled from a sweep's folder: what the summary prints and the page draws.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Table {
    /// The spec's title.
    pub title: String,
    /// The measure in words.
    pub measure: String,
    /// The rows' axis (`sampler`).
    pub rows_axis: Axis,
    /// The columns' axis (`constraint`, `steps`).
    pub columns_axis: Axis,
    /// Row headings, in the plan's order.
    pub rows: Vec<String>,
    /// Column headings, in the plan's order.
    pub columns: Vec<String>,
    /// `cells[row][column]`: what is there once its setting has finished.
    pub cells: Vec<Vec<Option<TableCell>>>,
}

/// One filled cell of a [`Table`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableCell {
    /// The figure, where the measure has one.
    pub value: Option<f64>,
    /// The figure as the table prints it.
    pub text: String,
    /// The setting's first seed: what a rerun of the cell needs.
    pub cell: Cell,
    /// Seeds pooled in the figure.
    pub seeds: usize,
}

/// The cells a table covers.
fn covers(spec: &TableSpec, c: &Cell) -> bool {
    spec.constraints
        .as_ref()
        .is_none_or(|names| names.contains(&c.constraint))
}

/// Checks that each of the table's places holds one setting at most (cells differing only
/// by seed), so no figure silently stands for two; the error names the table and both.
pub fn check(spec: &TableSpec, index: usize, cells: &[Cell]) -> Result<()> {
    if let Some(names) = &spec.constraints
        && let Some(missing) = names
            .iter()
            .find(|n| !cells.iter().any(|c| &c.constraint == *n))
    {
        return fail(format!(
            "tables[{index}]: constraint {missing:?} is not in the plan"
        ));
    }
    let mut seen: std::collections::HashMap<(String, String), Cell> = Default::default();
    for c in cells.iter().filter(|c| covers(spec, c)) {
        let place = (spec.rows.label(c), spec.columns.label(c));
        let setting = Cell {
            seed: 0,
            ..c.clone()
        };
        match seen.get(&place) {
            Some(other) if *other != setting => {
                return fail(format!(
                    "tables[{index}] ({:?}): row {:?}, column {:?} would hold both {} and {}: \
                     choose rows and columns that tell them apart, or list the constraints",
                    spec.title,
                    place.0,
                    place.1,
                    other.id(),
                    setting.id()
                ));
            }
            Some(_) => {}
            None => {
                seen.insert(place, setting);
            }
        }
    }
    Ok(())
}

/// Fills `spec` from the pooled settings of a plan's cells (`cells` gives the headings'
/// order, finished or not).
pub fn fill(spec: &TableSpec, cells: &[Cell], settings: &[Setting]) -> Table {
    let mut rows: Vec<String> = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    for c in cells.iter().filter(|c| covers(spec, c)) {
        let (r, k) = (spec.rows.label(c), spec.columns.label(c));
        if !rows.contains(&r) {
            rows.push(r);
        }
        if !columns.contains(&k) {
            columns.push(k);
        }
    }
    let mut filled = vec![vec![None; columns.len()]; rows.len()];
    for s in settings.iter().filter(|s| covers(spec, &s.cell)) {
        let r = rows.iter().position(|x| *x == spec.rows.label(&s.cell));
        let k = columns
            .iter()
            .position(|x| *x == spec.columns.label(&s.cell));
        if let (Some(r), Some(k)) = (r, k) {
            let (value, text) = spec.measure.of(s);
            filled[r][k] = Some(TableCell {
                value,
                text,
                cell: s.cell.clone(),
                seeds: s.seeds,
            });
        }
    }
    Table {
        title: spec.title.clone(),
        measure: spec.measure.words().to_string(),
        rows_axis: spec.rows,
        columns_axis: spec.columns,
        rows,
        columns,
        cells: filled,
    }
}

impl Table {
    /// The table in Markdown: a heading, the grid (a cell not yet run is blank), and what
    /// the cells are.
    pub fn markdown(&self) -> String {
        let mut s = format!("### {}\n\n| {} |", self.title, self.rows_axis.name());
        for c in &self.columns {
            s += &format!(" {c} |");
        }
        s += "\n|---|";
        s += &"---:|".repeat(self.columns.len());
        s.push('\n');
        for (r, row) in self.rows.iter().zip(&self.cells) {
            s += &format!("| {r} |");
            for cell in row {
                s += &format!(" {} |", cell.as_ref().map_or("", |c| c.text.as_str()));
            }
            s.push('\n');
        }
        s + &format!("\nCells: {}.\n", self.measure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::plan::parse;
    use std::path::Path;

    const PLAN: &str = "models = [\"toy:gsk\"]\nsamplers = [\"lcd\", \"mcmc-uniform\", \"cars\"]\n\
        seeds = 2\n[constraints.a]\nregex = \"0\"\n[constraints.b]\nregex = \"1\"\n\
        [params]\nsteps = [2, 4]\n";

    fn setting(cell: &Cell, valid: usize, generations: u64, error: Option<&str>) -> Setting {
        Setting {
            cell: cell.clone(),
            seeds: 2,
            samples: valid,
            valid,
            lm_calls: 0.0,
            forward_tokens: 0.0,
            generations,
            seconds: 1.0,
            distance: None,
            kl_estimate: Some(0.5),
            error: error.map(str::to_string),
        }
    }

    /// Rows by sampler and columns by steps would put `mcmc-uniform k=2` and `k=4` apart
    /// but both constraints in one place: the plan is refused, naming the table; naming the
    /// constraint makes it fine.
    #[test]
    fn a_table_that_would_pool_two_settings_in_one_place_is_a_plan_mistake() {
        let bad = format!(
            "{PLAN}[[tables]]\ntitle = \"t\"\nrows = \"sampler\"\ncolumns = \"steps\"\n\
             measure = \"kl_estimate\"\n"
        );
        let e = parse(&bad, Path::new(".")).unwrap_err();
        assert!(
            e.0.contains("tables[0]") && e.0.contains("would hold both"),
            "{e}"
        );
        let good = format!("{bad}constraints = [\"a\"]\n");
        assert!(parse(&good, Path::new(".")).is_ok());
        let unknown = format!("{bad}constraints = [\"z\"]\n");
        let e = parse(&unknown, Path::new(".")).unwrap_err();
        assert!(e.0.contains("\"z\" is not in the plan"), "{e}");
    }

    /// Settings land in their row and column; generations are per 100 valid samples, a
    /// capped run reads T.O. with what it found, a setting not yet run leaves a blank.
    #[test]
    fn a_table_puts_each_setting_in_its_place_with_the_measure() {
        let plan = parse(PLAN, Path::new(".")).unwrap();
        let spec = TableSpec {
            title: "t".into(),
            rows: Axis::Setting,
            columns: Axis::Constraint,
            measure: Measure::Generations,
            constraints: None,
        };
        let find = |constraint: &str, setting: &str| {
            plan.cells
                .iter()
                .find(|c| c.constraint == constraint && c.setting() == setting)
                .unwrap()
        };
        let settings = vec![
            setting(find("a", "lcd"), 20, 20, None),
            setting(
                find("b", "cars"),
                5,
                400,
                Some("the generation cap was reached"),
            ),
            setting(find("b", "mcmc-uniform k=4"), 20, 80, None),
        ];
        let t = fill(&spec, &plan.cells, &settings);
        assert_eq!(t.columns, ["a", "b"]);
        assert_eq!(
            t.rows,
            ["lcd", "mcmc-uniform k=2", "mcmc-uniform k=4", "cars"]
        );
        let text = |r: usize, k: usize| t.cells[r][k].as_ref().map(|c| c.text.clone());
        assert_eq!(text(0, 0).as_deref(), Some("~100"));
        assert_eq!(text(3, 1).as_deref(), Some("T.O. (5/20)"));
        assert_eq!(text(2, 1).as_deref(), Some("~400"));
        assert_eq!(text(1, 0), None);
        // The KL estimate of a run that stopped early says what it stands on.
        let kl = TableSpec {
            measure: Measure::KlEstimate,
            ..spec.clone()
        };
        let k = fill(&kl, &plan.cells, &settings);
        assert_eq!(k.cells[0][0].as_ref().unwrap().text, "0.50");
        assert_eq!(k.cells[3][1].as_ref().unwrap().text, "0.50 (5/20)");
        let md = t.markdown();
        assert!(md.contains("| setting | a | b |"), "{md}");
        assert!(md.contains("| cars |  | T.O. (5/20) |"), "{md}");
    }
}
