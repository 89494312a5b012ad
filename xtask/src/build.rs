//! The release page, built without trunk: `cargo build` of the `app` crate for wasm32,
//! `wasm-bindgen --target web` on its wasm, and the three static files beside them
//! (`index.html`, `app/style.css`, `app/worker.js`). The result, `dist/`, is a static site
//! with relative URLs only: any plain file server serves it, under any path.
//!
//! The cargo build starts at once; the tools it does not need (the model, wasm-bindgen-cli)
//! are made ready on a second thread meanwhile, so a first build on a fresh machine waits
//! for the longer of the two instead of their sum.
//!
//! No wasm-opt: Debian's binaryen 108 rewrites the externref table that wasm-bindgen 0.2.130
//! sets up (rustc enables reference types), and the page then fails to start with
//! "WebAssembly.Table.set(): Argument 1 is invalid for table" (Chromium 148); it would save
//! only ~0.5 MB of 3 MB.

use crate::setup::{self, MODEL_FILE, Tools, model_path};
use crate::util::{self, Result, root, step};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
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
    /// For a test build whose size nobody measures (CI's burn page): the `wasm-quick`
    /// profile, `wasm-release` without LTO (no single-threaded link step) and in 16
    /// codegen units.
    Quick,
}

impl Link {
    /// The cargo profile, which is also the folder of the wasm under the target's.
    pub fn profile(self) -> &'static str {
        match self {
            Link::Served => "wasm-release",
            Link::Quick => "wasm-quick",
        }
    }
}

/// The static files of the page: (source under the repository root, name in `dist/`).
const STATIC_FILES: &[(&str, &str)] = &[
    ("index.html", "index.html"),
    ("app/style.css", "style.css"),
    // The sampling worker's entry: it imports `app.js`, so that name is fixed.
    ("app/worker.js", "worker.js"),
    // The service worker that adds COOP/COEP on static hosts (index.html registers it).
    ("app/sw.js", "sw.js"),
    // A pasted link's preview picture (index.html's Open Graph and Twitter card tags).
    ("assets/og.png", "og.png"),
];

/// The name wasm-bindgen gives the glue (`app.js`) and the module (`app_bg.wasm`).
const OUT_NAME: &str = "app";

/// Builds the page into `dist/` and links the model under `dist/models/`.
pub fn build_page() -> Result<Page> {
    build_variant(false, Link::Served)
}

/// Builds the page, or with `burn` the page with the burn engine (`?engine=burn`, the
/// app's `burn-engine` feature) into `dist-burn/`, optimized as `link` says.
pub fn build_variant(burn: bool, link: Link) -> Result<Page> {
    let dist = root().join(if burn { "dist-burn" } else { "dist" });
    build_into(&dist, burn, link, None)?;
    link_model(&dist, ModelCopy::Link)?;
    Ok(Page { dist })
}

/// `cargo xtask dist [--out DIR] [--model-url URL]`: the static site, self-contained.
pub fn dist_command(flags: &[String]) -> Result<ExitCode> {
    let mut out = root().join("dist");
    let mut model_url = None;
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        match f.as_str() {
            "--out" => {
                let dir = it.next().ok_or("--out needs a folder")?;
                out = std::env::current_dir()
                    .map_err(|e| e.to_string())?
                    .join(dir);
            }
            "--model-url" => {
                model_url = Some(it.next().ok_or("--model-url needs a URL")?.clone());
            }
            other => {
                return Err(format!(
                    "dist: unknown flag `{other}` (--out DIR, --model-url URL)"
                ));
            }
        }
    }
    refuse_foreign_folder(&out)?;
    build_into(&out, false, Link::Served, model_url.as_deref())?;
    match &model_url {
        None => link_model(&out, ModelCopy::Copy)?,
        Some(url) => step(format!("the page fetches its model from {url}")),
    }
    let total: u64 = walk_sizes(&out);
    step(format!(
        "static site in {} ({}): serve it with any static file server, under any path, e.g. \
         `python3 -m http.server --directory {}`",
        out.display(),
        mb(total),
        out.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// Refuses to empty a folder that holds something other than an earlier build.
fn refuse_foreign_folder(dir: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let ours = |n: &String| {
        STATIC_FILES.iter().any(|(_, name)| name == n)
            || n.starts_with(OUT_NAME)
            || n == "models"
            || n == "snippets"
    };
    match names.iter().find(|n| !ours(n)) {
        None => Ok(()),
        Some(n) => Err(format!(
            "{} holds `{n}`, which no build of the page writes: give --out an empty or new folder",
            dir.display()
        )),
    }
}

/// Bytes of every file under `dir`, links followed.
fn walk_sizes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() { walk_sizes(&p) } else { size(&p) }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The page into `dist` (emptied first), the model left out; `model_url` is built in as the
/// page's default model when given.
pub fn build_into(dist: &Path, burn: bool, link: Link, model_url: Option<&str>) -> Result<()> {
    let t0 = Instant::now();
    setup::ensure_wasm_target()?;
    // The tools the page's build does not need until its wasm exists, meanwhile.
    let tools = std::thread::spawn(setup::for_page);
    let wasm = cargo_build(burn, link, model_url);
    let tools: Tools = tools
        .join()
        .map_err(|_| "the setup thread panicked".to_string())??;
    let wasm = wasm?;
    let cargo_s = t0.elapsed().as_secs_f64();

    if dist.exists() {
        fs::remove_dir_all(dist).map_err(|e| format!("cannot empty {}: {e}", dist.display()))?;
    }
    fs::create_dir_all(dist).map_err(|e| format!("cannot create {}: {e}", dist.display()))?;
    util::run(
        Command::new(&tools.wasm_bindgen)
            .args(["--target", "web", "--no-typescript", "--out-name", OUT_NAME])
            .arg("--out-dir")
            .arg(dist)
            .arg(&wasm),
    )?;
    for (src, name) in STATIC_FILES {
        fs::copy(root().join(src), dist.join(name))
            .map_err(|e| format!("cannot copy {src} into {}: {e}", dist.display()))?;
    }
    let module = dist.join(format!("{OUT_NAME}_bg.wasm"));
    step(format!(
        "page built in {:.0} s (cargo and tools {cargo_s:.0} s): {} ({})",
        t0.elapsed().as_secs_f64(),
        rel(dist),
        mb(size(&module)),
    ));
    Ok(())
}

/// `cargo build` of the app for wasm32 in `link`'s profile; the wasm's path.
fn cargo_build(burn: bool, link: Link, model_url: Option<&str>) -> Result<PathBuf> {
    let mut cargo = Command::new("cargo");
    // Read by `option_env!` in the app (page_state.rs); cargo rebuilds when it changes.
    match model_url {
        Some(url) => cargo.env("STRAIT_MODEL_URL", url),
        None => cargo.env_remove("STRAIT_MODEL_URL"),
    };
    cargo.args([
        "build",
        "-p",
        "app",
        "--bin",
        "app",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        link.profile(),
    ]);
    if burn {
        cargo.args(["--features", "burn-engine"]);
    }
    util::run(cargo.current_dir(root()))?;
    let wasm = target_dir()
        .join("wasm32-unknown-unknown")
        .join(link.profile())
        .join(format!("{OUT_NAME}.wasm"));
    if wasm.is_file() {
        Ok(wasm)
    } else {
        Err(format!("cargo left no {}", wasm.display()))
    }
}

/// cargo's target folder: `CARGO_TARGET_DIR`, else `target/` at the root.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => {
            let d = PathBuf::from(d);
            if d.is_absolute() { d } else { root().join(d) }
        }
        None => root().join("target"),
    }
}

/// How the model enters `dist/models/`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ModelCopy {
    /// A symlink to `assets/models/` (a copy where links fail): for local serving.
    Link,
    /// A copy: the site travels on its own.
    Copy,
}

/// `dist/models/<model>` from `assets/models/<model>`, linked or copied.
fn link_model(dist: &Path, how: ModelCopy) -> Result<()> {
    let src = model_path();
    let dir = dist.join("models");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let dst = dir.join(MODEL_FILE);
    let _ = fs::remove_file(&dst);
    #[cfg(unix)]
    if how == ModelCopy::Link && std::os::unix::fs::symlink(&src, &dst).is_ok() {
        return Ok(());
    }
    fs::copy(&src, &dst)
        .map(|_| ())
        .map_err(|e| format!("cannot copy the model into dist: {e}"))
}

/// A file's size in bytes (0 when it cannot be read).
pub fn size(p: &Path) -> u64 {
    fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Bytes as megabytes, for messages.
pub fn mb(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

/// A path relative to the repository's root, for messages.
pub fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}
