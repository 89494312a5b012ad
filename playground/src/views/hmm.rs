//! The P-GCD view: the HMM distillation's progress (EM iterations done of all) and its
//! log-likelihood per token after each, from `HmmFit` events.

use sampler_core::Event;

/// The distillation as the events report it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HmmView {
    /// EM iterations done.
    pub done: usize,
    /// EM iterations in all (0 before the first report).
    pub total: usize,
    /// Log-likelihood per token reported by each iteration, in order.
    pub log_likelihood: Vec<f64>,
    /// The engine the EM ran on (`cpu`, `burn-flex-f64`, ...).
    pub engine: String,
}

impl HmmView {
    /// Updates from one event.
    pub fn apply(&mut self, event: &Event) {
        if let Event::HmmFit {
            iteration,
            iterations,
            log_likelihood,
            engine,
        } = event
        {
            self.engine.clone_from(engine);
            self.done = *iteration;
            self.total = *iterations;
            self.log_likelihood.push(*log_likelihood);
        }
    }

    /// Whether a distillation was reported.
    pub fn started(&self) -> bool {
        self.total > 0
    }
}
