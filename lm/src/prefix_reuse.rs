//! How a KV cache that holds some tokens serves a request for a token sequence: the
//! per-cache rule under the slot rule (`crate::slots`) that every prompted model follows
//! ([`crate::PromptedModel`] on the CPU, [`crate::gpu::GpuPromptedModel`], and
//! `lm::burn::BurnPromptedModel`, feature `burn`).

use sampler_core::{LmError, TokenId};

/// The prompt rule of every prompted model: at least one token, and no more than
/// `context` (named `what` in the message: "the context", "the GPU context", ...).
pub(crate) fn check_prompt(prompt: &[TokenId], context: usize, what: &str) -> Result<(), LmError> {
    if prompt.len() > context {
        return Err(LmError(format!(
            "prompt of {} tokens exceeds {what} of {context}",
            prompt.len()
        )));
    }
    if prompt.is_empty() {
        return Err(LmError(
            "the prompt is empty: the model needs at least one token to condition on".into(),
        ));
    }
    Ok(())
}

/// What a cache can reuse for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reuse {
    /// Tokens the cache shares with the request, from the start.
    pub shared: usize,
    /// The cache holds exactly the request and the logits after it: nothing to run.
    pub answered: bool,
    /// Tokens of the cache to keep when something runs: the shared ones, but never the
    /// request's last token, whose logits the run must produce.
    pub keep: usize,
}

/// How a cache holding `cached` (and the logits after its last token when `has_logits`)
/// serves the request `full` (never empty: it starts with the prompt).
pub(crate) fn reuse(cached: &[TokenId], has_logits: bool, full: &[TokenId]) -> Reuse {
    let shared = cached.iter().zip(full).take_while(|(a, b)| a == b).count();
    Reuse {
        shared,
        answered: has_logits && shared == full.len() && cached.len() == full.len(),
        keep: shared.min(full.len().saturating_sub(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_shared_prefix_but_reruns_the_last_token() {
        // The cache ends where the request does, with logits: nothing runs.
        let r = reuse(&[1, 2, 3], true, &[1, 2, 3]);
        assert!(r.answered);
        // Without its logits (a failed run), the last token runs again.
        let r = reuse(&[1, 2, 3], false, &[1, 2, 3]);
        assert_eq!((r.answered, r.keep), (false, 2));
        // A longer cache (another branch went further): keep the request minus its last.
        let r = reuse(&[1, 2, 3, 4], true, &[1, 2, 3]);
        assert_eq!((r.shared, r.answered, r.keep), (3, false, 2));
        // A branch: keep the common part, run the rest.
        let r = reuse(&[1, 2, 9, 9], true, &[1, 2, 3, 4]);
        assert_eq!((r.shared, r.answered, r.keep), (2, false, 2));
        // Nothing in common.
        let r = reuse(&[], false, &[5]);
        assert_eq!((r.shared, r.answered, r.keep), (0, false, 0));
    }
}
