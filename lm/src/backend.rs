//! [`Backend`]: a loaded model on exactly one engine, lending a prompted model for each
//! run — what the command line and the page both hold.

use crate::engine::{Engine, Prompted};
use crate::forward::Pause;
use crate::gpu::GpuModel;
use crate::model::Model;
use crate::prompted::PromptedModel;
use sampler_core::{LanguageModel, LmError, TokenId};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};

/// A model on one engine.
#[derive(Debug)]
pub enum Backend {
    /// The CPU forward pass (weights quantized in memory); runs share the model and each
    /// gets its own caches ([`PromptedModel`]).
    Cpu(Arc<Model>),
    /// Our wgpu engine, lent to one run at a time.
    Gpu(Lender<GpuModel>),
    /// The burn engine, lent to one run at a time (feature `burn`).
    #[cfg(feature = "burn")]
    Burn(Lender<crate::burn::BurnModel>),
}

impl Backend {
    /// The model (header, configuration, tokenizer).
    pub fn model(&self) -> &Arc<Model> {
        match self {
            Backend::Cpu(m) => m,
            Backend::Gpu(l) => &l.model,
            #[cfg(feature = "burn")]
            Backend::Burn(l) => &l.model,
        }
    }

    /// Positions one run may fill, prompt and generated tokens together, and what messages
    /// call them ("the context", "the GPU context"); `None` while a run holds the engine.
    pub fn context(&self) -> Option<(usize, &'static str)> {
        match self {
            Backend::Cpu(m) => Some((m.config().context_length, "the context")),
            Backend::Gpu(l) => l.with_engine(|e| (e.max_context(), e.context_name())),
            #[cfg(feature = "burn")]
            Backend::Burn(l) => l.with_engine(|e| (e.max_context(), e.context_name())),
        }
    }

    /// The model conditioned on `prompt` for one run, as the samplers see it. The CPU
    /// forward pass asks a fresh `P` at its pause points (the page yields to the browser
    /// there); a GPU engine goes back to the backend when the loan drops. A prompt the
    /// engine cannot take is refused before the engine is lent out.
    pub fn lend<P: Pause + Default>(&self, prompt: Vec<TokenId>) -> Result<Loan<P>, LmError> {
        Ok(match self {
            Backend::Cpu(m) => Loan::Cpu(PromptedModel::new(m.clone(), prompt)?, PhantomData),
            Backend::Gpu(l) => Loan::Gpu(Box::new(l.lend(prompt)?)),
            #[cfg(feature = "burn")]
            Backend::Burn(l) => Loan::Burn(Box::new(l.lend(prompt)?)),
        })
    }
}

/// An engine that one run at a time borrows, conditioned on its prompt.
#[derive(Debug)]
pub struct Lender<E> {
    model: Arc<Model>,
    slot: Arc<Mutex<Option<E>>>,
    what: &'static str,
}

impl<E: Engine> Lender<E> {
    /// `engine`, computed from `model`; `what` names it in messages ("WebGPU", "GPU").
    // On wasm32 the WebGPU handles are not `Send`; the page is single-threaded.
    #[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
    pub fn new(model: Arc<Model>, engine: E, what: &'static str) -> Self {
        Lender {
            model,
            slot: Arc::new(Mutex::new(Some(engine))),
            what,
        }
    }

    fn slot(&self) -> MutexGuard<'_, Option<E>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `f` of the engine, unless a run holds it.
    pub fn with_engine<R>(&self, f: impl FnOnce(&E) -> R) -> Option<R> {
        self.slot().as_ref().map(f)
    }

    /// Takes the engine out for a run that drives it directly; it goes back when the
    /// loan drops.
    pub fn lend_engine(&self) -> Result<EngineLoan<E>, LmError> {
        let engine = self.slot().take().ok_or_else(|| self.in_use())?;
        Ok(EngineLoan {
            engine: Some(engine),
            slot: self.slot.clone(),
        })
    }

    /// The engine conditioned on `prompt`; the prompt is checked while the backend still
    /// holds the engine, so a refused prompt keeps it.
    pub fn lend(&self, prompt: Vec<TokenId>) -> Result<Lent<E>, LmError> {
        let mut slot = self.slot();
        let engine = slot.as_ref().ok_or_else(|| self.in_use())?;
        engine.check_prompt(&prompt)?;
        if let Err(e) = engine.check_device() {
            return Err(LmError(format!("{} failed: {e}", self.what)));
        }
        let engine = slot.take().ok_or_else(|| self.in_use())?;
        drop(slot);
        Ok(Lent {
            lm: Some(Prompted::new(engine, prompt)?),
            slot: self.slot.clone(),
            what: self.what,
        })
    }

    fn in_use(&self) -> LmError {
        LmError(format!("the {} model is in use by another run", self.what))
    }
}

/// An engine taken out of its [`Lender`]; it goes back when this drops.
#[derive(Debug)]
pub struct EngineLoan<E> {
    /// Always `Some` until dropped.
    engine: Option<E>,
    slot: Arc<Mutex<Option<E>>>,
}

impl<E> EngineLoan<E> {
    /// The lent engine.
    pub fn model(&mut self) -> &mut E {
        self.engine.as_mut().expect("present until drop")
    }
}

impl<E> Drop for EngineLoan<E> {
    fn drop(&mut self) {
        if let Some(e) = self.engine.take() {
            *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
    }
}

/// An engine lent for one run, conditioned on its prompt; it goes back when this drops.
/// Its errors name the engine (`"WebGPU failed: …"`).
#[derive(Debug)]
pub struct Lent<E: Engine> {
    /// Always `Some` until dropped.
    lm: Option<Prompted<E>>,
    slot: Arc<Mutex<Option<E>>>,
    what: &'static str,
}

impl<E: Engine> Lent<E> {
    fn lm(&self) -> &Prompted<E> {
        self.lm.as_ref().expect("present until drop")
    }
}

impl<E: Engine> Drop for Lent<E> {
    fn drop(&mut self) {
        if let Some(lm) = self.lm.take() {
            *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(lm.into_model());
        }
    }
}

impl<E: Engine> LanguageModel for Lent<E> {
    fn vocab_size(&self) -> usize {
        self.lm().vocab_size()
    }

    fn eos(&self) -> TokenId {
        self.lm().eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        let what = self.what;
        let lm = self.lm.as_mut().expect("present until drop");
        lm.logprobs(prefix)
            .await
            .map_err(|e| LmError(format!("{what} failed: {}", e.0)))
    }

    /// Up to the engine's slots' worth of distinct sequences in one pass.
    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        let what = self.what;
        let lm = self.lm.as_mut().expect("present until drop");
        lm.logprobs_batch(prefixes)
            .await
            .map_err(|e| LmError(format!("{what} failed: {}", e.0)))
    }

    fn forward_tokens(&self) -> u64 {
        self.lm().forward_tokens()
    }
}

/// A model lent for one run by [`Backend::lend`].
#[derive(Debug)]
pub enum Loan<P> {
    /// The CPU model with its caches, pausing as a fresh `P` says on every call.
    Cpu(PromptedModel, PhantomData<fn() -> P>),
    /// Our wgpu engine.
    Gpu(Box<Lent<GpuModel>>),
    /// The burn engine.
    #[cfg(feature = "burn")]
    Burn(Box<Lent<crate::burn::BurnModel>>),
}

impl<P: Pause + Default> LanguageModel for Loan<P> {
    fn vocab_size(&self) -> usize {
        match self {
            Loan::Cpu(m, _) => m.vocab_size(),
            Loan::Gpu(l) => l.vocab_size(),
            #[cfg(feature = "burn")]
            Loan::Burn(l) => l.vocab_size(),
        }
    }

    fn eos(&self) -> TokenId {
        match self {
            Loan::Cpu(m, _) => m.eos(),
            Loan::Gpu(l) => l.eos(),
            #[cfg(feature = "burn")]
            Loan::Burn(l) => l.eos(),
        }
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        match self {
            Loan::Cpu(m, _) => m.logprobs_pausing(prefix, &mut P::default()).await,
            Loan::Gpu(l) => l.logprobs(prefix).await,
            #[cfg(feature = "burn")]
            Loan::Burn(l) => l.logprobs(prefix).await,
        }
    }

    /// Every prefix's new tokens in one pass (SMC particles): on the CPU all of them, on
    /// the wgpu engine up to its slots' worth.
    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        match self {
            Loan::Cpu(m, _) => m.logprobs_batch_pausing(prefixes, &mut P::default()).await,
            Loan::Gpu(l) => l.logprobs_batch(prefixes).await,
            #[cfg(feature = "burn")]
            Loan::Burn(l) => l.logprobs_batch(prefixes).await,
        }
    }

    fn forward_tokens(&self) -> u64 {
        match self {
            Loan::Cpu(m, _) => m.forward_tokens(),
            Loan::Gpu(l) => l.forward_tokens(),
            #[cfg(feature = "burn")]
            Loan::Burn(l) => l.forward_tokens(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::CpuEngine;
    use crate::forward::NoPause;
    use crate::test_gguf::tiny_llama;
    use sampler_core::block_on;

    fn tiny() -> Arc<Model> {
        Arc::new(Model::from_bytes(tiny_llama()).unwrap())
    }

    /// A lender hands its engine to one run at a time, keeps it when a prompt is refused,
    /// gets it back when the run ends, and names the engine in its errors.
    #[test]
    fn an_engine_is_lent_to_one_run_at_a_time_and_comes_back() {
        let model = tiny();
        let lender = Lender::new(model.clone(), CpuEngine::new(model.clone()), "test engine");
        let e = lender.lend(Vec::new()).unwrap_err();
        assert!(e.0.contains("empty"), "{e}");
        assert!(
            lender.with_engine(|_| ()).is_some(),
            "a refused prompt keeps the engine"
        );
        let mut run = lender.lend(vec![1, 2]).unwrap();
        assert!(lender.with_engine(|_| ()).is_none());
        let e = lender.lend(vec![1]).unwrap_err();
        assert_eq!(e.0, "the test engine model is in use by another run");
        let want = block_on(
            PromptedModel::new(model.clone(), vec![1, 2])
                .unwrap()
                .logprobs(&[3]),
        )
        .unwrap();
        assert_eq!(block_on(run.logprobs(&[3])).unwrap(), want);
        let e = block_on(run.logprobs(&[99])).unwrap_err();
        assert!(e.0.starts_with("test engine failed: token id 99"), "{e}");
        // The failed call emptied the cache; the next one fills it again.
        assert_eq!(block_on(run.logprobs(&[3])).unwrap(), want);
        drop(run);
        let back = lender.with_engine(|e| e.cached());
        assert_eq!(back, Some(3), "back, with its cache");
        let mut loan = lender.lend_engine().unwrap();
        assert_eq!(loan.model().cached(), 3);
        assert!(lender.lend(vec![1]).is_err());
        drop(loan);
        assert!(lender.lend(vec![1]).is_ok());
    }

    /// The CPU backend lends the many-slot prompted model, its batch pass included.
    #[test]
    fn the_cpu_backend_lends_the_prompted_model() {
        let model = tiny();
        let backend = Backend::Cpu(model.clone());
        let mut loan = backend.lend::<NoPause>(vec![1, 2]).unwrap();
        let mut plain = PromptedModel::new(model, vec![1, 2]).unwrap();
        let prefixes: [&[TokenId]; 2] = [&[3], &[4, 5]];
        assert_eq!(
            block_on(loan.logprobs_batch(&prefixes)).unwrap(),
            block_on(plain.logprobs_batch(&prefixes)).unwrap()
        );
        assert_eq!(loan.forward_tokens(), plain.forward_tokens());
        assert_eq!(loan.eos(), plain.eos());
        assert!(backend.lend::<NoPause>(Vec::new()).is_err());
    }
}
