//! The llama forward pass as a burn tensor program: a third engine beside the CPU forward
//! pass ([`crate::forward`], the reference) and our WGSL one ([`crate::gpu`]), on any burn
//! [`Device`] — burn's `flex` CPU backend (feature `burn`), or its wgpu backend (feature
//! `burn-wgpu`: WGSL through naga, natively Vulkan/Metal/DX12, lavapipe without a GPU).
//!
//! burn's own ops do the block (RMSNorm, RoPE, grouped-query attention, SwiGLU, and the
//! products over f32 weights). On wgpu the quantized matrices stay as the file's blocks:
//! burn's quantized tensors are symmetric with no per-block minimum, so Q4_1 (and Q5_1,
//! the K-quants) cannot be burn tensors; they run through our WGSL products (`shaders`'
//! `MatVec`, one decoder per format) launched as burn custom kernels ([`custom`], feature
//! `burn-wgpu`). On the CPU backend every matrix is decoded to f32 once, at load.
//!
//! # Key types
//! - [`BurnModel`]: the weights on a burn device and one KV cache; `forward` runs tokens
//!   after the cache and returns their logits.
//! - [`BurnPromptedModel`]: a [`BurnModel`] holding a prompt, the samplers'
//!   [`sampler_core::LanguageModel`], its cache reused by longest common prefix as the
//!   other engines' are.
//! - [`flex`], [`wgpu`] (and [`webgpu`] in a browser): the devices; [`devices`] lists them.

// Our products launch on burn's unfused cubecl backend; under `burn-fusion` (a
// measurement, docs/bench/engines.md) every matrix runs through burn's own matmul.
#[cfg(all(feature = "burn-wgpu", not(feature = "burn-fusion")))]
pub mod custom;
mod linear;
mod model;

pub use burn_tensor::Device;
pub use model::BurnModel;
/// A [`BurnModel`] conditioned on a prompt: the engines' one prompted model.
pub type BurnPromptedModel = crate::engine::Prompted<BurnModel>;

/// burn's `flex` CPU backend (native and wasm).
pub fn flex() -> Device {
    Device::flex()
}

/// burn's wgpu backend on the first adapter burn lists (GPUs before CPU adapters such as
/// lavapipe), or `None` when this machine has none (no GPU and no software Vulkan driver).
/// The device names its adapter's kind, which picks the kernels' form (`custom`).
#[cfg(feature = "burn-wgpu")]
pub fn wgpu() -> Option<Device> {
    use burn_tensor::DeviceType;
    // Listing the adapters first: creating a device without one panics inside burn.
    Device::enumerate(DeviceType::Wgpu)
        .into_vec()
        .into_iter()
        .next()
}

/// burn's wgpu backend initialized asynchronously, as a browser requires (the page's
/// WebGPU; natively the default adapter). burn registers a runtime once per thread, so
/// the first device opened is kept and handed out again.
#[cfg(feature = "burn-wgpu")]
pub async fn webgpu() -> Result<Device, String> {
    thread_local! {
        static OPENED: std::cell::RefCell<Option<Device>> = const { std::cell::RefCell::new(None) };
    }
    if let Some(d) = OPENED.with(|o| o.borrow().clone()) {
        return Ok(d);
    }
    let d = Device::wgpu_options()
        .init_async()
        .await
        .map_err(|e| format!("burn's WebGPU device: {e}"))?;
    OPENED.with(|o| *o.borrow_mut() = Some(d.clone()));
    Ok(d)
}

/// Every burn device this build and machine offer, with their labels (`burn-flex`,
/// `burn-wgpu`, as benchmarks and messages print them): burn's CPU backend, and its wgpu
/// backend where compiled in and an adapter exists.
pub fn devices() -> Vec<(Device, &'static str)> {
    #[allow(unused_mut)]
    let mut d = vec![(flex(), "burn-flex")];
    #[cfg(feature = "burn-wgpu")]
    if let Some(w) = wgpu() {
        d.push((w, "burn-wgpu"));
    }
    d
}

/// Every burn device of this build, for tests: as [`devices`], but a build with
/// `burn-wgpu` on a machine without a wgpu adapter panics instead of quietly testing
/// burn's CPU backend alone (as the GPU tests fail there; lavapipe is Debian's
/// `mesa-vulkan-drivers`, which `cargo xtask test` installs).
pub fn devices_for_tests() -> Vec<(Device, &'static str)> {
    let d = devices();
    #[cfg(feature = "burn-wgpu")]
    assert!(
        d.iter().any(|(_, name)| *name == "burn-wgpu"),
        "built with burn-wgpu but no wgpu adapter: install mesa-vulkan-drivers (lavapipe)"
    );
    d
}

#[cfg(test)]
mod tests;
