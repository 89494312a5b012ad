//! The page: status (WebGPU, model download), controls, streamed output, shortcuts.
//!
//! Stable hooks for tests and scripts: `main[data-phase]` (`checking`, `no-webgpu` (only
//! when `?backend=webgpu` asks for a WebGPU the browser lacks: without WebGPU the model
//! runs on the CPU, and `#webgpu-ok` says so in one line), `downloading`, `loading`,
//! `ready`, `running`, `failed`), `#run-status[data-state]`
//! (`idle`, `running`, `done`, `stopped`, `error`; `data-run` counts runs), `#result-text` (the finished run's
//! text), `#output .tok` (one per token, with `data-p` and, under masking, `data-z`),
//! `#backend` (the backend select: `auto`, `webgpu`, `cpu`; choosing reloads with
//! `?backend=`), `#backend-info[data-backend]` (`webgpu` or `cpu` once loaded, with the
//! adapter and GPU buffer size), `#reload-cpu` (shown after a WebGPU failure),
//! `#gpu-lost` with `#reload-model` (phase `gpu-lost`: the WebGPU device was lost).
//! `?pause=off` keeps CPU forward passes from pausing for the page (for measurements);
//! `?worker=off` keeps generations and the playground's real-model runs on the page's
//! thread instead of the sampling worker.

use crate::download::{self, Source};
use crate::engine::{
    Choice, Engine, Finished, Method, Output, Request, STOPPED, StopCheck, TokenOut,
};
use crate::playground::Playground;
use crate::webgpu::{self, GpuStatus};
use leptos::ev;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the default model is served (by `cargo xtask serve`); `?model=URL` overrides it.
const DEFAULT_MODEL_URL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
const DEFAULT_PROMPT: &str =
    "On what date did Apollo 11 land on the Moon? Answer with the date only.";
const DEFAULT_REGEX: &str = "[0-9]{4}-[0-9]{2}-[0-9]{2}";

thread_local! {
    /// The loaded model (the page is single-threaded; GPU handles are not `Send`).
    static ENGINE: RefCell<Option<Rc<Engine>>> = const { RefCell::new(None) };
}
/// The loaded model, once the page has loaded it.
pub fn engine() -> Option<Rc<Engine>> {
    ENGINE.with(|e| e.borrow().clone())
}

thread_local! {
    /// Counts models loaded, so caches keyed by the model notice a new one.
    static ENGINE_GENERATION: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Which model load the current engine comes from (a new file from disk bumps it).
pub fn engine_generation() -> u64 {
    ENGINE_GENERATION.with(|g| g.get())
}

/// Set by Stop / Esc, read by the running sampler at every token.
static STOP: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Checking,
    NoWebGpu(String),
    Downloading,
    Loading(String),
    Ready,
    Running,
    Failed(String),
    /// The WebGPU device was lost (driver reset, `destroy`): the model must be reloaded.
    GpuLost(String),
}

impl Phase {
    fn name(&self) -> &'static str {
        match self {
            Phase::Checking => "checking",
            Phase::NoWebGpu(_) => "no-webgpu",
            Phase::Downloading => "downloading",
            Phase::Loading(_) => "loading",
            Phase::Ready => "ready",
            Phase::Running => "running",
            Phase::Failed(_) => "failed",
            Phase::GpuLost(_) => "gpu-lost",
        }
    }
}

/// Timing of the current run, in milliseconds of `performance.now()`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Stats {
    started: f64,
    first: Option<f64>,
    last: f64,
    tokens: usize,
}

impl Stats {
    fn time_to_first_ms(&self) -> Option<f64> {
        self.first.map(|f| f - self.started)
    }
    /// Decode rate: tokens after the first over the time since the first.
    fn tokens_per_s(&self) -> Option<f64> {
        let first = self.first?;
        (self.tokens > 1 && self.last > first)
            .then(|| (self.tokens - 1) as f64 * 1000.0 / (self.last - first))
    }
}

/// `performance.now()` in milliseconds (in the page or in the sampling worker).
pub fn now_ms() -> f64 {
    use wasm_bindgen::JsCast;
    thread_local! {
        static PERFORMANCE: Option<web_sys::Performance> =
            js_sys::Reflect::get(&js_sys::global(), &"performance".into())
                .ok()
                .and_then(|p| p.dyn_into().ok());
    }
    PERFORMANCE.with(|p| p.as_ref().map_or(0.0, |p| p.now()))
}

/// The value of `?name=` in the page's address, if present.
fn query_param(name: &str) -> Option<String> {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|q| web_sys::UrlSearchParams::new_with_str(&q).ok())
        .and_then(|p| p.get(name))
}

/// The model URL the page loads (`?model=URL`, else the default).
pub fn model_url() -> String {
    query_param("model")
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| DEFAULT_MODEL_URL.to_string())
}

/// The backend asked for by `?backend=auto|webgpu|cpu` (default `auto`).
fn backend_choice() -> Choice {
    query_param("backend")
        .and_then(|b| Choice::parse(&b))
        .unwrap_or(Choice::Auto)
}

/// Whether `?worker=off` asks the page to sample on its own thread.
fn worker_choice() -> bool {
    query_param("worker").is_none_or(|v| v != "off")
}

/// Gives the page a sampling worker with its own copy of the model (for the quick form and
/// the playground's real-model runs), when the model
/// runs on the CPU (on WebGPU the page's thread only waits for the GPU) and `?worker=off`
/// is not set. Until it is ready, or if it fails, runs sample on the page's thread.
async fn start_sampling_worker(engine: Rc<Engine>) {
    use crate::worker::client;
    if engine.is_gpu() {
        client::stop("the model runs on WebGPU: the page's thread only waits for the GPU");
    } else if !worker_choice() {
        client::stop("?worker=off: the page samples on its own thread");
    } else {
        client::start(engine.model_bytes()).await;
    }
}

/// Whether `?pause=off` asks CPU forward passes not to pause for the page (see
/// `engine::FramePause`).
fn pausing_choice() -> bool {
    query_param("pause").is_none_or(|v| v != "off")
}

/// Reloads the page with `?backend=key` (other parameters kept).
fn reload_with_backend(key: &str) {
    let Some(w) = web_sys::window() else { return };
    let loc = w.location();
    let q = loc.search().unwrap_or_default();
    if let Ok(p) = web_sys::UrlSearchParams::new_with_str(&q) {
        p.set("backend", key);
        let path = loc.pathname().unwrap_or_default();
        let _ = loc.set_href(&format!("{path}?{}", String::from(p.to_string())));
    }
}

fn fmt_mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// What the sampler's tokens do to the page.
struct PageOutput {
    tokens: RwSignal<Vec<(usize, TokenOut)>>,
    stats: RwSignal<Stats>,
}

impl Output for PageOutput {
    fn token(&mut self, t: TokenOut) {
        let now = now_ms();
        self.stats.update(|s| {
            s.first.get_or_insert(now);
            s.last = now;
            s.tokens += 1;
        });
        self.tokens.update(|v| {
            let i = v.len();
            v.push((i, t));
        });
    }
}

/// The signals a model load reports to; `Copy`, so every handler can hold one.
#[derive(Clone, Copy)]
struct Loader {
    choice: Choice,
    gpu_info: RwSignal<String>,
    phase: RwSignal<Phase>,
    backend_info: RwSignal<(String, bool)>,
    model_info: RwSignal<String>,
    progress: RwSignal<(u64, Option<u64>)>,
    notes: RwSignal<Vec<String>>,
    /// Set when the browser has no WebGPU: every model then loads on the CPU path.
    no_gpu: RwSignal<bool>,
}

impl Loader {
    /// Checks for WebGPU, fetches the model at `url` (Cache Storage first) and installs it.
    async fn start(self, url: String) {
        let Loader {
            phase,
            progress,
            notes,
            model_info,
            gpu_info,
            ..
        } = self;
        match webgpu::detect().await {
            GpuStatus::Available(info) => gpu_info.set(info),
            GpuStatus::Missing(why) if self.choice == Choice::WebGpu => {
                phase.set(Phase::NoWebGpu(format!(
                    "?backend=webgpu asks for WebGPU, but {why}. {}",
                    webgpu::ENABLE_WEBGPU
                )));
                return;
            }
            GpuStatus::Missing(why) => {
                // Everything runs without WebGPU: the CPU forward pass in wasm.
                gpu_info.set(format!(
                    "none here ({why}); the model runs on the CPU (wasm)"
                ));
                self.no_gpu.set(true);
            }
        }
        phase.set(Phase::Downloading);
        let last_shown = std::cell::Cell::new(0u64);
        let on_progress = |done: u64, total: Option<u64>| {
            // Re-render at most every 0.5 MB and at the end.
            if done == 0 || done >= last_shown.get() + 500_000 || Some(done) == total {
                last_shown.set(done);
                progress.set((done, total));
            }
        };
        let on_note = |n: String| notes.update(|v| v.push(n));
        let (bytes, source) = match download::fetch_model(&url, &on_progress, &on_note).await {
            Ok(r) => r,
            Err(msg) => {
                phase.set(Phase::Failed(msg));
                return;
            }
        };
        let n = bytes.len() as u64;
        progress.set((n, Some(n)));
        model_info.set(match source {
            Source::Cache => format!("{} read from this browser's cache", fmt_mb(n)),
            Source::Network { cached: true } => format!("{} downloaded and cached", fmt_mb(n)),
            Source::Network { cached: false } => format!("{} downloaded (not cached)", fmt_mb(n)),
        });
        self.install(bytes).await;
    }

    /// Builds the engine from a GGUF file's bytes and makes it the page's model.
    async fn install(self, bytes: Vec<u8>) {
        let Loader {
            phase,
            backend_info,
            model_info,
            gpu_info,
            choice,
            ..
        } = self;
        phase.set(Phase::Loading("reading the model".into()));
        let choice = if self.no_gpu.get_untracked() {
            Choice::Cpu
        } else {
            choice
        };
        let set_status = |s: &str| phase.set(Phase::Loading(s.to_string()));
        match Engine::load(bytes, choice, &gpu_info.get_untracked(), &set_status).await {
            Ok(engine) => {
                backend_info.set((engine.backend_name(), engine.is_gpu()));
                let d = engine.describe();
                if !d.is_empty() {
                    model_info.update(|m| m.push_str(&format!(" · {d}")));
                }
                let engine = Rc::new(engine);
                ENGINE.with(|e| *e.borrow_mut() = Some(engine.clone()));
                ENGINE_GENERATION.with(|g| g.set(g.get() + 1));
                phase.set(Phase::Ready);
                start_sampling_worker(engine).await;
            }
            Err(msg) => phase.set(Phase::Failed(format!(
                "The model could not be loaded: {msg}"
            ))),
        }
    }

    /// Reads a GGUF file the user picked (`#model-file`) and loads it in place of the model.
    fn load_from_disk(self, ev: leptos::ev::Event) {
        use wasm_bindgen::JsCast;
        let phase = self.phase;
        let Some(file) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            .and_then(|i| i.files())
            .and_then(|f| f.get(0))
        else {
            return;
        };
        if matches!(
            phase.get_untracked(),
            Phase::Running | Phase::Loading(_) | Phase::Downloading
        ) {
            return;
        }
        spawn_local(async move {
            phase.set(Phase::Loading(format!("reading {}", file.name())));
            let bytes = match wasm_bindgen_futures::JsFuture::from(file.array_buffer()).await {
                Ok(buf) => js_sys::Uint8Array::new(&buf).to_vec(),
                Err(_) => {
                    phase.set(Phase::Failed(format!("{} could not be read", file.name())));
                    return;
                }
            };
            ENGINE.with(|e| *e.borrow_mut() = None);
            crate::worker::client::stop("a new model is loading");
            self.model_info.set(format!(
                "{} ({}) from disk",
                file.name(),
                fmt_mb(bytes.len() as u64)
            ));
            self.install(bytes).await;
        });
    }

    /// After a lost WebGPU device: drops the model and loads it again (from Cache Storage)
    /// on a new device.
    fn reload(self, url: String) {
        ENGINE.with(|e| *e.borrow_mut() = None);
        crate::worker::client::stop("the model is reloading");
        self.notes
            .update(|v| v.push("Reloading the model on a new WebGPU device.".into()));
        spawn_local(self.start(url));
    }

    /// Every second, asks the loaded model whether its WebGPU device is still usable; a lost
    /// one (at rest, or after the run it broke has ended) turns the page to
    /// [`Phase::GpuLost`], which offers to reload the model.
    fn watch_gpu(self) {
        let Ok(handle) = set_interval_with_handle(
            move || {
                if !matches!(self.phase.get_untracked(), Phase::Ready | Phase::Running) {
                    return;
                }
                if let Some(why) = engine().and_then(|e| e.gpu_failure()) {
                    self.phase.set(Phase::GpuLost(why));
                }
            },
            std::time::Duration::from_secs(1),
        ) else {
            return;
        };
        on_cleanup(move || handle.clear());
    }
}

/// `window.__straitLoseGpuDevice()`: destroys the model's WebGPU device, as a driver reset
/// would, so that tests can exercise the lost-device path; returns whether there was one.
fn expose_lose_device_hook() {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;
    let Some(w) = web_sys::window() else { return };
    let f = Closure::<dyn Fn() -> bool>::new(|| engine().is_some_and(|e| e.lose_gpu_device()));
    let _ = js_sys::Reflect::set(
        &w,
        &"__straitLoseGpuDevice".into(),
        f.as_ref().unchecked_ref(),
    );
    f.forget();
}

/// The page.
#[component]
pub fn App() -> impl IntoView {
    let phase = RwSignal::new(Phase::Checking);
    let gpu_info = RwSignal::new(String::new());
    let model_info = RwSignal::new(String::new());
    let choice = backend_choice();
    // Where the loaded model runs, and whether that is WebGPU.
    let backend_info = RwSignal::new((String::new(), false));
    let progress = RwSignal::new((0u64, None::<u64>));
    let notes = RwSignal::new(Vec::<String>::new());
    let url = model_url();
    let url_forget = url.clone();
    let url_reload = url.clone();

    let prompt = RwSignal::new(DEFAULT_PROMPT.to_string());
    let chat = RwSignal::new(true);
    let regex = RwSignal::new(DEFAULT_REGEX.to_string());
    let max_tokens = RwSignal::new("24".to_string());
    let seed = RwSignal::new("1".to_string());
    let method = RwSignal::new(Method::Lcd);

    let tokens = RwSignal::new(Vec::<(usize, TokenOut)>::new());
    let stats = RwSignal::new(Stats::default());
    let run_state = RwSignal::new("idle");
    // Counts Generate presses (tests wait for it to change).
    let runs = RwSignal::new(0u32);
    let run_msg = RwSignal::new(String::new());
    let result = RwSignal::new(None::<Finished>);

    crate::engine::set_pausing(pausing_choice());
    let loader = Loader {
        choice,
        gpu_info,
        phase,
        backend_info,
        model_info,
        progress,
        notes,
        no_gpu: RwSignal::new(false),
    };
    // Start-up: WebGPU, then the model; then watch the WebGPU device.
    spawn_local(loader.start(url.clone()));
    loader.watch_gpu();
    expose_lose_device_hook();

    let generate = move || {
        if phase.get_untracked() != Phase::Ready {
            return;
        }
        runs.update(|n| *n += 1);
        let max = match max_tokens.get_untracked().trim().parse::<usize>() {
            Ok(n) if (1..=4096).contains(&n) => n,
            _ => {
                run_state.set("error");
                run_msg.set("Max tokens must be a whole number from 1 to 4096.".into());
                return;
            }
        };
        let seed = match seed.get_untracked().trim().parse::<u64>() {
            Ok(s) => s,
            Err(_) => {
                run_state.set("error");
                run_msg
                    .set("The seed must be a whole number from 0 to 18446744073709551615.".into());
                return;
            }
        };
        let req = Request {
            prompt: prompt.get_untracked(),
            chat: chat.get_untracked(),
            regex: regex.get_untracked(),
            max_tokens: max,
            seed,
            method: method.get_untracked(),
        };
        let Some(engine) = ENGINE.with(|e| e.borrow().clone()) else {
            return;
        };
        STOP.store(false, Ordering::Relaxed);
        tokens.set(Vec::new());
        result.set(None);
        run_msg.set(String::new());
        run_state.set("running");
        stats.set(Stats {
            started: now_ms(),
            ..Stats::default()
        });
        phase.set(Phase::Running);
        spawn_local(async move {
            let mut out = PageOutput { tokens, stats };
            let stop_check: StopCheck = Rc::new(|| STOP.load(Ordering::Relaxed));
            // On the CPU path the sampling worker runs it when it is ready.
            let r = match crate::worker::client::ready() {
                Some(w) => w.generate(&req, Box::new(out), stop_check).await,
                None => engine.generate(&req, &mut out, stop_check).await,
            };
            match r {
                Ok(f) => {
                    let stopped = STOP.load(Ordering::Relaxed);
                    run_state.set(if stopped { "stopped" } else { "done" });
                    run_msg.set(if stopped {
                        "Stopped.".into()
                    } else {
                        let how = if f.gpu_masks {
                            format!("{}, masks computed on WebGPU", req.method.name())
                        } else {
                            req.method.name().to_string()
                        };
                        if f.ended_with_eos {
                            format!("Done ({how}): the model ended the sequence.")
                        } else {
                            format!(
                                "Done ({how}): reached max tokens ({}) without EOS.",
                                req.max_tokens
                            )
                        }
                    });
                    result.set(Some(f));
                }
                Err(msg) => {
                    if msg == STOPPED {
                        run_state.set("stopped");
                        run_msg.set("Stopped.".into());
                    } else {
                        run_state.set("error");
                        run_msg.set(msg);
                    }
                }
            }
            phase.set(Phase::Ready);
        });
    };
    let stop = move || {
        if phase.get_untracked() == Phase::Running {
            STOP.store(true, Ordering::Relaxed);
        }
    };

    // Ctrl+Enter typed in this section's controls (the playground handles it elsewhere);
    // Esc stops whatever runs.
    let keys = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.key() == "Enter"
            && (e.ctrl_key() || e.meta_key())
            && crate::playground::focus_in_generate_controls()
        {
            e.prevent_default();
            generate();
        } else if e.key() == "Escape" {
            e.prevent_default();
            stop();
        }
    });
    on_cleanup(move || keys.remove());

    let progress_text = move || {
        let (done, total) = progress.get();
        match total {
            Some(t) => format!(
                "{} of {} ({:.0}%)",
                fmt_mb(done),
                fmt_mb(t),
                done as f64 * 100.0 / t.max(1) as f64
            ),
            None => format!("{} of unknown size", fmt_mb(done)),
        }
    };
    let busy = move || phase.get() != Phase::Ready;

    view! {
        <main class="app" data-phase=move || phase.get().name()>
            <header>
                <h1>"Strait"</h1>
                <p class="tagline">"Constrained sampling from a small language model, running in this page."</p>
            </header>

            <section id="status" class="status">
                {move || match phase.get() {
                    Phase::NoWebGpu(msg) => view! {
                        <div id="webgpu-missing" class="error" role="alert">{msg}</div>
                    }.into_any(),
                    Phase::Checking => view! { <div class="muted">"Checking for WebGPU…"</div> }.into_any(),
                    _ => view! {
                        <div id="webgpu-ok" class="muted">"WebGPU: " {move || gpu_info.get()}</div>
                    }.into_any(),
                }}
                <Show when=move || matches!(phase.get(), Phase::Downloading | Phase::Loading(_))>
                    <div id="model-download">
                        <label for="model-progress">"Model " <code>{url.clone()}</code> ": "</label>
                        <progress
                            id="model-progress"
                            max=move || progress.get().1.unwrap_or(0).to_string()
                            value=move || progress.get().0.to_string()
                        ></progress>
                        " "
                        <span id="model-progress-text">{progress_text}</span>
                    </div>
                </Show>
                {move || match phase.get() {
                    Phase::Loading(s) => view! { <div id="model-loading" class="muted">"Loading: " {s} "…"</div> }.into_any(),
                    Phase::Failed(msg) => {
                        let gpu = msg.contains("WebGPU");
                        view! {
                            <div id="model-error" class="error" role="alert">{msg}
                                <Show when=move || gpu>
                                    " "
                                    <button id="reload-cpu" on:click=move |_| reload_with_backend("cpu")>"Reload on CPU (wasm)"</button>
                                </Show>
                            </div>
                        }.into_any()
                    }
                    Phase::GpuLost(msg) => {
                        let url = url_reload.clone();
                        view! {
                            <div id="gpu-lost" class="error" role="alert">
                                "The WebGPU device was lost (" {msg} "); the model is gone from the GPU. "
                                <button id="reload-model" on:click=move |_| loader.reload(url.clone())>"Reload the model"</button>
                                " "
                                <button id="reload-cpu" on:click=move |_| reload_with_backend("cpu")>"Reload on CPU (wasm)"</button>
                            </div>
                        }.into_any()
                    }
                    _ => ().into_any(),
                }}
                <Show when=move || !model_info.get().is_empty()>
                    <div id="model-info" class="muted">
                        "Model: " {move || model_info.get()} " "
                        <button id="forget-model" class="link" title="Delete the copy in this browser's Cache Storage; the next visit downloads it again"
                            on:click={
                                let url = url_forget.clone();
                                move |_| {
                                    let url = url.clone();
                                    spawn_local(async move {
                                        download::forget(&url).await;
                                        notes.update(|v| v.push("The cached model was deleted; the next visit downloads it again.".into()));
                                    });
                                }
                            }>
                            "forget the cached copy"
                        </button>
                    </div>
                </Show>
                <Show when=move || matches!(phase.get(), Phase::Ready | Phase::Failed(_) | Phase::GpuLost(_))>
                    <div id="model-file-row" class="muted">
                        <label>"Another llama-architecture GGUF from disk: "
                            <input id="model-file" type="file" accept=".gguf"
                                on:change=move |ev| loader.load_from_disk(ev)/>
                        </label>
                        " or from a URL: add " <code>"?model=URL"</code> " to the address."
                    </div>
                </Show>
                <div id="backend-row" class="muted">
                    <label>"Backend "
                        <select id="backend" on:change=move |e| reload_with_backend(&event_target_value(&e))>
                            <option value="auto" selected=choice == Choice::Auto>"auto (WebGPU unless software)"</option>
                            <option value="webgpu" selected=choice == Choice::WebGpu>"WebGPU"</option>
                            <option value="cpu" selected=choice == Choice::Cpu>"CPU (wasm)"</option>
                        </select>
                    </label>
                    " "
                    <span id="backend-info" data-backend=move || if backend_info.get().1 { "webgpu" } else if backend_info.get().0.is_empty() { "" } else { "cpu" }>
                        {move || backend_info.get().0}
                    </span>
                </div>
                <For
                    each=move || notes.get().into_iter().enumerate()
                    key=|(i, _)| *i
                    children=|(_, note)| view! { <div class="note">{note}</div> }
                />
            </section>

            <Playground/>

            <h2 class="section-title">"Quick generation with SmolLM2"</h2>
            <section id="controls" class="controls">
                <label class="wide">
                    "Prompt"
                    <textarea id="prompt" rows="3" bind:value=prompt></textarea>
                </label>
                <label class="check">
                    <input id="chat" type="checkbox" bind:checked=chat/>
                    " chat template"
                </label>
                <label class="wide">
                    "Regex (the output must match it entirely)"
                    <input id="regex" type="text" spellcheck="false" bind:value=regex/>
                </label>
                <div class="row">
                    <label>"Max tokens " <input id="max-tokens" type="number" min="1" max="4096" bind:value=max_tokens/></label>
                    <label>"Seed " <input id="seed" type="number" min="0" bind:value=seed/></label>
                    <fieldset class="method">
                        <legend>"Method"</legend>
                        <label>
                            <input type="radio" name="method" id="method-lm" value="lm"
                                prop:checked=move || method.get() == Method::Lm
                                on:change=move |_| method.set(Method::Lm)/>
                            " lm (unconstrained)"
                        </label>
                        <label>
                            <input type="radio" name="method" id="method-lcd" value="lcd"
                                prop:checked=move || method.get() == Method::Lcd
                                on:change=move |_| method.set(Method::Lcd)/>
                            " lcd (token masking)"
                        </label>
                    </fieldset>
                </div>
                <div class="row buttons">
                    <button id="generate" on:click=move |_| generate() disabled=busy>
                        "Generate"
                    </button>
                    <span class="shortcut"><kbd>"Ctrl"</kbd>"/"<kbd>"⌘"</kbd>" + "<kbd>"Enter"</kbd></span>
                    <button id="stop" on:click=move |_| stop() disabled=move || phase.get() != Phase::Running>
                        "Stop"
                    </button>
                    <span class="shortcut"><kbd>"Esc"</kbd></span>
                </div>
            </section>

            <section class="output-section">
                <div id="output" class="output" aria-live="polite">
                    <For
                        each=move || tokens.get()
                        key=|(i, _)| *i
                        children=|(_, t)| view! { <TokenView t=t/> }
                    />
                </div>
                <div id="run-status" data-state=move || run_state.get() data-run=move || runs.get().to_string()
                    class=move || if run_state.get() == "error" { "error" } else { "muted" }>
                    {move || run_msg.get()}
                    <Show when=move || run_state.get() == "error" && backend_info.get().1 && run_msg.get().contains("WebGPU")>
                        " "
                        <button id="reload-cpu" on:click=move |_| reload_with_backend("cpu")>"Reload on CPU (wasm)"</button>
                    </Show>
                </div>
                <div id="stats" class="muted">
                    {move || {
                        let s = stats.get();
                        if s.tokens == 0 {
                            return String::new();
                        }
                        let mut out = format!("{} tokens", s.tokens);
                        if let Some(ms) = s.time_to_first_ms() {
                            out.push_str(&format!(" · first token after {ms:.0} ms"));
                        }
                        if let Some(r) = s.tokens_per_s() {
                            out.push_str(&format!(" · {r:.1} tokens/s"));
                        }
                        out
                    }}
                </div>
                <Show when=move || result.get().is_some()>
                    {move || result.get().map(|f| view! {
                        <div class="result">
                            <span class="muted">"Output: "</span>
                            <pre id="result-text" data-valid=f.valid.to_string()>{f.text.clone()}</pre>
                            <span id="result-valid" class=if f.valid { "ok" } else { "muted" }>
                                {if f.valid { "matches the regex (and ended with EOS)" } else { "does not match the regex" }}
                            </span>
                        </div>
                    })}
                </Show>
            </section>
            <footer class="muted">
                "p: probability of the token under the model; Z: the probability mass the regex mask kept at that step (lcd)."
            </footer>
        </main>
    }
}

#[component]
fn TokenView(t: TokenOut) -> impl IntoView {
    let shown = if t.eos {
        "⟨eos⟩".to_string()
    } else {
        t.text.clone()
    };
    let title = match t.z {
        Some(z) => format!("token {} · p = {:.4} · Z = {:.4}", t.id, t.p, z),
        None => format!("token {} · p = {:.4}", t.id, t.p),
    };
    let label = match t.z {
        Some(z) => format!("{:.2} Z{:.2}", t.p, z),
        None => format!("{:.2}", t.p),
    };
    view! {
        <span class="tok" class:eos=t.eos title=title data-p=t.p.to_string()
            data-z=t.z.map(|z| z.to_string())>
            <span class="tok-text">{shown}</span>
            <span class="tok-p">{label}</span>
        </span>
    }
}
