//! Per-kernel GPU time from timestamp queries: while a [`crate::Gpu`] profiles
//! ([`crate::Gpu::start_profiling`]), every dispatch [`crate::dispatches::record`] makes is framed
//! by two timestamps written inside the compute pass, with the kernel's label; the
//! timestamps are resolved after the pass and read back by [`Gpu::stop_profiling`], which
//! sums each kernel's time. Adapters without timestamp queries inside passes (every
//! browser's WebGPU) refuse to start, saying so.

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

/// A profiling [`crate::Gpu`]'s state: its query set and the passes not read back yet.
#[derive(Debug)]
pub(crate) struct Profiler {
    queries: wgpu::QuerySet,
    /// Each run's resolved timestamps and the labels of its dispatches, in order.
    pending: Vec<(wgpu::Buffer, Vec<String>)>,
    /// Dispatches past a pass's [`QUERIES`], recorded without timestamps.
    untimed: u64,
}

/// Ends the recording of a pass on this thread when finished or dropped, so that no later
/// dispatch (of this or another device) writes into a query set whose pass is over.
pub(crate) struct PassGuard(());

impl PassGuard {
    /// The pass's recording (its labels and the query set they were written to).
    pub(crate) fn finish(self) -> Option<Recording> {
        RECORDING.with(|r| r.borrow_mut().take())
    }
}

impl Drop for PassGuard {
    fn drop(&mut self) {
        RECORDING.with(|r| r.borrow_mut().take());
    }
}

/// The pass being recorded on this thread while its [`crate::Gpu`] profiles.
pub(crate) struct Recording {
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

impl Profiler {
    /// A profiler with its query set on `device`.
    pub(crate) fn new(device: &wgpu::Device) -> Profiler {
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("kernel timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: QUERIES,
        });
        Profiler {
            queries,
            pending: Vec::new(),
            untimed: 0,
        }
    }

    /// Starts recording a pass: the dispatches [`framed`] records on this thread are timed
    /// until the guard is finished ([`PassGuard::finish`]) or dropped (a panic while
    /// recording), which ends the recording either way.
    pub(crate) fn begin_pass(&self) -> PassGuard {
        RECORDING.with(|r| {
            *r.borrow_mut() = Some(Recording {
                queries: self.queries.clone(),
                labels: Vec::new(),
                untimed: 0,
            })
        });
        PassGuard(())
    }

    /// Resolves a finished pass's timestamps into a buffer, kept until
    /// [`Profiler::into_pending`].
    pub(crate) fn end_pass(
        &mut self,
        rec: Recording,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
    ) {
        self.untimed += rec.untimed;
        if rec.labels.is_empty() {
            return;
        }
        let n = rec.labels.len() as u32 * 2;
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("resolved timestamps"),
            size: n as u64 * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        encoder.resolve_query_set(&rec.queries, 0..n, &buffer, 0);
        self.pending.push((buffer, rec.labels));
    }

    /// Each pass's resolved timestamps with its labels, and the untimed dispatches.
    pub(crate) fn into_pending(self) -> (Vec<(wgpu::Buffer, Vec<String>)>, u64) {
        (self.pending, self.untimed)
    }
}

/// Each kernel's timed dispatches and seconds, the slowest first, from passes' labels and
/// their timestamps read back as words (two little-endian words per timestamp, start and
/// end per dispatch), `period_ns` nanoseconds a tick.
pub(crate) fn kernel_times(passes: &[(Vec<String>, Vec<u32>)], period_ns: f64) -> Vec<KernelTime> {
    let mut totals: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for (labels, words) in passes {
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
    kernels
}

/// The device features per-kernel timing needs, requested where the adapter has them.
pub(crate) fn profile_features() -> wgpu::Features {
    wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
}
