//! What the page sends and gets back: a [`Request`] in, [`TokenOut`]s streamed to an
//! [`Output`], a [`Finished`] (or why not: [`Ended`]) at the end.

use sampler_core::samplers;

/// Which sampler to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Method {
    /// Unconstrained ancestral sampling.
    Lm,
    /// Token masking (locally constrained decoding).
    Lcd,
    /// Exact rejection sampling (CARS): P restricted to the regex, without masking's
    /// distortion; an attempt that leaves the language is rejected and the next begins.
    Cars,
}

impl Method {
    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Method::Lm => "lm",
            Method::Lcd => "lcd",
            Method::Cars => "cars",
        }
    }

    /// sampler-core's method.
    pub(super) fn sampler(self) -> samplers::Method {
        match self {
            Method::Lm => samplers::Method::Lm,
            Method::Lcd => samplers::Method::Lcd,
            Method::Cars => samplers::Method::Cars,
        }
    }
}

/// One run's settings.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// Where a run's tokens go.
pub trait Output {
    /// A token was drawn.
    fn token(&mut self, t: TokenOut);
    /// The attempt so far was rejected (an exact sampler): its tokens are not the sample,
    /// and the next attempt's tokens follow.
    fn rejected(&mut self);
    /// An exact sampler has gone many attempts in a row without a valid output: valid
    /// outputs hold at most about `mass_bound` of the model's mass (so about 1/`mass_bound`
    /// attempts a sample or more). The run goes on until it finishes or is stopped.
    fn unlikely(&mut self, mass_bound: f64);
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Finished {
    /// The generated text (EOS excluded), decoded as a whole.
    pub text: String,
    /// Whether the output is in the regex's language and ended with EOS.
    pub valid: bool,
    /// Whether the run reached EOS (otherwise it hit max tokens).
    pub ended_with_eos: bool,
    /// Whether the masks were computed on WebGPU (the WGSL kernel), not on the CPU.
    pub gpu_masks: bool,
    /// Tokens run through the network (prompt included).
    pub forward_tokens: u64,
}

/// Why a generation ended without a result: Stop, or a failure (one line).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Ended {
    /// The user pressed Stop.
    Stopped,
    /// It failed; the message is one line.
    Failed(String),
}

impl From<String> for Ended {
    fn from(why: String) -> Self {
        Ended::Failed(why)
    }
}

impl From<&str> for Ended {
    fn from(why: &str) -> Self {
        Ended::Failed(why.into())
    }
}

/// What a model call returns once Stop was pressed (the sampler's context turns any model
/// error met while its sink says Stop into `SampleError::Cancelled`, so this text is never
/// matched).
pub(crate) const STOPPED: &str = "stopped";

/// Says whether the user asked the run to stop.
pub type StopCheck = std::rc::Rc<dyn Fn() -> bool>;
