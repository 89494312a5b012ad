//! Messages on stderr that never panic: `eprintln!` panics when stderr cannot be written
//! (`strait … 2>&1 >/dev/null | head -1` closes it), which would turn a finished run's
//! exit status into a crash's; [`note!`](crate::note) loses the message instead.

/// Writes one line on stderr as `eprintln!` does, ignoring a write error.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
