//! The sampling worker: a dedicated Web Worker that runs the same wasm module as the page,
//! holds its own copy of the model (CPU forward pass) and drives the playground's samplers,
//! so that the page's thread only animates.
//!
//! - [`protocol`]: the messages, sent with serde-wasm-bindgen (±∞ log weights survive).
//! - [`host`]: the worker's side (`worker_main`, called by `worker.js`): loads the model
//!   from the bytes the page transfers, builds each run's constraint and prompt, drives the
//!   sampler and posts what it records before every model call.
//! - [`peers`]: the workers of the pool sharing a run's batched model calls (SMC's
//!   particles) by sequence over message channels the page sets up, where products cannot
//!   be shared by rows or the batch does not fit the buffer; [`peer_protocol`]: what they
//!   say to each other.
//! - [`split`]: a worker's products (one sequence's, or a batch's of up to 8) shared by
//!   rows with the idle workers through a `SharedArrayBuffer` (where the page is
//!   cross-origin isolated); [`atomics`]: the `Atomics` calls on its control words, declared
//!   so that the workers' watching allocates nothing.
//! - [`client`]: the page's side: starts the worker, hands it the model, sends runs and
//!   Stop, applies the batches to the page's own [`playground::runner::Run`], and measures
//!   the message overhead.

mod atomics;
pub mod client;
pub mod host;
pub mod peer_protocol;
pub mod peers;
pub mod protocol;
pub mod split;
