//! One type for every language model: the async methods of [`LanguageModel`] boxed, so a
//! front end can hold "the model the user loaded" (CPU, GPU, toy) behind one pointer.

use crate::{LanguageModel, LmError, TokenId};
use std::future::Future;
use std::pin::Pin;

/// A boxed future of a model answer.
pub type LmFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, LmError>> + 'a>>;

/// Any language model, owned; build one with `Box::new(model)`.
pub type DynLm<'a> = Box<dyn DynLanguageModel + 'a>;

/// The object-safe form of [`LanguageModel`]; every language model is one.
///
/// Its methods carry a `dyn_` prefix so that they never shadow the [`LanguageModel`]
/// methods of a concrete model when both traits are in scope.
pub trait DynLanguageModel {
    /// [`LanguageModel::vocab_size`].
    fn dyn_vocab_size(&self) -> usize;
    /// [`LanguageModel::eos`].
    fn dyn_eos(&self) -> TokenId;
    /// [`LanguageModel::logprobs`], boxed.
    fn dyn_logprobs<'a>(&'a mut self, prefix: &'a [TokenId]) -> LmFuture<'a, Vec<f64>>;
    /// [`LanguageModel::logprobs_batch`], boxed.
    fn dyn_logprobs_batch<'a>(
        &'a mut self,
        prefixes: &'a [&'a [TokenId]],
    ) -> LmFuture<'a, Vec<Vec<f64>>>;
    /// [`LanguageModel::forward_tokens`].
    fn dyn_forward_tokens(&self) -> u64;
}

impl<L: LanguageModel> DynLanguageModel for L {
    fn dyn_vocab_size(&self) -> usize {
        self.vocab_size()
    }
    fn dyn_eos(&self) -> TokenId {
        self.eos()
    }
    fn dyn_logprobs<'a>(&'a mut self, prefix: &'a [TokenId]) -> LmFuture<'a, Vec<f64>> {
        Box::pin(self.logprobs(prefix))
    }
    fn dyn_logprobs_batch<'a>(
        &'a mut self,
        prefixes: &'a [&'a [TokenId]],
    ) -> LmFuture<'a, Vec<Vec<f64>>> {
        Box::pin(self.logprobs_batch(prefixes))
    }
    fn dyn_forward_tokens(&self) -> u64 {
        self.forward_tokens()
    }
}

/// Forwards [`LanguageModel`] to a `dyn` model behind any pointer.
macro_rules! forward_to_dyn {
    ($ty:ty) => {
        impl LanguageModel for $ty {
            fn vocab_size(&self) -> usize {
                (**self).dyn_vocab_size()
            }
            fn eos(&self) -> TokenId {
                (**self).dyn_eos()
            }
            async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
                (**self).dyn_logprobs(prefix).await
            }
            async fn logprobs_batch(
                &mut self,
                prefixes: &[&[TokenId]],
            ) -> Result<Vec<Vec<f64>>, LmError> {
                (**self).dyn_logprobs_batch(prefixes).await
            }
            fn forward_tokens(&self) -> u64 {
                (**self).dyn_forward_tokens()
            }
        }
    };
}

forward_to_dyn!(Box<dyn DynLanguageModel + '_>);
forward_to_dyn!(&mut (dyn DynLanguageModel + '_));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_on;
    use crate::toy::{RandomLm, gsk_lm};

    /// A model behind the handle answers as the model itself, batch included, and counts
    /// the same forward tokens.
    #[test]
    fn a_boxed_model_answers_as_the_model() {
        let mut plain = RandomLm::new(5, 4, 1, 7);
        let mut boxed: DynLm = Box::new(RandomLm::new(5, 4, 1, 7));
        assert_eq!(boxed.vocab_size(), plain.vocab_size());
        assert_eq!(boxed.eos(), plain.eos());
        for prefix in [&[][..], &[1], &[1, 2, 0]] {
            assert_eq!(
                block_on(boxed.logprobs(prefix)).unwrap(),
                block_on(plain.logprobs(prefix)).unwrap()
            );
        }
        let batch: [&[TokenId]; 2] = [&[0], &[2, 2]];
        assert_eq!(
            block_on(boxed.logprobs_batch(&batch)).unwrap(),
            block_on(plain.logprobs_batch(&batch)).unwrap()
        );
        assert_eq!(boxed.forward_tokens(), plain.forward_tokens());
        // A borrowed `dyn` model is one too.
        let mut g = gsk_lm();
        let mut by_ref: &mut dyn DynLanguageModel = &mut g;
        assert_eq!(
            block_on(by_ref.logprobs(&[])).unwrap().len(),
            by_ref.vocab_size()
        );
    }
}
