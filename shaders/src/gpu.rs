//! [`Gpu`]: the adapter, device and queue, with lost-device and error tracking.

use crate::error::GpuError;
use crate::profile::{self, KernelTime};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A GPU device and its queue: WebGPU in the browser, Vulkan natively.
///
/// A lost device or an uncaptured validation error is remembered; [`Gpu::check`] turns
/// it into an error so that callers get a `Result` instead of a panic.
#[derive(Debug)]
pub struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    lost: Arc<Mutex<Option<String>>>,
    error: Arc<Mutex<Option<String>>>,
    allocated: AtomicU64,
    /// Set while kernels are timed ([`Gpu::start_profiling`]).
    profiler: Mutex<Option<profile::Profiler>>,
}

fn backends() -> wgpu::Backends {
    if cfg!(target_arch = "wasm32") {
        wgpu::Backends::BROWSER_WEBGPU
    } else {
        wgpu::Backends::VULKAN
    }
}

fn remember(slot: &Mutex<Option<String>>, message: String) {
    let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
    s.get_or_insert(message);
}

impl Gpu {
    /// Opens the first high-performance adapter and a device with the adapter's limits.
    pub async fn new() -> Result<Gpu, GpuError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = backends();
        let instance = wgpu::Instance::new(desc);
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        let info = adapter.get_info();
        // Timestamp queries inside passes (native adapters only) let kernels be timed one by
        // one; asking for them changes nothing until profiling starts.
        let profiling = profile::profile_features();
        let mut features = match adapter.features().contains(profiling) {
            true => profiling,
            false => wgpu::Features::empty(),
        };
        // Subgroup sums for the products' reductions where the adapter has them (native
        // adapters: wgpu does not pass the feature on to the browser's WebGPU yet).
        features |= adapter.features() & wgpu::Features::SUBGROUP;
        // Half floats for the KV cache (`KvFormat::F16`) where the adapter has them.
        features |= adapter.features() & wgpu::Features::SHADER_F16;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("strait"),
                required_features: features,
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::RequestDevice(e.to_string()))?;
        let lost = Arc::new(Mutex::new(None));
        let error = Arc::new(Mutex::new(None));
        let l = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            let m = match message.as_str() {
                "" => format!("{reason:?}"),
                _ => format!("{reason:?}: {message}"),
            };
            remember(&l, m);
        });
        let e = error.clone();
        device.on_uncaptured_error(Arc::new(move |err: wgpu::Error| {
            remember(&e, err.to_string());
        }));
        Ok(Gpu {
            device,
            queue,
            info,
            lost,
            error,
            allocated: AtomicU64::new(0),
            profiler: Mutex::new(None),
        })
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Adapter name and backend, e.g. `"llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)"`.
    pub fn adapter_name(&self) -> String {
        format!("{} ({:?})", self.info.name, self.info.backend)
    }

    /// Whether the device has `shader-f16` (half floats in kernels and buffers;
    /// [`crate::KvFormat::F16`]).
    pub fn has_f16(&self) -> bool {
        self.device.features().contains(wgpu::Features::SHADER_F16)
    }

    /// Whether the device has subgroup operations (`MatVecStrategy::SubgroupPerRow`).
    pub fn has_subgroups(&self) -> bool {
        self.device.features().contains(wgpu::Features::SUBGROUP)
    }

    /// Whether the adapter is a CPU implementation (lavapipe, SwiftShader).
    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Whether an adapter's description (wgpu's name, or a browser's vendor and
    /// architecture, which wgpu does not see there) names a CPU implementation of WebGPU
    /// or Vulkan, on which the CPU forward pass is the faster.
    pub fn is_software_name(adapter: &str) -> bool {
        let a = adapter.to_lowercase();
        [
            "swiftshader",
            "llvmpipe",
            "lavapipe",
            "software",
            "microsoft basic render",
        ]
        .iter()
        .any(|s| a.contains(s))
    }

    /// The device's limits.
    pub fn limits(&self) -> wgpu::Limits {
        self.device.limits()
    }

    /// Bytes of all buffers created through this crate's helpers so far.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    pub(crate) fn count_allocation(&self, bytes: u64) {
        self.allocated.fetch_add(bytes, Ordering::Relaxed);
    }

    /// `Err` once the device is lost or a command failed validation (the first message).
    pub fn check(&self) -> Result<(), GpuError> {
        if let Some(m) = self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Err(GpuError::DeviceLost(m));
        }
        if let Some(m) = self.error.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Err(GpuError::Validation(m));
        }
        Ok(())
    }

    /// Compiles a WGSL compute shader's entry point `main`; a compile or layout error is
    /// returned, not raised.
    pub async fn pipeline(
        &self,
        label: &str,
        wgsl: &str,
    ) -> Result<wgpu::ComputePipeline, GpuError> {
        self.check()?;
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(wgsl.into()),
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        match scope.pop().await {
            Some(e) => Err(GpuError::Validation(format!("shader {label}: {e}"))),
            None => Ok(pipeline),
        }
    }

    /// A bind group for group 0 of `pipeline`: binding `i` is the whole of `buffers[i]`.
    pub fn bind(
        &self,
        pipeline: &wgpu::ComputePipeline,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let at: Vec<(u32, &wgpu::Buffer)> = (0u32..).zip(buffers.iter().copied()).collect();
        self.bind_at(pipeline, &at)
    }

    /// Binds each buffer at its binding number in group 0 of `pipeline` (for kernels whose
    /// bindings are not numbered from 0 without gaps).
    pub fn bind_at(
        &self,
        pipeline: &wgpu::ComputePipeline,
        buffers: &[(u32, &wgpu::Buffer)],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .map(|&(binding, b)| wgpu::BindGroupEntry {
                binding,
                resource: b.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    }

    /// Records one compute pass with `record` and submits it.
    pub fn run(&self, record: impl FnOnce(&mut wgpu::ComputePass<'_>)) -> Result<(), GpuError> {
        self.check()?;
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: None,
            });
            let guard = self.profiler().as_ref().map(profile::Profiler::begin_pass);
            record(&mut pass);
            drop(pass);
            // The recording ends here whatever happens to the profiler meanwhile (stopped
            // on another thread: this pass's timings are dropped with it).
            let rec = guard.and_then(profile::PassGuard::finish);
            if let (Some(rec), Some(p)) = (rec, self.profiler().as_mut()) {
                p.end_pass(rec, &self.device, &mut encoder);
            }
        }
        self.queue.submit([encoder.finish()]);
        self.check()
    }
}

impl Gpu {
    /// Whether this adapter can time each kernel (timestamp queries inside passes).
    pub fn can_profile(&self) -> bool {
        self.device.features().contains(profile::profile_features())
    }

    /// Times every dispatch from now until [`Gpu::stop_profiling`]; `Err` where the
    /// adapter offers no timestamp queries inside compute passes.
    pub fn start_profiling(&self) -> Result<(), GpuError> {
        if !self.can_profile() {
            return Err(GpuError::Unsupported(format!(
                "the adapter ({}) offers no timestamp queries inside compute passes, so kernels cannot be timed one by one",
                self.adapter_name().trim()
            )));
        }
        *self.profiler() = Some(profile::Profiler::new(&self.device));
        Ok(())
    }

    /// Ends profiling and returns each kernel's timed dispatches and GPU seconds, the
    /// slowest first, and the dispatches recorded without timestamps (none unless a pass
    /// held more than 2048 dispatches). `Err` if it was not started.
    pub async fn stop_profiling(&self) -> Result<(Vec<KernelTime>, u64), GpuError> {
        let p = self
            .profiler()
            .take()
            .ok_or_else(|| GpuError::Unsupported("profiling was not started".into()))?;
        let (pending, untimed) = p.into_pending();
        let mut passes = Vec::with_capacity(pending.len());
        for (buffer, labels) in pending {
            let words = self.read_words(&buffer, 0, labels.len() * 4).await?;
            passes.push((labels, words));
        }
        let period_ns = self.queue.get_timestamp_period() as f64;
        Ok((profile::kernel_times(&passes, period_ns), untimed))
    }

    /// The profiler's slot (poison ignored: it holds no invariant a panic could break).
    fn profiler(&self) -> std::sync::MutexGuard<'_, Option<profile::Profiler>> {
        self.profiler.lock().unwrap_or_else(|e| e.into_inner())
    }
}
