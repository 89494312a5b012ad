//! Result lines on stdout. A reader that goes away (`strait … | head -1`) ends the command
//! quietly, as it does for any Unix filter, instead of a panic from `println!`.

use std::io::{ErrorKind, Write};

/// Prints one line on stdout; exits with status 0 when the reader has closed the pipe, and
/// with a one-line message and status 1 when stdout cannot be written otherwise.
pub fn line(text: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush()) {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        headless::note!("strait: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}
