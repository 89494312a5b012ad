//! What a run samples from: a toy model (instant, analytic) or the loaded SmolLM2, with
//! the state's grammar compiled over that model's vocabulary.

use super::editor::GrammarErr;
use crate::engine::Yielding;
use crate::engine::{Engine, OnCall};
use playground::constraint::{ConstraintBuilder, compile_note};
use playground::exact::{ExactLimits, ground_truth, ground_truth_ready};
use playground::runner::Run;
use playground::state::{ModelChoice, PlaygroundState, ToyModel};
use playground::toy::ToyLm;
use playground::views::Labels;
use sampler_core::DynConstraint;
use sampler_core::exact::ExactDistribution;
use sampler_core::{TokenId, Vocabulary};
use std::cell::RefCell;
use std::rc::Rc;

/// Why a run could not start.
pub enum BuildError {
    /// The grammar does not compile (marked in the editor).
    Grammar(GrammarErr),
    /// Anything else, one line.
    Other(String),
}

/// A model and a constraint over its vocabulary, ready to drive a sampler.
pub enum World {
    /// An analytic model.
    Toy {
        /// The model.
        lm: ToyLm,
        /// Its vocabulary.
        vocab: Vocabulary,
        /// The grammar over it.
        constraint: DynConstraint<'static>,
        /// How long the grammar took to compile, and the constraint's size.
        compile_note: String,
    },
    /// The loaded GGUF model.
    Real {
        /// The engine (model and backend).
        engine: Rc<Engine>,
        /// The prompt's tokens.
        prompt: Vec<TokenId>,
        /// The grammar over its vocabulary.
        constraint: DynConstraint<'static>,
        /// How long the grammar took to compile, and the constraint's size.
        compile_note: String,
        /// The setup (what the sampling worker builds its own constraint and prompt from).
        state: Box<PlaygroundState>,
    },
}

thread_local! {
    /// The real model's exact P^L of the last setup it was computed for.
    static REAL_EXACT: RefCell<Option<(String, ExactDistribution)>> = const { RefCell::new(None) };
}

/// What the real model's exact P^L depends on: grammar, prompt, budget, model load.
fn real_exact_key(s: &PlaygroundState) -> String {
    format!(
        "{}\u{0}{:?}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
        s.grammar,
        s.grammar_kind,
        s.prompt,
        s.chat,
        s.max_tokens,
        crate::page_state::engine_generation()
    )
}

/// What a cached constraint builder was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BuilderKey {
    /// A toy model's vocabulary.
    Toy(ToyModel),
    /// The real model of this load (see `page_state::engine_generation`).
    Real(u64),
}

thread_local! {
    /// One constraint builder per vocabulary: the real model's keeps llguidance's token
    /// trie, slow to build; toy ones are tiny.
    static BUILDERS: RefCell<Vec<(BuilderKey, ConstraintBuilder)>> = const { RefCell::new(Vec::new()) };
}

/// Compiles the state's grammar for `vocab`, timed with `performance.now()` (wasm32 has no
/// `Instant`); the note says how long it took and, for a tensorized regex, its size.
fn compile(
    state: &PlaygroundState,
    vocab: &Vocabulary,
    key: BuilderKey,
) -> Result<(DynConstraint<'static>, String), BuildError> {
    let t0 = crate::clock::now_ms();
    let built = compile_untimed(state, vocab, key)?;
    let note = compile_note(&built, crate::clock::now_ms() - t0);
    Ok((built, note))
}

fn compile_untimed(
    state: &PlaygroundState,
    vocab: &Vocabulary,
    key: BuilderKey,
) -> Result<DynConstraint<'static>, BuildError> {
    BUILDERS
        .with(|b| {
            let mut b = b.borrow_mut();
            let i = match b.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    // Keep one toy builder and one real one.
                    let real = matches!(key, BuilderKey::Real(_));
                    b.retain(|(k, _)| matches!(k, BuilderKey::Real(_)) != real);
                    b.push((key, ConstraintBuilder::new(vocab.clone())));
                    b.len() - 1
                }
            };
            b[i].1.build(state.grammar_kind, &state.grammar)
        })
        .map_err(|e| {
            BuildError::Grammar(GrammarErr {
                line: e.line.unwrap_or(0),
                column: e.col.unwrap_or(0),
                message: e.message,
            })
        })
}

impl World {
    /// The model and constraint `state` asks for; the real model must be loaded.
    pub fn build(state: &PlaygroundState) -> Result<World, BuildError> {
        match &state.model {
            ModelChoice::Toy(t) => {
                let (lm, vocab) = (t.lm(), t.vocabulary());
                let (constraint, compile_note) = compile(state, &vocab, BuilderKey::Toy(*t))?;
                Ok(World::Toy {
                    lm,
                    vocab,
                    constraint,
                    compile_note,
                })
            }
            ModelChoice::Real { url } => {
                if let Some(u) = url
                    && *u != crate::page_state::model_url()
                {
                    return Err(BuildError::Other(format!(
                        "This setup uses the model at {u}: press \"Load this model\" (the page reloads with ?model=…)."
                    )));
                }
                let engine = crate::page_state::engine().ok_or_else(|| {
                    BuildError::Other(
                        "The model is not loaded yet: wait for the download above (or pick a toy model)."
                            .into(),
                    )
                })?;
                let (constraint, compile_note) = compile(
                    state,
                    engine.vocab(),
                    BuilderKey::Real(crate::page_state::engine_generation()),
                )?;
                let prompt = engine
                    .prompt_tokens(&state.prompt, state.chat)
                    .map_err(BuildError::Other)?;
                Ok(World::Real {
                    engine,
                    prompt,
                    constraint,
                    compile_note,
                    state: Box::new(state.clone()),
                })
            }
        }
    }

    /// How long the grammar took to compile, and the constraint's size (one line).
    pub fn compile_note(&self) -> &str {
        match self {
            World::Toy { compile_note, .. } | World::Real { compile_note, .. } => compile_note,
        }
    }

    /// How the views name a token.
    pub fn labels(&self) -> Labels {
        match self {
            World::Toy { vocab, .. } => Labels::from_vocabulary(vocab),
            World::Real { engine, .. } => Labels::from_vocabulary(engine.vocab()),
        }
    }

    /// The exact P^L when the model is a toy and the language small enough to enumerate;
    /// otherwise `Err` with the reason, shown beside the results.
    pub fn exact(&self, state: &PlaygroundState) -> Result<ExactDistribution, String> {
        match self {
            World::Toy { constraint, .. } => {
                let ModelChoice::Toy(t) = &state.model else {
                    return Err("not a toy model".into());
                };
                ground_truth_ready(&mut t.lm(), constraint, ExactLimits::toy(state.max_tokens))
            }
            World::Real { .. } => REAL_EXACT.with(|c| match &*c.borrow() {
                Some((key, e)) if *key == real_exact_key(state) => Ok(e.clone()),
                _ => Err(
                    "exact P^L with the real model costs one forward pass per prefix: \
                          press \"Compute exact P^L\" to enumerate it"
                        .into(),
                ),
            }),
        }
    }

    /// Enumerates the exact P^L with the real model (one forward pass per prefix, within
    /// `ExactLimits::real`; in the sampling worker when it is ready) and keeps it for later
    /// runs of the same setup; `progress` hears the model calls so far.
    pub async fn exact_real(
        self,
        state: &PlaygroundState,
        stop: Rc<dyn Fn() -> bool>,
        progress: Rc<dyn Fn(u64)>,
    ) -> Result<ExactDistribution, String> {
        let World::Real {
            engine,
            prompt,
            constraint,
            ..
        } = self
        else {
            return Err("the toy models' exact P^L is computed with each run".into());
        };
        crate::worker::client::settled(&*stop).await;
        let e = match crate::worker::client::ready() {
            Some(worker) => worker.exact(state, stop, progress).await?,
            None => {
                let engine = here(engine).await?;
                let mut lm = OnCall::new(engine.lm(prompt, stop)?, move |n| progress(n));
                ground_truth(&mut lm, &constraint, ExactLimits::real(state.max_tokens)).await?
            }
        };
        REAL_EXACT.with(|c| *c.borrow_mut() = Some((real_exact_key(state), e.clone())));
        Ok(e)
    }

    /// Runs the sampler of `run` to its end (or Stop); the run records every event. A
    /// real-model run goes to the sampling workers, once the pool has started.
    pub async fn drive(self, run: &Run) -> Result<(), String> {
        let stop: Rc<dyn Fn() -> bool> = {
            let r = run.clone();
            Rc::new(move || r.is_cancelled())
        };
        if matches!(self, World::Real { .. }) {
            crate::worker::client::settled(&*stop).await;
        }
        match self {
            World::Toy {
                lm,
                vocab,
                constraint,
                ..
            } => {
                let mut lm = Yielding::sliced(lm, stop);
                run.drive(&mut lm, &constraint, Some(&vocab)).await;
            }
            World::Real { state, .. } if let Some(worker) = crate::worker::client::ready() => {
                worker.drive(run, &state).await;
            }
            World::Real {
                engine,
                prompt,
                constraint,
                ..
            } => {
                let engine = here(engine).await?;
                let mut lm = engine.lm(prompt, stop)?;
                run.drive(&mut lm, &constraint, Some(engine.vocab())).await;
            }
        }
        Ok(())
    }
}

/// `engine` with its weights on the page's thread, for a run no sampling worker takes.
async fn here(engine: Rc<Engine>) -> Result<Rc<Engine>, String> {
    match engine.has_weights() {
        true => Ok(engine),
        false => crate::page_state::engine_with_weights().await,
    }
}
