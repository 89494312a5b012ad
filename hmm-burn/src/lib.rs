//! P-GCD's dense tensor work as burn tensor programs: the Baum–Welch step of the HMM
//! distillation ([`em`]) and the guide's backward table over (budget × automaton state ×
//! hidden state) ([`guide_table`]), run on any burn [`Device`] — burn's `flex` CPU backend
//! natively and in wasm, its wgpu backend where there is a GPU (feature `wgpu`).
//!
//! # Key types
//! - [`BurnHmm`]: an [`HmmEngine`] on one burn device at one float precision; hand it to
//!   `sampler_core::samplers::Sampler::hmm_engine` and `p-gcd-smc` distils and builds its guide
//!   there. The results equal [`sampler_core::hmm::CpuHmm`]'s within the precision's
//!   tolerance (f64: 1e-9; f32: see the tests).
//! - [`Precision`]: f64 (CPU backends) or f32 (every backend; WebGPU has no f64).
//! - [`timing::time_engines`] (native): engines side by side on one problem, for
//!   `strait bench hmm` and `cargo run -p hmm-burn --example engines`.
//!
//! # Usage
//! ```
//! use hmm_burn::{BurnHmm, Precision};
//! use sampler_core::hmm::{CpuHmm, Hmm, HmmEngine};
//! use sampler_core::{SeededRng, block_on};
//!
//! let hmm = Hmm::random(3, 5, &mut SeededRng::new(1));
//! let data = vec![vec![0, 1, 4], vec![2, 2]];
//! let (a, _) = block_on(BurnHmm::flex(Precision::F64).em_step(&hmm, &data, 0.1)).unwrap();
//! let (b, _) = block_on(CpuHmm.em_step(&hmm, &data, 0.1)).unwrap();
//! assert!(a.emission.iter().zip(&b.emission).all(|(x, y)| (x - y).abs() < 1e-12));
//! ```

#![forbid(unsafe_code)]

mod em;
pub mod guide_table;
mod tensors;
#[cfg(not(target_arch = "wasm32"))]
pub mod timing;

pub use burn_tensor::Device;
use sampler_core::hmm::{EmStep, Hmm, HmmEngine, HmmFuture};
use sampler_core::{TensorizedAutomaton, TokenId};
use tensors::Dev;

/// The float precision the programs run in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// 64-bit floats: the CPU reference's own precision (burn's CPU backend).
    F64,
    /// 32-bit floats: what GPUs (and WebGPU) offer.
    F32,
}

/// An [`HmmEngine`] on a burn device.
#[derive(Clone, Debug)]
pub struct BurnHmm {
    dev: Dev,
    label: String,
}

impl BurnHmm {
    /// On `device` at `precision`, named `label` in messages and benchmarks.
    pub fn new(device: Device, precision: Precision, label: &str) -> Self {
        BurnHmm {
            dev: Dev::new(device, precision),
            label: label.to_string(),
        }
    }

    /// On burn's `flex` CPU backend (native and wasm).
    pub fn flex(precision: Precision) -> Self {
        let label = match precision {
            Precision::F64 => "burn-flex-f64",
            Precision::F32 => "burn-flex-f32",
        };
        Self::new(Device::flex(), precision, label)
    }

    /// On burn's wgpu backend (its default adapter, WGSL shaders) in f32, or `None` when
    /// this machine has no adapter (no GPU and no software Vulkan driver).
    #[cfg(feature = "wgpu")]
    pub fn wgpu() -> Option<Self> {
        use burn_tensor::{DeviceKind, DeviceType};
        // Listing the adapters first: creating a device without one panics inside burn.
        let devices = Device::enumerate(DeviceType::Wgpu).into_vec();
        devices.first()?;
        Some(Self::new(
            Device::wgpu(DeviceKind::DefaultDevice),
            Precision::F32,
            "burn-wgpu-f32",
        ))
    }

    /// The burn device the programs run on.
    pub fn device(&self) -> &Device {
        &self.dev.device
    }
}

impl HmmEngine for BurnHmm {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn em_step<'a>(
        &'a self,
        hmm: &'a Hmm,
        data: &'a [Vec<TokenId>],
        pseudo: f64,
    ) -> HmmFuture<'a, (Hmm, EmStep)> {
        Box::pin(em::em_step(&self.dev, hmm, data, pseudo))
    }

    fn guide_table<'a>(
        &'a self,
        hmm: &'a Hmm,
        tensor: &'a TensorizedAutomaton,
        max_remaining: usize,
    ) -> HmmFuture<'a, Vec<f64>> {
        Box::pin(guide_table::guide_table(
            &self.dev,
            hmm,
            tensor,
            max_remaining,
        ))
    }
}

#[cfg(test)]
mod tests;
