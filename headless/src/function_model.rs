//! A language model given as a function by the program that embeds Strait (Python's
//! `strait.FunctionModel`): its vocabulary, its end token(s), and a batched callback from
//! token prefixes to next-token log-probabilities. Every sampler runs over it as over our
//! own engine; what the callback answers is checked before any sampler sees it, and a
//! wrong answer ends the run with a message naming the prefix and the problem.

use crate::failure::Result;
use sampler_core::function_model;
use sampler_core::{LanguageModel, LmError, TokenId, Vocabulary};

/// The callback: one log-probability vector per prefix (the generated tokens so far; the
/// model holds its own context), or why it could not answer.
pub type LogprobsFn =
    Box<dyn FnMut(&[&[TokenId]]) -> std::result::Result<Vec<Vec<f64>>, String> + Send>;

/// A model known only by its vocabulary and its callback.
pub struct FunctionModel {
    vocab: Vocabulary,
    logprobs: LogprobsFn,
}

impl FunctionModel {
    /// The model over `tokens` (each token's bytes) whose first end token is `eos[0]`
    /// (every id in `eos` ends a sequence: the others are read as that one).
    pub fn new(tokens: Vec<Vec<u8>>, eos: &[TokenId], logprobs: LogprobsFn) -> Result<Self> {
        let vocab = function_model::vocabulary(tokens, eos).map_err(crate::Failure)?;
        Ok(FunctionModel { vocab, logprobs })
    }

    /// The vocabulary constraints are compiled over.
    pub fn vocabulary(&self) -> Vocabulary {
        self.vocab.clone()
    }

    /// The model for one run.
    pub fn lm(&mut self) -> FunctionLm<'_> {
        FunctionLm(self)
    }
}

/// [`FunctionModel`] as a [`LanguageModel`] for the length of a run.
pub struct FunctionLm<'a>(&'a mut FunctionModel);

impl FunctionLm<'_> {
    /// Calls the callback and checks its answer, row by row.
    fn call(&mut self, prefixes: &[&[TokenId]]) -> std::result::Result<Vec<Vec<f64>>, LmError> {
        let answer = (self.0.logprobs)(prefixes);
        function_model::check_answer(prefixes, answer, self.0.vocab.len())
    }
}

impl LanguageModel for FunctionLm<'_> {
    fn vocab_size(&self) -> usize {
        self.0.vocab.len()
    }

    fn eos(&self) -> TokenId {
        self.0.vocab.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> std::result::Result<Vec<f64>, LmError> {
        Ok(self.call(&[prefix])?.remove(0))
    }

    /// One callback call for the whole batch: the host batches as it likes.
    async fn logprobs_batch(
        &mut self,
        prefixes: &[&[TokenId]],
    ) -> std::result::Result<Vec<Vec<f64>>, LmError> {
        self.call(prefixes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampler_core::samplers::{Method, Params};

    fn bigram() -> LogprobsFn {
        // Tokens a, b, EOS: after a, b is likely; after b, EOS is.
        Box::new(|prefixes: &[&[TokenId]]| {
            Ok(prefixes
                .iter()
                .map(|p| {
                    let probs: [f64; 3] = match p.last() {
                        None => [0.5, 0.3, 0.2],
                        Some(0) => [0.1, 0.6, 0.3],
                        _ => [0.2, 0.2, 0.6],
                    };
                    probs.iter().map(|q| q.ln()).collect()
                })
                .collect())
        })
    }

    fn tokens() -> Vec<Vec<u8>> {
        vec![b"a".to_vec(), b"b".to_vec(), Vec::new()]
    }

    /// A callback's mistakes end the run with a message that names the prefix and the
    /// problem: a wrong length, a NaN, logits, an exception, a wrong row count.
    #[test]
    fn wrong_answers_are_named() {
        let cases: Vec<(LogprobsFn, &str)> = vec![
            (
                Box::new(|_: &[&[TokenId]]| Ok(vec![vec![0.0; 2]])),
                "has 2 entries, not 3",
            ),
            (
                Box::new(|_: &[&[TokenId]]| Ok(vec![vec![f64::NAN, 0.0, 0.0]])),
                "token 0 after the prefix [] the log-probability NaN",
            ),
            (
                Box::new(|_: &[&[TokenId]]| Ok(vec![vec![1.0, 2.0, 3.0]])),
                "is not normalized",
            ),
            (
                Box::new(|_: &[&[TokenId]]| Err("ValueError: boom".to_string())),
                "failed on the prefixes []: ValueError: boom",
            ),
            (
                Box::new(|_: &[&[TokenId]]| Ok(Vec::new())),
                "returned 0 rows for 1 prefixes",
            ),
        ];
        for (f, want) in cases {
            let mut m = FunctionModel::new(tokens(), &[2], f).unwrap();
            let r = futures_lite_block_on(m.lm().logprobs(&[]));
            let e = r.unwrap_err().0;
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn bad_vocabularies_are_refused() {
        assert!(FunctionModel::new(tokens(), &[], bigram()).is_err());
        let e = FunctionModel::new(tokens(), &[7], bigram()).err().unwrap();
        assert!(e.0.contains("not in the vocabulary"), "{e}");
    }

    /// CARS over the callback draws only the language's strings, batched or not, through
    /// the same path as `strait sample` (a prompt is refused: the model holds its own).
    #[test]
    fn samplers_run_over_the_callback() {
        use crate::sample::{SampleJob, sample};
        let mut source =
            crate::Source::Function(FunctionModel::new(tokens(), &[2], bigram()).unwrap());
        let spec = crate::ConstraintSpec {
            regex: Some("ab|b".into()),
            ..crate::ConstraintSpec::default()
        };
        let e = source
            .prompt_and_constraint("hi", false, &spec, None)
            .err()
            .unwrap();
        assert!(e.0.contains("holds its own context"), "{e}");
        let (prompt, c) = source
            .prompt_and_constraint("", false, &spec, None)
            .unwrap();
        for batch in [1, 4] {
            let job = SampleJob {
                params: Params {
                    n: 20,
                    batch,
                    max_tokens: 4,
                    ..Params::default()
                },
                seed: 3,
                ..SampleJob::new(Method::Cars)
            };
            let mut lines = Vec::new();
            sample(&mut source, prompt.clone(), &c, &job, false, &mut |l| {
                lines.push(l)
            })
            .unwrap();
            assert_eq!(lines.len(), 20);
            for l in &lines {
                assert!(
                    l["valid"] == true && (l["text"] == "ab" || l["text"] == "b"),
                    "{l}"
                );
            }
        }
    }

    fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
        sampler_core::block_on(f)
    }
}
