//! The Python package's stage: the pinned tools from PyPI, `pip install ./py` (maturin
//! builds the extension into the workspace's `target/`), then pytest on `py/tests/`
//! against the `strait` binary, Ray's test on a local two-CPU cluster included.

use crate::util::{self, root, step};
use std::process::Command;

/// What the stage installs with pip, pinned (maturin also as `py/pyproject.toml`'s build
/// backend).
pub const TOOLS: &[&str] = &[
    "maturin==1.16.0",
    "pytest==8.4.2",
    "ray==2.60.0",
    // FunctionModel's tests write their models in numpy.
    "numpy==2.4.6",
];

/// The tools, then the package. The extension is built with burn's wgpu backend, as the
/// native stage builds the workspace, so the two share their compiled dependencies. The
/// `strait` binary the tests compare with is built first unless `native_ran` (the native
/// stage's `cargo test` has just built it).
pub fn install(native_ran: bool) -> Result<(), String> {
    step(format!("python tools: {}", TOOLS.join(" ")));
    util::run(pip().args(TOOLS))
        .map_err(|e| format!("{e}\npip could not install the Python tools: is PyPI reachable?"))?;
    if !native_ran {
        build_cli()?;
    }
    util::run(
        pip()
            // maturin is installed above: no isolated build environment to set up.
            .args([
                "--force-reinstall",
                "--no-deps",
                "--no-build-isolation",
                "./py",
            ])
            // The dev profile: the workspace's test builds are reused (a release build of
            // every dependency would add minutes); users get `pyproject.toml`'s release.
            .env("MATURIN_PEP517_ARGS", "--profile dev --features burn-wgpu")
            .current_dir(root()),
    )
}

/// The `strait` binary the Python and npm tests compare with (`target/debug/strait`), as
/// the native stage builds it.
pub fn build_cli() -> Result<(), String> {
    util::run(
        Command::new("cargo")
            .args(["build", "-p", "cli", "--features", "burn-wgpu"])
            .current_dir(root()),
    )
}

/// `python3 -m pip install`, quietly.
fn pip() -> Command {
    let mut cmd = Command::new("python3");
    cmd.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]);
    cmd
}

/// pytest on the package's tests; Ray's test may not be skipped.
pub fn pytest() -> Command {
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "pytest", "py/tests", "-p", "no:cacheprovider", "-rs"])
        .current_dir(root())
        .env("STRAIT_BIN", root().join("target/debug/strait"))
        .env("STRAIT_REQUIRE_RAY", "1")
        .env("RAY_USAGE_STATS_ENABLED", "0");
    cmd
}

/// pytest's last line: `11 passed, 1 failed, 2 skipped in 8.29s` (a skip counts as a
/// failure: nothing of the package's tests is optional here).
pub fn parse_summary(line: &str) -> Option<(u64, u64)> {
    let line = line.trim().trim_matches('=').trim();
    if !line.contains(" in ") || !(line.contains("passed") || line.contains("failed")) {
        return None;
    }
    let (mut passed, mut failed) = (0, 0);
    for part in line.split(" in ").next()?.split(',') {
        let mut w = part.split_whitespace();
        match (w.next().and_then(|n| n.parse::<u64>().ok()), w.next()) {
            (Some(n), Some("passed")) => passed += n,
            (Some(n), Some("failed" | "error" | "errors" | "skipped")) => failed += n,
            _ => {}
        }
    }
    Some((passed, failed))
}

#[cfg(test)]
mod tests {
    #[test]
    fn pytest_summaries_count_skips_as_failures() {
        use super::parse_summary as p;
        assert_eq!(
            p("=== 11 passed, 1 failed, 2 skipped in 8.29s ==="),
            Some((11, 3))
        );
        assert_eq!(p("13 passed in 5.1s"), Some((13, 0)));
        assert_eq!(p("collected 13 items"), None);
    }
}
