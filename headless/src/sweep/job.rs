//! What a sweep runs: a cell's sampler run, or the exact P^L its summary compares with.
//! A job and its result are plain data (JSON), so a job can run in another process or on
//! another machine (the Python package hands them to Ray workers) and come back.

use super::cell::Cell;
use crate::failure::Result;
use crate::model_source::Source;
use crate::sample::{SampleJob, sample_counted};
use sampler_core::samplers::{Counters, Params};
use sampler_core::{DynConstraint, TokenId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Instant;

/// Most sequences enumerated for a sweep's exact P^L; a larger language gets no KL.
pub const EXACT_MAX_SEQUENCES: usize = 10_000;

/// One unit of work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Job {
    /// Exact P^L for the cells of one group (the cell stands for its group).
    Exact(Cell),
    /// One cell's sampler run.
    Cell(Cell),
}

impl Job {
    /// The model the job needs loaded.
    pub fn model(&self) -> &str {
        match self {
            Job::Exact(c) | Job::Cell(c) => &c.model,
        }
    }
}

/// What a job produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobResult {
    /// Exact P^L, or why there is none.
    Exact(ExactFile),
    /// A cell's sample lines and its row.
    Cell(CellOutput),
}

/// Exact P^L of a group as the summary reads it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExactFile {
    /// The cell that stands for the group (checked on a rerun: a changed plan recomputes).
    pub cell: Cell,
    /// Every sequence of the language with its probability under P^L.
    pub entries: Vec<(Vec<TokenId>, f64)>,
    /// Why there is no exact distribution (an infinite or too large language).
    pub error: Option<String>,
}

/// A finished cell.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellOutput {
    /// The lines `strait sample` would print for the cell.
    pub lines: Vec<Value>,
    /// The cell and what it cost.
    pub row: Row,
}

/// A cell's costs, as the summary table shows them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// The cell.
    pub cell: Cell,
    /// Output samples (lines).
    pub samples: usize,
    /// Valid samples among them.
    pub valid: usize,
    /// Model calls of the run.
    pub lm_calls: u64,
    /// Tokens through the network.
    pub forward_tokens: u64,
    /// Constraint checks.
    pub constraint_checks: u64,
    /// Sequences generated from the start.
    pub generations: u64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// Why the run stopped early (the sweep goes on; its samples so far are kept).
    pub error: Option<String>,
}

/// Runs `job` on `source`, the job's model, loaded. A sampler's error is part of the
/// result (the row says it); an error here is one that no result can hold.
pub fn run(source: &mut Source, job: &Job) -> Result<JobResult> {
    match job {
        Job::Exact(cell) => {
            let exact = (|| {
                let (prompt, constraint) = prompt_and_constraint(source, cell)?;
                crate::enumerate::exact(
                    source,
                    prompt,
                    &constraint,
                    cell.max_tokens,
                    EXACT_MAX_SEQUENCES,
                )
            })();
            Ok(JobResult::Exact(match exact {
                Ok(d) => ExactFile {
                    cell: cell.clone(),
                    entries: d.entries.iter().map(|e| (e.tokens.clone(), e.p)).collect(),
                    error: None,
                },
                Err(e) => ExactFile {
                    cell: cell.clone(),
                    entries: Vec::new(),
                    error: Some(e.0),
                },
            }))
        }
        Job::Cell(cell) => Ok(JobResult::Cell(run_cell(source, cell))),
    }
}

/// One cell: the sampler run, its lines and its row, an error included in the row.
fn run_cell(source: &mut Source, cell: &Cell) -> CellOutput {
    let start = Instant::now();
    let mut lines = Vec::new();
    let result = (|| {
        let none = |e| (e, Counters::default());
        let (prompt, constraint) = prompt_and_constraint(source, cell).map_err(none)?;
        let job = SampleJob {
            method: cell.method,
            params: Params {
                n: cell.n,
                steps: cell.steps,
                particles: cell.particles,
                max_tokens: cell.max_tokens,
                batch: cell.batch,
                max_generations: cell.max_generations,
                generation_cap: cell.generation_cap,
                ..Params::default()
            },
            seed: cell.seed,
            hmm_engine: cell.hmm_engine.clone(),
        };
        sample_counted(source, prompt, &constraint, &job, false, &mut |l| {
            lines.push(l);
            super::abort_hook::sample_written();
        })
    })();
    let seconds = start.elapsed().as_secs_f64();
    let valid = lines.iter().filter(|l| l["valid"] == true).count();
    let (counters, error) = match result {
        Ok(c) => (c, None),
        Err((e, c)) => (c, Some(e.0)),
    };
    CellOutput {
        row: Row {
            cell: cell.clone(),
            samples: lines.len(),
            valid,
            lm_calls: counters.lm_calls,
            forward_tokens: counters.forward_tokens,
            constraint_checks: counters.constraint_checks,
            generations: counters.generations,
            seconds,
            error,
        },
        lines,
    }
}

/// The cell's prompt tokens and constraint over the model's vocabulary.
fn prompt_and_constraint(
    source: &Source,
    cell: &Cell,
) -> Result<(Vec<TokenId>, DynConstraint<'static>)> {
    let (spec, format) = cell.definition.spec(&cell.constraint);
    source.prompt_and_constraint(&cell.prompt, cell.chat, &spec, format)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model_source::ModelSpec;

    /// An exact sampler that gives up: the row keeps the error and what the run cost up to
    /// then (the generations, the model calls), which the summary's measures need.
    #[test]
    fn a_failed_cell_keeps_its_error_and_its_cost() {
        let plan = super::super::plan::parse(
            "models = [\"toy:gsk\"]\nsamplers = [\"rs\"]\nseeds = 1\n[constraints.z]\n\
             regex = \"00000\"\n[params]\nn = 1\nmax_tokens = 8\nmax_generations = 5\n",
            std::path::Path::new("."),
        )
        .unwrap();
        let mut source = Source::load(&ModelSpec::new("toy:gsk")).unwrap();
        let Ok(JobResult::Cell(out)) = run(&mut source, &Job::Cell(plan.cells[0].clone())) else {
            panic!("a cell's failure is a result");
        };
        assert!(
            out.row.error.is_some() && out.lines.is_empty(),
            "{:?}",
            out.row
        );
        assert_eq!(out.row.generations, 5, "{:?}", out.row);
        assert!(out.row.lm_calls >= 5, "{:?}", out.row);
    }
}
