//! `--hmm-engine`: where `p-gcd-smc`'s HMM work (EM steps, the guide's backward table)
//! runs — this crate's CPU reference or a burn tensor program (`hmm-burn`).

use crate::failure::{Failure, Result};
use hmm_burn::{BurnHmm, Precision};
use sampler_core::hmm::{CpuHmm, HmmEngine};

/// The names `--hmm-engine` accepts.
pub const NAMES: [&str; 4] = ["cpu", "burn-flex", "burn-flex-f32", "burn-wgpu"];

/// The engine `name` stands for; an error names the choices, or says there is no adapter.
pub fn engine(name: &str) -> Result<Box<dyn HmmEngine>> {
    Ok(match name {
        "cpu" => Box::new(CpuHmm),
        "burn-flex" => Box::new(BurnHmm::flex(Precision::F64)),
        "burn-flex-f32" => Box::new(BurnHmm::flex(Precision::F32)),
        "burn-wgpu" => wgpu()?,
        other => {
            return Err(Failure(format!(
                "unknown --hmm-engine {other:?}; expected one of {}",
                NAMES.join(", ")
            )));
        }
    })
}

/// Every engine this machine can run, for the benchmark (the wgpu one when an adapter
/// exists).
pub fn available() -> Vec<Box<dyn HmmEngine>> {
    NAMES.iter().filter_map(|n| engine(n).ok()).collect()
}

/// burn's wgpu engine, when built with the `burn-wgpu` feature and an adapter exists.
#[cfg(feature = "burn-wgpu")]
fn wgpu() -> Result<Box<dyn HmmEngine>> {
    match BurnHmm::wgpu() {
        Some(e) => Ok(Box::new(e)),
        None => Err(Failure(
            "--hmm-engine burn-wgpu: no wgpu adapter on this machine (no GPU, and no software \
             Vulkan driver such as Mesa's lavapipe)"
                .into(),
        )),
    }
}

/// Without the `burn-wgpu` feature: says how to build it.
#[cfg(not(feature = "burn-wgpu"))]
fn wgpu() -> Result<Box<dyn HmmEngine>> {
    Err(Failure(
        "--hmm-engine burn-wgpu: this strait was built without it (cargo build --release -p cli \
         --features burn-wgpu)"
            .into(),
    ))
}
