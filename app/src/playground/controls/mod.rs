//! The playground's controls, in three parts, one file each: what is sampled
//! ([`setup_rows`]: example menu, model, grammar editor, prompt), how ([`sampler_rows`]:
//! sampler, its parameters, compare mode), and the run ([`run_rows`]: Run / Step / Stop with
//! their shortcuts, the speed slider, copy-link and JSONL export, progress and status).
//!
//! Hooks: `#pg-example`, `#pg-model`, `#pg-toy-seed`, `#pg-toy-vocab`, `#pg-prompt`,
//! `#pg-chat`, `#pg-method`, `#pg-n`, `#pg-steps`, `#pg-particles`, `#pg-ess`,
//! `#pg-max-tokens`, `#pg-seed`, `#pg-budget`, `#pg-run`, `#pg-step`, `#pg-stop`,
//! `#pg-speed`, `#pg-compare-mode`, `.pg-compare-method[value]`, `#pg-copy-link`,
//! `#pg-link`, `#pg-export-samples`, `#pg-export-events`.

mod methods;
mod run_rows;
mod sampler_rows;
mod setup_rows;

pub use run_rows::RunRows;
pub use sampler_rows::SamplerRows;
pub use setup_rows::SetupRows;
