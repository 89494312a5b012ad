//! [`Pause`]: where a long CPU forward pass may hand control back to its host.
//!
//! In a browser tab the forward pass runs on the page's thread; pausing between blocks
//! lets the page paint and handle input while a token is computed. Natively nothing
//! pauses ([`NoPause`]) and the pass runs straight through.

use std::future::Future;

/// Asked three times per block of the forward pass whether to hand control back, and how.
pub trait Pause {
    /// Whether to pause now.
    fn due(&mut self) -> bool;
    /// Hands control back; the forward pass goes on when this completes.
    fn pause(&mut self) -> impl Future<Output = ()>;
}

/// Never pauses: the forward pass runs to its end.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPause;

impl Pause for NoPause {
    fn due(&mut self) -> bool {
        false
    }

    async fn pause(&mut self) {}
}
