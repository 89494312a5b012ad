//! `cargo xtask npm [--quick]`: the npm package `strait-samplers` — the `strait-js` crate
//! built for wasm32 and turned into an ES module by wasm-bindgen, beside the package's own
//! files (`js/package/`: `package.json`, `index.js`, `index.d.ts`, `README.md`) — into
//! `target/npm/strait-samplers/`, then packed by `npm pack` into
//! `target/npm/strait-samplers-VERSION.tgz`.

use crate::build::{Link, mb, rel, size, target_dir};
use crate::setup;
use crate::util::{self, Result, root, step};
use std::fs;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The package's files taken as they are from `js/package/`.
const PACKAGE_FILES: &[&str] = &["package.json", "index.js", "index.d.ts", "README.md"];

/// The npm package's name (its folder under `target/npm/`).
pub const NAME: &str = "strait-samplers";

/// A built package: its folder (what `import` may name) and its tarball.
pub struct Package {
    /// `target/npm/strait-samplers/`.
    pub dir: PathBuf,
    /// The tarball `npm pack` wrote.
    pub tarball: PathBuf,
}

/// `cargo xtask npm [--quick]`.
pub fn command(flags: &[String]) -> Result<ExitCode> {
    let link = match flags {
        [] => Link::Served,
        [f] if f == "--quick" => Link::Quick,
        _ => return Err(format!("npm: unknown flags {flags:?} (--quick)")),
    };
    build(link)?;
    Ok(ExitCode::SUCCESS)
}

/// Builds the package in `link`'s profile and packs it.
pub fn build(link: Link) -> Result<Package> {
    let t0 = Instant::now();
    setup::ensure_wasm_target()?;
    let tools = setup::for_page()?;
    util::run(Command::new("cargo").current_dir(root()).args([
        "build",
        "-p",
        "strait-js",
        "--lib",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        link.profile(),
    ]))?;
    let wasm = target_dir()
        .join("wasm32-unknown-unknown")
        .join(link.profile())
        .join("strait_js.wasm");
    if !wasm.is_file() {
        return Err(format!("cargo left no {}", wasm.display()));
    }
    let npm_dir = target_dir().join("npm");
    let dir = npm_dir.join(NAME);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("cannot empty {}: {e}", dir.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for f in PACKAGE_FILES {
        let src = root().join("js").join("package").join(f);
        fs::copy(&src, dir.join(f)).map_err(|e| format!("cannot copy {}: {e}", src.display()))?;
    }
    util::run(
        Command::new(&tools.wasm_bindgen)
            .args(["--target", "web", "--no-typescript", "--out-name", "strait"])
            .arg("--out-dir")
            .arg(dir.join("wasm"))
            .arg(&wasm),
    )?;
    let out = Command::new("npm")
        .current_dir(&dir)
        .args(["pack", "--silent", "--pack-destination"])
        .arg(&npm_dir)
        .output()
        .map_err(|e| format!("npm pack: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "npm pack failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let tarball = npm_dir.join(name.lines().last().unwrap_or_default());
    if !tarball.is_file() {
        return Err(format!("npm pack left no tarball ({name:?})"));
    }
    step(format!(
        "npm package built in {:.0} s: {} (wasm {}), packed into {} ({})",
        t0.elapsed().as_secs_f64(),
        rel(&dir),
        mb(size(&dir.join("wasm").join("strait_bg.wasm"))),
        rel(&tarball),
        mb(size(&tarball)),
    ));
    Ok(Package { dir, tarball })
}
