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
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo")
        });
    home.join("bin")
}

/// `PATH` with cargo's bin folder first, so the wasm-bindgen we installed is found first.
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
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start `{shown}`: {e}"))?;
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
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
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

/// Sets what GPU code needs on this machine: a private `XDG_RUNTIME_DIR`, and, when the
/// machine has no GPU device, Mesa's lavapipe as the Vulkan driver (unless
/// `VK_ICD_FILENAMES` is already set). Returns a note on what was chosen.
pub fn gpu_env(cmd: &mut Command) -> String {
    cmd.env("XDG_RUNTIME_DIR", xdg_runtime_dir());
    if std::env::var_os("VK_ICD_FILENAMES").is_some() {
        return "Vulkan driver from VK_ICD_FILENAMES".into();
    }
    if has_gpu_device() {
        return "GPU device present: the system's Vulkan drivers".into();
    }
    match lavapipe_icd() {
        Some(icd) => {
            let note = format!("no GPU device: lavapipe ({})", icd.display());
            cmd.env("VK_ICD_FILENAMES", icd);
            note
        }
        None => "no GPU device and no lavapipe ICD (Debian package mesa-vulkan-drivers)".into(),
    }
}

/// A DRM render node or an NVIDIA device node.
fn has_gpu_device() -> bool {
    let render = std::fs::read_dir("/dev/dri").is_ok_and(|d| {
        d.filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    });
    render || Path::new("/dev/nvidia0").exists()
}

/// Mesa's lavapipe ICD manifest (`lvp_icd.<arch>.json`).
pub fn lavapipe_icd() -> Option<PathBuf> {
    [
        "/usr/share/vulkan/icd.d",
        "/etc/vulkan/icd.d",
        "/usr/local/share/vulkan/icd.d",
    ]
    .iter()
    .filter_map(|d| std::fs::read_dir(d).ok())
    .flat_map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()))
    .find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("lvp_icd"))
    })
}
