//! The grammar constraint behind sampler-core's seam: on G_sk it has exactly the masks of
//! sampler-core's reference finite-language constraint, and every sampler that accepts a
//! context-free constraint runs with it and returns sentences of the language.

use grammars::{CfgConstraint, Compiler};
use sampler_core::samplers::{Io, Method, Params, Sampler};
use sampler_core::toy::{gsk_constraint, gsk_lm, gsk_vocabulary};
use sampler_core::{Constraint, NullSink, SampleError, SeededRng, block_on};

fn gsk_cfg() -> CfgConstraint {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/examples/gsk.gbnf"
    ))
    .expect("gsk.gbnf");
    Compiler::new(&gsk_vocabulary())
        .expect("compiler")
        .compile(&src, None)
        .expect("compiles")
}

#[test]
fn gsk_grammar_has_the_reference_masks_at_every_state() {
    let (cfg, reference) = (gsk_cfg(), gsk_constraint());
    let mut stack = vec![(cfg.initial(), reference.initial())];
    let mut states = 0;
    while let Some((a, b)) = stack.pop() {
        let (ma, mb) = (cfg.mask(&a), reference.mask(&b));
        assert_eq!(ma, mb);
        assert_eq!(cfg.is_complete(&a), reference.is_complete(&b));
        states += 1;
        for t in ma.iter().filter(|&t| t != cfg.eos()) {
            stack.push((
                cfg.advance(&a, t).expect("allowed"),
                reference.advance(&b, t).expect("allowed"),
            ));
        }
    }
    assert_eq!(states, 1 + 2 + 3 + 5 + 9 + 17);
}

#[test]
fn every_cfg_sampler_returns_sentences_of_the_grammar() {
    let c = gsk_cfg();
    let vocab = gsk_vocabulary();
    let language = gsk_constraint();
    let params = Params {
        n: 3,
        steps: 2,
        particles: 4,
        max_tokens: 8,
        ..Params::default()
    };
    let mut ran = 0;
    for method in Method::ALL {
        let mut lm = gsk_lm();
        let mut samples = Vec::new();
        let r = block_on(Sampler::new(method).params(&params).vocabulary(&vocab).run(
            &mut lm,
            &c,
            Io {
                rng: &mut SeededRng::new(3),
                sink: &mut NullSink,
                out: &mut |s| samples.push(s.clone()),
            },
        ));
        if method.needs_regular() {
            // A context-free constraint is refused with a message, never a silent fallback.
            match r {
                Err(SampleError::Unsupported(m)) => assert!(m.contains("regular"), "{m}"),
                other => panic!("{method}: expected Unsupported, got {other:?}"),
            }
            continue;
        }
        r.unwrap_or_else(|e| panic!("{method}: {e}"));
        assert!(!samples.is_empty(), "{method} produced samples");
        for s in samples.iter().filter(|s| s.valid) {
            let text = vocab.decode(&s.tokens);
            assert!(language.words().contains(&text), "{method}: {text:?}");
        }
        if method != Method::Lm {
            assert!(
                samples.iter().any(|s| s.valid),
                "{method}: some valid sample"
            );
        }
        assert!(c.take_error().is_none(), "{method}: no llguidance error");
        ran += 1;
    }
    assert!(ran >= 10, "ran {ran} methods");
}
