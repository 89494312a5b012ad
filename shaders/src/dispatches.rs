//! Every compute dispatch the kernels record goes through [`record`], which counts it: the
//! figure behind `strait bench decode`'s `dispatches_per_token` for the wgpu engine, and
//! the place where profiling frames each dispatch with timestamps.

use std::sync::atomic::{AtomicU64, Ordering};

static DISPATCHES: AtomicU64 = AtomicU64::new(0);

/// Records a dispatch of kernel `label` on `x × y × z` workgroups on `pass`, and counts it
/// (timed between two timestamps while its GPU profiles: [`crate::Gpu::start_profiling`]).
pub(crate) fn record(pass: &mut wgpu::ComputePass<'_>, label: &str, x: u32, y: u32, z: u32) {
    DISPATCHES.fetch_add(1, Ordering::Relaxed);
    crate::profile::framed(pass, label, |pass| pass.dispatch_workgroups(x, y, z));
}

/// Dispatches the kernels of this process have recorded so far (every device and thread
/// together: take the difference around the work to measure).
pub fn dispatches() -> u64 {
    DISPATCHES.load(Ordering::Relaxed)
}
