//! `cargo xtask fuzz [TARGET] [--minutes N]`: coverage-guided fuzzing of the input front
//! ends (`fuzz/`) with AFL++ through cargo-afl, on the stable toolchain.
//!
//! Installs cargo-afl (and with it AFL++'s runtime) when missing, builds the instrumented
//! `strait-fuzz` into `target/afl/`, then runs each target (or the one named) for N
//! minutes (default 1) with `afl-fuzz -V`. Inputs: the committed seeds
//! (`fuzz/corpus/<target>/`), the regressions (`fuzz/regressions/<target>/`), the
//! committed minimized queues of earlier campaigns (`fuzz/queues/<target>.tar.gz`), the seeds
//! made by code, and the queue a previous run left in `target/fuzz/<target>/`. It prints
//! one JSON line per target (executions, paths, crashes, hangs) and fails when a crash
//! or a hang was saved, naming the files to copy into `fuzz/regressions/<target>/`.

use crate::util::{self, Result, root, step};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The cargo-afl release the fuzz crate's `afl` dependency matches.
const CARGO_AFL: &str = "0.18.2";

/// `cargo xtask fuzz [TARGET] [--minutes N]`.
pub fn command(flags: &[String]) -> Result<ExitCode> {
    let mut minutes = 1.0f64;
    let mut only: Option<String> = None;
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        match f.as_str() {
            "--minutes" => {
                let v = it.next().ok_or("--minutes needs a number")?;
                minutes = v
                    .parse()
                    .ok()
                    .filter(|m: &f64| *m > 0.0)
                    .ok_or_else(|| format!("--minutes {v}: not a positive number"))?;
            }
            t if !t.starts_with('-') && only.is_none() => only = Some(t.to_string()),
            other => return Err(format!("cargo xtask fuzz: unexpected `{other}`")),
        }
    }
    ensure_cargo_afl()?;
    let bin = build()?;
    let names = util::output(&bin, &["--list"]).ok_or("strait-fuzz --list failed")?;
    let names: Vec<&str> = names.lines().collect();
    let targets: Vec<&str> = match &only {
        Some(t) if names.contains(&t.as_str()) => vec![t.as_str()],
        Some(t) => {
            return Err(format!(
                "no fuzz target `{t}`; targets: {}",
                names.join(", ")
            ));
        }
        None => names.clone(),
    };
    let work = root().join("target").join("fuzz");
    let seeds = work.join("generated-seeds");
    util::run(Command::new(&bin).arg("--seeds").arg(&seeds))?;
    let mut failed = Vec::new();
    for t in targets {
        let report = fuzz_one(&bin, t, &work, &seeds, minutes)?;
        if report.crashes + report.hangs > 0 {
            failed.push(report);
        }
    }
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for r in &failed {
        eprintln!(
            "xtask: fuzz target `{}` saved {} crash(es) and {} hang(s) in {}; copy them \
             into fuzz/regressions/{}/ once fixed, and `cargo test -p fuzz` replays them",
            r.target,
            r.crashes,
            r.hangs,
            r.dir.display(),
            r.target
        );
    }
    Ok(ExitCode::FAILURE)
}

/// What one target's run found.
struct Report {
    target: String,
    crashes: u64,
    hangs: u64,
    dir: PathBuf,
}

/// Installs cargo-afl at [`CARGO_AFL`] when `cargo afl --version` does not name it, then
/// makes sure AFL++'s runtime is built for this rustc (cargo-afl refuses to build it twice,
/// which is fine).
fn ensure_cargo_afl() -> Result<()> {
    let version = util::output("cargo", &["afl", "--version"]).unwrap_or_default();
    if version.contains(CARGO_AFL) {
        step(format!("cargo-afl {CARGO_AFL} present"));
    } else {
        step(format!(
            "installing cargo-afl {CARGO_AFL} (builds AFL++ from its crate; about 2 minutes)"
        ));
        util::run(Command::new("cargo").args([
            "install",
            "cargo-afl",
            "--version",
            CARGO_AFL,
            "--locked",
        ]))?;
    }
    let out = Command::new("cargo")
        .args(["afl", "config", "--build"])
        .output()
        .map_err(|e| format!("cannot run `cargo afl config --build`: {e}"))?;
    let said = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || said.contains("already built") {
        Ok(())
    } else {
        Err(format!("`cargo afl config --build` failed:\n{said}"))
    }
}

/// Builds the instrumented `strait-fuzz` (its own target directory: instrumentation
/// changes every crate's flags) and returns its path.
fn build() -> Result<PathBuf> {
    let dir = root().join("target").join("afl");
    util::run(
        Command::new("cargo")
            .current_dir(root())
            .args(["afl", "build", "--release", "--package", "fuzz"])
            .args(["--features", "afl", "--bin", "strait-fuzz", "--target-dir"])
            .arg(&dir),
    )?;
    Ok(dir.join("release").join("strait-fuzz"))
}

/// Copies every file of `from` (if it exists) into `to`.
fn copy_files(from: &Path, to: &Path) -> Result<usize> {
    let Ok(entries) = fs::read_dir(from) else {
        return Ok(0);
    };
    let mut n = 0;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_file() {
            let name = format!(
                "{}-{}",
                n,
                e.file_name().to_string_lossy().replace(':', "_")
            );
            fs::copy(&p, to.join(name)).map_err(|e| format!("{}: {e}", p.display()))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Unpacks the inputs archived in `archive` (if it exists) into `to`; the count added.
fn unpack(archive: &Path, to: &Path) -> Result<usize> {
    if !archive.is_file() {
        return Ok(0);
    }
    let count = |d: &Path| fs::read_dir(d).map_or(0, |e| e.count());
    let before = count(to);
    let ok = Command::new("tar")
        .arg("-xzf")
        .arg(archive)
        .arg("-C")
        .arg(to)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(format!("could not unpack {} with tar", archive.display()));
    }
    Ok(count(to) - before)
}

/// Runs one target for `minutes` and reads AFL's `fuzzer_stats`.
fn fuzz_one(bin: &Path, target: &str, work: &Path, seeds: &Path, minutes: f64) -> Result<Report> {
    let dir = work.join(target);
    let input = dir.join("in");
    let out = dir.join("out");
    let _ = fs::remove_dir_all(&input);
    fs::create_dir_all(&input).map_err(|e| format!("{}: {e}", input.display()))?;
    let fuzz = root().join("fuzz");
    let mut n = copy_files(&fuzz.join("corpus").join(target), &input)?;
    n += copy_files(&fuzz.join("regressions").join(target), &input)?;
    // The committed, minimized queue of earlier campaigns (`fuzz/queues/<target>.tar.gz`),
    // so a fresh machine goes on from where they stopped.
    n += unpack(
        &fuzz.join("queues").join(format!("{target}.tar.gz")),
        &input,
    )?;
    n += copy_files(&seeds.join(target), &input)?;
    // The queue of the previous run, so long campaigns add up.
    let previous = out.join("default").join("queue");
    n += copy_files(&previous, &input)?;
    let _ = fs::remove_dir_all(&out);
    let secs = (minutes * 60.0).round().max(1.0) as u64;
    step(format!("fuzzing `{target}` for {secs} s from {n} inputs"));
    let log = fs::File::create(dir.join("afl.log")).map_err(|e| e.to_string())?;
    let status = Command::new("cargo")
        .args(["afl", "fuzz", "-V", &secs.to_string(), "-t", "5000"])
        .arg("-i")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(bin)
        .arg(target)
        .env("AFL_NO_UI", "1")
        .env("AFL_SKIP_CPUFREQ", "1")
        .env("AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES", "1")
        .env("AFL_SUPPRESS_NO_OPTIONS_WARNING", "1")
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run afl-fuzz: {e}"))?;
    let stats = fs::read_to_string(out.join("default").join("fuzzer_stats")).map_err(|_| {
        format!(
            "afl-fuzz ({status}) left no fuzzer_stats; its log: {}",
            dir.join("afl.log").display()
        )
    })?;
    let get = |k: &str| -> String {
        stats
            .lines()
            .find_map(|l| {
                let (key, v) = l.split_once(':')?;
                (key.trim() == k).then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let num = |k: &str| get(k).parse::<u64>().unwrap_or(0);
    let report = Report {
        target: target.to_string(),
        crashes: num("saved_crashes"),
        hangs: num("saved_hangs"),
        dir: out.join("default"),
    };
    println!(
        "{{\"fuzz\":\"{target}\",\"seconds\":{},\"execs\":{},\"execs_per_sec\":{},\"corpus\":{},\"edges_found\":{},\"bitmap_cvg\":\"{}\",\"crashes\":{},\"hangs\":{}}}",
        num("run_time"),
        num("execs_done"),
        get("execs_per_sec"),
        num("corpus_count"),
        num("edges_found"),
        get("bitmap_cvg"),
        report.crashes,
        report.hangs
    );
    Ok(report)
}
