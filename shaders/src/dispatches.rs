//! Every compute dispatch the kernels record goes through [`record`], which counts it: the
//! figure behind `strait bench decode`'s `dispatches_per_token` for the wgpu engine.

use std::sync::atomic::{AtomicU64, Ordering};

static DISPATCHES: AtomicU64 = AtomicU64::new(0);

/// Records a dispatch of `x × y × z` workgroups on `pass`, and counts it.
pub(crate) fn record(pass: &mut wgpu::ComputePass<'_>, x: u32, y: u32, z: u32) {
    DISPATCHES.fetch_add(1, Ordering::Relaxed);
    pass.dispatch_workgroups(x, y, z);
}

/// Dispatches the kernels of this process have recorded so far (every device and thread
/// together: take the difference around the work to measure).
pub fn dispatches() -> u64 {
    DISPATCHES.load(Ordering::Relaxed)
}
