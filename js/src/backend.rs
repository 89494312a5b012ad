//! Where a GGUF model runs: our CPU forward pass in wasm, or our WGSL kernels on WebGPU.

use lm::gpu::{DEFAULT_GPU_CONTEXT, Gpu, GpuModel};
use lm::{Backend, Lender, Model};
use std::sync::Arc;

/// KV-cache slots on the GPU: SMC's particles and CARS's batch run side by side.
const GPU_SLOTS: usize = 8;

/// `model` placed as `choice` says (`cpu`, `webgpu`, `auto`), and where, in words.
/// `auto` takes WebGPU on a hardware adapter and the CPU otherwise (no WebGPU, a software
/// adapter such as SwiftShader, an upload the adapter refuses); `webgpu` fails instead.
pub async fn place(
    model: Arc<Model>,
    choice: &str,
    adapter_hint: &str,
) -> Result<(Backend, String), String> {
    let cpu = |model| (Backend::Cpu(model), "CPU (wasm)".to_string());
    let strict = match choice {
        "cpu" => return Ok(cpu(model)),
        "webgpu" => true,
        "auto" => false,
        other => return Err(format!("unknown backend {other:?}: cpu, webgpu or auto")),
    };
    #[allow(clippy::arc_with_non_send_sync)] // wasm32: one thread.
    let gpu = match Gpu::new().await {
        Ok(g) => Arc::new(g),
        Err(e) if strict => return Err(format!("WebGPU: {e}")),
        Err(_) => return Ok(cpu(model)),
    };
    let adapter = format!("{adapter_hint} {}", gpu.adapter_name())
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if !strict && (gpu.is_cpu() || Gpu::is_software_name(&adapter)) {
        gpu.device().destroy();
        return Ok(cpu(model));
    }
    match GpuModel::with_slots(gpu.clone(), &model, DEFAULT_GPU_CONTEXT, GPU_SLOTS).await {
        Ok(g) => Ok((
            Backend::Gpu(Lender::new(model, g, "WebGPU")),
            format!("WebGPU ({adapter})"),
        )),
        Err(e) if strict => Err(format!("WebGPU ({adapter}): {e}")),
        Err(_) => {
            gpu.device().destroy();
            Ok(cpu(model))
        }
    }
}
