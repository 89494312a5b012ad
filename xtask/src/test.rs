//! `cargo xtask test`: every suite, counted; the last line is `N passed, N failed`.
//!
//! Suites, in order:
//! 1. native: `cargo test --workspace --exclude app --features cli/burn-wgpu` (GPU tests,
//!    burn's wgpu backend among them, on lavapipe where there is no GPU), counted from
//!    cargo's `test result:` lines;
//! 2. `lm`'s unit tests in wasm32-wasip1 with simd128, run by node (the page's SIMD kernels
//!    against their scalar references), and built for aarch64 and run by qemu (the NEON
//!    kernels against theirs);
//! 3. the wasm build of the page (`trunk build --release --offline`, as served): one test;
//! 4. browser tests of crates that declare `wasm-bindgen-test` (the WGSL kernels on
//!    Chromium's SwiftShader), run by `wasm-bindgen-test-runner` through chromedriver with
//!    the WebGPU flags from `webdriver.json`, counted from the same `test result:` lines;
//! 5. end to end: the built page served locally and driven in headless Chromium by
//!    `e2e/*.test.mjs` (node's test runner + playwright-core), counted from its TAP summary;
//! 6. the burn page: the page built with the app's `burn-engine` feature into `dist-burn/`,
//!    served on its own port and driven by `e2e/burn.test.mjs` (left out of stage 5).

use crate::build;
use crate::serve;
use crate::setup::{self, Tools};
use crate::util::{self, Result, root, step};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// Passed and failed tests of one suite.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Count {
    passed: u64,
    failed: u64,
}

impl std::ops::AddAssign for Count {
    fn add_assign(&mut self, o: Count) {
        self.passed += o.passed;
        self.failed += o.failed;
    }
}

/// Crates whose tests also run in wasm32 when they declare `wasm-bindgen-test` (in the
/// browser where they configure `run_in_browser`, else in node: `playground`).
const BROWSER_TEST_CRATES: &[&str] = &["shaders", "lm", "sampler-core", "playground"];

/// `cargo xtask test`.
pub fn command(_flags: &[String]) -> Result<ExitCode> {
    let t0 = Instant::now();
    let mut suites: Vec<(String, Count, f64)> = Vec::new();
    // Setup failing is itself a failure to report, but the native suite can still run.
    let tools = match setup::setup() {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("xtask: setup failed: {e}");
            suites.push((
                "setup".into(),
                Count {
                    passed: 0,
                    failed: 1,
                },
                0.0,
            ));
            None
        }
    };

    let t = Instant::now();
    let native = cargo_tests(
        // burn's wgpu backend on: the burn engine's custom kernels and P-GCD's HMM on
        // burn-wgpu run on lavapipe beside the rest.
        Command::new("cargo").args([
            "test",
            "--workspace",
            "--exclude",
            "app",
            "--features",
            "cli/burn-wgpu",
        ]),
        "native cargo test",
    );
    suites.push((
        "native (cargo test)".into(),
        native,
        t.elapsed().as_secs_f64(),
    ));

    let t = Instant::now();
    let c = lm_wasm_kernels();
    suites.push((
        "lm in wasm (simd128, node)".into(),
        c,
        t.elapsed().as_secs_f64(),
    ));

    let t = Instant::now();
    let c = lm_aarch64_kernels();
    suites.push((
        "lm on aarch64 (NEON, qemu)".into(),
        c,
        t.elapsed().as_secs_f64(),
    ));

    if let Some(tools) = &tools {
        let t = Instant::now();
        let built = build::build_page(tools);
        let ok = match &built {
            Ok(_) => Count {
                passed: 1,
                failed: 0,
            },
            Err(e) => {
                eprintln!("xtask: wasm build of the page failed: {e}");
                Count {
                    passed: 0,
                    failed: 1,
                }
            }
        };
        suites.push((
            "wasm build of the page".into(),
            ok,
            t.elapsed().as_secs_f64(),
        ));

        for krate in BROWSER_TEST_CRATES {
            if declares_wasm_bindgen_test(krate) {
                let t = Instant::now();
                let c = browser_tests(tools, krate);
                suites.push((
                    format!("{krate} in the browser"),
                    c,
                    t.elapsed().as_secs_f64(),
                ));
            }
        }

        if built.is_ok() {
            let t = Instant::now();
            let c = e2e(&root().join("dist"));
            suites.push((
                "end to end (Playwright)".into(),
                c,
                t.elapsed().as_secs_f64(),
            ));
            // The page with the burn engine (`?engine=burn`): its own build and test. Its
            // size is measured by `cargo xtask build --burn`, not here: linked quickly.
            let t = Instant::now();
            let c = match build::build_variant(tools, true, build::Link::Quick) {
                Ok(page) => burn_page_e2e(&page.dist),
                Err(e) => {
                    eprintln!("xtask: wasm build of the burn page failed: {e}");
                    Count {
                        passed: 0,
                        failed: 1,
                    }
                }
            };
            suites.push((
                "burn page (build, e2e)".into(),
                c,
                t.elapsed().as_secs_f64(),
            ));
        } else {
            suites.push((
                "end to end (no page)".into(),
                Count {
                    passed: 0,
                    failed: 1,
                },
                0.0,
            ));
        }
    }

    let mut total = Count::default();
    eprintln!();
    for (name, c, secs) in &suites {
        eprintln!(
            "  {name:<28} {:>4} passed, {:>3} failed  ({secs:.0} s)",
            c.passed, c.failed
        );
        total += *c;
    }
    eprintln!("  total time {:.0} s", t0.elapsed().as_secs_f64());
    println!("{} passed, {} failed", total.passed, total.failed);
    Ok(if total.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `cargo xtask e2e [--no-build]`: only the end-to-end test.
pub fn e2e_command(flags: &[String]) -> Result<ExitCode> {
    let dist = if flags.iter().any(|f| f == "--no-build") {
        setup::ensure_model()?;
        root().join("dist")
    } else {
        let tools = setup::setup()?;
        build::build_page(&tools)?.dist
    };
    let c = e2e(&dist);
    println!("{} passed, {} failed", c.passed, c.failed);
    Ok(if c.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `lm`'s unit tests (the CPU kernels against their scalar references among them) built
/// for wasm32-wasip1 with `simd128`, as the page's kernels are, and run by node's WASI
/// (`xtask/wasi_run.mjs` as cargo's runner).
fn lm_wasm_kernels() -> Count {
    let added = Command::new("rustup")
        .args(["target", "add", "wasm32-wasip1"])
        .status()
        .is_ok_and(|s| s.success());
    if !added {
        eprintln!("xtask: `rustup target add wasm32-wasip1` failed: counted as 1 failure");
        return Count {
            passed: 0,
            failed: 1,
        };
    }
    let runner = format!(
        "node {}",
        root().join("xtask").join("wasi_run.mjs").display()
    );
    cargo_tests(
        Command::new("cargo")
            .args(["test", "-p", "lm", "--lib", "--target", "wasm32-wasip1"])
            .env("CARGO_TARGET_WASM32_WASIP1_RUNNER", runner)
            .env(
                "CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS",
                "-C target-feature=+simd128",
            ),
        "lm in wasm (simd128)",
    )
}

/// Where Debian's `libc6-dev-arm64-cross` puts the aarch64 C library (qemu's `-L`).
pub const AARCH64_SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// `lm`'s unit tests (the NEON kernels against their scalar references among them) built
/// for aarch64-unknown-linux-gnu, linked by Debian's cross gcc and run by qemu-user.
fn lm_aarch64_kernels() -> Count {
    let added = Command::new("rustup")
        .args(["target", "add", "aarch64-unknown-linux-gnu"])
        .status()
        .is_ok_and(|s| s.success());
    if !added {
        eprintln!(
            "xtask: `rustup target add aarch64-unknown-linux-gnu` failed: counted as 1 failure"
        );
        return Count {
            passed: 0,
            failed: 1,
        };
    }
    cargo_tests(
        Command::new("cargo")
            .args([
                "test",
                "-p",
                "lm",
                "--lib",
                "--target",
                "aarch64-unknown-linux-gnu",
            ])
            .env(
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
                "aarch64-linux-gnu-gcc",
            )
            .env(
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER",
                format!("qemu-aarch64 -L {AARCH64_SYSROOT}"),
            ),
        "lm on aarch64 (NEON, qemu)",
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
fn browser_tests(_tools: &Tools, krate: &str) -> Count {
    let runner = util::cargo_bin_dir().join("wasm-bindgen-test-runner");
    let Some(chromedriver) = util::which("chromedriver") else {
        eprintln!(
            "xtask: chromedriver is missing (Debian package `chromium-driver`): {krate}'s browser tests counted as 1 failure"
        );
        return Count {
            passed: 0,
            failed: 1,
        };
    };
    let mut cmd = Command::new("cargo");
    // `--no-fail-fast`: every test binary runs and is counted even after one fails;
    // `--nocapture`: the tests' console lines (the kernels' timings on SwiftShader) are shown.
    cmd.args(["test", "-p", krate, "--target", "wasm32-unknown-unknown"])
        .args(["--no-fail-fast", "--", "--nocapture"])
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", &runner)
        .env("CHROMEDRIVER", chromedriver)
        // webdriver.json in the working directory carries Chromium's WebGPU flags.
        .env("WASM_BINDGEN_TEST_TIMEOUT", "600");
    let dir = root().join(krate);
    cmd.current_dir(if dir.join("webdriver.json").is_file() {
        dir
    } else {
        root()
    });
    cmd.env("PATH", util::path_with_tools());
    let (count, ok) = run_counting(&mut cmd, parse_cargo_line);
    finish(&format!("{krate} browser tests"), count, ok)
}

/// The end-to-end test of the page built with the burn engine (`e2e/burn.test.mjs`,
/// which `e2e` leaves out), `dist` served as `STRAIT_BURN_URL`.
fn burn_page_e2e(dist: &Path) -> Count {
    let addr = match serve::spawn(dist.to_path_buf()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("xtask: cannot serve {}: {e}", dist.display());
            return Count {
                passed: 0,
                failed: 1,
            };
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
    let addr = match serve::spawn(dist.to_path_buf()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("xtask: cannot serve {}: {e}", dist.display());
            return Count {
                passed: 0,
                failed: 1,
            };
        }
    };
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
        return Count {
            passed: 0,
            failed: 1,
        };
    }
    let mut cmd = Command::new("node");
    cmd.args(["--test", "--test-reporter=tap", "--test-concurrency=1"])
        .args(&tests)
        .current_dir(&e2e)
        .env("STRAIT_URL", format!("http://{addr}/"))
        .env("XDG_RUNTIME_DIR", util::xdg_runtime_dir());
    let (count, ok) = run_counting(&mut cmd, parse_tap_line);
    finish("end-to-end test", count, ok)
}

#[cfg(test)]
mod tests {
    use super::*;

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
