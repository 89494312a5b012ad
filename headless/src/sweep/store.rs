//! A sweep's output folder: one file per finished job, each written whole or not at all.
//!
//! ```text
//! OUT/cells/ID.jsonl     a cell's sample lines (those of `strait sample`)
//! OUT/cells/ID.json      its row; written last, so it marks the cell finished
//! OUT/exact/GROUP.json   exact P^L of a group of cells, or why there is none
//! OUT/summary.csv, OUT/summary.md, OUT/plots/*.svg
//! ```
//!
//! Every file is written to `NAME.part` and renamed, so a sweep killed at any moment
//! leaves finished files and `.part` leftovers, which the next run deletes; a cell whose
//! row is missing (or was written for another plan's cell of the same name) is run again.

use super::cell::Cell;
use super::job::{CellOutput, ExactFile, Job, JobResult, Row};
use super::plan::Plan;
use crate::failure::{Failure, Result};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The cell's sample lines.
pub fn samples_path(out: &Path, cell: &Cell) -> PathBuf {
    out.join("cells").join(format!("{}.jsonl", cell.id()))
}

/// The cell's row (its presence marks the cell finished).
pub fn row_path(out: &Path, cell: &Cell) -> PathBuf {
    out.join("cells").join(format!("{}.json", cell.id()))
}

/// Exact P^L of the cell's group.
pub fn exact_path(out: &Path, cell: &Cell) -> PathBuf {
    out.join("exact").join(format!("{}.json", cell.group()))
}

/// Writes `bytes` to `path` through `path.part` and a rename.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let err = |e: std::io::Error| Failure(format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut part = path.as_os_str().to_owned();
    part.push(".part");
    // On disk before the rename, so that a machine that loses power keeps whole files.
    let mut file = std::fs::File::create(&part).map_err(err)?;
    std::io::Write::write_all(&mut file, bytes).map_err(err)?;
    file.sync_all().map_err(err)?;
    std::fs::rename(&part, path).map_err(err)
}

/// The row of a finished cell, if this very cell finished.
pub fn finished_row(out: &Path, cell: &Cell) -> Option<Row> {
    let text = std::fs::read_to_string(row_path(out, cell)).ok()?;
    let row: Row = serde_json::from_str(&text).ok()?;
    (same_run(&row.cell, cell) && samples_path(out, cell).exists()).then_some(row)
}

/// Whether a finished cell's samples stand for `cell`: everything equal but `exact`
/// (whether the summary compares with P^L, which changes no sample).
pub fn same_run(done: &Cell, cell: &Cell) -> bool {
    let mut done = done.clone();
    done.definition.exact = cell.definition.exact;
    done == *cell
}

/// The exact file of the cell's group, if it was computed for this group.
pub fn finished_exact(out: &Path, cell: &Cell) -> Option<ExactFile> {
    let text = std::fs::read_to_string(exact_path(out, cell)).ok()?;
    let file: ExactFile = serde_json::from_str(&text).ok()?;
    same_group(&file.cell, cell).then_some(file)
}

/// Whether two cells share exact P^L.
pub fn same_group(a: &Cell, b: &Cell) -> bool {
    (&a.model, &a.definition, &a.prompt, a.chat, a.max_tokens)
        == (&b.model, &b.definition, &b.prompt, b.chat, b.max_tokens)
}

/// Deletes `.part` leftovers of a killed run and lists what is left to do: the exact
/// distributions first (one per group that asks for it), then the unfinished cells.
pub fn pending(plan: &Plan, out: &Path) -> Result<Vec<Job>> {
    for dir in ["cells", "exact"] {
        let dir = out.join(dir);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().ends_with(".part") {
                    std::fs::remove_file(e.path())
                        .map_err(|err| Failure(format!("{}: {err}", e.path().display())))?;
                }
            }
        }
    }
    let mut jobs = Vec::new();
    let mut groups = HashSet::new();
    for cell in &plan.cells {
        if cell.definition.exact
            && groups.insert(cell.group())
            && finished_exact(out, cell).is_none()
        {
            jobs.push(Job::Exact(cell.clone()));
        }
    }
    for cell in &plan.cells {
        if finished_row(out, cell).is_none() {
            jobs.push(Job::Cell(cell.clone()));
        }
    }
    Ok(jobs)
}

/// Writes a job's result: the samples, then the row (a cell is finished once its row is
/// there), or the exact file.
pub fn write(out: &Path, result: &JobResult) -> Result<()> {
    match result {
        JobResult::Exact(file) => write_whole(&exact_path(out, &file.cell), &json(file)?),
        JobResult::Cell(CellOutput { lines, row }) => {
            // The old row goes first: until the new one is written, the cell is unfinished
            // whatever its samples file holds.
            match std::fs::remove_file(row_path(out, &row.cell)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Failure(format!(
                        "{}: {e}",
                        row_path(out, &row.cell).display()
                    )));
                }
                _ => {}
            }
            let mut text = String::new();
            for l in lines {
                text += &l.to_string();
                text.push('\n');
            }
            write_whole(&samples_path(out, &row.cell), text.as_bytes())?;
            write_whole(&row_path(out, &row.cell), &json(row)?)
        }
    }
}

/// `value` as pretty JSON and a newline.
fn json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    Ok(bytes)
}
