//! [`Model`]: what JavaScript holds — a GGUF model on our CPU forward pass or WebGPU engine,
//! a toy model or a function — and its calls, each taking the one request of every front end.

use crate::events::{JsSink, serializer};
use crate::function_lm::JsFunctionModel;
use crate::turn::{TurnPause, now_ms};
use hmm_burn::{BurnHmm, Precision};
use sampler_core::exact::{Limits, enumerate};
use sampler_core::hmm::{CpuHmm, HmmEngine};
use sampler_core::samplers::{Io, Sample, Sampler};
use sampler_core::toy::ToyModel;
use sampler_core::{
    DynLm, Enumerated, Record, SampleError, SampleRequest, Scored, SeededRng, TokenId, Vocabulary,
};
use serde::Serialize;
use std::rc::Rc;
use std::sync::Arc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// Most sequences `enumerate` lists before refusing (as `strait enumerate`).
const MAX_SEQUENCES: usize = 100_000;

/// `enumerate`'s longest sequence when the request does not say (as `strait enumerate`).
const ENUMERATE_MAX_TOKENS: usize = 16;

/// What the model is.
enum Kind {
    /// A GGUF file on our CPU forward pass or our WebGPU engine.
    Gguf(lm::Backend),
    /// An analytic model (`gsk`, `random:SEED`, ...).
    Toy(ToyModel),
    /// The caller's function.
    Function(JsFunctionModel),
}

/// A model the samplers run over.
#[wasm_bindgen]
pub struct Model {
    kind: Rc<Kind>,
    vocab: Vocabulary,
    /// Where the model runs, in words.
    engine: String,
}

#[wasm_bindgen]
impl Model {
    /// A GGUF file's bytes on `backend`: `cpu` (our forward pass in wasm, f32 activations),
    /// `webgpu` (our WGSL kernels; an error when there is no WebGPU), or `auto` (WebGPU on a
    /// hardware adapter, else the CPU). `adapter_hint` is the browser's description of its
    /// adapter (vendor and architecture), which wgpu does not see.
    #[wasm_bindgen(js_name = fromBytes)]
    pub async fn from_bytes(
        bytes: Vec<u8>,
        backend: String,
        adapter_hint: String,
    ) -> Result<Model, JsError> {
        let model = lm::Model::from_bytes(bytes).map_err(|e| JsError::new(&e.to_string()))?;
        let vocab = model.tokenizer().vocabulary();
        let model = Arc::new(model);
        let (backend, engine) = crate::backend::place(model, &backend, &adapter_hint)
            .await
            .map_err(|e| JsError::new(&e))?;
        Ok(Model {
            kind: Rc::new(Kind::Gguf(backend)),
            vocab,
            engine,
        })
    }

    /// A toy model by name: `gsk` (the skewed grammar's model), `random:SEED`,
    /// `letters:N:SEED`.
    pub fn toy(name: &str) -> Result<Model, JsError> {
        let full = if name.starts_with("toy:") {
            name.to_string()
        } else {
            format!("toy:{name}")
        };
        let toy = ToyModel::parse(&full).map_err(|e| JsError::new(&e))?;
        Ok(Model {
            vocab: toy.vocabulary(),
            kind: Rc::new(Kind::Toy(toy)),
            engine: "an analytic toy model".into(),
        })
    }

    /// Any model, as a function: `vocab` holds each token's bytes (`Uint8Array`s or
    /// strings, UTF-8), `eos` the end token's id, and `logprobs(prefixes)` answers a batch.
    #[wasm_bindgen(js_name = fromFunction)]
    pub fn from_function(
        vocab: js_sys::Array,
        eos: u32,
        logprobs: js_sys::Function,
    ) -> Result<Model, JsError> {
        let tokens = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if let Some(s) = t.as_string() {
                    Ok(s.into_bytes())
                } else if let Some(b) = t.dyn_ref::<js_sys::Uint8Array>() {
                    Ok(b.to_vec())
                } else {
                    Err(JsError::new(&format!(
                        "vocab[{i}] is neither a string nor a Uint8Array"
                    )))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let vocab = sampler_core::function_model::vocabulary(tokens, &[eos])
            .map_err(|e| JsError::new(&e))?;
        Ok(Model {
            kind: Rc::new(Kind::Function(JsFunctionModel {
                vocab: vocab.clone(),
                logprobs,
            })),
            vocab,
            engine: "your function".into(),
        })
    }

    /// How many tokens the vocabulary holds.
    #[wasm_bindgen(getter, js_name = vocabSize)]
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The end token's id.
    #[wasm_bindgen(getter)]
    pub fn eos(&self) -> u32 {
        self.vocab.eos()
    }

    /// Where the model runs: `CPU (wasm)`, `WebGPU (adapter)`, a toy or a function.
    #[wasm_bindgen(getter)]
    pub fn engine(&self) -> String {
        self.engine.clone()
    }

    /// `gguf`, `toy` or `function`.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        match &*self.kind {
            Kind::Gguf(_) => "gguf",
            Kind::Toy(_) => "toy",
            Kind::Function(_) => "function",
        }
        .into()
    }

    /// A token's bytes.
    pub fn token(&self, id: u32) -> Result<Vec<u8>, JsError> {
        if id as usize >= self.vocab.len() {
            return Err(JsError::new(&format!(
                "token {id} is outside the vocabulary of {}",
                self.vocab.len()
            )));
        }
        Ok(self.vocab.bytes(id).to_vec())
    }

    /// The model's next-token log-probabilities after each prefix (the generated tokens:
    /// `prompt`, wrapped in the chat template when `chat`, comes first): one
    /// `Float64Array` per prefix. The raw model, for programs that sample themselves.
    pub fn logprobs(&self, prefixes: js_sys::Array, prompt: String, chat: bool) -> js_sys::Promise {
        let kind = self.kind.clone();
        future_to_promise(async move {
            let prefixes: Vec<Vec<TokenId>> = prefixes
                .iter()
                .enumerate()
                .map(|(i, p)| match p.dyn_ref::<js_sys::Uint32Array>() {
                    Some(a) => Ok(a.to_vec()),
                    None if js_sys::Array::is_array(&p) => js_sys::Array::from(&p)
                        .iter()
                        .map(|t| {
                            t.as_f64()
                                .filter(|t| *t >= 0.0 && t.fract() == 0.0)
                                .map(|t| t as TokenId)
                        })
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            err(format!("prefix {i} holds something that is not a token id"))
                        }),
                    None => Err(err(format!(
                        "prefix {i} is neither a Uint32Array nor an array of token ids"
                    ))),
                })
                .collect::<Result<_, _>>()?;
            let prompt = prompt_tokens(&kind, &prompt, chat).map_err(err)?;
            let longest = prefixes.iter().map(Vec::len).max().unwrap_or(0);
            fits(&kind, prompt.len(), longest + 1).map_err(err)?;
            let mut lm = lm_for(&kind, prompt).map_err(err)?;
            let vocab_size = sampler_core::LanguageModel::vocab_size(&lm);
            if let Some(t) = prefixes
                .iter()
                .flatten()
                .find(|&&t| t as usize >= vocab_size)
            {
                return Err(err(format!(
                    "token {t} is outside the vocabulary of {vocab_size}"
                )));
            }
            let refs: Vec<&[TokenId]> = prefixes.iter().map(Vec::as_slice).collect();
            let rows = sampler_core::LanguageModel::logprobs_batch(&mut lm, &refs)
                .await
                .map_err(|e| err(e.to_string()))?;
            let out = js_sys::Array::new();
            for r in rows {
                out.push(&js_sys::Float64Array::from(r.as_slice()));
            }
            Ok(out.into())
        })
    }

    /// Samples under the request's constraint (snake_case keys: the package's wrapper
    /// converts): resolves to the records, or rejects with what went wrong. `on_event`
    /// receives every event as it happens; `signal` (an `AbortSignal`) stops the run.
    pub fn sample(&self, request: JsValue, on_event: JsValue, signal: JsValue) -> js_sys::Promise {
        let (kind, vocab) = (self.kind.clone(), self.vocab.clone());
        future_to_promise(async move {
            let request: SampleRequest = read(request)?;
            let mut sink = JsSink::new(on_event, signal).map_err(err)?;
            let result = sample(&kind, &vocab, &request, &mut sink).await;
            if let Some(thrown) = sink.thrown.take() {
                return Err(thrown);
            }
            let records = result.map_err(err)?;
            records
                .serialize(&serializer())
                .map_err(|e| err(e.to_string()))
        })
    }

    /// Exact P^L of a finite language: every token sequence with its probability, most
    /// probable first (`max_tokens` 16 unless the request says).
    pub fn enumerate(&self, request: JsValue) -> js_sys::Promise {
        let (kind, vocab) = (self.kind.clone(), self.vocab.clone());
        future_to_promise(async move {
            let given = js_sys::Reflect::has(&request, &"max_tokens".into()).unwrap_or(false);
            let mut request: SampleRequest = read(request)?;
            if !given {
                request.max_tokens = ENUMERATE_MAX_TOKENS;
            }
            let rows = exact(&kind, &vocab, &request).await.map_err(err)?;
            rows.serialize(&serializer())
                .map_err(|e| err(e.to_string()))
        })
    }

    /// log P(text · EOS | prompt), token by token. The request holds `text`, and `prompt`
    /// and `chat` as in `sample`.
    pub fn score(&self, text: String, prompt: String, chat: bool) -> js_sys::Promise {
        let (kind, vocab) = (self.kind.clone(), self.vocab.clone());
        future_to_promise(async move {
            let scored = score(&kind, &vocab, text, &prompt, chat)
                .await
                .map_err(err)?;
            scored
                .serialize(&serializer())
                .map_err(|e| err(e.to_string()))
        })
    }
}

/// A JavaScript `Error` with `message`.
fn err(message: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&message.to_string()).into()
}

/// The request from its JavaScript object; an unknown key or a wrong type is named.
fn read(request: JsValue) -> Result<SampleRequest, JsValue> {
    if !request.is_object() {
        return Err(err(
            "the request must be an object: { regex, prompt, method, n, ... }",
        ));
    }
    let known = SampleRequest::field_names();
    for key in js_sys::Object::keys(request.unchecked_ref::<js_sys::Object>()).iter() {
        let key = key.as_string().unwrap_or_default();
        if !known.contains(&key) {
            let mut names: Vec<String> = known.iter().map(|k| camel(k)).collect();
            names.sort();
            return Err(err(format!(
                "the request: unknown option `{}` (the options: {})",
                camel(&key),
                names.join(", ")
            )));
        }
    }
    serde_wasm_bindgen::from_value(request).map_err(|e| err(format!("the request: {e}")))
}

/// `max_tokens` → `maxTokens`: a request's names as JavaScript spells them.
fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The model conditioned on the prompt's tokens, for one run.
fn lm_for<'a>(kind: &'a Kind, prompt: Vec<TokenId>) -> Result<DynLm<'a>, String> {
    Ok(match kind {
        Kind::Gguf(b) => Box::new(b.lend::<TurnPause>(prompt).map_err(|e| e.to_string())?),
        Kind::Toy(t) => Box::new(t.lm()),
        Kind::Function(f) => Box::new(f.lm()),
    })
}

/// The prompt's tokens: a GGUF model needs a prompt (wrapped in its chat template when
/// `chat`); toy and function models take none.
fn prompt_tokens(kind: &Kind, prompt: &str, chat: bool) -> Result<Vec<TokenId>, String> {
    match kind {
        Kind::Gguf(b) => {
            if prompt.is_empty() {
                return Err("a prompt is required with a GGUF model".into());
            }
            b.model()
                .tokenizer()
                .encode_prompt(prompt, chat)
                .map_err(|e| e.to_string())
        }
        Kind::Function(_) if !prompt.is_empty() || chat => Err(
            "a FunctionModel holds its own context: give no prompt (the prefixes it is asked \
             about are the generated tokens)"
                .into(),
        ),
        _ => Ok(Vec::new()),
    }
}

/// `Err` when a prompt of `prompt` tokens and `max_tokens` generated ones outgrow a GGUF
/// model's context (as the command line refuses them).
fn fits(kind: &Kind, prompt: usize, max_tokens: usize) -> Result<(), String> {
    let Kind::Gguf(b) = kind else { return Ok(()) };
    let Some((context, what)) = b.context() else {
        return Ok(());
    };
    let longest = prompt.saturating_add(max_tokens.saturating_sub(1));
    if longest > context {
        return Err(format!(
            "a prompt of {prompt} tokens and up to {max_tokens} generated tokens need \
             {longest} positions, more than {what} of {context}: lower maxTokens"
        ));
    }
    Ok(())
}

/// Where P-GCD's HMM work runs.
fn hmm_engine(name: &str) -> Result<Box<dyn HmmEngine>, String> {
    Ok(match name {
        "burn-flex" => Box::new(BurnHmm::flex(Precision::F64)),
        "burn-flex-f32" => Box::new(BurnHmm::flex(Precision::F32)),
        "cpu" => Box::new(CpuHmm),
        other => {
            return Err(format!(
                "unknown hmmEngine {other:?}; in JavaScript: burn-flex, burn-flex-f32 or cpu"
            ));
        }
    })
}

/// One sampler run: the records of its samples.
async fn sample(
    kind: &Kind,
    vocab: &Vocabulary,
    request: &SampleRequest,
    sink: &mut JsSink,
) -> Result<Vec<Record>, String> {
    let method = request.sampler().map_err(|e| e.to_string())?;
    let params = request.params().map_err(|e| e.to_string())?;
    let hmm = hmm_engine(&request.hmm_engine)?;
    let constraint = crate::constraint::build(request, vocab)?;
    let prompt = prompt_tokens(kind, &request.prompt, request.chat)?;
    fits(kind, prompt.len(), params.max_tokens)?;
    let mut lm = lm_for(kind, prompt)?;
    let start = now_ms();
    let mut rng = SeededRng::new(request.seed);
    let mut records = Vec::new();
    let mut out = |s: &Sample| records.push(Record::new(vocab, s, now_ms() - start));
    let run = Sampler::new(method)
        .params(&params)
        .vocabulary(vocab)
        .hmm_engine(hmm.as_ref())
        .run(
            &mut lm,
            &constraint,
            Io {
                rng: &mut rng,
                sink,
                out: &mut out,
            },
        )
        .await;
    match run {
        Ok(_) => Ok(records),
        Err(SampleError::Cancelled) => Err("stopped: the run's signal was aborted".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The exact distribution, most probable first.
async fn exact(
    kind: &Kind,
    vocab: &Vocabulary,
    request: &SampleRequest,
) -> Result<Vec<Enumerated>, String> {
    let constraint = crate::constraint::build(request, vocab)?;
    let prompt = prompt_tokens(kind, &request.prompt, request.chat)?;
    fits(kind, prompt.len(), request.max_tokens)?;
    let mut lm = lm_for(kind, prompt)?;
    let limits = Limits {
        max_tokens: request.max_tokens,
        max_sequences: MAX_SEQUENCES,
    };
    let dist = enumerate(&mut lm, &constraint, limits)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Enumerated::all(vocab, &dist))
}

/// log P(text · EOS | prompt), token by token.
async fn score(
    kind: &Kind,
    vocab: &Vocabulary,
    text: String,
    prompt: &str,
    chat: bool,
) -> Result<Scored, String> {
    let tokens = match kind {
        Kind::Gguf(b) => b
            .model()
            .tokenizer()
            .encode(&text)
            .map_err(|e| e.to_string())?,
        _ => vocab.encode_longest(text.as_bytes())?,
    };
    let prompt = prompt_tokens(kind, prompt, chat)?;
    fits(kind, prompt.len(), tokens.len() + 1)?;
    let mut lm = lm_for(kind, prompt)?;
    let eos = vocab.eos();
    let mut token_logps = Vec::with_capacity(tokens.len() + 1);
    let mut prefix = Vec::with_capacity(tokens.len());
    for &t in tokens.iter().chain(std::iter::once(&eos)) {
        let lp = sampler_core::LanguageModel::logprobs(&mut lm, &prefix)
            .await
            .map_err(|e| e.to_string())?;
        token_logps.push(lp[t as usize]);
        prefix.push(t);
    }
    Ok(Scored {
        text,
        tokens,
        logp: token_logps.iter().sum(),
        token_logps,
    })
}
