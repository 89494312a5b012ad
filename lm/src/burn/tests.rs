//! The burn program against the CPU forward pass on tiny random models of every tensor
//! type (the real SmolLM2 and the qwen2/qwen3/Llama 3 files: `tests/llama_cpp_reference.rs`).

use super::{BurnModel, BurnPromptedModel, devices_for_tests};
use crate::gguf::GgmlType as T;
use crate::test_gguf::{EVERY_TYPE_MIXES, tiny_llama, tiny_llama_typed};
use crate::{Model, PromptedModel};
use sampler_core::{LanguageModel, block_on};
use std::sync::Arc;

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// The GPU tests' bound on logits (`tests/gpu_forward.rs`): f32 sums in another order.
const LOGIT_TOLERANCE: f32 = 0.01;

#[test]
fn every_tensor_type_matches_the_cpu_forward_and_a_wrong_position_is_caught() {
    let [every_a, every_b] = EVERY_TYPE_MIXES;
    let mixes: [&[T]; 3] = [every_a, every_b, &[T::Q4_1]];
    let tokens = [2, 3, 6, 5, 7, 4];
    // Per device: each engine must move under the fault, not just one of them.
    let mut mutant = std::collections::BTreeMap::<&str, f32>::new();
    for types in mixes {
        let model = Arc::new(Model::from_bytes(tiny_llama_typed(256, types)).unwrap());
        let want = model.forward(&mut model.new_cache(), &tokens, 0).unwrap();
        for (device, name) in devices_for_tests() {
            let mut b = BurnModel::new(model.clone(), device, name);
            // All at once, then a prefix and the rest one by one through the cache.
            let all = block_on(b.forward(&tokens, 0)).unwrap();
            let d = max_diff(&all, &want);
            assert!(d <= LOGIT_TOLERANCE, "{name} {types:?}: {d}");
            b.truncate(0);
            let mut steps = block_on(b.forward(&tokens[..2], 0)).unwrap();
            for &t in &tokens[2..] {
                steps.extend(block_on(b.forward(&[t], 0)).unwrap());
            }
            let d = max_diff(&steps, &want);
            assert!(d <= LOGIT_TOLERANCE, "{name} {types:?} step by step: {d}");
            assert_eq!(b.cached(), tokens.len());
            // The mutant: a position off by one (the cache one short).
            b.truncate(tokens.len() - 2);
            let off = block_on(b.forward(&tokens[tokens.len() - 1..], 0)).unwrap();
            let v = model.config().vocab_size;
            let m = mutant.entry(name).or_default();
            *m = m.max(max_diff(&off, &want[want.len() - v..]));
        }
    }
    // It moves the logits far past the bound (in the mixed files; the Q4_1-only one's
    // random weights barely attend).
    assert_eq!(mutant.len(), devices_for_tests().len());
    for (name, m) in mutant {
        assert!(m > 10.0 * LOGIT_TOLERANCE, "{name}: mutant {m}");
    }
}

#[test]
fn the_prompted_model_matches_the_cpu_one_and_reuses_its_cache() {
    let model = Arc::new(Model::from_bytes(tiny_llama()).unwrap());
    let prompt = vec![1, 2, 3];
    for (device, name) in devices_for_tests() {
        let mut b =
            BurnPromptedModel::new(BurnModel::new(model.clone(), device, name), prompt.clone())
                .unwrap();
        let mut c = PromptedModel::new(model.clone(), prompt.clone()).unwrap();
        for p in [&[][..], &[4], &[4, 5], &[4, 6], &[4, 6], &[7]] {
            let got = block_on(b.logprobs(p)).unwrap();
            let want = block_on(c.logprobs(p)).unwrap();
            let d = got
                .iter()
                .zip(&want)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            // Log-softmax shifts every logit by one log-sum-exp: twice the logit bound.
            assert!(d <= 2.0 * LOGIT_TOLERANCE as f64, "{name} {p:?}: {d}");
            assert_eq!(b.forward_tokens(), c.forward_tokens(), "{name} {p:?}");
            assert_eq!(b.cached_len(), prompt.len() + p.len());
        }
        assert_eq!(b.eos(), model.tokenizer().eos());
        assert_eq!(b.vocab_size(), model.config().vocab_size);
        let e = block_on(b.logprobs(&[99])).unwrap_err();
        assert!(e.0.contains("outside the vocabulary"), "{e}");
        let long = vec![1; model.config().context_length];
        let e = block_on(b.logprobs(&long)).unwrap_err();
        assert!(e.0.contains("exceed the model's context"), "{e}");
        // After refused calls the model still answers, and correctly.
        let got = block_on(b.logprobs(&[4])).unwrap();
        let want = block_on(c.logprobs(&[4])).unwrap();
        assert!(got.iter().zip(&want).all(|(x, y)| (x - y).abs() <= 0.02));
        let m = b.into_model();
        // A prompt the model cannot take is refused by the check the page makes before it
        // lends the model out, with the message `new` gives.
        let too_long = vec![1; model.config().context_length + 1];
        for (bad, says) in [
            (Vec::new(), "empty"),
            (too_long, "exceeds the model's context"),
            (vec![99], "outside the vocabulary"),
        ] {
            let e = BurnPromptedModel::check_prompt(&m, &bad).unwrap_err();
            assert!(e.0.contains(says), "{e}");
        }
        assert!(BurnPromptedModel::check_prompt(&m, &prompt).is_ok());
        let e = BurnPromptedModel::new(m, Vec::new()).unwrap_err();
        assert!(e.0.contains("empty"), "{e}");
    }
}

/// Each format's WGSL product as a burn custom kernel, one matrix at a time, against the
/// f64 product with the CPU's dequantized rows (`quant`'s decoders), for 1 and 5 vectors,
/// in both kernel forms.
#[cfg(all(feature = "burn-wgpu", not(feature = "burn-fusion")))]
#[test]
fn custom_kernels_match_the_dequantized_product() {
    use super::linear::{Linear, floats};
    use shaders::MatVecStrategy;
    // Built with burn-wgpu, the kernels must run: as the GPU tests (`tests/gpu_forward.rs`),
    // a machine without an adapter fails here rather than passing untested (lavapipe:
    // `mesa-vulkan-drivers`, which `cargo xtask test` installs).
    let device = super::wgpu().expect("no wgpu adapter: install mesa-vulkan-drivers (lavapipe)");
    let mixes: [&[T]; 2] = [
        &[T::Q8_0, T::Q4_0, T::Q5_0, T::Q5_1, T::Bf16, T::F16, T::Q4_1],
        &[T::Q6K, T::Q2K, T::Q3K, T::Q4K, T::Q5K],
    ];
    let mut seen = std::collections::HashSet::new();
    for types in mixes {
        let model = Model::from_bytes(tiny_llama_typed(256, types)).unwrap();
        let bytes = model.bytes();
        let w = model.weights();
        let matrices = w
            .layers
            .iter()
            .flat_map(|l| [&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down])
            .chain([&w.output]);
        for m in matrices {
            let Some((ty, _)) = m.blocks(bytes) else {
                continue;
            };
            seen.insert(ty);
            assert!(matches!(
                Linear::upload(m, bytes, &device, true),
                Linear::Quantized(_)
            ));
            let (_, blocks) = m.blocks(bytes).unwrap();
            let format = crate::gpu::tensors::file_format(ty).unwrap();
            let w = m.to_f32(bytes);
            let cols = m.cols();
            let rows = w.len() / cols;
            for (strategy, n) in [
                (MatVecStrategy::InvocationPerRow, 1),
                (MatVecStrategy::InvocationPerRow, 5),
                (MatVecStrategy::WorkgroupPerRow, 1),
                (MatVecStrategy::WorkgroupPerRow, 5),
            ] {
                let lin = Linear::Quantized(Box::new(super::custom::QuantMatrix::upload_with(
                    &device, format, ty, blocks, cols, strategy,
                )));
                let x: Vec<f32> = (0..n * cols)
                    .map(|i| ((i * 7919) % 257) as f32 / 128.0 - 1.0)
                    .collect();
                let got = block_on(
                    lin.apply(floats(x.clone(), [n, cols], &device))
                        .into_data_async(),
                )
                .unwrap()
                .convert::<f32>()
                .try_to_vec::<f32>()
                .unwrap();
                for t in 0..n {
                    for r in 0..rows {
                        let (mut want, mut mag) = (0f64, 0f64);
                        for c in 0..cols {
                            let p = w[r * cols + c] as f64 * x[t * cols + c] as f64;
                            want += p;
                            mag += p.abs();
                        }
                        let d = (got[t * rows + r] as f64 - want).abs();
                        assert!(
                            d <= 1e-5 * mag + 1e-6,
                            "{ty:?} {strategy:?} n={n} t={t} row {r}: {d}"
                        );
                    }
                }
            }
        }
    }
    // Every quantized type (Q4_0 runs as Q4_1 blocks).
    assert_eq!(seen.len(), 11, "{seen:?}");
}

/// RoPE as burn ops against the CPU pass's, in both pairings, turning all of each head or
/// only its first half (`n_rot < head_dim`: the rest passes unturned), at three positions.
#[test]
fn rope_matches_the_cpu_one_in_both_pairings_and_partial_rotation() {
    use crate::config::RopeStyle;
    use crate::forward::{rope, rope_angles};
    let model = Model::from_bytes(tiny_llama()).unwrap();
    let base = model.config().clone();
    let (heads, hd) = (3, 8);
    let n = 3;
    let x: Vec<f32> = (0..n * heads * hd)
        .map(|i| (i as f32 * 0.37).sin())
        .collect();
    for style in [RopeStyle::Adjacent, RopeStyle::Halves] {
        for n_rot in [hd, hd / 2] {
            let mut c = base.clone();
            c.head_dim = hd;
            c.n_rot = n_rot;
            c.rope_style = style;
            c.rope_freqs = (0..n_rot / 2)
                .map(|i| 10000f64.powf(-2.0 * i as f64 / n_rot as f64))
                .collect();
            for (device, name) in devices_for_tests() {
                let (mut cos, mut sin) = (Vec::new(), Vec::new());
                for p in 5..5 + n {
                    for (co, si) in rope_angles(p, &c.rope_freqs) {
                        cos.push(co);
                        sin.push(si);
                    }
                }
                let f = |v: Vec<f32>| super::linear::floats(v, [n, n_rot / 2], &device);
                let got = super::model::rope(
                    super::linear::floats(x.clone(), [n, heads * hd], &device),
                    &f(cos),
                    &f(sin),
                    &c,
                );
                let got = block_on(got.into_data_async())
                    .unwrap()
                    .convert::<f32>()
                    .try_to_vec::<f32>()
                    .unwrap();
                let mut want = x.clone();
                for (t, row) in want.chunks_exact_mut(heads * hd).enumerate() {
                    rope(row, hd, &rope_angles(5 + t, &c.rope_freqs), style);
                }
                let d = max_diff(&got, &want);
                assert!(d < 1e-5, "{name} {style:?} n_rot {n_rot}: {d}");
                if n_rot < hd {
                    // The unturned half is the input's.
                    assert_eq!(got[hd - 1], x[hd - 1]);
                }
            }
        }
    }
}
