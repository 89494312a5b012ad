//! `cargo xtask test [STAGE...]`: the test suites by stage, counted; a table of each
//! stage's build and run time, then the last line `N passed, N failed`.
//!
//! The stages ([`STAGES`], `cargo xtask test --list`), in the order they run:
//! - `native`: `cargo test --workspace --exclude app --exclude strait-py --exclude strait-js
//!   --features cli/burn-wgpu` (GPU tests,
//!   burn's wgpu backend among them, on lavapipe where there is no GPU);
//! - `python`: the Python package (`py/`): the pinned tools with pip, `pip install ./py`,
//!   pytest on `py/tests/` against the `strait` binary, Ray on a local cluster included;
//! - `wasm`: the CPU kernels (`cpu-kernels`) built for wasm32-wasip1 with simd128, as the
//!   page's are, and run by node's WASI against their scalar references;
//! - `aarch64`: the same crate built for aarch64 and run by qemu-user (the NEON kernels);
//! - `loom`: the forward pass's thread pool (`task-pool`) built with `--cfg loom` into its
//!   own target folder, its job hand-off, sleep and wake-up, panics and drop model-checked
//!   by loom (`task-pool/tests/loom.rs`);
//! - `page`: the release build of the page (`cargo xtask build`, as served): one test;
//! - `npm`: the npm package (`cargo xtask npm`: `js/` built in the page's profile) and
//!   `js/tests/npm.test.mjs` in node and headless Chromium, against the `strait` binary;
//! - `browser`: the wasm32 tests of crates that declare `wasm-bindgen-test` (the WGSL
//!   kernels on Chromium's SwiftShader), run by `wasm-bindgen-test-runner` through
//!   chromedriver with the WebGPU flags from `webdriver.json`;
//! - `e2e`: the built page served locally and driven in headless Chromium by
//!   `e2e/*.test.mjs` (node's test runner + playwright-core);
//! - `burn`: the page built with the app's `burn-engine` feature into `dist-burn/`, served
//!   on its own port and driven by `e2e/burn.test.mjs` (left out of `e2e`).
//!
//! Cargo stages build first (`--no-run`) and then run, so the table tells the two apart.
//! The `loom` and `python` stages run beside the `page` stage, one after the other, when it
//! is asked for too (the page's link-time optimization leaves a core idle; they build into
//! other folders of `target/` than the page's); their lines then interleave with the page's.
//! The `burn` stage's build runs at nice 19 beside the `e2e` stage when that runs after a
//! built page (it leaves about a quarter of the cores idle); its output goes to
//! `target/burn-page-build.log`.

use crate::build;
use crate::serve;
use crate::setup;
use crate::util::{self, Result, root, step};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// Passed and failed tests of one suite.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Count {
    passed: u64,
    failed: u64,
}

impl Count {
    const ONE_FAILED: Count = Count {
        passed: 0,
        failed: 1,
    };
    const ONE_PASSED: Count = Count {
        passed: 1,
        failed: 0,
    };
}

impl std::ops::AddAssign for Count {
    fn add_assign(&mut self, o: Count) {
        self.passed += o.passed;
        self.failed += o.failed;
    }
}

/// One stage of `cargo xtask test`: its name on the command line and what it covers.
pub struct Stage {
    /// The name `cargo xtask test NAME` takes.
    pub name: &'static str,
    /// One line on what it tests.
    pub covers: &'static str,
}

/// Every stage, in the order they run.
pub const STAGES: &[Stage] = &[
    Stage {
        name: "native",
        covers: "cargo test of every crate but the page, burn's wgpu backend on (GPU tests on lavapipe without a GPU)",
    },
    Stage {
        name: "python",
        covers: "the Python package: pip install ./py (PyO3, maturin), pytest against the strait binary, a sweep on a local Ray cluster",
    },
    Stage {
        name: "wasm",
        covers: "the CPU kernels (cpu-kernels) in wasm32 with simd128 under node's WASI, against their scalar references",
    },
    Stage {
        name: "aarch64",
        covers: "the CPU kernels' NEON versions, built for aarch64 and run by qemu-user, against their references",
    },
    Stage {
        name: "loom",
        covers: "the forward pass's thread pool (task-pool) model-checked by loom: hand-off, sleep and wake-up, panics, drop",
    },
    Stage {
        name: "page",
        covers: "the release build of the page into dist/ (cargo, then wasm-bindgen), as served",
    },
    Stage {
        name: "npm",
        covers: "the npm package strait-samplers (js/, wasm-bindgen): js/tests/npm.test.mjs in node and headless Chromium, against the CLI and exact distributions, and its npm pack tarball installed offline",
    },
    Stage {
        name: "browser",
        covers: "wasm-bindgen tests of shaders and playground: WGSL kernels in headless Chromium (SwiftShader), the rest in node",
    },
    Stage {
        name: "e2e",
        covers: "the built page served locally, driven in headless Chromium by e2e/*.test.mjs (builds the page when `page` was not run)",
    },
    Stage {
        name: "burn",
        covers: "the page with the burn engine (dist-burn/, linked without LTO) and e2e/burn.test.mjs",
    },
];

/// Crates whose tests also run in wasm32 when they declare `wasm-bindgen-test` (in the
/// browser where they configure `run_in_browser`, else in node: `playground`).
const BROWSER_TEST_CRATES: &[&str] = &["shaders", "lm", "sampler-core", "playground"];

/// One row of the closing table.
struct Row {
    stage: String,
    count: Count,
    build_s: f64,
    run_s: f64,
}

/// The stages named in `flags` (every stage when none is), or an error naming the unknown.
fn selected(flags: &[String]) -> Result<Vec<&'static str>> {
    let named: Vec<&String> = flags.iter().filter(|f| !f.starts_with("--")).collect();
    if let Some(bad) = named
        .iter()
        .find(|n| !STAGES.iter().any(|s| s.name == n.as_str()))
    {
        return Err(format!(
            "no stage `{bad}`; the stages are: {} (`cargo xtask test --list` says what each covers)",
            STAGES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(STAGES
        .iter()
        .map(|s| s.name)
        .filter(|n| named.is_empty() || named.iter().any(|m| m.as_str() == *n))
        .collect())
}

/// `cargo xtask test --list`: each stage with what it covers.
fn list() {
    println!("cargo xtask test [STAGE...]: the stages, in the order they run (none named: all)");
    for s in STAGES {
        println!("  {:<8} {}", s.name, s.covers);
    }
}

/// `cargo xtask test [--list] [STAGE...]`.
pub fn command(flags: &[String]) -> Result<ExitCode> {
    if flags.iter().any(|f| f == "--list") {
        list();
        return Ok(ExitCode::SUCCESS);
    }
    let stages = selected(flags)?;
    let t0 = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    let wants = |name: &str| stages.contains(&name);

    // Setup: only what the named stages need. A failure is itself a failure to report,
    // but the stages that need nothing of it still run.
    let t = Instant::now();
    let web = ["page", "npm", "browser", "e2e", "burn"]
        .iter()
        .any(|s| wants(s));
    let setup_ok = if web {
        setup::setup().map(|_| ())
    } else if wants("native") || wants("python") {
        setup::ensure_model().and_then(|_| setup::ensure_gguf_package())
    } else {
        Ok(())
    };
    if let Err(e) = &setup_ok {
        eprintln!("xtask: setup failed: {e}");
    }
    rows.push(Row {
        stage: "setup".into(),
        count: if setup_ok.is_ok() {
            Count::default()
        } else {
            Count::ONE_FAILED
        },
        build_s: t.elapsed().as_secs_f64(),
        run_s: 0.0,
    });

    if wants("native") {
        // burn's wgpu backend on: the burn engine's custom kernels and P-GCD's HMM on
        // burn-wgpu run on lavapipe beside the rest.
        // `strait-py` has no Rust tests: the python stage builds it (through maturin, whose
        // PyO3 configuration differs, so a build here would be thrown away).
        // `strait-js` is wasm-only (the npm stage builds and tests it); built here it would
        // also change the features the native dependencies are compiled with, so the Python
        // stage's build could no longer reuse them (it rebuilt them: 381 s against 80).
        let args = [
            "test",
            "--workspace",
            "--exclude",
            "app",
            "--exclude",
            "strait-py",
            "--exclude",
            "strait-js",
            "--features",
            "cli/burn-wgpu",
        ];
        rows.push(cargo_stage("native", &args, &[], "native cargo test"));
    }
    // The page's release build ends in a link-time optimization on one core, so the loom
    // and python stages (a minute or two each) run beside it on the other, one after the
    // other; each in its place when the page is not built. (The browser stage's builds
    // there too, at nice 19, slowed the page's build by more than they gained: the
    // link-time optimization shares memory bandwidth, not just cores; docs/bench/ci.md.)
    let page_soon = wants("page") && setup_ok.is_ok();
    let loom_beside = wants("loom") && page_soon;
    let python_beside = wants("python") && page_soon;
    let native_ran = wants("native");
    if wants("python") && !python_beside {
        rows.push(python_stage(native_ran));
    }
    if wants("wasm") {
        rows.push(kernels_wasm());
    }
    if wants("aarch64") {
        rows.push(kernels_aarch64());
    }
    let beside = (loom_beside || python_beside).then(|| {
        std::thread::spawn(move || {
            let mut rows = Vec::new();
            if loom_beside {
                rows.push(pool_loom());
            }
            if python_beside {
                rows.push(python_stage(native_ran));
            }
            rows
        })
    });
    if wants("loom") && !loom_beside {
        rows.push(pool_loom());
    }

    let mut page_built = false;
    if setup_ok.is_ok() {
        if wants("page") {
            let t = Instant::now();
            let count = build_counted(false, build::Link::Served, "the page");
            page_built = count.failed == 0;
            rows.push(Row {
                stage: "page".into(),
                count,
                build_s: t.elapsed().as_secs_f64(),
                run_s: 0.0,
            });
        }
        if let Some(beside) = beside {
            rows.extend(
                beside
                    .join()
                    .unwrap_or_else(|_| vec![not_started("loom and python")]),
            );
        }
        if wants("npm") {
            rows.push(npm_stage(native_ran));
        }
        if wants("browser") {
            let mut row = Row {
                stage: "browser".into(),
                count: Count::default(),
                build_s: 0.0,
                run_s: 0.0,
            };
            for krate in BROWSER_TEST_CRATES {
                if declares_wasm_bindgen_test(krate) {
                    let r = browser_tests(krate);
                    row.count += r.count;
                    row.build_s += r.build_s;
                    row.run_s += r.run_s;
                }
            }
            rows.push(row);
        }
        // The burn page's build (CPU-bound, minutes) runs at the lowest priority beside
        // the e2e stage, which leaves about a quarter of the cores idle (waiting on pages,
        // timers and polls); it takes only what the stage leaves. (Beside the browser stage
        // too, it slowed that stage's build and run by about as much as it gained.)
        let burn_beside = (wants("burn") && page_built && wants("e2e")).then(burn_build_beside);
        if wants("e2e") {
            let t = Instant::now();
            let mut count = Count::default();
            if !page_built {
                let c = build_counted(false, build::Link::Served, "the page");
                page_built = c.failed == 0;
                count += c;
            }
            let build_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            if page_built {
                count += e2e(&root().join("dist"));
            }
            rows.push(Row {
                stage: "e2e".into(),
                count,
                build_s,
                run_s: t.elapsed().as_secs_f64(),
            });
        }
        if wants("burn") {
            // The page with the burn engine (`?engine=burn`): its own build and test. Its
            // size is measured by `cargo xtask build --burn`, not here: linked quickly.
            let (count, build_s) = match burn_beside {
                Some(beside) => beside.join().unwrap_or((Count::ONE_FAILED, 0.0)),
                None => {
                    let t = Instant::now();
                    let count = build_counted(true, build::Link::Quick, "the burn page");
                    (count, t.elapsed().as_secs_f64())
                }
            };
            let t = Instant::now();
            let count = if count.failed == 0 {
                burn_page_e2e(&root().join("dist-burn"))
            } else {
                count
            };
            rows.push(Row {
                stage: "burn".into(),
                count,
                build_s,
                run_s: t.elapsed().as_secs_f64(),
            });
        }
    } else {
        for name in ["page", "browser", "e2e", "burn"] {
            if wants(name) {
                eprintln!("xtask: stage {name} not run: setup failed");
                rows.push(Row {
                    stage: name.into(),
                    count: Count::ONE_FAILED,
                    build_s: 0.0,
                    run_s: 0.0,
                });
            }
        }
    }

    let total = print_table(&rows, t0.elapsed().as_secs_f64());
    println!("{} passed, {} failed", total.passed, total.failed);
    Ok(if total.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The closing table: each stage's build and run time and counts; returns the total count.
fn print_table(rows: &[Row], total_s: f64) -> Count {
    let mut total = Count::default();
    eprintln!();
    eprintln!(
        "  {:<9} {:>8} {:>8}  {:>6} {:>6}",
        "stage", "build", "run", "passed", "failed"
    );
    for r in rows {
        eprintln!(
            "  {:<9} {:>6.0} s {:>6.0} s  {:>6} {:>6}",
            r.stage, r.build_s, r.run_s, r.count.passed, r.count.failed
        );
        total += r.count;
    }
    eprintln!("  total time {total_s:.0} s");
    total
}

/// The burn page's quick build (`cargo xtask build --burn --quick`) started at nice 19 on
/// a thread of its own, its output in `target/burn-page-build.log` (the end of it echoed
/// when it fails); the thread returns its count and how long it took.
fn burn_build_beside() -> std::thread::JoinHandle<(Count, f64)> {
    std::thread::spawn(|| {
        let t = Instant::now();
        let log_path = root().join("target").join("burn-page-build.log");
        let count = match burn_build_niced(&log_path) {
            Ok(()) => Count::ONE_PASSED,
            Err(e) => {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                for line in &lines[lines.len().saturating_sub(60)..] {
                    eprintln!("burn page | {line}");
                }
                eprintln!("xtask: wasm build of the burn page failed: {e}");
                Count::ONE_FAILED
            }
        };
        let secs = t.elapsed().as_secs_f64();
        step(format!(
            "the burn page's build (beside the e2e stage) ended after {secs:.0} s"
        ));
        (count, secs)
    })
}

/// Runs this xtask again as `nice -n 19 xtask build --burn --quick` ([`util::run`]), its
/// output to `log`.
fn burn_build_niced(log: &Path) -> Result<()> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find xtask itself: {e}"))?;
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let out =
        std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot share {}: {e}", log.display()))?;
    let mut cmd = Command::new("nice");
    cmd.args(["-n", "19"])
        .arg(exe)
        .args(["build", "--burn", "--quick"])
        .current_dir(root())
        .stdout(out)
        .stderr(err);
    step(format!(
        "building the burn page beside the e2e stage (log: {})",
        log.display()
    ));
    util::run(&mut cmd)
}

/// Builds the page (or the burn page) as one test: passed when it builds.
fn build_counted(burn: bool, link: build::Link, what: &str) -> Count {
    match build::build_variant(burn, link) {
        Ok(_) => Count::ONE_PASSED,
        Err(e) => {
            eprintln!("xtask: wasm build of {what} failed: {e}");
            Count::ONE_FAILED
        }
    }
}

/// A cargo test stage: `cargo <args> --no-run` (timed as its build), then `cargo <args>`
/// (timed as its run), with `env` set on both.
fn cargo_stage(stage: &str, args: &[&str], env: &[(&str, String)], what: &str) -> Row {
    let command = || {
        let mut cmd = Command::new("cargo");
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    };
    let t = Instant::now();
    let mut build = command();
    build.arg("--no-run");
    let built = cargo_tests(&mut build, &format!("{what} (build)"));
    let build_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let count = if built.failed == 0 {
        cargo_tests(&mut command(), what)
    } else {
        built
    };
    Row {
        stage: stage.into(),
        count,
        build_s,
        run_s: t.elapsed().as_secs_f64(),
    }
}

/// The Python package: installed (its build counted as the stage's build), then tested.
fn python_stage(native_ran: bool) -> Row {
    let t = Instant::now();
    let installed = crate::python::install(native_ran);
    let build_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let count = match installed {
        Err(e) => {
            eprintln!("xtask: the Python package: {e}");
            Count::ONE_FAILED
        }
        Ok(()) => {
            let (count, ok) = run_counting(&mut crate::python::pytest(), |line| {
                crate::python::parse_summary(line).map(|(passed, failed)| Count { passed, failed })
            });
            finish("pytest", count, ok)
        }
    };
    Row {
        stage: "python".into(),
        count,
        build_s,
        run_s: t.elapsed().as_secs_f64(),
    }
}

/// The npm package: built (its wasm in the page's profile; the `strait` binary it compares
/// with first, unless the native stage built it), then `js/tests/npm.test.mjs` in node and
/// headless Chromium.
fn npm_stage(native_ran: bool) -> Row {
    let t = Instant::now();
    let built = (|| {
        if !native_ran {
            crate::python::build_cli()?;
        }
        crate::npm::build(build::Link::Served)
    })();
    let build_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let count = match built {
        Err(e) => {
            eprintln!("xtask: the npm package: {e}");
            Count::ONE_FAILED
        }
        Ok(package) => {
            let mut cmd = Command::new("node");
            cmd.args(["--test", "--test-reporter=tap", "npm.test.mjs"])
                .current_dir(root().join("js").join("tests"))
                .env("STRAIT_NPM_DIR", &package.dir)
                .env("STRAIT_NPM_TARBALL", &package.tarball)
                .env(
                    "STRAIT_BIN",
                    build::target_dir().join("debug").join("strait"),
                )
                .env("XDG_RUNTIME_DIR", util::xdg_runtime_dir());
            let (count, ok) = run_counting(&mut cmd, parse_tap_line);
            finish("npm package test", count, ok)
        }
    };
    Row {
        stage: "npm".into(),
        count,
        build_s,
        run_s: t.elapsed().as_secs_f64(),
    }
}

/// `cargo xtask e2e [--no-build]`: only the end-to-end test.
pub fn e2e_command(flags: &[String]) -> Result<ExitCode> {
    let dist = served_page(flags)?;
    Ok(report(e2e(&dist)))
}

/// The page the e2e tests drive: `dist/` as it is with `--no-build` (the model made sure
/// of), else built now.
fn served_page(flags: &[String]) -> Result<PathBuf> {
    if flags.iter().any(|f| f == "--no-build") {
        setup::ensure_model()?;
        Ok(root().join("dist"))
    } else {
        setup::setup()?;
        Ok(build::build_page()?.dist)
    }
}

/// Prints the count's last line and exits by it.
fn report(c: Count) -> ExitCode {
    println!("{} passed, {} failed", c.passed, c.failed);
    if c.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `cargo xtask soak [--runs N] [--no-build]`: `e2e/soak.test.mjs` alone, with `N`
/// real-model runs (200 unless told; the `e2e` stage runs its short form).
pub fn soak_command(flags: &[String]) -> Result<ExitCode> {
    let mut runs = 200u32;
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        match f.as_str() {
            "--runs" => {
                let v = it.next().ok_or("--runs needs a number")?;
                runs = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--runs {v}: not a positive number"))?;
            }
            "--no-build" => {}
            other => return Err(format!("cargo xtask soak: unexpected `{other}`")),
        }
    }
    let dist = served_page(flags)?;
    let env = [("STRAIT_SOAK_RUNS", runs.to_string())];
    Ok(report(run_e2e(&dist, &[SOAK_E2E.to_string()], &env)))
}

/// The soak test (`cargo xtask soak`; the `e2e` stage runs its short form).
const SOAK_E2E: &str = "soak.test.mjs";

/// `rustup target add TARGET`; false (with a message) when it fails.
fn add_target(target: &str) -> bool {
    let added = Command::new("rustup")
        .args(["target", "add", target])
        .status()
        .is_ok_and(|s| s.success());
    if !added {
        eprintln!("xtask: `rustup target add {target}` failed: counted as 1 failure");
    }
    added
}

/// A stage that could not start: one failure, no time.
fn not_started(stage: &str) -> Row {
    Row {
        stage: stage.into(),
        count: Count::ONE_FAILED,
        build_s: 0.0,
        run_s: 0.0,
    }
}

/// The `cpu-kernels` tests built for wasm32-wasip1 with `simd128`, as the page's kernels
/// are, and run by node's WASI (`xtask/wasi_run.mjs` as cargo's runner).
fn kernels_wasm() -> Row {
    if !add_target("wasm32-wasip1") {
        return not_started("wasm");
    }
    let runner = format!(
        "node {}",
        root().join("xtask").join("wasi_run.mjs").display()
    );
    cargo_stage(
        "wasm",
        &[
            "test",
            "-p",
            "cpu-kernels",
            "--lib",
            "--target",
            "wasm32-wasip1",
        ],
        &[
            ("CARGO_TARGET_WASM32_WASIP1_RUNNER", runner),
            (
                "CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS",
                "-C target-feature=+simd128".into(),
            ),
        ],
        "cpu-kernels in wasm (simd128)",
    )
}

/// Where Debian's `libc6-dev-arm64-cross` puts the aarch64 C library (qemu's `-L`).
pub const AARCH64_SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// The `cpu-kernels` tests (the NEON kernels against their scalar references) built for
/// aarch64-unknown-linux-gnu, linked by Debian's cross gcc and run by qemu-user.
fn kernels_aarch64() -> Row {
    if !add_target("aarch64-unknown-linux-gnu") {
        return not_started("aarch64");
    }
    cargo_stage(
        "aarch64",
        &[
            "test",
            "-p",
            "cpu-kernels",
            "--lib",
            "--target",
            "aarch64-unknown-linux-gnu",
        ],
        &[
            (
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
                "aarch64-linux-gnu-gcc".into(),
            ),
            (
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER",
                format!("qemu-aarch64 -L {AARCH64_SYSROOT}"),
            ),
        ],
        "cpu-kernels on aarch64 (NEON, qemu)",
    )
}

/// The thread pool under loom: `--cfg loom` changes every crate's build, so it has a
/// target folder of its own (`target/loom`: loom and `task-pool` only, about a minute).
fn pool_loom() -> Row {
    cargo_stage(
        "loom",
        &["test", "-p", "task-pool", "--release", "--test", "loom"],
        &[
            ("RUSTFLAGS", "--cfg loom".into()),
            (
                "CARGO_TARGET_DIR",
                root().join("target").join("loom").display().to_string(),
            ),
        ],
        "task-pool under loom",
    )
}

/// Runs a cargo test command, echoing its output and counting `test result:` lines; a
/// failing command with no failed test counted (a build error) counts as one failure.
fn cargo_tests(cmd: &mut Command, what: &str) -> Count {
    cmd.current_dir(root()).env("PATH", util::path_with_tools());
    step(util::gpu_env(cmd));
    let (count, ok) = run_counting(cmd, parse_cargo_line);
    finish(what, count, ok)
}

fn finish(what: &str, mut count: Count, ok: bool) -> Count {
    if !ok && count.failed == 0 {
        eprintln!(
            "xtask: {what} failed before any test failed (a build error?): counted as 1 failure"
        );
        count.failed += 1;
    }
    count
}

/// Runs `cmd`, echoing stdout line by line (stderr passes through) and summing `parse`.
fn run_counting(cmd: &mut Command, parse: fn(&str) -> Option<Count>) -> (Count, bool) {
    step(format!("running {}", util::show(cmd)));
    let mut child = match cmd.stdout(Stdio::piped()).stdin(Stdio::null()).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("xtask: cannot start `{}`: {e}", util::show(cmd));
            return (Count::default(), false);
        }
    };
    let mut count = Count::default();
    for line in BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(|l| l.ok())
    {
        println!("{line}");
        if let Some(c) = parse(&line) {
            count += c;
        }
    }
    let ok = child.wait().map(|s| s.success()).unwrap_or(false);
    (count, ok)
}

/// `test result: ok. 12 passed; 0 failed; 1 ignored; ...`
fn parse_cargo_line(line: &str) -> Option<Count> {
    let rest = line.trim().strip_prefix("test result: ")?;
    let mut c = Count::default();
    for part in rest.split([';', '.']) {
        let mut w = part.split_whitespace();
        match (w.next().and_then(|n| n.parse::<u64>().ok()), w.next()) {
            (Some(n), Some("passed")) => c.passed = n,
            (Some(n), Some("failed")) => c.failed = n,
            _ => {}
        }
    }
    Some(c)
}

/// node's TAP summary: `# pass 3` and `# fail 1`.
fn parse_tap_line(line: &str) -> Option<Count> {
    // Top-level lines only: nested subtests' diagnostics are indented.
    let rest = line.trim_end().strip_prefix("# ")?;
    let mut w = rest.split_whitespace();
    let (key, n) = (w.next()?, w.next()?.parse::<u64>().ok()?);
    match key {
        "pass" => Some(Count {
            passed: n,
            failed: 0,
        }),
        "fail" | "cancelled" => Some(Count {
            passed: 0,
            failed: n,
        }),
        _ => None,
    }
}

fn declares_wasm_bindgen_test(krate: &str) -> bool {
    std::fs::read_to_string(root().join(krate).join("Cargo.toml"))
        .is_ok_and(|t| t.contains("wasm-bindgen-test"))
}

/// `cargo test -p <krate> --target wasm32-unknown-unknown` with wasm-bindgen-test-runner
/// driving headless Chromium (WebGPU on SwiftShader) through chromedriver.
fn browser_tests(krate: &str) -> Row {
    let runner = util::cargo_bin_dir().join("wasm-bindgen-test-runner");
    let Some(chromedriver) = util::which("chromedriver") else {
        eprintln!(
            "xtask: chromedriver is missing (Debian package `chromium-driver`): {krate}'s browser tests counted as 1 failure"
        );
        return not_started(krate);
    };
    let dir = root().join(krate);
    // webdriver.json in the working directory carries Chromium's WebGPU flags.
    let cwd = if dir.join("webdriver.json").is_file() {
        dir
    } else {
        root()
    };
    let command = |build: bool| {
        let mut cmd = Command::new("cargo");
        cmd.args(["test", "-p", krate, "--target", "wasm32-unknown-unknown"])
            .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", &runner)
            .env("CHROMEDRIVER", &chromedriver)
            .env("WASM_BINDGEN_TEST_TIMEOUT", "600")
            .current_dir(&cwd);
        if build {
            cmd.arg("--no-run");
        } else {
            // `--no-fail-fast`: every test binary runs and is counted even after one
            // fails; `--nocapture`: the tests' console lines (the kernels' timings on
            // SwiftShader) are shown.
            cmd.args(["--no-fail-fast", "--", "--nocapture"]);
        }
        cmd.env("PATH", util::path_with_tools());
        cmd
    };
    let t = Instant::now();
    let (built, ok) = run_counting(&mut command(true), parse_cargo_line);
    let built = finish(&format!("{krate} browser tests (build)"), built, ok);
    let build_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let count = if built.failed == 0 {
        let (count, ok) = run_counting(&mut command(false), parse_cargo_line);
        finish(&format!("{krate} browser tests"), count, ok)
    } else {
        built
    };
    Row {
        stage: krate.into(),
        count,
        build_s,
        run_s: t.elapsed().as_secs_f64(),
    }
}

/// The end-to-end test of the page built with the burn engine (`e2e/burn.test.mjs`,
/// which `e2e` leaves out), `dist` served as `STRAIT_BURN_URL`.
fn burn_page_e2e(dist: &Path) -> Count {
    let addr = match serve::spawn(dist.to_path_buf()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("xtask: cannot serve {}: {e}", dist.display());
            return Count::ONE_FAILED;
        }
    };
    let mut cmd = Command::new("node");
    cmd.args(["--test", "--test-reporter=tap", BURN_E2E])
        .current_dir(root().join("e2e"))
        .env("STRAIT_BURN_URL", format!("http://{addr}/"))
        .env("XDG_RUNTIME_DIR", util::xdg_runtime_dir());
    let (count, ok) = run_counting(&mut cmd, parse_tap_line);
    finish("burn page end-to-end test", count, ok)
}

/// The test of the burn page, run by [`burn_page_e2e`] only.
const BURN_E2E: &str = "burn.test.mjs";

/// Serves `dist` on a free local port and runs `node --test` on `e2e/*.test.mjs`.
fn e2e(dist: &Path) -> Count {
    let e2e = root().join("e2e");
    let mut tests: Vec<String> = std::fs::read_dir(&e2e)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".test.mjs") && n != BURN_E2E)
                .collect()
        })
        .unwrap_or_default();
    tests.sort();
    if tests.is_empty() {
        eprintln!("xtask: no e2e/*.test.mjs found");
        return Count::ONE_FAILED;
    }
    run_e2e(dist, &tests, &[])
}

/// Serves `dist` and runs the e2e test files `tests` in one node test run, with `env` set.
fn run_e2e(dist: &Path, tests: &[String], env: &[(&str, String)]) -> Count {
    let e2e = root().join("e2e");
    let addr = match serve::spawn(dist.to_path_buf()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("xtask: cannot serve {}: {e}", dist.display());
            return Count::ONE_FAILED;
        }
    };
    let mut cmd = Command::new("node");
    cmd.args(["--test", "--test-reporter=tap", "--test-concurrency=1"])
        .args(tests)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(&e2e)
        .env("STRAIT_URL", format!("http://{addr}/"))
        .env("STRAIT_DIST", dist)
        .env("XDG_RUNTIME_DIR", util::xdg_runtime_dir());
    let (count, ok) = run_counting(&mut cmd, parse_tap_line);
    finish("end-to-end test", count, ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_chosen_by_name_in_their_own_order() {
        let all: Vec<&str> = STAGES.iter().map(|s| s.name).collect();
        assert_eq!(selected(&[]).unwrap(), all);
        let named = ["e2e".to_string(), "native".to_string()];
        assert_eq!(selected(&named).unwrap(), vec!["native", "e2e"]);
        let err = selected(&["nativ".to_string()]).unwrap_err();
        assert!(
            err.contains("no stage `nativ`") && err.contains("burn"),
            "{err}"
        );
    }

    #[test]
    fn parses_cargo_summaries() {
        let c = parse_cargo_line(
            "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s",
        );
        assert_eq!(
            c,
            Some(Count {
                passed: 12,
                failed: 0
            })
        );
        let c = parse_cargo_line(
            "test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out",
        );
        assert_eq!(
            c,
            Some(Count {
                passed: 3,
                failed: 2
            })
        );
        assert_eq!(parse_cargo_line("running 3 tests"), None);
    }

    #[test]
    fn parses_tap_summaries() {
        assert_eq!(
            parse_tap_line("# pass 4"),
            Some(Count {
                passed: 4,
                failed: 0
            })
        );
        assert_eq!(
            parse_tap_line("# fail 1"),
            Some(Count {
                passed: 0,
                failed: 1
            })
        );
        assert_eq!(parse_tap_line("# tests 5"), None);
        assert_eq!(parse_tap_line("ok 1 - loads"), None);
        assert_eq!(parse_tap_line("    # pass 9"), None);
    }
}
