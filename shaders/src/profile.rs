//! Per-kernel GPU time from timestamp queries: while a [`Gpu`] profiles
//! ([`Gpu::start_profiling`]), every dispatch [`crate::dispatches::record`] makes is framed
//! by two timestamps written inside the compute pass, with the kernel's label; the
//! timestamps are resolved after the pass and read back by [`Gpu::stop_profiling`], which
//! sums each kernel's time. Adapters without timestamp queries inside passes (every
//! browser's WebGPU) refuse to start, saying so.

use crate::error::GpuError;
use crate::gpu::Gpu;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// Timestamps one pass can hold: two per dispatch (a SmolLM2 chunk is about 150).
const QUERIES: u32 = 4096;

/// One kernel's share of a profiled run.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTime {
    /// The kernel's label (a product's names its format, input and output).
    pub kernel: String,
    /// Dispatches of it that were timed.
    pub dispatches: u64,
    /// GPU seconds between the timestamps around its dispatches, summed.
    pub seconds: f64,
}

/// A profiling [`Gpu`]'s state: its query set and the passes not read back yet.
#[derive(Debug)]
pub(crate) struct Profiler {
    queries: wgpu::QuerySet,
    /// Each run's resolved timestamps and the labels of its dispatches, in order.
    pending: Vec<(wgpu::Buffer, Vec<String>)>,
    /// Dispatches past a pass's [`QUERIES`], recorded without timestamps.
    untimed: u64,
}

/// The pass being recorded on this thread while its [`Gpu`] profiles.
struct Recording {
    queries: wgpu::QuerySet,
    labels: Vec<String>,
    untimed: u64,
}

thread_local! {
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// Records `dispatch` into `pass`, between two timestamps when a profiled pass is being
/// recorded on this thread (and it has room).
pub(crate) fn framed(
    pass: &mut wgpu::ComputePass<'_>,
    label: &str,
    dispatch: impl FnOnce(&mut wgpu::ComputePass<'_>),
) {
    RECORDING.with(|r| match r.borrow_mut().as_mut() {
        Some(rec) if (rec.labels.len() as u32 + 1) * 2 <= QUERIES => {
            let at = rec.labels.len() as u32 * 2;
            pass.write_timestamp(&rec.queries, at);
            dispatch(pass);
            pass.write_timestamp(&rec.queries, at + 1);
            rec.labels.push(label.to_string());
        }
        Some(rec) => {
            rec.untimed += 1;
            dispatch(pass);
        }
        None => dispatch(pass),
    })
}

impl Gpu {
    /// Whether this adapter can time each kernel (timestamp queries inside passes).
    pub fn can_profile(&self) -> bool {
        self.device().features().contains(profile_features())
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
        let queries = self.device().create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("kernel timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: QUERIES,
        });
        *self.profiler() = Some(Profiler {
            queries,
            pending: Vec::new(),
            untimed: 0,
        });
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
        let period_ns = self.queue().get_timestamp_period() as f64;
        let mut totals: BTreeMap<String, (u64, f64)> = BTreeMap::new();
        for (buffer, labels) in &p.pending {
            let words = self.read_words(buffer, 0, labels.len() * 4).await?;
            for (label, w) in labels.iter().zip(words.chunks_exact(4)) {
                let start = w[0] as u64 | (w[1] as u64) << 32;
                let end = w[2] as u64 | (w[3] as u64) << 32;
                let t = totals.entry(label.clone()).or_default();
                t.0 += 1;
                t.1 += end.saturating_sub(start) as f64 * period_ns * 1e-9;
            }
        }
        let mut kernels: Vec<KernelTime> = totals
            .into_iter()
            .map(|(kernel, (dispatches, seconds))| KernelTime {
                kernel,
                dispatches,
                seconds,
            })
            .collect();
        kernels.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        Ok((kernels, p.untimed))
    }

    /// Starts recording a pass: when profiling, the dispatches [`framed`] records on this
    /// thread until [`Gpu::end_pass_profile`] are timed.
    pub(crate) fn begin_pass_profile(&self) {
        if let Some(p) = self.profiler().as_ref() {
            RECORDING.with(|r| {
                *r.borrow_mut() = Some(Recording {
                    queries: p.queries.clone(),
                    labels: Vec::new(),
                    untimed: 0,
                })
            });
        }
    }

    /// Ends the pass's recording: resolves its timestamps into a buffer read back by
    /// [`Gpu::stop_profiling`].
    pub(crate) fn end_pass_profile(&self, encoder: &mut wgpu::CommandEncoder) {
        let Some(rec) = RECORDING.with(|r| r.borrow_mut().take()) else {
            return;
        };
        let mut guard = self.profiler();
        let Some(p) = guard.as_mut() else {
            return;
        };
        p.untimed += rec.untimed;
        if rec.labels.is_empty() {
            return;
        }
        let n = rec.labels.len() as u32 * 2;
        let buffer = self.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("resolved timestamps"),
            size: n as u64 * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        encoder.resolve_query_set(&rec.queries, 0..n, &buffer, 0);
        p.pending.push((buffer, rec.labels));
    }
}

/// The device features per-kernel timing needs, requested where the adapter has them.
pub(crate) fn profile_features() -> wgpu::Features {
    wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
}
