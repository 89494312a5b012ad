//! Loading the model: WebGPU detection, the download (Cache Storage first), the engine on
//! WebGPU or the CPU, a file from disk, a lost WebGPU device and its reload; and the status
//! section that shows all of it.
//!
//! Hooks: `main[data-phase]` (see [`Phase::name`]), `#webgpu-ok` / `#webgpu-missing`,
//! `#model-progress`, `#model-error`, `#reload-cpu`, `#gpu-lost` with `#reload-model`,
//! `#model-info`, `#forget-model`, `#model-file`, `#backend`, `#backend-info[data-backend]`
//! (`webgpu` or `cpu` once loaded).

use crate::disclosure::Disclosure;
use crate::download::{self, Source};
use crate::engine::{Choice, Engine};
use crate::format::fmt_mb;
use crate::model_file::ModelFile;
use crate::page_state::{engine, reload_with_backend, set_engine, worker_choice};
use crate::webgpu::{self, GpuStatus};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::rc::Rc;

/// Where the page is, from start-up to a loaded model (and a run of the quick form).
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// Looking for WebGPU.
    Checking,
    /// `?backend=webgpu` asked for a WebGPU the browser lacks (the message).
    NoWebGpu(String),
    /// Fetching the model file.
    Downloading,
    /// Building the model (what it is doing now).
    Loading(String),
    /// A model is loaded and nothing runs.
    Ready,
    /// A quick-form generation runs.
    Running,
    /// A link names a model on another origin: nothing is fetched until the user answers.
    Asking {
        /// The model's URL.
        url: String,
        /// Its origin, as the question shows it.
        origin: String,
        /// The size its server announces (a HEAD request), once known.
        size: Option<u64>,
    },
    /// The model could not be fetched or loaded (the message).
    Failed(String),
    /// The WebGPU device was lost (driver reset, `destroy`): the model must be reloaded.
    GpuLost(String),
}

impl Phase {
    /// The `main[data-phase]` name.
    pub fn name(&self) -> &'static str {
        match self {
            Phase::Checking => "checking",
            Phase::NoWebGpu(_) => "no-webgpu",
            Phase::Asking { .. } => "asking",
            Phase::Downloading => "downloading",
            Phase::Loading(_) => "loading",
            Phase::Ready => "ready",
            Phase::Running => "running",
            Phase::Failed(_) => "failed",
            Phase::GpuLost(_) => "gpu-lost",
        }
    }
}

/// The signals a model load reports to; `Copy`, so every handler can hold one.
#[derive(Clone, Copy)]
pub struct Loader {
    /// The backend `?backend=` asked for.
    pub choice: Choice,
    /// What the page knows of WebGPU here (one line).
    pub gpu_info: RwSignal<String>,
    /// Where the page is (`main[data-phase]`).
    pub phase: RwSignal<Phase>,
    /// Where the loaded model runs, and whether that is WebGPU.
    pub backend_info: RwSignal<(String, bool)>,
    /// The model's size, source and description.
    pub model_info: RwSignal<String>,
    /// Bytes fetched and the total, when known.
    pub progress: RwSignal<(u64, Option<u64>)>,
    /// Notes for the user (cache, reload).
    pub notes: RwSignal<Vec<String>>,
    /// Set when the browser has no WebGPU: every model then loads on the CPU path.
    pub no_gpu: RwSignal<bool>,
}

impl Loader {
    /// Checks for WebGPU, then fetches the model at `url` (Cache Storage first) and
    /// installs it, or first asks, for a link's model on another origin.
    pub async fn start(self, url: String) {
        let Loader {
            phase, gpu_info, ..
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
        // A link's model on another origin: ask first (with the size its server announces),
        // fetch nothing before the answer; the buttons go on with `fetch_and_install`.
        if let Some(origin) = crate::page_state::model_needs_consent(&url) {
            phase.set(Phase::Asking {
                url: url.clone(),
                origin,
                size: None,
            });
            let size = download::announced_size(&url).await;
            phase.update(|p| {
                if let Phase::Asking { size: s, .. } = p {
                    *s = size;
                }
            });
            return;
        }
        self.fetch_and_install(url).await;
    }

    /// Fetches the model at `url` (Cache Storage first) and installs it.
    pub async fn fetch_and_install(self, url: String) {
        let Loader {
            phase,
            progress,
            notes,
            model_info,
            ..
        } = self;
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
        let (file, source) = match download::fetch_model(&url, &on_progress, &on_note).await {
            Ok(r) => r,
            Err(msg) => {
                phase.set(Phase::Failed(msg));
                return;
            }
        };
        let n = file.size();
        progress.set((n, Some(n)));
        model_info.set(match source {
            Source::Cache => format!("{} read from this browser's cache", fmt_mb(n)),
            Source::Network { cached: true } => format!("{} downloaded and cached", fmt_mb(n)),
            Source::Network { cached: false } => format!("{} downloaded (not cached)", fmt_mb(n)),
        });
        self.install(file).await;
    }

    /// Builds the engine from a GGUF file and makes it the page's model; on the CPU path
    /// with sampling workers, the page's thread reads only the file's header (the workers
    /// each read the whole file).
    async fn install(self, file: ModelFile) {
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
        let notes = self.notes;
        let note = move |s: &str| notes.update(|v| v.push(s.to_string()));
        let hint = gpu_info.get_untracked();
        match Engine::open(file, choice, &hint, &set_status, &note, worker_choice()).await {
            Ok(engine) => {
                backend_info.set((engine.backend_name(), engine.is_gpu()));
                let d = engine.describe();
                if !d.is_empty() {
                    model_info.update(|m| m.push_str(&format!(" · {d}")));
                }
                let engine = Rc::new(engine);
                set_engine(Some(engine.clone()));
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
        if let Some(warning) =
            lm::page_memory::page_load_warning(file.size() as u64, device_memory())
        {
            let asked = format!("{}: {warning}\n\nLoad it anyway?", file.name());
            let go = web_sys::window()
                .and_then(|w| w.confirm_with_message(&asked).ok())
                .unwrap_or(false);
            if !go {
                self.notes
                    .update(|v| v.push(format!("{} was not loaded: {warning}", file.name())));
                return;
            }
        }
        spawn_local(async move {
            phase.set(Phase::Loading(format!("reading {}", file.name())));
            let name = file.name();
            let file = ModelFile::from_blob(file.into());
            set_engine(None);
            crate::worker::client::stop("a new model is loading");
            self.model_info
                .set(format!("{name} ({}) from disk", fmt_mb(file.size())));
            self.install(file).await;
        });
    }

    /// After a lost WebGPU device: drops the model and loads it again (from Cache Storage)
    /// on a new device.
    fn reload(self, url: String) {
        set_engine(None);
        crate::worker::client::stop("the model is reloading");
        self.notes
            .update(|v| v.push("Reloading the model on a new WebGPU device.".into()));
        spawn_local(self.start(url));
    }

    /// Every second, asks the loaded model whether its WebGPU device is still usable; a lost
    /// one (at rest, or after the run it broke has ended) turns the page to
    /// [`Phase::GpuLost`], which offers to reload the model.
    pub fn watch_gpu(self) {
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

/// `navigator.hardwareConcurrency`: the logical cores the browser reports.
fn hardware_concurrency() -> Option<usize> {
    let n = web_sys::window()?.navigator().hardware_concurrency();
    (n.is_finite() && n >= 1.0).then_some(n as usize)
}

/// `navigator.deviceMemory` in GiB (Chromium; rounded down, at most 8), where reported.
fn device_memory() -> Option<f64> {
    let navigator = web_sys::window()?.navigator();
    js_sys::Reflect::get(&navigator, &"deviceMemory".into())
        .ok()?
        .as_f64()
}

/// Gives the page a pool of sampling workers, each with its own copy of the model (for the
/// quick form and the playground's real-model runs), when the model
/// runs on the CPU (on WebGPU the page's thread only waits for the GPU) and `?worker=off`
/// is not set. Until it is ready, or if it fails, runs sample on the page's thread.
async fn start_sampling_worker(engine: Rc<Engine>) {
    use crate::worker::client;
    if engine.is_gpu() {
        client::stop("the model runs on WebGPU: the page's thread only waits for the GPU");
    } else if !worker_choice() {
        client::stop("?worker=off: the page samples on its own thread");
    } else {
        let Some(file) = engine.file().cloned() else {
            client::stop("the page's model has no file to start workers from");
            return;
        };
        let plan = lm::page_memory::worker_pool_plan(
            file.size(),
            hardware_concurrency(),
            device_memory(),
            crate::page_state::workers_choice(),
        );
        client::start(file, plan).await;
    }
}

/// `window.__straitLoseGpuDevice()`: destroys the model's WebGPU device, as a driver reset
/// would, so that tests can exercise the lost-device path; returns whether there was one.
pub fn expose_lose_device_hook() {
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

/// The status section: WebGPU, the model's download and load, errors with their way out
/// (reload on the CPU, reload after a lost device), the model from disk, the backend.
#[component]
pub fn ModelStatus(loader: Loader, url: String) -> impl IntoView {
    let Loader {
        choice,
        gpu_info,
        phase,
        backend_info,
        model_info,
        progress,
        notes,
        ..
    } = loader;
    let url_forget = url.clone();
    let url_reload = url.clone();
    let progress_text = move || progress_words(progress.get());
    view! {
        <section id="status" class="status">
            {move || match phase.get() {
                Phase::NoWebGpu(msg) => view! {
                    <div id="webgpu-missing" class="error" role="alert">{msg}</div>
                }.into_any(),
                Phase::Checking => view! { <div class="muted">"Checking for WebGPU…"</div> }.into_any(),
                Phase::Ready | Phase::Running => view! {
                    <div id="model-ready" class="plain">
                        {move || if backend_info.get().1 {
                            "The model is ready: it runs on this device's graphics processor (WebGPU)."
                        } else {
                            "The model is ready: it runs on this device's processor (WebAssembly)."
                        }}
                    </div>
                }.into_any(),
                _ => ().into_any(),
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
                Phase::Asking { url, origin, size } => {
                    let size = size.map_or_else(
                        || "its size is not announced".to_string(),
                        |n| format!("{} by its server's headers", fmt_mb(n)),
                    );
                    let default = crate::page_state::default_model_url();
                    view! {
                        <div id="model-ask" class="ask" role="alertdialog" aria-labelledby="model-ask-text">
                            <p id="model-ask-text">
                                "This link asks to download a model from another site, "
                                <strong id="model-ask-origin">{origin}</strong>
                                " (" <span id="model-ask-size">{size}</span> "). Nothing has been fetched from it."
                            </p>
                            <code class="ask-url">{url.clone()}</code>
                            <p>
                                <button id="model-ask-yes" on:click=move |_| spawn_local(loader.fetch_and_install(url.clone()))>
                                    "Download it"
                                </button>
                                " "
                                <button id="model-ask-no" class="secondary" on:click=move |_| spawn_local(loader.fetch_and_install(default.clone()))>
                                    "Use this page's own model instead"
                                </button>
                            </p>
                        </div>
                    }.into_any()
                }
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
            <Disclosure id="engine" summary="Engineering details: WebGPU, the model's tensors, the backend">
            <Show when=move || !matches!(phase.get(), Phase::Checking | Phase::NoWebGpu(_))>
                <div id="webgpu-ok" class="muted">"WebGPU: " {move || gpu_info.get()}</div>
            </Show>
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
                        <option value="auto" selected=choice == Choice::Auto>"auto (the faster here, timed once)"</option>
                        <option value="webgpu" selected=choice == Choice::WebGpu>"WebGPU"</option>
                        <option value="cpu" selected=choice == Choice::Cpu>"CPU (wasm)"</option>
                    </select>
                </label>
                " "
                <span id="backend-info" data-backend=move || if backend_info.get().1 { "webgpu" } else if backend_info.get().0.is_empty() { "" } else { "cpu" }>
                    {move || backend_info.get().0}
                </span>
            </div>
            </Disclosure>
            // What went differently than planned (the cache refused the model, the CPU took
            // it from WebGPU): shown unfolded, once each.
            <For
                each=move || notes.get().into_iter().enumerate()
                key=|(i, _)| *i
                children=|(_, note)| view! { <div class="note" role="status">{note}</div> }
            />
        </section>
    }
}

/// The model's download as the page provides it to the playground, where a run that waits
/// for the model shows how far it has come.
#[derive(Clone, Copy)]
pub struct DownloadProgress(pub RwSignal<(u64, Option<u64>)>);

/// Bytes fetched of the total in words (`37.0 MB of 98.4 MB (38%)`).
pub fn progress_words((done, total): (u64, Option<u64>)) -> String {
    match total {
        Some(t) => format!(
            "{} of {} ({:.0}%)",
            fmt_mb(done),
            fmt_mb(t),
            done as f64 * 100.0 / t.max(1) as f64
        ),
        None => format!("{} of unknown size", fmt_mb(done)),
    }
}
