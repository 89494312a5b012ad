//! The KV caches one prompted run leaves to the next of the same model
//! ([`crate::Model::set_keep_caches`]): the page's runs find their prompt, or the part two
//! prompts share, already computed.

use crate::forward::KvCache;
use crate::slots::SlotState;

/// Most slots a dropped [`crate::PromptedModel`] leaves to the next (the most recently used ones;
/// every slot starts with its run's prompt), so caches kept between runs stay a few MB.
const STASH_SLOTS: usize = 4;

/// The slots a dropped [`crate::PromptedModel`] leaves to the next one of the same model, when
/// [`crate::Model::set_keep_caches`] is on.
#[derive(Default)]
pub(crate) struct Stash {
    /// Whether slots are kept.
    pub(crate) on: bool,
    /// The last dropped model's slots.
    slots: std::sync::Mutex<Vec<Slot>>,
}

impl Stash {
    /// The kept slots (none when off), leaving the stash empty.
    pub(crate) fn take(&self) -> Vec<Slot> {
        if !self.on {
            return Vec::new();
        }
        std::mem::take(&mut *self.slots.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Drops the kept slots.
    pub(crate) fn clear(&mut self) {
        self.slots
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Keeps the [`STASH_SLOTS`] most recently used of `slots` for the next model (when
    /// on), in place of any kept before.
    pub(crate) fn keep(&self, mut slots: Vec<Slot>) {
        if self.on {
            slots.sort_by_key(|s| std::cmp::Reverse(s.state.used));
            slots.truncate(STASH_SLOTS);
            *self.slots.lock().unwrap_or_else(|e| e.into_inner()) = slots;
        }
    }
}

/// One KV cache and what the slot rule knows of it (the sequence it holds).
pub(crate) struct Slot {
    pub(crate) state: SlotState,
    pub(crate) cache: KvCache,
}
