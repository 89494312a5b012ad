//! Errors from loading a model: file, GGUF structure, tokenizer, configuration.

use crate::gguf::GgufError;
use std::fmt;

/// Why a model, tokenizer or chat template could not be built or used.
#[derive(Debug)]
pub enum LoadError {
    /// The model file does not exist; the message says how to fetch the default model.
    NotFound(std::path::PathBuf),
    /// The model file exists but could not be read.
    Io(std::path::PathBuf, std::io::Error),
    /// The file is not a GGUF file this reader accepts.
    Gguf(GgufError),
    /// The tokenizer metadata is inconsistent or unsupported.
    Tokenizer(String),
    /// The model is not a llama-architecture model this runtime can run, or its
    /// tensors do not match its configuration.
    Config(String),
    /// The chat template is missing or failed to render.
    ChatTemplate(String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::NotFound(p) if is_url(p) => write!(
                f,
                "model file {} not found: the command line reads models from disk (the page \
                 reads URLs); download the file and pass its path",
                p.display()
            ),
            LoadError::NotFound(p) => write!(
                f,
                "model file {} not found; fetch the default model with `cargo xtask setup`",
                p.display()
            ),
            LoadError::Io(p, e) => write!(f, "cannot read model file {}: {e}", p.display()),
            LoadError::Gguf(e) => write!(f, "{e}"),
            LoadError::Tokenizer(m) => write!(f, "tokenizer: {m}"),
            LoadError::Config(m) => write!(f, "model: {m}"),
            LoadError::ChatTemplate(m) => write!(f, "chat template: {m}"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io(_, e) => Some(e),
            LoadError::Gguf(e) => Some(e),
            _ => None,
        }
    }
}

impl From<GgufError> for LoadError {
    fn from(e: GgufError) -> Self {
        LoadError::Gguf(e)
    }
}

/// Whether `p` is spelled as a web address.
fn is_url(p: &std::path::Path) -> bool {
    let s = p.to_string_lossy();
    s.starts_with("http://") || s.starts_with("https://")
}
