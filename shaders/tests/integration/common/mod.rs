//! What the kernel tests share between their two targets: natively each test is a plain
//! `#[test]` that blocks on the GPU (lavapipe where there is no GPU); on wasm32 it is a
//! `#[wasm_bindgen_test]` run in headless Chromium by `cargo xtask test` (WebGPU on
//! SwiftShader), awaiting the browser's callbacks. Timings go to stderr natively and to
//! the browser console (which wasm-bindgen-test-runner prints) in the page.
#![allow(dead_code)]

use shaders::Gpu;

/// Declares `async fn` test bodies as tests on both targets.
macro_rules! gpu_tests {
    ($(async fn $name:ident() $body:block)*) => {$(
        #[cfg(not(target_arch = "wasm32"))]
        #[test]
        fn $name() {
            sampler_core::block_on(async $body)
        }
        #[cfg(target_arch = "wasm32")]
        #[wasm_bindgen_test::wasm_bindgen_test]
        async fn $name() $body
    )*};
}
pub(crate) use gpu_tests;

/// Prints a line of figures: stderr natively, the console in the browser.
macro_rules! say {
    ($($arg:tt)*) => {{
        #[cfg(not(target_arch = "wasm32"))]
        eprintln!($($arg)*);
        #[cfg(target_arch = "wasm32")]
        wasm_bindgen_test::console_log!($($arg)*);
    }};
}
pub(crate) use say;

/// Milliseconds since some fixed point (`performance.now()` in the browser, where
/// `std::time::Instant` is unavailable).
pub fn now_ms() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        let perf = js_sys::Reflect::get(&js_sys::global(), &"performance".into())
            .expect("a global `performance`");
        let now: js_sys::Function = js_sys::Reflect::get(&perf, &"now".into())
            .expect("performance.now")
            .into();
        now.call0(&perf)
            .expect("performance.now()")
            .as_f64()
            .expect("a number")
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::sync::OnceLock;
        use std::time::Instant;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
    }
}

/// The adapter, described: wgpu's name natively; in the browser the `GPUAdapterInfo`
/// vendor and architecture (wgpu leaves the name empty there), e.g. `google swiftshader`.
pub async fn adapter_description(gpu: &Gpu) -> String {
    #[cfg(target_arch = "wasm32")]
    {
        let _ = gpu;
        browser_adapter_info()
            .await
            .unwrap_or_else(|| "unknown WebGPU adapter".into())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        gpu.adapter_name()
    }
}

#[cfg(target_arch = "wasm32")]
async fn browser_adapter_info() -> Option<String> {
    use js_sys::Reflect;
    use wasm_bindgen_futures::JsFuture;
    let navigator = Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    let gpu = Reflect::get(&navigator, &"gpu".into()).ok()?;
    let request: js_sys::Function = Reflect::get(&gpu, &"requestAdapter".into()).ok()?.into();
    let promise: js_sys::Promise = request.call0(&gpu).ok()?.into();
    let adapter = JsFuture::from(promise).await.ok()?;
    let info = Reflect::get(&adapter, &"info".into()).ok()?;
    let field = |k: &str| {
        Reflect::get(&info, &k.into())
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default()
    };
    Some(
        format!(
            "{} {} {}",
            field("vendor"),
            field("architecture"),
            field("description")
        )
        .trim()
        .to_string(),
    )
}

/// The GPU, or a panic that says how to get one.
pub async fn gpu() -> Gpu {
    Gpu::new().await.unwrap_or_else(|e| {
        panic!(
            "no GPU adapter for the kernel tests: {e}. Natively install Mesa lavapipe and set \
             VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json; in the browser \
             Chromium needs --enable-unsafe-webgpu --enable-features=Vulkan (webdriver.json)"
        )
    })
}

/// A xorshift generator for test data.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    /// Half bits of a value of magnitude in [2^-8, 2^-1), random sign.
    pub fn half(&mut self) -> [u8; 2] {
        let r = self.next();
        let exp = 7 + (r % 7) as u16;
        let bits = ((r >> 8) as u16 & 0x8000) | (exp << 10) | ((r >> 20) as u16 & 0x3FF);
        bits.to_le_bytes()
    }
}

/// The product strategies to test on `gpu`: one invocation per row, a workgroup per row,
/// and a workgroup per row reduced with subgroup sums where the device has subgroups (where
/// it has not, a line says the subgroup form went untested here).
pub fn matvec_strategies(gpu: &shaders::Gpu) -> Vec<shaders::MatVecStrategy> {
    use shaders::MatVecStrategy::*;
    let mut s = vec![InvocationPerRow, WorkgroupPerRow];
    if gpu.has_subgroups() {
        s.push(SubgroupPerRow);
    } else {
        say!(
            "subgroups: not offered by the adapter ({}); the SubgroupPerRow products are untested here",
            gpu.adapter_name().trim()
        );
    }
    s
}

/// The KV cache formats a test runs: f32 always, f16 where the device has `shader-f16`
/// (and a line saying the f16 variant is untested where it does not).
pub fn kv_formats(gpu: &shaders::Gpu) -> Vec<shaders::KvFormat> {
    if gpu.has_f16() {
        return vec![shaders::KvFormat::F32, shaders::KvFormat::F16];
    }
    say!(
        "shader-f16: not offered by the adapter ({}); the f16 KV cache kernels are untested here",
        gpu.adapter_name().trim()
    );
    vec![shaders::KvFormat::F32]
}

/// `v` rounded to the nearest f16 (what an f16 cache holds).
pub fn round_f16(v: f32) -> f32 {
    half::f16::from_f32(v).to_f32()
}

/// The bytes of a cache holding `v` in `kv`'s format.
pub fn cache_bytes(kv: shaders::KvFormat, v: &[f32]) -> Vec<u8> {
    match kv {
        shaders::KvFormat::F32 => shaders::f32_bytes(v),
        shaders::KvFormat::F16 => v
            .iter()
            .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
            .collect(),
    }
}

/// Reads `len` cached values of `kv`'s format from the start of `buffer`, widened to f32.
pub async fn read_cache(
    gpu: &shaders::Gpu,
    kv: shaders::KvFormat,
    buffer: &wgpu::Buffer,
    len: usize,
) -> Vec<f32> {
    let words = gpu.read_words(buffer, 0, kv.words(len)).await.unwrap();
    match kv {
        shaders::KvFormat::F32 => words.into_iter().map(f32::from_bits).collect(),
        shaders::KvFormat::F16 => words
            .into_iter()
            .flat_map(|w| [w as u16, (w >> 16) as u16])
            .map(|h| half::f16::from_bits(h).to_f32())
            .take(len)
            .collect(),
    }
}
