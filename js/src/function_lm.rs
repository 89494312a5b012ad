//! A language model given as a JavaScript function: `logprobs(prefixes)` takes an array of
//! `Uint32Array` token prefixes (the tokens generated so far; the function holds its own
//! context) and returns, or resolves to, one log-probability vector per prefix
//! (`Float32Array`, `Float64Array` or an array of numbers). Every answer is checked by
//! `sampler_core::function_model`, as Python's are.

use sampler_core::function_model::check_answer;
use sampler_core::{LanguageModel, LmError, TokenId, Vocabulary};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// The function and the vocabulary it answers over.
pub struct JsFunctionModel {
    /// Each token's bytes; the end token and no other special token.
    pub vocab: Vocabulary,
    /// `logprobs(prefixes)`.
    pub logprobs: js_sys::Function,
}

impl JsFunctionModel {
    /// The model for one run.
    pub fn lm(&self) -> JsFunctionLm<'_> {
        JsFunctionLm(self)
    }
}

/// [`JsFunctionModel`] as a [`LanguageModel`] for the length of a run.
pub struct JsFunctionLm<'a>(&'a JsFunctionModel);

impl LanguageModel for JsFunctionLm<'_> {
    fn vocab_size(&self) -> usize {
        self.0.vocab.len()
    }

    fn eos(&self) -> TokenId {
        self.0.vocab.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        Ok(self.logprobs_batch(&[prefix]).await?.remove(0))
    }

    /// One call of the function for the whole batch.
    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        let batch = js_sys::Array::new();
        for p in prefixes {
            batch.push(&js_sys::Uint32Array::from(*p));
        }
        let answer = call(&self.0.logprobs, &batch).await;
        check_answer(prefixes, answer, self.0.vocab.len())
    }
}

/// Calls `f(batch)`, awaits it when it returns a promise, and reads the rows.
async fn call(f: &js_sys::Function, batch: &js_sys::Array) -> Result<Vec<Vec<f64>>, String> {
    let mut answer = f
        .call1(&JsValue::UNDEFINED, batch)
        .map_err(|e| message(&e))?;
    if let Some(p) = answer.dyn_ref::<js_sys::Promise>() {
        answer = JsFuture::from(p.clone()).await.map_err(|e| message(&e))?;
    }
    if !js_sys::Array::is_array(&answer) {
        return Err(format!(
            "it returned {}, not an array of vectors (one per prefix)",
            describe(&answer)
        ));
    }
    js_sys::Array::from(&answer)
        .iter()
        .map(|row| vector(&row))
        .collect()
}

/// One row: a typed array of floats or an array of numbers.
fn vector(row: &JsValue) -> Result<Vec<f64>, String> {
    if let Some(a) = row.dyn_ref::<js_sys::Float64Array>() {
        return Ok(a.to_vec());
    }
    if let Some(a) = row.dyn_ref::<js_sys::Float32Array>() {
        return Ok(a.to_vec().into_iter().map(f64::from).collect());
    }
    if js_sys::Array::is_array(row) {
        return js_sys::Array::from(row)
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64().ok_or_else(|| {
                    format!("entry {i} of a vector is {}, not a number", describe(&x))
                })
            })
            .collect();
    }
    Err(format!(
        "a vector is {}: give a Float32Array, a Float64Array or an array of numbers",
        describe(row)
    ))
}

/// What a thrown value says: an `Error`'s message, else its string form.
fn message(e: &JsValue) -> String {
    match e.dyn_ref::<js_sys::Error>() {
        Some(err) => String::from(err.message()),
        None => e.as_string().unwrap_or_else(|| describe(e)),
    }
}

/// A value's type, for messages.
fn describe(v: &JsValue) -> String {
    if v.is_null() {
        "null".into()
    } else if v.is_undefined() {
        "undefined".into()
    } else {
        v.js_typeof().as_string().unwrap_or_default()
    }
}
