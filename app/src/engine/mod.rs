//! The model and the samplers behind the page.
//!
//! The UI knows only this module's types: a [`Request`] in, [`TokenOut`]s streamed to an
//! [`Output`], a [`Finished`] or an error message at the end. Sampling is sampler-core's
//! (`lm` and `lcd`), the model is a [`backend::Backend`], the constraint sampler-core's regex constraint.
//! On WebGPU, `lcd` keeps the whole step on the GPU (`gpu_masks`: the WGSL mask kernel
//! from the tensorized automaton and masked sampling).

mod auto;
mod backend;
mod browser_turn;
mod gpu_masks;
mod request;
mod yielding;

pub use backend::{BackendLm, Choice};
pub use browser_turn::{set_pausing, yield_now};
pub use playground::on_call::OnCall;
pub use request::{Ended, Finished, Method, Output, Request, StopCheck, TokenOut};
pub use yielding::Yielding;

use crate::model_file::ModelFile;
use backend::{Backend, Place};
use sampler_core::samplers::{Io, Params, Sample, Sampler};
use sampler_core::{Event, EventSink, RegexConstraint, SampleError, SeededRng, Vocabulary};
use std::rc::Rc;

/// A loaded model ready to sample, or (the page's thread, when its sampling workers hold
/// the weights) its header and tokenizer alone.
pub struct Engine {
    held: Held,
    vocab: Vocabulary,
    /// The model file as the browser keeps it (the page's engine): what the sampling
    /// workers each read, and the weights' source when this thread must run the model.
    file: Option<ModelFile>,
}

/// What an engine holds of the model.
enum Held {
    /// The model on its backend.
    Weights(Backend),
    /// The file's header and tokenizer alone: the weights are in the sampling workers.
    Header(Box<lm::ModelHeader>),
}

impl Engine {
    /// Parses the GGUF file and builds the tokenizer and the weights; `status` shows what
    /// it is doing, `note` keeps a line for after the load (why the CPU took the model).
    /// What a sampling worker does with the bytes it is sent.
    pub async fn load(
        bytes: Vec<u8>,
        choice: Choice,
        adapter_hint: &str,
        status: &dyn Fn(&str),
        note: &dyn Fn(&str),
    ) -> Result<Engine, String> {
        status("parsing the GGUF file and building the tokenizer");
        // Let the page paint the status before the (blocking) parse.
        yield_now().await;
        let backend = Backend::load(bytes, choice, adapter_hint, status, note).await?;
        Ok(Engine::with_backend(backend, None))
    }

    /// The page's engine for `file`: placed by `choice` as [`Engine::load`] does, except
    /// that when the model is to run on the CPU and `in_workers` (the sampling workers will
    /// run it), only the header and the tokenizer are read (the file's first megabytes),
    /// and the page's thread keeps no copy of the weights.
    pub async fn open(
        file: ModelFile,
        choice: Choice,
        adapter_hint: &str,
        status: &dyn Fn(&str),
        note: &dyn Fn(&str),
        in_workers: bool,
    ) -> Result<Engine, String> {
        let place = Backend::place(choice, adapter_hint, status, note).await?;
        if in_workers && matches!(place, Place::Cpu) {
            status("reading the model's header and building the tokenizer");
            yield_now().await;
            let header = file.header().await?;
            let vocab = header.tokenizer().vocabulary();
            return Ok(Engine {
                held: Held::Header(Box::new(header)),
                vocab,
                file: Some(file),
            });
        }
        status("reading the model file");
        let bytes = file.read_all().await?.to_vec();
        status("parsing the GGUF file and building the tokenizer");
        yield_now().await;
        let backend = Backend::load_placed(bytes, choice, place, status, note).await?;
        Ok(Engine::with_backend(backend, Some(file)))
    }

    /// A sampling worker's engine over the lead's share of a model split by rows between
    /// the workers: it runs every product with the other shares' holders.
    pub fn from_share(
        header: lm::ModelHeader,
        share: lm::shard::ShardFile,
    ) -> Result<Engine, String> {
        Ok(Engine::with_backend(
            Backend::cpu_share(header, share)?,
            None,
        ))
    }

    fn with_backend(backend: Backend, file: Option<ModelFile>) -> Engine {
        let vocab = backend.model().tokenizer().vocabulary();
        Engine {
            held: Held::Weights(backend),
            vocab,
            file,
        }
    }

    /// This engine with the weights on the page's thread (the CPU path): itself, or for an
    /// engine whose weights are in the sampling workers, a new one read from the file
    /// (the runs the page's thread must make itself: no worker could start, or all died).
    pub async fn with_weights(self: &Rc<Self>) -> Result<Rc<Engine>, String> {
        if self.has_weights() {
            return Ok(self.clone());
        }
        let file = self
            .file
            .clone()
            .ok_or("the model's weights are in the sampling workers alone")?;
        let bytes = file.read_all().await?.to_vec();
        yield_now().await;
        let backend = Backend::load(bytes, Choice::Cpu, "", &|_| {}, &|_| {}).await?;
        Ok(Rc::new(Engine::with_backend(backend, Some(file))))
    }

    /// Whether the weights are on this thread (else only in the sampling workers).
    pub fn has_weights(&self) -> bool {
        self.backend().is_some()
    }

    /// The backend, where the engine holds the weights.
    fn backend(&self) -> Option<&Backend> {
        match &self.held {
            Held::Weights(b) => Some(b),
            Held::Header(_) => None,
        }
    }

    /// The model file, as the browser keeps it (the page's engine).
    pub fn file(&self) -> Option<&ModelFile> {
        self.file.as_ref()
    }

    fn tokenizer(&self) -> &lm::Tokenizer {
        match &self.held {
            Held::Weights(b) => b.model().tokenizer(),
            Held::Header(h) => h.tokenizer(),
        }
    }

    /// One line about the model (name, size, where it runs).
    pub fn describe(&self) -> String {
        let (summary, c) = match &self.held {
            Held::Weights(b) => (b.model().summary(), b.model().config()),
            Held::Header(h) => (h.summary(), h.config()),
        };
        format!(
            "{} · {} blocks, d={}, vocab {}, context {} · runs on {}",
            summary,
            c.n_layers,
            c.d_model,
            c.vocab_size,
            c.context_length,
            self.backend_name()
        )
    }

    /// What the split products' helpers read this engine's rows from (the whole file or
    /// the share held), where it holds the weights.
    pub fn file_rows(&self) -> Option<&dyn lm::shard::FileRows> {
        self.backend().map(|b| b.model().file_rows())
    }

    /// The header of the model file: the page's engine's, or the model's own.
    pub fn gguf(&self) -> &lm::gguf::Gguf {
        match &self.held {
            Held::Weights(b) => b.model().gguf(),
            Held::Header(h) => h.gguf(),
        }
    }

    /// The backend, or why this engine cannot run the model (its weights are in the
    /// sampling workers: [`Engine::with_weights`] reads them).
    fn weights(&self) -> Result<&Backend, String> {
        self.backend()
            .ok_or_else(|| "the model's weights are in the sampling workers alone".to_string())
    }

    /// Whether the model runs on WebGPU.
    pub fn is_gpu(&self) -> bool {
        self.backend().is_some_and(Backend::is_gpu)
    }

    /// Why WebGPU can no longer run the model (the device was lost or failed), if so;
    /// `None` on the CPU path and while a run holds the GPU model.
    pub fn gpu_failure(&self) -> Option<String> {
        self.backend().and_then(Backend::gpu_failure)
    }

    /// Destroys the WebGPU device as a driver reset would; `false` on the CPU path. Only
    /// for exercising the lost-device path (the page exposes it to its tests).
    pub fn lose_gpu_device(&self) -> bool {
        self.backend().is_some_and(Backend::lose_gpu_device)
    }

    /// Where the model runs, e.g. `CPU (wasm)` or `WebGPU (adapter, MB of buffers)`.
    pub fn backend_name(&self) -> String {
        match &self.held {
            Held::Weights(b) => b.name(),
            Held::Header(_) => "CPU (wasm), in the sampling workers".into(),
        }
    }

    /// The model's vocabulary (token bytes, EOS).
    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }

    /// Whether the model file has a chat template (`tokenizer.chat_template`).
    pub fn has_chat_template(&self) -> bool {
        self.tokenizer().chat_template().is_some()
    }

    /// The prompt's tokens (wrapped in the chat template when `chat`).
    pub fn prompt_tokens(
        &self,
        prompt: &str,
        chat: bool,
    ) -> Result<Vec<sampler_core::TokenId>, String> {
        if chat && !self.has_chat_template() {
            return Err(
                "this model file has no chat template: untick \"chat template\" to \
                        give the model the prompt as it is"
                    .into(),
            );
        }
        self.tokenizer()
            .encode_prompt(prompt, chat)
            .map_err(|e| format!("the prompt cannot be tokenized: {e}"))
    }

    /// The model conditioned on `prompt`, for the playground's samplers; it yields to the
    /// browser before every forward pass and ends its call once `stop` says so.
    pub fn lm(
        &self,
        prompt: Vec<sampler_core::TokenId>,
        stop: StopCheck,
    ) -> Result<BackendLm, String> {
        self.weights()?
            .conditioned(prompt, stop)
            .map_err(|e| e.to_string())
    }

    /// Runs one request, streaming tokens to `out`; `Err(Ended::Stopped)` once `stop` says so.
    pub async fn generate(
        &self,
        req: &Request,
        out: &mut dyn Output,
        stop: StopCheck,
    ) -> Result<Finished, Ended> {
        let constraint =
            RegexConstraint::from_regex(&req.regex, &self.vocab).map_err(|e| e.to_string())?;
        let backend = self.weights()?;
        let prompt = self
            .tokenizer()
            .encode_prompt(&req.prompt, req.chat)
            .map_err(|e| format!("the prompt cannot be tokenized: {e}"))?;
        if req.method == Method::Lcd
            && let Some(automaton) = constraint.tensorized()
            && let Some(loan) = backend.lend_gpu().map_err(|e| e.to_string())?
        {
            return gpu_masks::generate(
                loan,
                &self.vocab,
                &constraint,
                automaton,
                req,
                &prompt,
                out,
                stop,
            )
            .await;
        }
        let mut lm = backend
            .conditioned(prompt, stop.clone())
            .map_err(|e| e.to_string())?;
        let params = Params {
            n: 1,
            max_tokens: req.max_tokens,
            ..Params::default()
        };
        let mut sink = PageSink {
            vocab: &self.vocab,
            out,
            stop,
        };
        let mut sample: Option<Sample> = None;
        let run = Sampler::new(req.method.sampler())
            .params(&params)
            .vocabulary(&self.vocab)
            .run(
                &mut lm,
                &constraint,
                Io {
                    rng: &mut SeededRng::new(req.seed),
                    sink: &mut sink,
                    out: &mut |s| sample = Some(s.clone()),
                },
            )
            .await;
        match run {
            Ok(counters) => {
                let s = sample.ok_or("the sampler finished without a sample")?;
                Ok(Finished {
                    text: String::from_utf8_lossy(&self.vocab.decode(&s.tokens)).into_owned(),
                    valid: s.valid,
                    ended_with_eos: s.tokens.last() == Some(&self.vocab.eos()),
                    forward_tokens: counters.forward_tokens,
                    gpu_masks: false,
                })
            }
            Err(SampleError::Cancelled) => Err(Ended::Stopped),
            Err(e) => Err(e.to_string().into()),
        }
    }
}

/// Turns the sampler's `Token` events into [`TokenOut`]s for the page, its `Rejected`
/// ones into [`Output::rejected`], and the advice of an exact sampler chosen by hand (an
/// `Estimate` it did not act on) into [`Output::unlikely`].
struct PageSink<'a> {
    vocab: &'a Vocabulary,
    out: &'a mut dyn Output,
    stop: StopCheck,
}

impl EventSink for PageSink<'_> {
    fn emit(&mut self, event: Event) {
        if let Event::Rejected { .. } = event {
            self.out.rejected();
            return;
        }
        if let Event::Estimate {
            log_mass,
            chosen: false,
            ..
        } = event
        {
            self.out.unlikely(log_mass.exp());
            return;
        }
        if let Event::Token {
            token,
            logp,
            kept_mass,
            ..
        } = event
        {
            let eos = token == self.vocab.eos();
            let text = if eos {
                String::new()
            } else {
                String::from_utf8_lossy(self.vocab.bytes(token)).into_owned()
            };
            self.out.token(TokenOut {
                text,
                id: token,
                p: logp.exp(),
                z: kept_mass,
                eos,
            });
        }
    }

    fn cancelled(&self) -> bool {
        (self.stop)()
    }
}
