//! `strait sweep PLAN.toml --out DIR`: a plan's grid of sampler runs (`headless::sweep`).

use crate::args::SweepArgs;
use crate::failure::Result;
use headless::ModelSpec;

/// Runs the plan, then says where the summary is.
pub fn run(args: &SweepArgs) -> Result<()> {
    let spec = ModelSpec {
        cpu: args.cpu,
        gpu: args.gpu,
        ..ModelSpec::new("")
    };
    let s = headless::sweep::run_file(&args.plan, &args.out, &spec)?;
    headless::note!(
        "strait: sweep: {} of {} cells finished ({} with an error); summary in {}",
        s.finished,
        s.cells,
        s.failed,
        args.out.join("summary.md").display()
    );
    Ok(())
}
