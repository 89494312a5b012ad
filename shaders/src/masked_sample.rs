//! [`MaskedSample`]: masked sampling kept on the GPU. Given the logits and a token-mask
//! bitset already on the GPU (the [`crate::TokenMask`] kernel's output), two passes compute
//! the mass the mask keeps, log Z = logsumexp(kept logits) − logsumexp(all logits), and
//! draw a kept token at the inverse CDF of the masked softmax at a uniform `u`; only 16
//! bytes are read back. [`masked_sample_reference`] is the CPU reference.
//!
//! The logits must be finite ([`MaskedSample::compute`] checks; logits already on the GPU
//! are the caller's to vouch for). Mask bits past the vocabulary are ignored. A mask that
//! keeps no token gives [`GpuError::AllMasked`].

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::matvec::MatVecStrategy;

/// The token slot of the result when no token can be drawn.
const NONE_TOKEN: u32 = u32::MAX;

/// One draw: the token and the mass the mask kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaskedDraw {
    /// The token drawn.
    pub token: u32,
    /// log Z: the log of the softmax mass of the kept tokens (≤ 0).
    pub log_z: f32,
    /// logsumexp of the kept logits.
    pub log_kept: f32,
    /// logsumexp of all logits.
    pub log_all: f32,
    /// The drawn token's logit (so `logit - log_all` is its log-probability, with no
    /// second read-back).
    pub logit: f32,
}

/// The two pipelines of masked sampling.
#[derive(Debug)]
pub struct MaskedSample {
    stats: wgpu::ComputePipeline,
    finish: wgpu::ComputePipeline,
    strategy: MatVecStrategy,
}

/// Masked sampling bound to a logits buffer and a mask buffer, with its own uniform,
/// block statistics and result buffers; draw with [`MaskedSample::draw`].
#[derive(Debug)]
pub struct MaskedSampleBinding {
    vocab: usize,
    block: usize,
    offset: usize,
    params: wgpu::Buffer,
    result: wgpu::Buffer,
    stats_bind: wgpu::BindGroup,
    finish_bind: wgpu::BindGroup,
}

/// Tokens per block of the first pass (`BLOCK` in the WGSL).
fn block_size(strategy: MatVecStrategy) -> usize {
    match strategy {
        MatVecStrategy::WorkgroupPerRow | MatVecStrategy::SubgroupPerRow => 1024,
        MatVecStrategy::InvocationPerRow => 256,
    }
}

fn check_u(u: f32) -> Result<(), GpuError> {
    if !(0.0..1.0).contains(&u) {
        return Err(GpuError::Shape(format!(
            "the uniform for a draw must lie in [0, 1), got {u}"
        )));
    }
    Ok(())
}

impl MaskedSample {
    /// Compiles both passes with the adapter's strategy.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        MaskedSample::with_strategy(gpu, MatVecStrategy::for_gpu(gpu)).await
    }

    /// Compiles both passes: workgroup reductions over blocks of 1024 tokens (GPUs), or
    /// one invocation per block of 256 tokens and a serial second pass, without barriers
    /// (CPU adapters).
    pub async fn with_strategy(gpu: &Gpu, strategy: MatVecStrategy) -> Result<Self, GpuError> {
        // No subgroup form: the workgroup one serves.
        let strategy = strategy.without_subgroups();
        let (stats, finish) = match strategy {
            MatVecStrategy::WorkgroupPerRow | MatVecStrategy::SubgroupPerRow => (
                include_str!("wgsl/masked_sample_stats.wgsl"),
                include_str!("wgsl/masked_sample_finish.wgsl"),
            ),
            MatVecStrategy::InvocationPerRow => (
                include_str!("wgsl/masked_sample_stats_rows.wgsl"),
                include_str!("wgsl/masked_sample_finish_serial.wgsl"),
            ),
        };
        Ok(MaskedSample {
            stats: gpu.pipeline("masked_sample stats", stats).await?,
            finish: gpu.pipeline("masked_sample finish", finish).await?,
            strategy,
        })
    }

    /// Binds `vocab` logits (f32) starting at float `offset` of `logits`, and `mask`
    /// (at least `ceil(vocab / 32)` words; bit `t % 32` of word `t / 32` keeps token `t`).
    pub fn bind(
        &self,
        gpu: &Gpu,
        logits: &wgpu::Buffer,
        offset: usize,
        mask: &wgpu::Buffer,
        vocab: usize,
    ) -> Result<MaskedSampleBinding, GpuError> {
        let block = block_size(self.strategy);
        let nb = vocab.div_ceil(block);
        if vocab == 0 {
            return Err(GpuError::Shape(
                "masked sampling over an empty vocabulary".into(),
            ));
        }
        if nb > 65535 {
            return Err(GpuError::Shape(format!(
                "masked sampling over {vocab} tokens: at most {} are supported",
                65535 * block
            )));
        }
        if ((offset + vocab) * 4) as u64 > logits.size() {
            return Err(GpuError::Shape(format!(
                "logits {offset}..{} from a buffer of {} bytes",
                offset + vocab,
                logits.size()
            )));
        }
        if (crate::mask_words(vocab) * 4) as u64 > mask.size() {
            return Err(GpuError::Shape(format!(
                "a mask of {} bytes for {vocab} tokens (needs {} words)",
                mask.size(),
                crate::mask_words(vocab)
            )));
        }
        let params = gpu.uniform(
            "masked_sample params",
            &[vocab as u32, nb as u32, 0, offset as u32],
        );
        let stats = gpu.zeroed("masked_sample stats", 4 * nb)?;
        let result = gpu.zeroed("masked_sample result", 5)?;
        Ok(MaskedSampleBinding {
            vocab,
            block,
            offset,
            stats_bind: gpu.bind(&self.stats, &[logits, mask, &stats, &params]),
            finish_bind: gpu.bind(&self.finish, &[logits, mask, &stats, &result, &params]),
            params,
            result,
        })
    }

    /// Records both passes (after the kernels that write the logits and the mask).
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, binding: &MaskedSampleBinding) {
        let nb = binding.vocab.div_ceil(binding.block) as u32;
        pass.set_pipeline(&self.stats);
        pass.set_bind_group(0, &binding.stats_bind, &[]);
        crate::dispatches::record(
            pass,
            "masked_sample stats",
            match self.strategy {
                MatVecStrategy::WorkgroupPerRow | MatVecStrategy::SubgroupPerRow => nb,
                MatVecStrategy::InvocationPerRow => nb.div_ceil(64),
            },
            1,
            1,
        );
        pass.set_pipeline(&self.finish);
        pass.set_bind_group(0, &binding.finish_bind, &[]);
        crate::dispatches::record(pass, "masked_sample finish", 1, 1, 1);
    }

    /// Queues the uniform `u` of the next draw (then [`MaskedSample::dispatch`] and
    /// [`MaskedSample::read`]).
    pub fn set_u(&self, gpu: &Gpu, binding: &MaskedSampleBinding, u: f32) -> Result<(), GpuError> {
        check_u(u)?;
        gpu.write_words(
            &binding.params,
            0,
            &[
                binding.vocab as u32,
                binding.vocab.div_ceil(binding.block) as u32,
                u.to_bits(),
                binding.offset as u32,
            ],
        );
        Ok(())
    }

    /// Reads the result of the last dispatch (20 bytes); every token masked is an error.
    pub async fn read(
        &self,
        gpu: &Gpu,
        binding: &MaskedSampleBinding,
    ) -> Result<MaskedDraw, GpuError> {
        let r = gpu.read_words(&binding.result, 0, 5).await?;
        if r[0] == NONE_TOKEN {
            return Err(GpuError::AllMasked);
        }
        Ok(MaskedDraw {
            token: r[0],
            log_z: f32::from_bits(r[1]),
            log_kept: f32::from_bits(r[2]),
            log_all: f32::from_bits(r[3]),
            logit: f32::from_bits(r[4]),
        })
    }

    /// One draw at `u` from the bound logits and mask: writes `u`, runs both passes,
    /// reads 20 bytes back.
    pub async fn draw(
        &self,
        gpu: &Gpu,
        binding: &MaskedSampleBinding,
        u: f32,
    ) -> Result<MaskedDraw, GpuError> {
        self.set_u(gpu, binding, u)?;
        gpu.run(|pass| self.dispatch(pass, binding))?;
        self.read(gpu, binding).await
    }

    /// Uploads `logits` and `mask`, then one draw at `u` (tests and one-off calls).
    pub async fn compute(
        &self,
        gpu: &Gpu,
        logits: &[f32],
        mask: &[u32],
        u: f32,
    ) -> Result<MaskedDraw, GpuError> {
        check_u(u)?;
        check_logits(logits)?;
        let lb = gpu.storage("logits", &crate::f32_bytes(logits))?;
        let mb = gpu.storage("mask", &crate::u32_bytes(mask))?;
        let binding = self.bind(gpu, &lb, 0, &mb, logits.len())?;
        self.draw(gpu, &binding, u).await
    }
}

fn check_logits(logits: &[f32]) -> Result<(), GpuError> {
    match logits.iter().position(|l| !l.is_finite() || l.abs() > 1e30) {
        Some(i) => Err(GpuError::Shape(format!(
            "logit {i} is {}: masked sampling needs finite logits",
            logits[i]
        ))),
        None => Ok(()),
    }
}

/// CPU reference of [`MaskedSample`], in f64: the first kept token whose cumulative
/// masked-softmax probability exceeds `u` (the last kept token if rounding leaves `u`
/// past the end), and log Z; `None` when the mask keeps no token of `logits`.
pub fn masked_sample_reference(logits: &[f32], mask: &[u32], u: f32) -> Option<MaskedDraw> {
    let kept = |t: usize| mask.get(t / 32).is_some_and(|w| (w >> (t % 32)) & 1 == 1);
    let lse = |it: &mut dyn Iterator<Item = f64>| {
        let v: Vec<f64> = it.collect();
        let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (m, v.iter().map(|l| (l - m).exp()).sum::<f64>())
    };
    let (m_all, s_all) = lse(&mut logits.iter().map(|&l| l as f64));
    let (m_kept, s_kept) = lse(&mut (0..logits.len())
        .filter(|&t| kept(t))
        .map(|t| logits[t] as f64));
    if m_kept == f64::NEG_INFINITY {
        return None;
    }
    let target = u as f64 * s_kept;
    let (mut acc, mut token) = (0f64, None);
    for t in (0..logits.len()).filter(|&t| kept(t)) {
        let w = (logits[t] as f64 - m_kept).exp();
        if w > 0.0 {
            token = Some(t as u32);
            if acc + w > target {
                break;
            }
            acc += w;
        }
    }
    let log_kept = m_kept + s_kept.ln();
    let log_all = m_all + s_all.ln();
    let token = token?;
    Some(MaskedDraw {
        token,
        log_z: (log_kept - log_all) as f32,
        log_kept: log_kept as f32,
        log_all: log_all as f32,
        logit: logits[token as usize],
    })
}
