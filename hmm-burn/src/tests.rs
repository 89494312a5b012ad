//! The burn programs against the CPU reference (`sampler_core::hmm::CpuHmm`) on burn's
//! CPU backend in f64 (agreement to rounding) and f32 (agreement within f32's precision),
//! and on wgpu where the `wgpu` feature is on and the machine has an adapter.

use sampler_core::hmm::{CpuHmm, Hmm, HmmEngine, guide_table};
use sampler_core::{RandomSource, RegexConstraint, SeededRng, TokenId, Vocabulary, block_on};

use crate::timing::max_param_diff as max_diff;
use crate::{BurnHmm, Precision};

/// `n` sequences of lengths 1..=`max_len` (one empty) sampled from `hmm`.
fn sample(hmm: &Hmm, n: usize, max_len: usize, rng: &mut SeededRng) -> Vec<Vec<TokenId>> {
    let mut data: Vec<Vec<TokenId>> = (0..n)
        .map(|i| {
            let mut z = rng.categorical(&hmm.initial);
            (0..1 + i % max_len)
                .map(|_| {
                    let x = rng.categorical(&hmm.emission[z * hmm.vocab..(z + 1) * hmm.vocab]);
                    z = rng.categorical(&hmm.transition[z * hmm.hidden..(z + 1) * hmm.hidden]);
                    x as TokenId
                })
                .collect()
        })
        .collect();
    data.push(Vec::new());
    data
}

/// One EM step and then ten more on `engine` equal the CPU's within `tol` (parameters,
/// absolute) and `tol` relative on the log-likelihood, with and without a pseudo-count.
fn check_em(engine: &dyn HmmEngine, tol: f64) {
    let truth = Hmm::random(3, 40, &mut SeededRng::new(1));
    let data = sample(&truth, 13, 9, &mut SeededRng::new(2));
    for pseudo in [0.0, 0.3] {
        let (mut cpu, mut ours) = {
            let start = Hmm::init_from_data(5, 40, &data, 0.1, &mut SeededRng::new(3));
            (start.clone(), start)
        };
        for i in 0..11 {
            let (c, cs) = block_on(CpuHmm.em_step(&cpu, &data, pseudo)).unwrap();
            let (o, os) = block_on(engine.em_step(&ours, &data, pseudo)).unwrap();
            let d = max_diff(&c, &o);
            let dl = (cs.log_likelihood - os.log_likelihood).abs() / cs.log_likelihood.abs();
            assert!(
                d < tol
                    && dl < tol
                    && (cs.objective - os.objective).abs() < tol * cs.objective.abs(),
                "{} pseudo {pseudo} step {i}: parameters differ by {d:e}, log-likelihood by \
                 {dl:e} (relative)",
                engine.name()
            );
            (cpu, ours) = (c, o);
        }
        eprintln!(
            "{}: after 11 EM steps the parameters agree to {:e}",
            engine.name(),
            max_diff(&cpu, &ours)
        );
    }
}

/// The tokens a..h, "ab", "ba", "abc" and EOS; a language with loops and a long tail.
fn automaton_case() -> (RegexConstraint, usize) {
    let mut toks: Vec<Vec<u8>> = (b'a'..=b'h').map(|c| vec![c]).collect();
    toks.extend([b"ab".to_vec(), b"ba".to_vec(), b"abc".to_vec(), Vec::new()]);
    let vocab = Vocabulary::new(toks, 11, &[11]);
    let c = RegexConstraint::from_regex("(ab|c[de]*)+f?(gh|ba)*", &vocab).unwrap();
    (c, 12)
}

/// The backward table on `engine` equals the CPU's: the same entries −∞, the others
/// within `tol`·max(1, |x|).
fn check_table(engine: &dyn HmmEngine, tol: f64) {
    let (c, vocab) = automaton_case();
    let tensor = c.tensorized().unwrap();
    for (seed, hidden) in [(5, 1), (6, 4), (7, 9)] {
        let hmm = Hmm::random(hidden, vocab, &mut SeededRng::new(seed));
        let cpu = guide_table(&hmm, tensor, 14);
        let ours = block_on(engine.guide_table(&hmm, tensor, 14)).unwrap();
        assert_eq!(cpu.len(), ours.len());
        let mut worst: f64 = 0.0;
        for (i, (x, y)) in cpu.iter().zip(&ours).enumerate() {
            if x.is_infinite() || y.is_infinite() {
                assert_eq!(x, y, "{}: entry {i}", engine.name());
                continue;
            }
            let d = (x - y).abs() / x.abs().max(1.0);
            worst = worst.max(d);
            assert!(d < tol, "{}: entry {i}: {x} against {y}", engine.name());
        }
        let finite = cpu.iter().filter(|x| x.is_finite()).count();
        assert!(
            finite > cpu.len() / 4,
            "the case must exercise the table: {finite} finite"
        );
        eprintln!(
            "{} H={hidden}: {finite} finite entries agree to {worst:e}",
            engine.name()
        );
    }
}

#[test]
fn em_step_on_flex_f64_equals_the_cpu_reference() {
    check_em(&BurnHmm::flex(Precision::F64), 1e-10);
}

#[test]
fn em_step_on_flex_f32_is_within_f32_precision() {
    check_em(&BurnHmm::flex(Precision::F32), 1e-4);
}

#[test]
fn guide_table_on_flex_equals_the_cpu_reference() {
    check_table(&BurnHmm::flex(Precision::F64), 1e-12);
    check_table(&BurnHmm::flex(Precision::F32), 1e-5);
}

/// A table for another vocabulary is refused; a token outside the vocabulary makes its
/// sequence impossible, as on the CPU.
#[test]
fn bad_inputs_are_errors_or_the_references_answer() {
    let e = BurnHmm::flex(Precision::F64);
    let hmm = Hmm::random(2, 3, &mut SeededRng::new(1));
    let data = [vec![0, 3], vec![1, 2]];
    let (a, sa) = block_on(e.em_step(&hmm, &data, 0.1)).unwrap();
    let (b, sb) = block_on(CpuHmm.em_step(&hmm, &data, 0.1)).unwrap();
    assert_eq!(
        (max_diff(&a, &b), sa.log_likelihood),
        (0.0, sb.log_likelihood)
    );
    assert_eq!(sa.log_likelihood, f64::NEG_INFINITY);
    let (c, _) = automaton_case();
    let err = block_on(e.guide_table(&hmm, c.tensorized().unwrap(), 4)).unwrap_err();
    assert!(err.to_string().contains("3 tokens"), "{err}");
    // No data at all: the pseudo-counts alone, as on the CPU.
    let (a, _) = block_on(e.em_step(&hmm, &[], 0.5)).unwrap();
    let (b, _) = block_on(CpuHmm.em_step(&hmm, &[], 0.5)).unwrap();
    assert_eq!(max_diff(&a, &b), 0.0);
}

#[cfg(feature = "wgpu")]
#[test]
fn the_programs_on_wgpu_agree_with_the_cpu_reference() {
    let Some(engine) = BurnHmm::wgpu() else {
        eprintln!("no wgpu adapter on this machine: the wgpu check did not run");
        return;
    };
    check_em(&engine, 1e-4);
    check_table(&engine, 1e-5);
}

/// Counts the calls an engine receives, to show the sampler goes through the seam.
struct Counting<'a> {
    inner: &'a dyn HmmEngine,
    em: std::cell::Cell<usize>,
    tables: std::cell::Cell<usize>,
}

impl HmmEngine for Counting<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn em_step<'a>(
        &'a self,
        hmm: &'a Hmm,
        data: &'a [Vec<TokenId>],
        pseudo: f64,
    ) -> sampler_core::hmm::HmmFuture<'a, (Hmm, sampler_core::hmm::EmStep)> {
        self.em.set(self.em.get() + 1);
        self.inner.em_step(hmm, data, pseudo)
    }
    fn guide_table<'a>(
        &'a self,
        hmm: &'a Hmm,
        tensor: &'a sampler_core::TensorizedAutomaton,
        max_remaining: usize,
    ) -> sampler_core::hmm::HmmFuture<'a, Vec<f64>> {
        self.tables.set(self.tables.get() + 1);
        self.inner.guide_table(hmm, tensor, max_remaining)
    }
}

/// `p-gcd-smc` run with the burn engine in f64 does every EM step and its guide table
/// there, and draws the same particles with the same weights as with the CPU reference.
#[test]
fn p_gcd_smc_on_burn_draws_what_it_draws_on_the_cpu() {
    use sampler_core::samplers::{Io, Method, Params, Sample, Sampler};
    let (c, vocab) = automaton_case();
    let params = Params {
        n: 3,
        particles: 4,
        max_tokens: 8,
        ..Params::default()
    };
    let draw = |engine: &dyn HmmEngine| {
        let mut lm = sampler_core::toy::RandomLm::new(vocab, (vocab - 1) as TokenId, 1, 9);
        let mut out: Vec<Sample> = Vec::new();
        block_on(
            Sampler::new(Method::PGcdSmc)
                .params(&params)
                .hmm_engine(engine)
                .run(
                    &mut lm,
                    &c,
                    Io {
                        rng: &mut SeededRng::new(4),
                        sink: &mut sampler_core::NullSink,
                        out: &mut |s| out.push(s.clone()),
                    },
                ),
        )
        .unwrap();
        out.into_iter()
            .map(|s| (s.tokens, s.weight))
            .collect::<Vec<_>>()
    };
    let flex = BurnHmm::flex(Precision::F64);
    let counting = Counting {
        inner: &flex,
        em: Default::default(),
        tables: Default::default(),
    };
    let ours = draw(&counting);
    let cpu = draw(&CpuHmm);
    // One distillation for the invocation: 20 EM steps (the default) and one table.
    assert_eq!((counting.em.get(), counting.tables.get()), (20, 1));
    assert!(ours.len() >= 3, "{} samples", ours.len());
    assert_eq!(ours.len(), cpu.len());
    for ((t1, w1), (t2, w2)) in ours.iter().zip(&cpu) {
        assert_eq!(t1, t2);
        let (w1, w2) = (
            w1.expect("SMC weighs its particles"),
            w2.expect("SMC weighs"),
        );
        assert!((w1 - w2).abs() <= 1e-9 * w2.abs(), "{w1} against {w2}");
    }
}

/// Exact zeros in π, A and B: the table's log 0s (a transition that cannot happen, an edge
/// whose tokens no state emits) match the CPU's, and an EM step on data with a sequence
/// of probability 0 (its α is 0/0 on the device) gives the reference's step.
#[test]
fn zeros_in_the_hmm_match_the_reference() {
    let (c, vocab) = automaton_case();
    let tensor = c.tensorized().unwrap();
    let mut hmm = Hmm::random(3, vocab, &mut SeededRng::new(8));
    // No state emits token 2 ("c") or 8 ("ab"); state 0 never follows state 1.
    for hs in 0..3 {
        for t in [2, 8] {
            hmm.emission[hs * vocab + t] = 0.0;
        }
    }
    hmm.transition[3] = 0.0;
    for e in [
        &BurnHmm::flex(Precision::F64),
        &BurnHmm::flex(Precision::F32),
    ] {
        let cpu = guide_table(&hmm, tensor, 10);
        let ours = block_on(e.guide_table(&hmm, tensor, 10)).unwrap();
        let d = crate::timing::max_table_diff(&cpu, &ours);
        assert!(d < 1e-5, "{}: {d}", e.name());
        assert!(cpu.iter().any(|x| x.is_infinite()) && cpu.iter().any(|x| x.is_finite()));
        // [0, 1, 2] cannot be emitted: its α is 0/0 in the tensor program.
        let data = [vec![0, 1, 3], vec![0, 1, 2], vec![4]];
        let (a, sa) = block_on(e.em_step(&hmm, &data, 0.0)).unwrap();
        let (b, sb) = block_on(CpuHmm.em_step(&hmm, &data, 0.0)).unwrap();
        assert!(
            max_diff(&a, &b) < 1e-12,
            "{}: {}",
            e.name(),
            max_diff(&a, &b)
        );
        assert_eq!(sa.log_likelihood, sb.log_likelihood);
    }
}

/// With SmolLM2's vocabulary size emissions are about 1e-5: f32 keeps their relative
/// precision (padding that computed b − 1 + 1 lost 1% of it).
#[test]
fn f32_keeps_small_emissions_relative_precision() {
    let v = 49_152;
    let mut rng = SeededRng::new(5);
    let data: Vec<Vec<TokenId>> = (0..12)
        .map(|i| {
            (0..1 + i)
                .map(|_| (rng.uniform() * v as f64) as TokenId)
                .collect()
        })
        .collect();
    let hmm = Hmm::random(4, v, &mut SeededRng::new(6));
    let (a, sa) = block_on(BurnHmm::flex(Precision::F32).em_step(&hmm, &data, 1e-3)).unwrap();
    let (b, sb) = block_on(CpuHmm.em_step(&hmm, &data, 1e-3)).unwrap();
    let rel = a
        .emission
        .iter()
        .zip(&b.emission)
        .map(|(x, y)| (x - y).abs() / y)
        .fold(0.0, f64::max);
    let ll = (sa.log_likelihood - sb.log_likelihood).abs() / sb.log_likelihood.abs();
    eprintln!("f32, V = {v}: emissions within {rel:e} (relative), log-likelihood {ll:e}");
    assert!(rel < 1e-4 && ll < 1e-6, "{rel:e} {ll:e}");
}

/// The table's other routes: edge masses summed on the host (a dense matrix over the
/// limit), and the reference's table (temporaries over the limit).
#[test]
fn guide_table_limits_take_the_other_routes() {
    use crate::guide_table::{Limits, guide_table_within};
    let (c, vocab) = automaton_case();
    let tensor = c.tensorized().unwrap();
    let hmm = Hmm::random(4, vocab, &mut SeededRng::new(9));
    let cpu = guide_table(&hmm, tensor, 12);
    let dev = crate::tensors::Dev::new(crate::Device::flex(), Precision::F64);
    for limits in [
        Limits {
            dense: 1,
            temporary: 1 << 20,
        },
        Limits {
            dense: 1 << 20,
            temporary: 1,
        },
    ] {
        let ours = block_on(guide_table_within(&dev, &hmm, tensor, 12, limits)).unwrap();
        let d = crate::timing::max_table_diff(&cpu, &ours);
        assert!(d < 1e-12, "{limits:?}: {d}");
    }
}
