//! `strait sweep PLAN.toml --out DIR`: a grid of sampler runs (models × constraints ×
//! prompts × samplers × parameters × seeds, [`plan`]), each cell's samples and costs kept
//! in a folder ([`store`]), a summary table and plots of the papers' measures
//! ([`summary`], [`svg`]), and tables in a paper's shape ([`table`]). Interrupted and run again, it keeps the finished cells and
//! redoes the rest.
//!
//! The work is a list of [`Job`]s whose results are plain data, so the same sweep can run
//! here ([`run`]) or as Ray tasks from the Python package, which hands jobs to workers and
//! writes their results with [`store::write`] and [`finish`].

pub mod cell;
pub mod job;
pub mod plan;
pub mod progress;
pub mod setting;
pub mod store;
pub mod summary;
pub mod svg;
pub mod table;

pub use job::{Job, JobResult};
pub use plan::{Cell, Plan};

use crate::failure::{Failure, Result};
use crate::model_source::{ModelSpec, Source};
use std::collections::BTreeMap;
use std::path::Path;

/// Runs every unfinished job of `plan` on this machine, one model loaded at a time, then
/// writes the summary and the plots. `spec` says how models are run (CPU, GPU, engine);
/// its `model` is ignored.
pub fn run(plan: &Plan, out: &Path, spec: &ModelSpec) -> Result<summary::Summary> {
    let jobs = store::pending(plan, out)?;
    let kept = plan.cells.len() - jobs.iter().filter(|j| matches!(j, Job::Cell(_))).count();
    if kept > 0 {
        crate::note!(
            "strait: sweep: {kept} of {} cells already finished in {}, kept",
            plan.cells.len(),
            out.display()
        );
    }
    let mut by_model: BTreeMap<&str, Vec<&Job>> = BTreeMap::new();
    for j in &jobs {
        by_model.entry(j.model()).or_default().push(j);
    }
    let mut progress = progress::Progress::new(jobs.len());
    for (model, jobs) in by_model {
        let mut source = Source::load(&ModelSpec {
            model: model.to_string(),
            ..spec.clone()
        })?;
        for job in jobs {
            let result = job::run(&mut source, job)?;
            store::write(out, &result)?;
            progress.step(&match job {
                Job::Exact(c) => format!("exact P^L of {}", c.group()),
                Job::Cell(c) => c.id(),
            });
        }
    }
    progress.finish();
    finish(plan, out)
}

/// Writes `summary.csv`, `summary.md` and the plots from what the folder holds.
pub fn finish(plan: &Plan, out: &Path) -> Result<summary::Summary> {
    let summary = summary::read(plan, out)?;
    let plots = plots(&summary, out)?;
    store::write_whole(&out.join("summary.csv"), summary::csv(plan, out).as_bytes())?;
    store::write_whole(
        &out.join("summary.md"),
        summary::markdown(plan, &summary, &plots).as_bytes(),
    )?;
    if !plan.tables.is_empty() {
        let tables = summary::tables(plan, &summary);
        let json = serde_json::to_string_pretty(&tables)?;
        store::write_whole(&out.join("tables.json"), json.as_bytes())?;
    }
    Ok(summary)
}

/// Per group: KL against LM calls (one line per sampler) where exact P^L is known, and
/// generations per 100 valid samples. Returns (title, path relative to `out`).
fn plots(summary: &summary::Summary, out: &Path) -> Result<Vec<(String, String)>> {
    let mut groups: BTreeMap<String, Vec<&summary::Setting>> = BTreeMap::new();
    for s in &summary.settings {
        groups.entry(s.cell.group()).or_default().push(s);
    }
    let mut written = Vec::new();
    for (group, settings) in groups {
        let c = &settings[0].cell;
        let what = format!("{} · {}", c.constraint, model_name(&c.model));
        // A sampler's colour: its place among the group's samplers, on both charts.
        let mut methods = Vec::new();
        for s in &settings {
            if !methods.contains(&s.cell.method) {
                methods.push(s.cell.method);
            }
        }
        let colour = |m| methods.iter().position(|&x| x == m).unwrap_or(0);
        let mut series: Vec<svg::Series> = Vec::new();
        for s in &settings {
            if let Some((kl, _)) = s.distance.filter(|d| d.0.is_finite()) {
                let name = s.cell.method.to_string();
                match series.iter_mut().find(|x| x.name == name) {
                    Some(x) => x.points.push((s.lm_calls, kl)),
                    None => series.push(svg::Series {
                        name,
                        points: vec![(s.lm_calls, kl)],
                        colour: colour(s.cell.method),
                    }),
                }
            }
        }
        if !series.is_empty() {
            let title = format!("KL to exact P^L against LM calls: {what}");
            let file = format!("plots/{group}.kl.svg");
            let chart = svg::line_chart(
                &title,
                "LM calls per run (log scale)",
                "KL(q̂ ‖ P^L), nats",
                &series,
            );
            store::write_whole(&out.join(&file), chart.as_bytes())?;
            written.push((title, file));
        }
        let bars: Vec<(String, usize, f64)> = settings
            .iter()
            .filter(|s| s.valid > 0)
            .map(|s| {
                (
                    s.cell.setting(),
                    colour(s.cell.method),
                    s.generations_per_100_valid(),
                )
            })
            .collect();
        if !bars.is_empty() {
            let title = format!("Generations per 100 valid samples: {what}");
            let file = format!("plots/{group}.generations.svg");
            let chart = svg::bar_chart(&title, "generations per 100 valid samples", &bars);
            store::write_whole(&out.join(&file), chart.as_bytes())?;
            written.push((title, file));
        }
    }
    Ok(written)
}

/// A model's name for a title: a file's name, or the toy's.
pub(crate) fn model_name(model: &str) -> String {
    Path::new(model)
        .file_name()
        .map_or_else(|| model.to_string(), |f| f.to_string_lossy().into_owned())
}

/// Reads a plan file and runs it (what `strait sweep` does).
pub fn run_file(plan: &Path, out: &Path, spec: &ModelSpec) -> Result<summary::Summary> {
    let plan = plan::load(plan)?;
    std::fs::create_dir_all(out).map_err(|e| Failure(format!("{}: {e}", out.display())))?;
    run(&plan, out, spec)
}

/// A test's way to stop a sweep as a kill would, in the middle of a cell:
/// `STRAIT_SWEEP_EXIT_AFTER_SAMPLES=N` ends the process (status 137, no cleanup) when the
/// N-th sample of this process has been drawn.
pub(crate) mod abort_hook {
    use std::sync::atomic::{AtomicU64, Ordering};

    static DRAWN: AtomicU64 = AtomicU64::new(0);

    /// Counts one sample; exits when the count reaches the variable's value.
    pub fn sample_written() {
        let n = DRAWN.fetch_add(1, Ordering::Relaxed) + 1;
        if let Ok(limit) = std::env::var("STRAIT_SWEEP_EXIT_AFTER_SAMPLES")
            && limit.parse() == Ok(n)
        {
            crate::note!(
                "strait: sweep: exiting after {n} samples (STRAIT_SWEEP_EXIT_AFTER_SAMPLES)"
            );
            std::process::exit(137);
        }
    }
}
