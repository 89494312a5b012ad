//! Small helpers: the repository root, running commands, errors as strings.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Errors are messages for a person; xtask prints them and exits non-zero.
pub type Result<T> = std::result::Result<T, String>;

/// The workspace root (the parent of `xtask/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Where `cargo install` puts binaries: `$CARGO_HOME/bin`, by default `~/.cargo/bin`.
pub fn cargo_bin_dir() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo")
    });
    home.join("bin")
}

/// `PATH` with cargo's bin folder first, so trunk finds the wasm-bindgen we installed.
pub fn path_with_tools() -> std::ffi::OsString {
    let mut paths = vec![cargo_bin_dir()];
    if let Some(p) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(paths).expect("PATH entries contain no separator")
}

/// Prints a step header the way cargo prints its own.
pub fn step(msg: impl AsRef<str>) {
    eprintln!("\x1b[1;32m    xtask\x1b[0m {}", msg.as_ref());
}

/// Runs a command to completion with inherited stdio; an error unless it succeeds.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = show(cmd);
    step(format!("running {shown}"));
    let status = cmd.status().map_err(|e| format!("cannot start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// Runs a command and returns its stdout (trimmed), or `None` when it cannot run or fails.
pub fn output(program: impl AsRef<OsStr>, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .env("PATH", path_with_tools())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A command line as a person would type it.
pub fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Finds `name` in `PATH` (with cargo's bin folder first).
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&path_with_tools())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A private runtime directory for the Vulkan loader (quiets its warnings about
/// `XDG_RUNTIME_DIR`), created on demand with mode 0700.
pub fn xdg_runtime_dir() -> PathBuf {
    let dir = root().join("target").join("xdg-runtime");
    let _ = std::fs::create_dir_all(&dir);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
    dir
}
