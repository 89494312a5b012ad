//! `strait sweep PLAN.toml --out DIR`: a plan's grid of sampler runs (`headless::sweep`);
//! a plan with `[[tables]]` also gets `DIR/page.json`, its tables as the page shows them
//! (`playground::papers`), each cell with the playground link that reruns it.

use crate::args::SweepArgs;
use crate::failure::{Failure, Result};
use headless::ModelSpec;
use headless::sweep::{summary, table};
use playground::papers::{CellRun, PaperCell, PaperResults, PaperTable};

/// Runs the plan, writes the page's tables, then says where the summary is.
pub fn run(args: &SweepArgs) -> Result<()> {
    let spec = ModelSpec {
        cpu: args.cpu,
        gpu: args.gpu,
        ..ModelSpec::new("")
    };
    let plan = headless::sweep::plan::load(&args.plan)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Failure(format!("{}: {e}", args.out.display())))?;
    let s = if args.summarize {
        headless::sweep::finish(&plan, &args.out)?
    } else {
        headless::sweep::run(&plan, &args.out, &spec)?
    };
    if !plan.tables.is_empty() {
        let page = PaperResults {
            title: plan.title.clone(),
            plan: args.plan.to_string_lossy().replace('\\', "/"),
            finished: s.finished,
            cells: s.cells,
            tables: summary::tables(&plan, &s).iter().map(page_table).collect(),
        };
        let path = args.out.join("page.json");
        std::fs::write(&path, serde_json::to_string(&page)?)
            .map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    }
    headless::note!(
        "strait: sweep: {} of {} cells finished ({} with an error); summary in {}",
        s.finished,
        s.cells,
        s.failed,
        args.out.join("summary.md").display()
    );
    Ok(())
}

/// A sweep's table as the page stores it: each cell's figure and rerun link.
fn page_table(t: &table::Table) -> PaperTable {
    let cell = |c: &table::TableCell| {
        let d = &c.cell.definition;
        let run = CellRun {
            grammar: d.regex.as_deref().or(d.text.as_deref()).unwrap_or_default(),
            format: if d.regex.is_some() {
                Some("regex")
            } else {
                d.format.as_deref()
            },
            prompt: &c.cell.prompt,
            chat: c.cell.chat,
            method: c.cell.method.name(),
            n: c.cell.n,
            steps: c.cell.steps,
            particles: c.cell.particles,
            batch: c.cell.batch,
            max_tokens: c.cell.max_tokens,
            seed: c.cell.seed,
        };
        PaperCell {
            text: c.text.clone(),
            value: c.value,
            link: run.link().ok(),
        }
    };
    PaperTable {
        title: t.title.clone(),
        measure: t.measure.clone(),
        rows_axis: t.rows_axis.name(),
        columns_axis: t.columns_axis.name(),
        rows: t.rows.clone(),
        columns: t.columns.clone(),
        cells: t
            .cells
            .iter()
            .map(|r| r.iter().map(|c| c.as_ref().map(cell)).collect())
            .collect(),
    }
}
