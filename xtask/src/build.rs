//! The release page: `trunk build --release --offline`, with trunk's own wasm-opt off
//! (its download goes to GitHub). Debian's binaryen 108 is not used either: its
//! `wasm-opt -Os` rewrites the externref table that wasm-bindgen 0.2.130 sets up (rustc
//! enables reference types), and the page then fails to start with "WebAssembly.Table.set():
//! Argument 1 is invalid for table" (Chromium 148); it would save only ~0.5 MB of 3 MB.

use crate::setup::{MODEL_FILE, Tools, model_path};
use crate::util::{self, Result, root, step};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What the build produced.
pub struct Page {
    /// The `dist/` folder.
    pub dist: PathBuf,
}

/// How the page's wasm is optimized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// As served: the `wasm-release` profile (fat LTO, one codegen unit), the smallest wasm.
    Served,
    /// For a test build whose size nobody measures (CI's burn page): the same profile
    /// without LTO and with 16 codegen units, which skips the single-threaded link step.
    Quick,
}

/// Builds the page into `dist/` and links the model under `dist/models/`.
pub fn build_page(tools: &Tools) -> Result<Page> {
    build_variant(tools, false, Link::Served)
}

/// Builds the page, or with `burn` the page with the burn engine (`?engine=burn`, the
/// app's `burn-engine` feature) into `dist-burn/`, optimized as `link` says.
pub fn build_variant(tools: &Tools, burn: bool, link: Link) -> Result<Page> {
    let root = root();
    let dist = root.join(if burn { "dist-burn" } else { "dist" });
    let t0 = Instant::now();
    let mut trunk = Command::new(&tools.trunk);
    trunk.args(["build", "--release", "--offline"]);
    if burn {
        trunk.args(["--features", "burn-engine", "--dist", "dist-burn"]);
    }
    if link == Link::Quick {
        trunk
            .env("CARGO_PROFILE_WASM_RELEASE_LTO", "off")
            .env("CARGO_PROFILE_WASM_RELEASE_CODEGEN_UNITS", "16");
    }
    // trunk must find our wasm-bindgen in PATH: its own download goes to GitHub.
    util::run(
        trunk
            .current_dir(&root)
            .env("PATH", util::path_with_tools()),
    )?;
    let trunk_s = t0.elapsed().as_secs_f64();
    let wasm = find_wasm(&dist)?;
    step(format!(
        "trunk build: {trunk_s:.0} s, {} ({})",
        mb(size(&wasm)),
        rel(&wasm)
    ));
    link_model(&dist)?;
    step(format!(
        "page built in {:.0} s: {}",
        t0.elapsed().as_secs_f64(),
        rel(&dist)
    ));
    Ok(Page { dist })
}

/// `dist/models/<model>` → `assets/models/<model>` (a symlink; a copy where links fail).
fn link_model(dist: &Path) -> Result<()> {
    let src = model_path();
    let dir = dist.join("models");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let dst = dir.join(MODEL_FILE);
    let _ = fs::remove_file(&dst);
    #[cfg(unix)]
    if std::os::unix::fs::symlink(&src, &dst).is_ok() {
        return Ok(());
    }
    fs::copy(&src, &dst)
        .map(|_| ())
        .map_err(|e| format!("cannot copy the model into dist: {e}"))
}

fn find_wasm(dist: &Path) -> Result<PathBuf> {
    fs::read_dir(dist)
        .map_err(|e| format!("cannot read {}: {e}", dist.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "wasm"))
        .ok_or_else(|| format!("trunk left no .wasm in {}", dist.display()))
}

fn size(p: &Path) -> u64 {
    fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn mb(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}
