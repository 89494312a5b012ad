//! What the pool's workers say to each other over their `MessageChannel`s, typed like the
//! page ↔ worker protocol (`protocol.rs`): one enum, encoded in one place.
//!
//! The log-probability rows travel as `Float64Array`s whose buffers are transferred, not
//! copied (a row is the vocabulary's size, 49,152 floats for SmolLM2), so the enum keeps
//! that JavaScript array as it is (`serde_wasm_bindgen::preserve`).

use super::protocol::to_js;
use sampler_core::TokenId;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// One message between two workers of the pool. Externally tagged (`{ "helped": { … } }`):
/// serde reads an internally tagged enum through a buffer that cannot hold the
/// `Float64Array`s `preserve` keeps.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerMessage {
    /// Compute the log-probabilities after each of `prefixes` (after `prompt`).
    Help {
        /// The asker's name for the request.
        id: u64,
        /// A warm-up (the prompt alone, answer unread): not counted as help.
        warm: bool,
        /// The prompt's tokens.
        prompt: Vec<TokenId>,
        /// The generated prefixes.
        prefixes: Vec<Vec<TokenId>>,
    },
    /// The answer to `Help` `id`: one `Float64Array` per prefix.
    Helped {
        /// The request.
        id: u64,
        /// The rows, as a JavaScript `Array` of `Float64Array`s.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        logprobs: js_sys::Array,
        /// Tokens the helper's model ran for them.
        forward_tokens: u64,
    },
    /// The helper has a job of its own: the asker computes that part.
    Busy {
        /// The request.
        id: u64,
    },
    /// Help with the products of one sequence through the pool's split buffer
    /// (`split.rs`), if idle and if no driver has said leave since (`leave`: the buffer's
    /// leave count when the invitation was sent; a stale one is ignored).
    Assist {
        /// The leave count it was sent at.
        leave: i32,
        /// Its number among the buffer's invitations: one a helper's last stay in the loop
        /// outlived (queued while this worker computed a job of its own) is ignored.
        invite: i32,
    },
    /// The helper's model failed.
    Failed {
        /// The request.
        id: u64,
        /// One line.
        message: String,
    },
}

impl PeerMessage {
    /// `Helped` for `rows`, with the buffers to transfer.
    pub fn helped(id: u64, rows: &[Vec<f64>], forward_tokens: u64) -> (PeerMessage, js_sys::Array) {
        let logprobs = js_sys::Array::new();
        let transfer = js_sys::Array::new();
        for r in rows {
            let f = js_sys::Float64Array::new_with_length(r.len() as u32);
            f.copy_from(r);
            transfer.push(&f.buffer());
            logprobs.push(&f);
        }
        let msg = PeerMessage::Helped {
            id,
            logprobs,
            forward_tokens,
        };
        (msg, transfer)
    }

    /// The rows of a `Helped` message; `None` if they are not `Float64Array`s.
    pub fn rows(logprobs: &js_sys::Array) -> Option<Vec<Vec<f64>>> {
        logprobs
            .iter()
            .map(|r| {
                r.dyn_into::<js_sys::Float64Array>()
                    .ok()
                    .map(|r| r.to_vec())
            })
            .collect()
    }

    /// Reads a message a peer posted; an error names what was wrong with it.
    pub fn from_js(data: JsValue) -> Result<PeerMessage, String> {
        serde_wasm_bindgen::from_value(data).map_err(|e| format!("a malformed peer message: {e}"))
    }

    /// Posts this message on `port`, transferring `transfer`'s buffers.
    pub fn post(
        &self,
        port: &web_sys::MessagePort,
        transfer: &js_sys::Array,
    ) -> Result<(), String> {
        let v = to_js(self)?;
        port.post_message_with_transferable(&v, transfer)
            .map_err(|e| format!("{e:?}"))
    }
}
