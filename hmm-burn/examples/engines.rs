//! The HMM engines side by side on SmolLM2-sized synthetic data: a vocabulary of 49,152
//! tokens, 16 sequences of 16 uniformly random tokens, 20 EM iterations at H = 16 and 64,
//! and the guide table of a word-level regex with a 32-token budget. With `--features
//! wgpu` it adds burn's wgpu engine (lavapipe without a GPU):
//!
//! `cargo run -p hmm-burn --features wgpu --example engines`
//!
//! `strait bench hmm` does the same on sequences sampled from the real model.

use hmm_burn::timing::time_engines;
use hmm_burn::{BurnHmm, Precision};
use sampler_core::hmm::{CpuHmm, Hmm, HmmEngine};
use sampler_core::{RandomSource, RegexConstraint, SeededRng, TokenId, Vocabulary};

fn main() {
    const V: usize = 49_152;
    let mut rng = SeededRng::new(1);
    // Distinct lowercase strings of 1-6 letters, a few words with a leading space, a
    // period, "The", "A", and EOS last.
    let mut tokens: Vec<Vec<u8>> = vec![b"The".to_vec(), b"A".to_vec(), b".".to_vec()];
    let mut seen = std::collections::HashSet::new();
    while tokens.len() < V - 1 {
        let len = 1 + (rng.uniform() * 6.0) as usize;
        let mut t: Vec<u8> = (0..len)
            .map(|_| b'a' + (rng.uniform() * 26.0) as u8)
            .collect();
        if rng.uniform() < 0.3 {
            t.insert(0, b' ');
        }
        if seen.insert(t.clone()) {
            tokens.push(t);
        }
    }
    tokens.push(Vec::new());
    let eos = (V - 1) as TokenId;
    let vocab = Vocabulary::new(tokens, eos, &[eos]);
    let regex = "(The|A) [a-z]+( [a-z]+){0,5}\\.";
    let c = RegexConstraint::from_regex(regex, &vocab).expect("the regex compiles");
    let tensor = c.tensorized().expect("a regex has a tensorized automaton");
    let data: Vec<Vec<TokenId>> = (0..16)
        .map(|_| {
            (0..16)
                .map(|_| (rng.uniform() * V as f64) as TokenId)
                .collect()
        })
        .collect();

    #[cfg_attr(not(feature = "wgpu"), allow(unused_mut))]
    let mut engines: Vec<Box<dyn HmmEngine>> = vec![
        Box::new(CpuHmm),
        Box::new(BurnHmm::flex(Precision::F64)),
        Box::new(BurnHmm::flex(Precision::F32)),
    ];
    #[cfg(feature = "wgpu")]
    match BurnHmm::wgpu() {
        Some(e) => engines.push(Box::new(e)),
        None => eprintln!("no wgpu adapter: burn-wgpu not measured"),
    }
    let refs: Vec<&dyn HmmEngine> = engines.iter().map(|e| e.as_ref()).collect();
    println!(
        "regex `{regex}`: {} states, {} edges; 16 × 16 tokens; 20 EM iterations; budget 32\n",
        tensor.num_states,
        tensor.num_edges()
    );
    println!("| H | engine | EM s | × cpu | guide table s | × cpu | max Δθ | max Δ log C |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for hidden in [16, 64] {
        let start = Hmm::init_from_data(hidden, V, &data, 1e-2, &mut SeededRng::new(3));
        let rows = time_engines(&refs, &start, &data, 20, tensor, 32);
        let (em0, t0) = (rows[0].em_s, rows[0].table_s);
        for r in rows {
            match &r.error {
                Some(e) => println!("| {hidden} | {} | failed: {e} | | | | | |", r.engine),
                None => println!(
                    "| {hidden} | {} | {:.3} | {:.2} | {:.3} | {:.2} | {:.1e} | {:.1e} |",
                    r.engine,
                    r.em_s,
                    r.em_s / em0,
                    r.table_s,
                    r.table_s / t0,
                    r.max_param_diff,
                    r.max_table_diff
                ),
            }
        }
    }
}
