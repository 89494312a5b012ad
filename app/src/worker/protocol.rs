//! What the page and the sampling worker say to each other. Besides these, the page's first
//! message is `{ module }` (the page's own `WebAssembly.Module`, read by `worker.js`).
//! JavaScript objects that must travel as they are (the model's bytes, whose buffer is
//! transferred; a peer's `MessagePort`) are kept as they are (`serde_wasm_bindgen::preserve`).
//! What the workers say to each other is `peer_protocol.rs`.

use crate::engine::{Ended, Finished, Request, TokenOut};
use playground::runner::{Batch, Outcome, RunSpec};
use playground::state::PlaygroundState;
use sampler_core::exact::ExactDistribution;
use serde::{Deserialize, Serialize};

/// From the page to the worker. Externally tagged (`{ "run": { … } }`), not by a `type`
/// field: serde reads an internally tagged enum through a buffer that cannot hold the
/// JavaScript objects `preserve` keeps (the model's bytes, a port).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// Drive the run `spec` on the loaded model, with the grammar and prompt of `state`.
    Run {
        /// The page's name for the run.
        id: u64,
        /// The sampler, its parameters, seed and budget.
        spec: RunSpec,
        /// The grammar (text and kind) and the prompt (and chat template toggle).
        state: Box<PlaygroundState>,
    },
    /// Enumerate the exact P^L of `state`'s language with the model (one forward pass per
    /// prefix, within `ExactLimits::real`).
    Exact {
        /// The page's name for the job.
        id: u64,
        /// The grammar, prompt and max tokens.
        state: Box<PlaygroundState>,
    },
    /// Run the quick form's request (`lm` or `lcd`, tokens streamed back).
    Generate {
        /// The page's name for the job.
        id: u64,
        /// Prompt, regex, method, max tokens, seed.
        request: Request,
    },
    /// Stop run, enumeration or generation `id` at its next model call.
    Stop {
        /// The run.
        id: u64,
    },
    /// The model's file (its buffer transferred).
    Load {
        /// The GGUF bytes.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        bytes: js_sys::Uint8Array,
    },
    /// Share `index` of `of` of the model split by rows between the pool's workers
    /// (`split.rs`): the file's `ranges` to read from `file` (the page's plan; the lead,
    /// share 0, also reads the header and runs the jobs).
    LoadShare {
        /// The model file as the browser keeps it (a `Blob`: not copied by posting).
        #[serde(with = "serde_wasm_bindgen::preserve")]
        file: web_sys::Blob,
        /// This worker's share.
        index: u32,
        /// Shares in all.
        of: u32,
        /// The byte ranges of the file the share holds (`lm::shard::ShardFile::plan`).
        ranges: Vec<(u64, u64)>,
    },
    /// Worker `index` of the pool is linked to this one through `port` (transferred).
    Peer {
        /// The other worker.
        index: u32,
        /// This worker's end of their channel.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        port: web_sys::MessagePort,
    },
    /// The pool's buffer for sharing one sequence's products (`split.rs`), after `Load`.
    Split {
        /// The `SharedArrayBuffer` every worker of the pool gets.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        buffer: js_sys::SharedArrayBuffer,
    },
    /// Worker `index` of the pool is gone.
    PeerGone {
        /// The worker.
        index: u32,
    },
    /// Crash now, as a worker that runs out of memory or hits a bug does (a test hook:
    /// `window.__straitCrashWorker()`).
    Crash,
}

/// From the worker to the page.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromWorker {
    /// The wasm module is running and listens.
    Ready,
    /// The model is loaded.
    Loaded {
        /// Milliseconds the worker took to parse it and build the tokenizer.
        ms: f64,
    },
    /// The model could not be loaded (one line).
    LoadFailed {
        /// Why.
        message: String,
    },
    /// What run `id` recorded since its last batch.
    Batch {
        /// The run.
        id: u64,
        /// Events, samples, counters.
        batch: Batch,
        /// [`crate::clock::shared_clock_ms`] when it was posted.
        sent_at: f64,
    },
    /// Enumeration `id` has asked the model `lm_calls` times so far.
    ExactProgress {
        /// The job.
        id: u64,
        /// Model calls so far.
        lm_calls: u64,
    },
    /// The exact P^L of job `id`, or why there is none (one line).
    Exact {
        /// The job.
        id: u64,
        /// The distribution.
        result: Result<ExactDistribution, String>,
    },
    /// Generation `id` drew these tokens: its first at once, the next together at most
    /// every [`TOKENS_EVERY_MS`].
    Tokens {
        /// The job.
        id: u64,
        /// The tokens as the page shows them, in the order drawn.
        tokens: Vec<TokenOut>,
        /// [`crate::clock::shared_clock_ms`] when it was posted.
        sent_at: f64,
    },
    /// Generation `id`'s attempt so far was rejected (an exact sampler).
    Rejected {
        /// The job.
        id: u64,
    },
    /// Generation `id`'s exact sampler has gone many attempts without a valid output
    /// ([`crate::engine::Output::unlikely`]).
    Unlikely {
        /// The job.
        id: u64,
        /// At most about this much of the model's mass is valid.
        mass_bound: f64,
    },
    /// Generation `id` ended: how, or why not (Stop, a failure).
    Generated {
        /// The job.
        id: u64,
        /// The outcome.
        result: Result<Finished, Ended>,
    },
    /// The worker computed `sequences` log-probability vectors for a peer's run.
    Helped {
        /// How many.
        sequences: u64,
    },
    /// Run `id` ended (its last batch came before).
    Done {
        /// The run.
        id: u64,
        /// How.
        outcome: Outcome,
    },
}

/// The least time between two of a generation's [`FromWorker::Tokens`], in milliseconds:
/// each message wakes the page's thread, which on a machine with as many cores as workers
/// takes a core from them (the page paints no faster anyway: `quick_form`'s `PAINT_MS`).
pub const TOKENS_EVERY_MS: f64 = 100.0;

/// Converts a message to a JS value: u64s (seeds, counters) as BigInts, so seeds above
/// 2^53 survive (serde-wasm-bindgen reads both numbers and BigInts back).
pub fn to_js<T: serde::Serialize>(msg: &T) -> Result<wasm_bindgen::JsValue, String> {
    msg.serialize(
        &serde_wasm_bindgen::Serializer::new().serialize_large_number_types_as_bigints(true),
    )
    .map_err(|e| e.to_string())
}
