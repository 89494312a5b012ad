//! `strait enumerate`: exact P^L of a finite language, every token sequence (including
//! non-canonical tokenizations) with its probability.

use crate::args::EnumerateArgs;
use crate::constraint_source::{ConstraintUser, build};
use crate::failure::Result;
use crate::model_source::{LmRef, Source, with_lm};
use sampler_core::exact::{Limits, enumerate};
use sampler_core::{Constraint, Vocabulary, block_on};
use serde_json::json;

/// Most sequences listed before refusing ("too large to enumerate").
const MAX_SEQUENCES: usize = 100_000;

/// Prints `{"text", "tokens", "logp", "p"}` per sequence, most probable first.
pub fn run(args: &EnumerateArgs) -> Result<()> {
    let mut source = Source::load(&args.model)?;
    let vocab = source.vocabulary();
    let prompt = source.prompt_tokens(&args.model)?;
    let constraint = build(&args.constraint, args.grammar_format.as_deref(), &vocab)?;
    constraint.dispatch(Job {
        source: &mut source,
        prompt,
        vocab: &vocab,
        max_tokens: args.max_tokens,
    })
}

struct Job<'a> {
    source: &'a mut Source,
    prompt: Vec<u32>,
    vocab: &'a Vocabulary,
    max_tokens: usize,
}

impl ConstraintUser for Job<'_> {
    fn run<C: Constraint>(self, constraint: &C) -> Result<()> {
        let limits = Limits {
            max_tokens: self.max_tokens,
            max_sequences: MAX_SEQUENCES,
        };
        let dist = with_lm(self.source, self.prompt, |lm| {
            Ok(block_on(enumerate(&mut LmRef(lm), constraint, limits))?)
        })?;
        let mut entries: Vec<_> = dist.entries.iter().collect();
        entries.sort_by(|a, b| b.p.total_cmp(&a.p));
        for e in entries {
            let line = json!({
                "text": String::from_utf8_lossy(&self.vocab.decode(&e.tokens)),
                "tokens": e.tokens,
                "logp": e.logp,
                "p": e.p,
            });
            crate::stdout::line(line);
        }
        Ok(())
    }
}
