//! The sweep's progress on stderr: cells done of all, time so far, time left. On a
//! terminal one line redrawn in place; elsewhere (a log, CI) one line per finished job.

use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Progress of one sweep.
pub struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
}

impl Progress {
    /// A sweep of `total` jobs left to do.
    pub fn new(total: usize) -> Progress {
        Progress {
            total,
            done: 0,
            start: Instant::now(),
            tty: std::io::stderr().is_terminal(),
        }
    }

    /// One more job done; `what` names it.
    pub fn step(&mut self, what: &str) {
        self.done += 1;
        let line = line(
            self.done,
            self.total,
            self.start.elapsed().as_secs_f64(),
            what,
        );
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    /// Ends the redrawn line.
    pub fn finish(&self) {
        if self.tty && self.done > 0 {
            crate::note!();
        }
    }
}

/// `sweep [#####···············] 5/20 jobs · 3 s · about 9 s left · m0-gsk.sk…`.
pub fn line(done: usize, total: usize, secs: f64, what: &str) -> String {
    const WIDTH: usize = 20;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
    let left = if done > 0 {
        secs / done as f64 * (total - done.min(total)) as f64
    } else {
        0.0
    };
    format!(
        "sweep [{}{}] {done}/{total} jobs · {} · about {} left · {what}",
        "#".repeat(filled),
        "·".repeat(WIDTH - filled),
        duration(secs),
        duration(left)
    )
}

/// `42 s`, `3 min 5 s`, `2 h 10 min`.
fn duration(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_line_counts_and_estimates() {
        let l = super::line(5, 20, 10.0, "cars");
        assert!(l.contains("[#####···············] 5/20 jobs"), "{l}");
        assert!(l.contains("10 s · about 30 s left · cars"), "{l}");
        assert!(super::line(0, 0, 0.0, "").contains("0/0"));
        assert_eq!(super::duration(3725.0), "1 h 2 min");
    }
}
