//! The model and the samplers behind the page.
//!
//! The UI knows only this module's types: a [`Request`] in, [`TokenOut`]s streamed to an
//! [`Output`], a [`Finished`] or an error message at the end.

/// Which sampler to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Unconstrained ancestral sampling.
    Lm,
    /// Token masking (locally constrained decoding).
    Lcd,
}

impl Method {
    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Method::Lm => "lm",
            Method::Lcd => "lcd",
        }
    }
}

/// One run's settings.
#[derive(Clone, Debug)]
pub struct Request {
    /// The prompt text.
    pub prompt: String,
    /// Wrap the prompt in the model's chat template.
    pub chat: bool,
    /// The constraint (used by `lcd`; `lm` ignores it but the result says whether it matched).
    pub regex: String,
    /// Most tokens to generate (EOS included).
    pub max_tokens: usize,
    /// Seed of the sampler's random source.
    pub seed: u64,
    /// The sampler.
    pub method: Method,
}

/// One generated token as the page shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenOut {
    /// Its text (lossy for tokens that split a UTF-8 character); empty for EOS.
    pub text: String,
    /// Its id.
    pub id: u32,
    /// P(token | prefix) under the unconstrained model.
    pub p: f64,
    /// The mass the mask kept at this step (token masking only).
    pub z: Option<f64>,
    /// Whether it is the end-of-sequence token.
    pub eos: bool,
}

/// Where a run's tokens go; also says when the user pressed Stop.
pub trait Output {
    /// A token was drawn.
    fn token(&mut self, t: TokenOut);
    /// Whether the run should stop now.
    fn cancelled(&self) -> bool;
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    /// The generated text (EOS excluded), decoded as a whole.
    pub text: String,
    /// Whether the output is in the regex's language and ended with EOS.
    pub valid: bool,
    /// Whether the run reached EOS (otherwise it hit max tokens).
    pub ended_with_eos: bool,
}

/// A loaded model ready to sample.
pub struct Engine {
    _private: (),
}

impl Engine {
    /// Parses the GGUF file, builds the tokenizer and uploads the weights to the GPU.
    pub async fn load(_bytes: Vec<u8>, _status: &dyn Fn(&str)) -> Result<Engine, String> {
        Err("the GPU model is not wired into the page yet".into())
    }

    /// One line about the model (name, size, where it runs).
    pub fn describe(&self) -> String {
        String::new()
    }

    /// Runs one request, streaming tokens to `out`.
    pub async fn generate(&mut self, _req: &Request, _out: &mut dyn Output) -> Result<Finished, String> {
        Err("no model".into())
    }
}
