//! The one error type of the command line: a one-line message.

use std::fmt;

/// A failed command: the message printed after `strait: `.
#[derive(Debug)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, always: scripts read the last line of stderr.
        f.write_str(&self.0.replace('\n', " "))
    }
}

/// Lets `?` turn any error into a [`Failure`] with its message.
impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

/// The result of a command.
pub type Result<T> = std::result::Result<T, Failure>;

/// A failure from a message.
pub fn fail<T>(msg: impl Into<String>) -> Result<T> {
    Err(Failure(msg.into()))
}
