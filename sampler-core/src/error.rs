//! Why a sampling run ended without a sample.

use crate::LmError;

/// Why a sampler stopped without producing what was asked.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleError {
    /// The language model failed (GPU lost, context too long, ...).
    Lm(LmError),
    /// Every token was masked at some step; `prefix` is the text generated so far.
    DeadEnd {
        /// The decoded text before the dead end.
        prefix: String,
    },
    /// An exact sampler proved (or gave up after a bounded effort) that the constraint has
    /// probability zero under the model.
    ZeroProbability,
    /// The caller's event sink asked the run to stop.
    Cancelled,
    /// The method cannot run with these arguments or this constraint.
    Unsupported(String),
}

impl std::fmt::Display for SampleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleError::Lm(e) => write!(f, "language model error: {e}"),
            SampleError::DeadEnd { prefix } => write!(f, "dead end after {prefix:?}"),
            SampleError::ZeroProbability => {
                f.write_str("the constraint has probability zero under the model")
            }
            SampleError::Cancelled => f.write_str("stopped"),
            SampleError::Unsupported(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SampleError {}

impl From<LmError> for SampleError {
    fn from(e: LmError) -> Self {
        SampleError::Lm(e)
    }
}
