//! `strait bench gpu [--profile] [--batch N] [--context N] [--kv-cache f16] [--fold-output]`: the wgpu
//! forward pass's decode on the adapter present, with its dispatches per token, and with
//! `--profile` each kernel's GPU time per token from timestamp queries (or a line saying
//! why the adapter cannot give them). With `--profile` the decode rate includes the
//! timestamps' own cost: compare rates between runs without it. `--batch N` decodes N sequences side by side, each in
//! its own KV cache, in one pass a step and in one pass per sequence, in the same run.

use crate::args::BenchArgs;
use crate::failure::Result;
use lm::Model;
use sampler_core::block_on;
use std::time::Instant;

/// Decodes `--tokens` tokens after a short prompt (or `--context` positions of it,
/// repeated) on the GPU and prints one line of figures; with `--profile`, one line per
/// kernel (slowest first) and the total.
pub(super) fn run(args: &BenchArgs) -> Result<()> {
    let model = Model::load(&args.model)?;
    let mut prompt = model
        .tokenizer()
        .encode("The history of constrained decoding begins with grammars.")?;
    if let Some(n) = args.context {
        prompt = prompt.iter().copied().cycle().take(n.max(1)).collect();
    }
    let gpu = std::sync::Arc::new(block_on(shaders::Gpu::new())?);
    let mut m = block_on(lm::gpu::GpuModel::with_options(
        gpu.clone(),
        &model,
        prompt.len() + args.tokens + 1,
        1,
        args.gpu_args.options(),
    ))?;
    let logits = block_on(m.forward(&prompt, prompt.len() - 1))?;
    let mut next = super::argmax(&logits);
    let profiling = match args.profile {
        false => None,
        true => Some(gpu.start_profiling()),
    };
    let before = shaders::dispatches();
    let t = Instant::now();
    for _ in 0..args.tokens {
        next = super::argmax(&block_on(m.forward(&[next], 0))?);
    }
    let wall = t.elapsed().as_secs_f64();
    let per_token = |v: f64| v / args.tokens.max(1) as f64;
    crate::stdout::line(serde_json::json!({
        "engine": "strait-wgpu",
        "adapter": gpu.adapter_name(),
        "context": prompt.len(),
        "weight_bytes": m.weight_bytes(),
        "kv_cache": m.kv_format().name(),
        "fold_output": m.folds_output(),
        "buffer_bytes": m.buffer_bytes(),
        "decode_tokens": args.tokens,
        "decode_tok_s": args.tokens as f64 / wall,
        "dispatches_per_token": per_token((shaders::dispatches() - before) as f64),
        "profiled": matches!(profiling, Some(Ok(()))),
    }));
    match profiling {
        None => {}
        Some(Err(e)) => {
            headless::note!("strait: no kernel profile: {e}");
            crate::stdout::line(serde_json::json!({ "profile": null, "reason": e.to_string() }));
        }
        Some(Ok(())) => {
            let (kernels, untimed) = block_on(gpu.stop_profiling())?;
            let total: f64 = kernels.iter().map(|k| k.seconds).sum();
            for k in &kernels {
                crate::stdout::line(serde_json::json!({
                    "kernel": k.kernel,
                    "dispatches_per_token": per_token(k.dispatches as f64),
                    "gpu_us_per_token": per_token(k.seconds) * 1e6,
                    "share": k.seconds / total.max(f64::MIN_POSITIVE),
                }));
            }
            crate::stdout::line(serde_json::json!({
                "kernels": "all",
                "gpu_us_per_token": per_token(total) * 1e6,
                "wall_us_per_token": per_token(wall) * 1e6,
                "untimed_dispatches": untimed,
            }));
        }
    }
    if args.batch > 1 {
        // One model on the GPU at a time.
        drop(m);
        batched(args, &model, &prompt, gpu)?;
    }
    Ok(())
}

/// `--batch N`: N sequences after the prompt, each in its own slot, decoded greedily
/// `--tokens` steps in one pass a step, then again from the prompt in one pass per
/// sequence; one line with both rates (tokens of all sequences per second) and their
/// ratio.
fn batched(
    args: &BenchArgs,
    model: &Model,
    prompt: &[u32],
    gpu: std::sync::Arc<shaders::Gpu>,
) -> Result<()> {
    let n = args.batch;
    if n > 16 {
        return Err(crate::failure::Failure(format!(
            "--batch {n}: at most 16 sequences, the tokens one GPU pass takes"
        )));
    }
    let ctx = prompt.len() + args.tokens + 2;
    let mut m = block_on(lm::gpu::GpuModel::with_options(
        gpu,
        model,
        ctx,
        n,
        args.gpu_args.options(),
    ))?;
    if m.slots() < n {
        return Err(crate::failure::Failure(format!(
            "--batch {n}: the GPU holds only {} KV caches of {ctx} positions",
            m.slots()
        )));
    }
    let logits = block_on(m.forward(prompt, prompt.len() - 1))?;
    // The sequences start from the prompt's n likeliest next tokens, so they differ.
    let mut order: Vec<u32> = (0..logits.len() as u32).collect();
    order.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
    let starts = &order[..n];
    let mut rates = Vec::new();
    for one_pass in [true, false] {
        for s in 1..n {
            m.copy_prefix(0, s, prompt.len())?;
        }
        m.truncate(prompt.len());
        let mut next: Vec<u32> = starts.to_vec();
        let t = Instant::now();
        for _ in 0..args.tokens {
            let runs: Vec<(usize, &[u32])> = next
                .iter()
                .enumerate()
                .map(|(s, t)| (s, std::slice::from_ref(t)))
                .collect();
            let out = match one_pass {
                true => block_on(m.forward_slots(&runs))?,
                false => runs
                    .iter()
                    .map(|r| {
                        block_on(m.forward_slots(std::slice::from_ref(r))).map(|mut l| l.remove(0))
                    })
                    .collect::<std::result::Result<_, _>>()?,
            };
            next = out.iter().map(|l| super::argmax(l)).collect();
        }
        rates.push((n * args.tokens) as f64 / t.elapsed().as_secs_f64());
    }
    crate::stdout::line(serde_json::json!({
        "engine": "strait-wgpu",
        "batch": n,
        "decode_tokens": args.tokens,
        "one_pass_tok_s": rates[0],
        "pass_per_sequence_tok_s": rates[1],
        "one_pass_speedup": rates[0] / rates[1],
    }));
    Ok(())
}
