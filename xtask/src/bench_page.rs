//! `cargo xtask bench page`: builds the page, serves it with wllama beside it, and in one
//! headless Chromium times our decode (the CPU path in the sampling worker) and wllama's
//! (npm `@wllama/wllama`, llama.cpp compiled to wasm) on the same GGUF; `e2e/bench/page.mjs`
//! prints one JSON line per engine and the ratios.
//!
//! The served folder is `target/bench-page/`: links to every entry of `dist/`, to
//! wllama's `esm/` folder and to `e2e/bench/wllama.html`. The server sends COOP/COEP
//! headers (as it always does), which wllama's multi-threaded build needs.

use crate::util::{self, Result, root, step};
use crate::{build, serve, setup};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// `cargo xtask bench page`.
pub fn command() -> Result<ExitCode> {
    setup::setup()?;
    let page = build::build_page()?;
    let dir = bench_dir(&page.dist)?;
    let addr = serve::spawn(dir)?;
    step(format!("serving the page and wllama at http://{addr}/"));
    let mut node = Command::new("node");
    node.arg("bench/page.mjs")
        .current_dir(root().join("e2e"))
        .env("STRAIT_URL", format!("http://{addr}/"))
        .env("XDG_RUNTIME_DIR", util::xdg_runtime_dir());
    util::run(&mut node)?;
    Ok(ExitCode::SUCCESS)
}

/// `target/bench-page/`, rebuilt: `dist/`'s entries, `wllama/` and `wllama.html`.
fn bench_dir(dist: &Path) -> Result<PathBuf> {
    let e2e = root().join("e2e");
    let wllama = e2e.join("node_modules/@wllama/wllama/esm");
    if !wllama.join("index.js").is_file() {
        return Err(format!(
            "{} is missing after `npm ci` in e2e/",
            wllama.display()
        ));
    }
    let dir = root().join("target/bench-page");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let entries = fs::read_dir(dist).map_err(|e| format!("cannot read {}: {e}", dist.display()))?;
    for entry in entries.flatten() {
        link(&entry.path(), &dir.join(entry.file_name()))?;
    }
    link(&wllama, &dir.join("wllama"))?;
    link(&e2e.join("bench/wllama.html"), &dir.join("wllama.html"))?;
    Ok(dir)
}

#[cfg(unix)]
fn link(src: &Path, dst: &Path) -> Result<()> {
    let src = fs::canonicalize(src).map_err(|e| format!("{}: {e}", src.display()))?;
    std::os::unix::fs::symlink(&src, dst)
        .map_err(|e| format!("cannot link {} to {}: {e}", dst.display(), src.display()))
}

#[cfg(not(unix))]
fn link(_: &Path, _: &Path) -> Result<()> {
    Err("`cargo xtask bench page` links files and needs a Unix system".into())
}
