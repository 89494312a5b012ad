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

use backend::Backend;
use sampler_core::samplers::{Io, Params, Sample, Sampler};
use sampler_core::{Event, EventSink, RegexConstraint, SampleError, SeededRng, Vocabulary};

/// A loaded model ready to sample.
pub struct Engine {
    backend: Backend,
    vocab: Vocabulary,
}

impl Engine {
    /// Parses the GGUF file and builds the tokenizer and the weights; `status` shows what
    /// it is doing, `note` keeps a line for after the load (why the CPU took the model).
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
        let vocab = backend.model().tokenizer().vocabulary();
        Ok(Engine { backend, vocab })
    }

    /// One line about the model (name, size, where it runs).
    pub fn describe(&self) -> String {
        let m = self.backend.model();
        let c = m.config();
        format!(
            "{} · {} blocks, d={}, vocab {}, context {} · runs on {}",
            m.summary(),
            c.n_layers,
            c.d_model,
            c.vocab_size,
            c.context_length,
            self.backend.name()
        )
    }

    /// The GGUF file's bytes (what the sampling worker gets a copy of).
    pub fn model_bytes(&self) -> &[u8] {
        self.backend.model().bytes()
    }

    /// Whether the model runs on WebGPU.
    pub fn is_gpu(&self) -> bool {
        self.backend.is_gpu()
    }

    /// Why WebGPU can no longer run the model (the device was lost or failed), if so;
    /// `None` on the CPU path and while a run holds the GPU model.
    pub fn gpu_failure(&self) -> Option<String> {
        self.backend.gpu_failure()
    }

    /// Destroys the WebGPU device as a driver reset would; `false` on the CPU path. Only
    /// for exercising the lost-device path (the page exposes it to its tests).
    pub fn lose_gpu_device(&self) -> bool {
        self.backend.lose_gpu_device()
    }

    /// Where the model runs, e.g. `CPU (wasm)` or `WebGPU (adapter, MB of buffers)`.
    pub fn backend_name(&self) -> String {
        self.backend.name()
    }

    /// The model's vocabulary (token bytes, EOS).
    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }

    /// Whether the model file has a chat template (`tokenizer.chat_template`).
    pub fn has_chat_template(&self) -> bool {
        self.backend.model().tokenizer().chat_template().is_some()
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
        self.backend
            .model()
            .tokenizer()
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
        self.backend
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
        let tokenizer = self.backend.model().tokenizer();
        let prompt = tokenizer
            .encode_prompt(&req.prompt, req.chat)
            .map_err(|e| format!("the prompt cannot be tokenized: {e}"))?;
        if req.method == Method::Lcd
            && let Some(automaton) = constraint.tensorized()
            && let Some(loan) = self.backend.lend_gpu().map_err(|e| e.to_string())?
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
        let mut lm = self
            .backend
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
