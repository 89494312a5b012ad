//! `auto` on a hardware WebGPU adapter: the page times a few decode tokens on WebGPU and
//! on the CPU path (wasm), once per adapter and model, keeps the faster, remembers both
//! figures in `localStorage["strait.auto.v1|<adapter>|<model>"]`, and says why in one line.
//!
//! Test hooks (`window.__straitAuto`, an object the e2e tests set before the page loads;
//! read as data): `hardware: true` treats a software adapter as hardware (so SwiftShader
//! measures), `cpuFactor: k` multiplies the CPU's measured time by `k` (to force the WebGPU
//! branch), `breakGpu: true` makes the WebGPU path fail to compile a kernel.

use super::browser_turn::yield_now;
use crate::clock::now_ms;
use lm::Model;
use lm::gpu::GpuModel;
use sampler_core::{LmError, TokenId};

/// Tokens timed on each path, after one untimed token (the GPU's first compiles and warms).
const TIMED_TOKENS: usize = 3;
/// The prompt both paths prefill before the timed tokens.
const PROMPT: &str = "The quick brown fox jumps over the lazy dog.";

/// Milliseconds per decoded token on each path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// On WebGPU, logits read back as every run does.
    pub gpu_ms: f64,
    /// On the CPU path (one thread, as each sampling worker runs).
    pub cpu_ms: f64,
}

impl Timing {
    /// Whether WebGPU is at least as fast as the CPU path.
    pub fn gpu_wins(&self) -> bool {
        self.gpu_ms <= self.cpu_ms
    }

    /// The page's one line on the choice: which path, both figures, and how to override.
    pub fn explain(&self, adapter: &str, remembered: bool) -> String {
        let when = match remembered {
            true => "measured on an earlier visit and remembered",
            false => "measured just now, once for this device and model",
        };
        let (winner, loser, other) = match self.gpu_wins() {
            true => (
                format!("WebGPU ({adapter})"),
                "on the CPU (wasm)",
                "?backend=cpu",
            ),
            false => ("the CPU (wasm)".to_string(), "on WebGPU", "?backend=webgpu"),
        };
        let (fast, slow) = match self.gpu_wins() {
            true => (self.gpu_ms, self.cpu_ms),
            false => (self.cpu_ms, self.gpu_ms),
        };
        format!(
            "Auto chose {winner}: {fast:.1} ms a token against {slow:.1} ms {loser} \
             ({when}; {other} forces the other)."
        )
    }
}

/// What `window.__straitAuto` asks for (everything off, a factor of 1, when it is absent).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hooks {
    /// Treat a software adapter as hardware.
    pub hardware: bool,
    /// Factor on the CPU's measured time.
    pub cpu_factor: f64,
    /// Make the WebGPU path fail to compile.
    pub break_gpu: bool,
}

impl Hooks {
    /// Reads `window.__straitAuto` (numbers and booleans only; anything else is ignored).
    pub fn read() -> Hooks {
        // An absent hook reads as an empty object: one parse, so "no hook" is exactly the
        // hooks' neutral values (a factor of 1).
        let o = web_sys::window()
            .and_then(|w| js_sys::Reflect::get(&w, &"__straitAuto".into()).ok())
            .filter(|o| o.is_object())
            .unwrap_or_else(|| js_sys::Object::new().into());
        let get = |k: &str| js_sys::Reflect::get(&o, &k.into()).unwrap_or_default();
        Hooks {
            hardware: get("hardware").as_bool() == Some(true),
            cpu_factor: get("cpuFactor")
                .as_f64()
                .filter(|f| f.is_finite() && *f > 0.0)
                .unwrap_or(1.0),
            break_gpu: get("breakGpu").as_bool() == Some(true),
        }
    }
}

/// The key of one adapter and model's timing.
pub fn key(adapter: &str, model: &Model) -> String {
    let c = model.config();
    // The page's version too: a new release's kernels are timed again.
    format!(
        "strait.auto.v1|{}|{adapter}|{} bytes, {} blocks, d={}",
        env!("CARGO_PKG_VERSION"),
        model.bytes().len(),
        c.n_layers,
        c.d_model
    )
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// The timing remembered under `key`, if any (stored as `"gpu_ms cpu_ms"`).
pub fn recall(key: &str) -> Option<Timing> {
    let v = storage()?.get_item(key).ok().flatten()?;
    let mut it = v
        .split(' ')
        .map(|s| s.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0));
    let (gpu_ms, cpu_ms) = (it.next()??, it.next()??);
    Some(Timing { gpu_ms, cpu_ms })
}

/// Remembers `t` under `key` (quietly nothing where storage is refused).
pub fn remember(key: &str, t: &Timing) {
    if let Some(s) = storage() {
        let _ = s.set_item(key, &format!("{} {}", t.gpu_ms, t.cpu_ms));
    }
}

fn argmax(row: &[f32]) -> TokenId {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &v)| {
            if v > bv { (i, v) } else { (bi, bv) }
        })
        .0 as TokenId
}

/// The prompt both paths prefill before their timed tokens.
pub fn prompt(model: &Model) -> Result<Vec<TokenId>, LmError> {
    let prompt = model
        .tokenizer()
        .encode(PROMPT)
        .map_err(|e| LmError(e.to_string()))?;
    match prompt.is_empty() {
        true => Err(LmError(format!(
            "the tokenizer gives no tokens for {PROMPT:?}"
        ))),
        false => Ok(prompt),
    }
}

/// Milliseconds per decoded token on WebGPU after `prompt` (logits read back, as a run
/// reads them); leaves the GPU's cache empty.
pub async fn time_gpu(gpu: &mut GpuModel, prompt: &[TokenId]) -> Result<f64, LmError> {
    let mut next = argmax(&gpu.forward(prompt, prompt.len() - 1).await?);
    next = argmax(&gpu.forward(&[next], 0).await?);
    let t0 = now_ms();
    for _ in 0..TIMED_TOKENS {
        next = argmax(&gpu.forward(&[next], 0).await?);
    }
    let ms = (now_ms() - t0) / TIMED_TOKENS as f64;
    gpu.truncate(0);
    // A coarse clock must not make a figure of 0 (which `recall` would refuse).
    Ok(ms.max(1e-3))
}

/// Milliseconds per decoded token on the CPU path (one thread, as each sampling worker
/// runs) after `prompt`, times the hooks' factor; the prompt runs a token at a time with a
/// turn for the browser after each, so the page keeps painting.
pub async fn time_cpu(model: &Model, prompt: &[TokenId], hooks: &Hooks) -> Result<f64, LmError> {
    let mut cache = model.new_cache();
    let mut logits = Vec::new();
    for &t in prompt {
        logits = model.forward(&mut cache, &[t], 0)?;
        yield_now().await;
    }
    let mut next = argmax(&logits);
    next = argmax(&model.forward(&mut cache, &[next], 0)?);
    // Each token timed on its own: the turns given to the browser between them are not.
    let mut total = 0.0;
    for _ in 0..TIMED_TOKENS {
        let t0 = now_ms();
        next = argmax(&model.forward(&mut cache, &[next], 0)?);
        total += now_ms() - t0;
        yield_now().await;
    }
    Ok((total / TIMED_TOKENS as f64).max(1e-3) * hooks.cpu_factor)
}
