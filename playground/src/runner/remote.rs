//! A run made in one place and shown in another: the page's sampling worker drives the
//! sampler and sends what it records in [`Batch`]es; the page applies them to its own
//! [`Run`], made from the same [`RunSpec`], so the player and the views do not know where
//! the sampler ran.

use super::{LiveCounters, Outcome, RecordedEvent, Run};
use sampler_core::samplers::{Method, Params, Sample};
use serde::{Deserialize, Serialize};

/// Everything that makes a run what it is, as plain data (sent to a worker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// The sampler.
    pub method: Method,
    /// Its parameters.
    pub params: Params,
    /// The seed of its random choices.
    pub seed: u64,
    /// The LM-call budget (compare mode), if any.
    pub budget: Option<u64>,
    /// The event cap (see [`super::MAX_EVENTS`]).
    pub max_events: usize,
}

/// What a run recorded since the previous batch, with its counters now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// New events, in order.
    pub events: Vec<RecordedEvent>,
    /// New samples, in order.
    pub samples: Vec<Sample>,
    /// The live counters when the batch was taken.
    pub live: LiveCounters,
    /// Whether events were dropped past the cap so far.
    pub truncated: bool,
}

impl Batch {
    /// Whether the batch carries no event and no sample.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.samples.is_empty()
    }
}

/// Takes a run's progress in batches: each call returns what is new since the last one.
#[derive(Clone, Debug, Default)]
pub struct BatchReader {
    events: usize,
    samples: usize,
    live: LiveCounters,
    /// The last event sent is a `SampleFinished` that had no counters yet.
    awaiting_counters: bool,
    truncated: bool,
}

impl BatchReader {
    /// A reader at the start of a run.
    pub fn new() -> Self {
        Self::default()
    }

    /// What `run` recorded since the last call; `None` when nothing changed (no event, no
    /// sample, same counters).
    pub fn next(&mut self, run: &Run) -> Option<Batch> {
        let s = run.shared.borrow();
        let live = run.live.get();
        // The counters of a `SampleFinished` are set just after it is recorded: when the
        // last event went out without them, send it again once they are there.
        let resend_last = self.awaiting_counters && s.events[self.events - 1].counters.is_some();
        let from = if resend_last {
            self.events - 1
        } else {
            self.events
        };
        if from == s.events.len()
            && self.samples == s.samples.len()
            && live == self.live
            && s.truncated == self.truncated
        {
            return None;
        }
        let batch = Batch {
            events: s.events[from..].to_vec(),
            samples: s.samples[self.samples..].to_vec(),
            live,
            truncated: s.truncated,
        };
        self.events = s.events.len();
        self.samples = s.samples.len();
        self.awaiting_counters = s.events.last().is_some_and(|e| {
            matches!(e.event, sampler_core::Event::SampleFinished { .. }) && e.counters.is_none()
        });
        self.live = live;
        self.truncated = s.truncated;
        Some(batch)
    }
}

impl Run {
    /// This run as plain data: [`Run::from_spec`] makes the same run elsewhere.
    pub fn spec(&self) -> RunSpec {
        RunSpec {
            method: self.method,
            params: self.params.clone(),
            seed: self.seed,
            budget: self.budget,
            max_events: self.max_events,
        }
    }

    /// The run `spec` describes, not yet driven.
    pub fn from_spec(spec: RunSpec) -> Run {
        let mut run =
            Run::new(spec.method, spec.params, spec.seed).with_max_events(spec.max_events);
        run.budget = spec.budget;
        run
    }

    /// Adds a batch recorded by the same run driven elsewhere. An event that repeats the
    /// last one applied (a `SampleFinished` whose counters came later) replaces it.
    pub fn apply_batch(&self, batch: Batch) {
        let mut s = self.shared.borrow_mut();
        s.started = true;
        let mut events = batch.events.into_iter().peekable();
        if let (Some(last), Some(first)) = (s.events.last_mut(), events.peek())
            && last.counters.is_none()
            && first.counters.is_some()
            && last.event == first.event
        {
            *last = events.next().expect("peeked");
        }
        s.events.extend(events);
        s.samples.extend(batch.samples);
        s.truncated |= batch.truncated;
        drop(s);
        self.live.set(batch.live);
    }

    /// Ends a run driven elsewhere with that run's outcome (kept if one is already set).
    pub fn finish_remote(&self, outcome: Outcome) {
        let mut s = self.shared.borrow_mut();
        s.started = true;
        s.outcome.get_or_insert(outcome);
    }

    /// Calls `f` when Stop is pressed (once, at the first [`Run::cancel`]): how the page
    /// tells a worker driving this run to stop.
    pub fn on_cancel(&self, f: impl FnOnce() + 'static) {
        if self.cancel.get() {
            f();
        } else {
            self.on_cancel.borrow_mut().push(Box::new(f));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampler_core::Event;
    use sampler_core::samplers::Counters;

    fn finished() -> Event {
        Event::SampleFinished {
            tokens: vec![1, 2],
            logp: -1.5,
            valid: true,
            weight: None,
        }
    }

    #[test]
    fn a_sample_s_counters_that_come_after_its_batch_are_sent_again() {
        let run = Run::new(Method::Lcd, Params::default(), 1);
        let mirror = Run::from_spec(run.spec());
        let mut reader = BatchReader::new();
        run.shared.borrow_mut().events.push(RecordedEvent {
            event: finished(),
            counters: None,
        });
        mirror.apply_batch(reader.next(&run).unwrap());
        let counters = Counters {
            lm_calls: 3,
            ..Counters::default()
        };
        {
            let mut s = run.shared.borrow_mut();
            s.events[0].counters = Some(counters);
            s.samples.push(Sample {
                tokens: vec![1, 2],
                logp: -1.5,
                valid: true,
                weight: None,
                run: None,
                counters,
            });
        }
        let b = reader.next(&run).unwrap();
        assert_eq!(b.events.len(), 1, "the event again, now with its counters");
        mirror.apply_batch(b);
        assert_eq!(mirror.events_from(0), run.events_from(0));
        assert_eq!(mirror.samples(), run.samples());
        assert!(reader.next(&run).is_none());
        // Events dropped past the cap, and nothing else: still news.
        run.shared.borrow_mut().truncated = true;
        let b = reader.next(&run).expect("truncation alone is sent");
        assert!(b.is_empty() && b.truncated);
        mirror.apply_batch(b);
        assert!(mirror.truncated());
        assert!(reader.next(&run).is_none());
    }
}
