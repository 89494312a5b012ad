//! `strait bench`: figures printed side by side in one run (never asserted). `decode` and
//! `prefill` are here; each other benchmark is a module of its own, and [`harness`] holds
//! what they share.

mod faithful;
mod gpu;
mod harness;
mod hmm;
mod kernels;
mod masks;
mod rejection;
mod samplers;
mod smc;
mod timed;

use crate::args::BenchArgs;
use crate::failure::{Result, fail};
use lm::Model;
use lm::forward::Activations;
use std::time::Instant;

/// Runs the benchmark `what` names.
pub fn run(args: &BenchArgs) -> Result<()> {
    match args.what.as_str() {
        "decode" => decode(args),
        "faithful" => faithful::run(args),
        "gpu" => gpu::run(args),
        "masks" => masks::run(args),
        "samplers" => samplers::run(args),
        "smc" => smc::run(args).map(|table| headless::note!("{table}")),
        "hmm" => hmm::run(args).map(crate::stdout::line),
        "kernels" => kernels::run(args),
        "rejection" => rejection::run(args),
        other => fail(format!(
            "unknown benchmark {other:?}; expected `decode`, `faithful`, `gpu`, `masks`, `samplers`, \
             `smc`, `hmm`, `kernels` or `rejection`"
        )),
    }
}

/// Prefill and decode tokens/s of our CPU forward pass (f32 and 8-bit activations, on
/// the thread pool), of the wgpu forward pass when there is an adapter, of the burn engine
/// (`burn_speed`), and of llama.cpp, or only the engines `--engines` names
/// at the same thread count when its Python binding is importable (`STRAIT_LLAMA_PYTHON`,
/// default `python3`); then the ratios, ours over llama.cpp's.
fn decode(args: &BenchArgs) -> Result<()> {
    let on = |engine: &str| args.engines.is_empty() || args.engines.iter().any(|e| e == engine);
    if args.tokens == 0 {
        return crate::failure::fail("--tokens: decode at least 1 token");
    }
    // Engines that could not run; an error at the end when `--engines` named them.
    let mut skipped: Vec<&str> = Vec::new();
    let mut model = Model::load(&args.model)?;
    let prompt = model.tokenizer().encode(
        "The history of constrained decoding begins with grammars that restrict what a \
         language model may write, token by token, so that every output parses.",
    )?;
    let threads = lm::forward::threads();
    let kernels = lm::forward::Kernels::best().name;
    let precisions = match (on("strait-cpu"), args.activations) {
        (false, _) => vec![],
        (true, Some(a)) => vec![a],
        (true, None) => vec![Activations::F32, Activations::Q8],
    };
    let mut ours = Vec::new();
    for act in precisions {
        model.set_activations(act);
        let (prefill, decode) = cpu_speed(&model, &prompt, args.tokens)?;
        crate::stdout::line(serde_json::json!({
            "engine": "strait-cpu",
            "activations": act.name(),
            "kernels": kernels,
            "threads": threads,
            "prompt_tokens": prompt.len(),
            "prefill_tok_s": prefill,
            "decode_tokens": args.tokens,
            "decode_tok_s": decode,
        }));
        ours.push((act, prefill, decode));
    }
    model.set_activations(Activations::F32);
    let model = std::sync::Arc::new(model);
    let wgsl = match on("strait-wgpu").then(|| gpu_decode(&model, &prompt, args)) {
        None => None,
        Some(Ok(line)) => {
            crate::stdout::line(&line);
            Some(line)
        }
        Some(Err(e)) => {
            headless::note!("strait: GPU decode skipped: {e}");
            skipped.push("strait-wgpu");
            None
        }
    };
    let burn = if on("burn-flex") || on("burn-wgpu") {
        lm::burn::devices()
    } else {
        Vec::new()
    };
    if on("burn-wgpu") && !burn.iter().any(|(_, name)| *name == "burn-wgpu") {
        skipped.push("burn-wgpu");
        headless::note!(
            "strait: burn-wgpu decode skipped: {}",
            if cfg!(feature = "burn-wgpu") {
                "no wgpu adapter"
            } else {
                "built without `--features burn-wgpu`"
            }
        );
    }
    for (device, name) in burn.into_iter().filter(|(_, name)| on(name)) {
        if let Err(e) = burn_speed(
            &model,
            &prompt,
            args.tokens,
            &ours,
            wgsl.as_ref(),
            device,
            name,
        ) {
            headless::note!("strait: {name} decode skipped: {e}");
            skipped.push(name);
        }
    }
    if on("llama.cpp") {
        llama_cpp_comparison(args, &prompt, threads, &ours, &mut skipped)?;
    }
    if args.engines.is_empty() || skipped.is_empty() {
        return Ok(());
    }
    crate::failure::fail(format!(
        "--engines: {} could not run (the reason is above)",
        skipped.join(", ")
    ))
}

/// llama.cpp's line through its Python binding, then ours over its; `llama.cpp` joins
/// `skipped` when the binding cannot run.
fn llama_cpp_comparison(
    args: &BenchArgs,
    prompt: &[u32],
    threads: usize,
    ours: &[(Activations, f64, f64)],
    skipped: &mut Vec<&str>,
) -> Result<()> {
    match llama_cpp(&args.model, prompt, args.tokens, threads) {
        Ok(line) => {
            let theirs: serde_json::Value = serde_json::from_str(&line)
                .map_err(|e| crate::failure::Failure(format!("llama.cpp's line: {e}")))?;
            crate::stdout::line(&theirs);
            let (p, d) = (
                theirs["prefill_tok_s"].as_f64(),
                theirs["decode_tok_s"].as_f64(),
            );
            for &(act, prefill, decode) in ours {
                crate::stdout::line(serde_json::json!({
                    "ratio": format!("strait-cpu ({}) / llama.cpp", act.name()),
                    "threads": threads,
                    "prefill": p.map(|p| prefill / p),
                    "decode": d.map(|d| decode / d),
                }));
            }
        }
        Err(e) => {
            headless::note!(
                "strait: llama.cpp comparison skipped: {e} (`cargo xtask bench decode` installs it)"
            );
            skipped.push("llama.cpp");
        }
    }
    Ok(())
}

/// Prefill and greedy-decode tokens/s of the CPU forward pass: the best of three runs
/// each, so a moment of noise on a shared machine does not decide the figure.
fn cpu_speed(model: &Model, prompt: &[u32], tokens: usize) -> Result<(f64, f64)> {
    let (mut prefill, mut decode) = (0f64, 0f64);
    for _ in 0..3 {
        let mut cache = model.new_cache();
        let t0 = Instant::now();
        let logits = model.forward(&mut cache, prompt, prompt.len() - 1)?;
        prefill = prefill.max(prompt.len() as f64 / t0.elapsed().as_secs_f64());
        let mut next = argmax(&logits);
        let t1 = Instant::now();
        for _ in 0..tokens {
            next = argmax(&model.forward(&mut cache, &[next], 0)?);
        }
        decode = decode.max(tokens as f64 / t1.elapsed().as_secs_f64());
    }
    Ok((prefill, decode))
}

/// The same measurement on the wgpu forward pass (lavapipe where there is no GPU), with
/// the GPU options the flags give.
fn gpu_decode(model: &Model, prompt: &[u32], args: &BenchArgs) -> Result<serde_json::Value> {
    use sampler_core::block_on;
    let tokens = args.tokens;
    let gpu = block_on(shaders::Gpu::new())?;
    let adapter = gpu.adapter_name();
    let t_load = Instant::now();
    let mut m = block_on(lm::gpu::GpuModel::with_options(
        std::sync::Arc::new(gpu),
        model,
        prompt.len() + tokens + 1,
        1,
        args.gpu_args.options(),
    ))?;
    let load_s = t_load.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let logits = block_on(m.forward(prompt, prompt.len() - 1))?;
    let prefill_s = t0.elapsed().as_secs_f64();
    let mut next = argmax(&logits);
    let before = shaders::dispatches();
    let t1 = Instant::now();
    for _ in 0..tokens {
        next = argmax(&block_on(m.forward(&[next], 0))?);
    }
    let decode_s = t1.elapsed().as_secs_f64();
    let dispatches = shaders::dispatches() - before;
    Ok(serde_json::json!({
        "engine": "strait-wgpu",
        "adapter": adapter,
        "upload_s": load_s,
        "gpu_buffer_bytes": m.buffer_bytes(),
        "kv_cache": m.kv_format().name(),
        "fold_output": m.folds_output(),
        "weight_bytes": m.weight_bytes(),
        "prompt_tokens": prompt.len(),
        "prefill_tok_s": prompt.len() as f64 / prefill_s,
        "decode_tokens": tokens,
        "decode_tok_s": tokens as f64 / decode_s,
        // Counted where the kernels record them (`shaders::dispatches`).
        "dispatches_per_token": dispatches as f64 / tokens.max(1) as f64,
    }))
}

/// One burn device's line (burn's CPU backend, or its wgpu backend when compiled in with
/// an adapter), and its ratio: burn over our engine on the same hardware (our CPU pass in
/// f32, our WGSL pass).
fn burn_speed(
    model: &std::sync::Arc<Model>,
    prompt: &[u32],
    tokens: usize,
    ours: &[(Activations, f64, f64)],
    wgsl: Option<&serde_json::Value>,
    device: lm::burn::Device,
    name: &str,
) -> Result<()> {
    let t_load = Instant::now();
    let mut m = lm::burn::BurnModel::new(model.clone(), device, name);
    let load_s = t_load.elapsed().as_secs_f64();
    let (mut prefill, mut decode) = (0f64, 0f64);
    // Best of three, as the CPU figures (the first run also compiles the kernels).
    for _ in 0..3 {
        m.truncate(0);
        let t0 = Instant::now();
        let logits = sampler_core::block_on(m.forward(prompt, prompt.len() - 1))?;
        prefill = prefill.max(prompt.len() as f64 / t0.elapsed().as_secs_f64());
        let mut next = argmax(&logits);
        let t1 = Instant::now();
        for _ in 0..tokens {
            next = argmax(&sampler_core::block_on(m.forward(&[next], 0))?);
        }
        decode = decode.max(tokens as f64 / t1.elapsed().as_secs_f64());
    }
    crate::stdout::line(serde_json::json!({
        "engine": name,
        "upload_s": load_s,
        "prompt_tokens": prompt.len(),
        "prefill_tok_s": prefill,
        "decode_tokens": tokens,
        "decode_tok_s": decode,
    }));
    let (versus, p, d) = if name == "burn-flex" {
        let f32_run = ours.iter().find(|o| o.0 == Activations::F32);
        (
            "strait-cpu (f32)",
            f32_run.map(|o| o.1),
            f32_run.map(|o| o.2),
        )
    } else {
        let f = |k: &str| wgsl.and_then(|w| w[k].as_f64());
        ("strait-wgpu", f("prefill_tok_s"), f("decode_tok_s"))
    };
    crate::stdout::line(serde_json::json!({
        "ratio": format!("{name} / {versus}"),
        "prefill": p.map(|p| prefill / p),
        "decode": d.map(|d| decode / d),
    }));
    Ok(())
}

fn argmax(row: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in row.iter().enumerate() {
        if x > row[best] {
            best = i;
        }
    }
    best as u32
}

/// The same measurement through llama-cpp-python on `threads` threads (best of three).
fn llama_cpp(model: &str, prompt: &[u32], tokens: usize, threads: usize) -> Result<String> {
    let python = std::env::var("STRAIT_LLAMA_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = format!(
        r#"
import json, time, llama_cpp
m = llama_cpp.Llama(model_path={model:?}, n_ctx=512, n_threads={threads}, n_threads_batch={threads}, n_batch=512, verbose=False, logits_all=False)
p = {prompt:?}
pre, dec = 0.0, 0.0
for _ in range(3):
    m.reset()
    t0 = time.perf_counter(); m.eval(p); pre = max(pre, len(p) / (time.perf_counter() - t0))
    t1 = time.perf_counter()
    for _ in range({tokens}):
        nxt = int(m.scores[m.n_tokens - 1].argmax()); m.eval([nxt])
    dec = max(dec, {tokens} / (time.perf_counter() - t1))
print(json.dumps({{"engine": "llama.cpp", "threads": {threads}, "prompt_tokens": len(p), "prefill_tok_s": pre, "decode_tokens": {tokens}, "decode_tok_s": dec}}))
"#
    );
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .output()
        .map_err(|e| crate::failure::Failure(format!("{python}: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return fail(err.lines().last().unwrap_or("failed").to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
