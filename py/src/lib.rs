//! `strait._native`: the headless library (`headless`) as a Python extension module.
//!
//! Every function takes and returns plain values or JSON text; `python/strait/` turns
//! them into dictionaries and keyword arguments. Sampling runs with the GIL released, on
//! the forward pass's pool thread (as the CLI's commands do). A failure raises
//! `strait.StraitError` with the CLI's one-line message.

use headless::sweep::{self, Job, JobResult};
use headless::{ModelSpec, SampleJob, Source};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sampler_core::SampleRequest;
use std::path::PathBuf;
use std::sync::Mutex;

create_exception!(
    _native,
    StraitError,
    PyException,
    "A strait failure: the CLI's one-line message."
);

/// A failure as `StraitError`.
fn err(e: impl std::fmt::Display) -> PyErr {
    StraitError::new_err(e.to_string().replace('\n', " "))
}

/// A loaded model (a GGUF file or a toy), shared by the calls made on it.
#[pyclass(module = "strait._native")]
struct Model {
    source: Mutex<Source>,
}

#[pymethods]
impl Model {
    /// Loads `model` (a GGUF path or `toy:…`); `cpu`/`gpu`/`engine` as the CLI's flags.
    #[new]
    #[pyo3(signature = (model, cpu=false, gpu=false, engine="strait".to_string()))]
    fn new(py: Python<'_>, model: String, cpu: bool, gpu: bool, engine: String) -> PyResult<Model> {
        let spec = ModelSpec {
            cpu,
            gpu,
            engine,
            ..ModelSpec::new(model)
        };
        let source = py.detach(|| Source::load(&spec)).map_err(err)?;
        Ok(Model {
            source: Mutex::new(source),
        })
    }

    /// A model given as a function: `tokens` (each token's bytes), its end token `eos`,
    /// and `call(prefixes)`, which answers a batch of token-id lists with
    /// `(rows, columns, bytes)`: a C-order float64 array of log-probabilities, one row per
    /// prefix (`strait.FunctionModel` wraps the user's callable so).
    #[staticmethod]
    fn from_function(tokens: Vec<Vec<u8>>, eos: Vec<u32>, call: Py<PyAny>) -> PyResult<Model> {
        let logprobs: headless::function_model::LogprobsFn =
            Box::new(move |prefixes: &[&[u32]]| {
                Python::attach(|py| {
                    let arg: Vec<Vec<u32>> = prefixes.iter().map(|p| p.to_vec()).collect();
                    let answer = call.call1(py, (arg,)).map_err(|e| e.to_string())?;
                    let (rows, columns, data) = answer
                        .bind(py)
                        .extract::<(usize, usize, Bound<'_, PyBytes>)>()
                        .map_err(|e: PyErr| e.to_string())?;
                    let bytes = data.as_bytes();
                    if bytes.len() != rows * columns * 8 {
                        return Err(format!(
                            "{} bytes for a {rows}×{columns} float64 array",
                            bytes.len()
                        ));
                    }
                    let values: Vec<f64> = bytes
                        .chunks_exact(8)
                        .map(|b| f64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
                        .collect();
                    Ok(values
                        .chunks(columns.max(1))
                        .take(rows)
                        .map(<[f64]>::to_vec)
                        .collect())
                })
            });
        let model =
            headless::function_model::FunctionModel::new(tokens, &eos, logprobs).map_err(err)?;
        Ok(Model {
            source: Mutex::new(Source::Function(model)),
        })
    }

    /// The lines of `strait sample`, as JSON text each; `constraint` holds exactly one of
    /// regex / grammar (text) / json_schema (text); `format` is `--grammar-format`.
    /// The lines of `strait sample` for a request (JSON: `sampler_core::SampleRequest`,
    /// the one request type of the CLI, Python and JavaScript).
    fn sample(&self, py: Python<'_>, request: String) -> PyResult<Vec<String>> {
        let request: SampleRequest = serde_json::from_str(&request).map_err(err)?;
        // Bad parameters are refused before the model is touched.
        SampleJob::from_request(&request).map_err(err)?;
        self.with_source(py, move |source| {
            let mut lines = Vec::new();
            headless::sample_request(source, &request, false, &mut |l| lines.push(l.to_string()))?;
            Ok(lines)
        })
    }

    /// The lines of `strait enumerate`, most probable first, for a request (JSON, as
    /// `sample`'s; its `max_tokens` bounds the sequences).
    fn enumerate(&self, py: Python<'_>, request: String) -> PyResult<Vec<String>> {
        let request: SampleRequest = serde_json::from_str(&request).map_err(err)?;
        self.with_source(py, move |source| {
            let vocab = source.vocabulary();
            let (prompt, constraint) = source.request_prompt_and_constraint(&request)?;
            let max = headless::enumerate::MAX_SEQUENCES;
            let dist =
                headless::enumerate::exact(source, prompt, &constraint, request.max_tokens, max)?;
            let lines = headless::enumerate::lines(&vocab, &dist);
            Ok(lines.iter().map(|l| l.to_string()).collect())
        })
    }

    /// The line of `strait score`.
    fn score(&self, py: Python<'_>, text: String, prompt: String, chat: bool) -> PyResult<String> {
        self.with_source(py, move |source| {
            let prompt = source.prompt_tokens(&prompt, chat)?;
            Ok(headless::score::score(source, prompt, &text)?.to_string())
        })
    }

    /// Runs one sweep job (JSON, from `pending_jobs`) on this model; its result as JSON.
    fn run_job(&self, py: Python<'_>, job: String) -> PyResult<String> {
        let job: Job = serde_json::from_str(&job).map_err(err)?;
        self.with_source(py, move |source| {
            let result = sweep::job::run(source, &job)?;
            Ok(serde_json::to_string(&result)?)
        })
    }
}

impl Model {
    /// Runs `f` on the model with the GIL released, on the forward pass's pool thread.
    fn with_source<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Source) -> headless::Result<R> + Send,
    ) -> PyResult<R> {
        py.detach(|| {
            let mut source = self
                .source
                .lock()
                .map_err(|_| headless::Failure("the model failed in an earlier call".into()))?;
            let source: &mut Source = &mut source;
            lm::forward::run_on_pool(move || f(source))
        })
        .map_err(err)
    }
}

/// A GGUF file's vocabulary (each token's bytes) and its end token, for a FunctionModel
/// that runs the same tokenizer's model elsewhere.
#[pyfunction]
fn gguf_vocabulary(py: Python<'_>, path: String) -> PyResult<(Vec<Bound<'_, PyBytes>>, u32)> {
    let vocab = py
        .detach(|| lm::Model::load(&path).map(|m| m.tokenizer().vocabulary()))
        .map_err(err)?;
    let tokens = (0..vocab.len() as u32)
        .map(|t| PyBytes::new(py, vocab.bytes(t)))
        .collect();
    Ok((tokens, vocab.eos()))
}

/// Runs a plan here, one model at a time (`strait sweep`); the summary's counts as JSON.
#[pyfunction]
fn sweep_local(py: Python<'_>, plan: PathBuf, out: PathBuf) -> PyResult<String> {
    let s = py
        .detach(|| lm::forward::run_on_pool(|| sweep::run_file(&plan, &out, &ModelSpec::new(""))))
        .map_err(err)?;
    Ok(counts(&s))
}

/// Reads a plan, deletes a killed run's leftovers in `out`, and lists the jobs left to do
/// as (model, job JSON) pairs.
#[pyfunction]
fn pending_jobs(plan: PathBuf, out: PathBuf) -> PyResult<Vec<(String, String)>> {
    let plan = sweep::plan::load(&plan).map_err(err)?;
    std::fs::create_dir_all(&out).map_err(|e| err(format!("{}: {e}", out.display())))?;
    let jobs = sweep::store::pending(&plan, &out).map_err(err)?;
    jobs.iter()
        .map(|j| {
            Ok((
                j.model().to_string(),
                serde_json::to_string(j).map_err(err)?,
            ))
        })
        .collect()
}

/// Writes a job's result (JSON, from `Model.run_job`) into `out`.
#[pyfunction]
fn write_result(out: PathBuf, result: String) -> PyResult<()> {
    let result: JobResult = serde_json::from_str(&result).map_err(err)?;
    sweep::store::write(&out, &result).map_err(err)
}

/// Writes the summary and plots of `out` for the plan; its counts as JSON.
#[pyfunction]
fn finish(plan: PathBuf, out: PathBuf) -> PyResult<String> {
    let plan = sweep::plan::load(&plan).map_err(err)?;
    Ok(counts(&sweep::finish(&plan, &out).map_err(err)?))
}

/// `{"cells", "finished", "failed"}`.
fn counts(s: &sweep::summary::Summary) -> String {
    serde_json::json!({"cells": s.cells, "finished": s.finished, "failed": s.failed}).to_string()
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Model>()?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    m.add_function(wrap_pyfunction!(gguf_vocabulary, m)?)?;
    m.add_function(wrap_pyfunction!(pending_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(write_result, m)?)?;
    m.add_function(wrap_pyfunction!(finish, m)?)?;
    m.add("StraitError", m.py().get_type::<StraitError>())?;
    Ok(())
}
