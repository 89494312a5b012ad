//! A one-value channel whose receiver is a future: carries a `map_async` callback's result
//! to the task awaiting it (on wasm32 the browser runs the callback from its event loop).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Debug)]
struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    sent: bool,
}

/// The sending half; consumed by [`Sender::send`].
#[derive(Debug)]
pub(crate) struct Sender<T>(Arc<Mutex<Slot<T>>>);

/// The receiving half: a future of the value, `None` if the sender was dropped unsent.
#[derive(Debug)]
pub(crate) struct Receiver<T>(Arc<Mutex<Slot<T>>>);

/// A connected pair.
pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Arc::new(Mutex::new(Slot {
        value: None,
        waker: None,
        sent: false,
    }));
    (Sender(slot.clone()), Receiver(slot))
}

fn lock<T>(m: &Mutex<Slot<T>>) -> std::sync::MutexGuard<'_, Slot<T>> {
    // No code panics while holding the lock; recover the data if one ever did.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T> Sender<T> {
    /// Delivers the value and wakes the receiver.
    pub(crate) fn send(self, value: T) {
        let waker = {
            let mut s = lock(&self.0);
            s.value = Some(value);
            s.sent = true;
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut s = lock(&self.0);
            s.sent = true;
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut s = lock(&self.0);
        if let Some(v) = s.value.take() {
            return Poll::Ready(Some(v));
        }
        if s.sent {
            return Poll::Ready(None);
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivers_and_reports_dropped_sender() {
        let (tx, rx) = channel();
        tx.send(7);
        assert_eq!(sampler_core::block_on(rx), Some(7));
        let (tx, rx) = channel::<u8>();
        drop(tx);
        assert_eq!(sampler_core::block_on(rx), None);
        let (tx, rx) = channel();
        let h = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tx.send("late")
        });
        assert_eq!(sampler_core::block_on(rx), Some("late"));
        h.join().unwrap();
    }
}
