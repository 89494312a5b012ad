//! The WGSL token-mask kernel on real tensorized automata: for regexes over a vocabulary,
//! at states met on seeded random walks and for several remaining budgets, the kernel fed
//! `edge_flags(..)` and the automaton's B_f words equals the CPU reference
//! `mask_from_edge_flags` and sampler-core's `budget_mask`, word for word.
//!
//! Natively (Mesa lavapipe here) over the real SmolLM2 vocabulary read from the GGUF file;
//! on both targets — natively and, through `cargo xtask test`, in headless Chromium on
//! SwiftShader, where there is no file to read — over a synthetic vocabulary of the same
//! size (49152 tokens: every byte, then seeded random byte strings). With no adapter the
//! tests fail.

use crate::common;

use common::{gpu_tests, now_ms, say};
use sampler_core::{
    Constraint, RandomSource, RegexConstraint, SeededRng, TensorizedAutomaton, TokenId, Vocabulary,
};
use shaders::{Gpu, TokenMask};

/// Regexes checked on every target (the same as grammars/tests/regex_differential.rs).
fn inline_regexes() -> Vec<String> {
    [
        "[0-9]{4}-[0-9]{2}-[0-9]{2}",
        "(yes|no|maybe)",
        r"\(\d{3}\) \d{3}-\d{4}",
        r#"\{"x": -?(0|[1-9][0-9]{0,15})\}"#,
        "(the|a|an) (cat|dog|bird)( and (the|a|an) (cat|dog|bird))*",
        "[a-z]+( [a-z]+){0,5}",
        "(ab|ba)*c?",
        "[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8})?, (yes|no)",
        "(hello|help|hell) (world|word)+",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The inline regexes plus every `assets/examples/*.regex` (natively: files are read).
#[cfg(not(target_arch = "wasm32"))]
fn regexes() -> Vec<String> {
    let mut out = inline_regexes();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/examples");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    for f in files {
        if f.extension().is_some_and(|e| e == "regex") {
            let text = std::fs::read_to_string(&f).expect("readable regex file");
            out.push(text.trim_end_matches(['\n', '\r']).to_string());
        }
    }
    out
}

/// A vocabulary of 49152 distinct tokens: EOS (`<eos>`, id 0), the 256 single bytes,
/// then seeded random strings of 2 to 8 bytes drawn mostly from the characters the
/// regexes use (letters, digits, space, punctuation), some from all bytes.
fn synthetic_vocab() -> Vocabulary {
    const V: usize = 49152;
    let common = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -(){}:,\"";
    let mut rng = common::Rng(0x05EE_D0F7_0CE5_u64);
    let mut seen = std::collections::HashSet::new();
    let mut tokens: Vec<Vec<u8>> = vec![b"<eos>".to_vec()];
    tokens.extend((0..=255u8).map(|b| vec![b]));
    seen.extend(tokens.iter().cloned());
    while tokens.len() < V {
        let len = 2 + (rng.next() % 7) as usize;
        let t: Vec<u8> = (0..len)
            .map(|_| {
                let r = rng.next();
                if r.is_multiple_of(16) {
                    (r >> 8) as u8
                } else {
                    common[(r >> 8) as usize % common.len()]
                }
            })
            .collect();
        if seen.insert(t.clone()) {
            tokens.push(t);
        }
    }
    Vocabulary::new(tokens, 0, &[])
}

#[cfg(not(target_arch = "wasm32"))]
/// A minimal reader of the vocabulary in a GGUF file (this crate cannot depend on `lm`):
/// `tokenizer.ggml.tokens` decoded from GPT-2 byte-level characters to bytes,
/// `tokenizer.ggml.token_type` (control/unknown/unused tokens are special) and
/// `tokenizer.ggml.eos_token_id`, as `lm::Tokenizer::vocabulary` builds it.
mod gguf_vocab {
    use sampler_core::{TokenId, Vocabulary};

    struct Reader<'a> {
        b: &'a [u8],
        at: usize,
    }

    impl Reader<'_> {
        fn take(&mut self, n: usize) -> &[u8] {
            let s = &self.b[self.at..self.at + n];
            self.at += n;
            s
        }
        fn u32(&mut self) -> u32 {
            u32::from_le_bytes(self.take(4).try_into().unwrap())
        }
        fn u64(&mut self) -> u64 {
            u64::from_le_bytes(self.take(8).try_into().unwrap())
        }
        fn string(&mut self) -> Vec<u8> {
            let n = self.u64() as usize;
            self.take(n).to_vec()
        }
        /// Reads one value of GGUF type `ty`: integers as `i64`, strings as bytes.
        fn value(&mut self, ty: u32) -> Value {
            match ty {
                0 | 1 | 7 => Value::Int(self.take(1)[0] as i64),
                2 | 3 => Value::Int(u16::from_le_bytes(self.take(2).try_into().unwrap()) as i64),
                4 => Value::Int(self.u32() as i64),
                5 => Value::Int(self.u32() as i32 as i64),
                6 => Value::Int(self.u32() as i64),
                8 => Value::Str(self.string()),
                9 => {
                    let t = self.u32();
                    let n = self.u64() as usize;
                    Value::Array((0..n).map(|_| self.value(t)).collect())
                }
                10..=12 => Value::Int(self.u64() as i64),
                _ => panic!("unknown GGUF value type {ty}"),
            }
        }
    }

    enum Value {
        Int(i64),
        Str(Vec<u8>),
        Array(Vec<Value>),
    }

    /// GPT-2's byte-to-character table, inverted.
    fn char_to_byte() -> std::collections::HashMap<char, u8> {
        let mut m = std::collections::HashMap::new();
        let mut n = 0u32;
        for b in 0..=255u8 {
            let printable = (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
            let c = if printable {
                char::from_u32(b as u32).unwrap()
            } else {
                n += 1;
                char::from_u32(255 + n).unwrap()
            };
            m.insert(c, b);
        }
        m
    }

    /// The vocabulary of the GGUF file `bytes`.
    pub fn read(bytes: &[u8]) -> Vocabulary {
        let mut r = Reader { b: bytes, at: 0 };
        assert_eq!(r.take(4), b"GGUF", "a GGUF file");
        let _version = r.u32();
        let _tensors = r.u64();
        let kvs = r.u64();
        let (mut tokens, mut types, mut eos) = (None, None, None);
        for _ in 0..kvs {
            let key = r.string();
            let ty = r.u32();
            let v = r.value(ty);
            match (key.as_slice(), v) {
                (b"tokenizer.ggml.tokens", Value::Array(a)) => tokens = Some(a),
                (b"tokenizer.ggml.token_type", Value::Array(a)) => types = Some(a),
                (b"tokenizer.ggml.eos_token_id", Value::Int(e)) => eos = Some(e as TokenId),
                _ => {}
            }
        }
        let map = char_to_byte();
        let types: Vec<i64> = types
            .expect("token types")
            .into_iter()
            .map(|v| match v {
                Value::Int(i) => i,
                _ => panic!("token type is an integer"),
            })
            .collect();
        let eos = eos.expect("eos id");
        let tokens: Vec<Vec<u8>> = tokens
            .expect("tokens")
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::Str(s) => {
                    let text = String::from_utf8(s).expect("token text is UTF-8");
                    let decoded: Option<Vec<u8>> =
                        text.chars().map(|c| map.get(&c).copied()).collect();
                    match (types[i], decoded) {
                        // Control and user-defined tokens are their literal text.
                        (0 | 1 | 2 | 5, Some(d)) => d,
                        _ => text.into_bytes(),
                    }
                }
                _ => panic!("token is a string"),
            })
            .collect();
        // GGUF token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
        let special: Vec<TokenId> = (0..tokens.len() as TokenId)
            .filter(|&t| t != eos && matches!(types[t as usize], 2 | 3 | 5))
            .collect();
        Vocabulary::new(tokens, eos, &special)
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn real_vocab() -> Vocabulary {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("model file {} (run setup): {e}", path.display()));
    gguf_vocab::read(&bytes)
}

async fn gpu() -> Gpu {
    common::gpu().await
}

/// The kernel on one automaton: B_f uploaded once, flags written per call.
struct Kernel<'a> {
    gpu: &'a Gpu,
    k: &'a TokenMask,
    flags: shaders::wgpu::Buffer,
    mask: shaders::wgpu::Buffer,
    bind: shaders::wgpu::BindGroup,
    words: usize,
}

impl<'a> Kernel<'a> {
    fn new(gpu: &'a Gpu, k: &'a TokenMask, t: &TensorizedAutomaton) -> Self {
        let words = t.words_per_row;
        assert_eq!(words, shaders::mask_words(t.vocab_size));
        assert_eq!(t.bf.len(), t.num_edges() * words);
        let flags = gpu
            .storage("flags", &shaders::u32_bytes(&vec![0; t.num_edges()]))
            .unwrap();
        let bf = gpu.storage("bf", &shaders::u32_bytes(&t.bf)).unwrap();
        let mask = gpu.zeroed("mask", words).unwrap();
        let dims = TokenMask::dims(gpu, t.num_edges(), words);
        let bind = k.bind(gpu, &flags, &bf, &mask, &dims);
        Kernel {
            gpu,
            k,
            flags,
            mask,
            bind,
            words,
        }
    }

    async fn run(&self, flags: &[u32]) -> Vec<u32> {
        self.gpu.write_words(&self.flags, 0, flags);
        self.gpu
            .run(|p| self.k.dispatch(p, &self.bind, self.words))
            .unwrap();
        self.gpu
            .read_words(&self.mask, 0, self.words)
            .await
            .unwrap()
    }
}

/// Compares the kernel, the CPU reference and `budget_mask` at `alpha` for `remaining`;
/// returns the milliseconds of the kernel (flags upload, dispatch, read-back).
async fn check(
    kernel: &Kernel<'_>,
    t: &TensorizedAutomaton,
    alpha: &[bool],
    remaining: usize,
    ctx: &str,
) -> f64 {
    let flags = t.edge_flags(alpha, remaining);
    let cpu = t.mask_from_edge_flags(&flags);
    let t0 = now_ms();
    let gpu = kernel.run(&flags).await;
    let ms = now_ms() - t0;
    if let Some(w) = (0..cpu.len()).find(|&w| cpu[w] != gpu[w]) {
        panic!(
            "{ctx}, remaining {remaining}: kernel word {w} = {:#010x}, CPU reference {:#010x}",
            gpu[w], cpu[w]
        );
    }
    let budget = t.budget_mask(alpha, remaining).to_u32_words();
    assert_eq!(
        &budget[..cpu.len()],
        &cpu[..],
        "{ctx}: budget_mask vs reference"
    );
    ms
}

const BUDGETS: &[usize] = &[0, 1, 2, 3, 5, 8, 13, 40, usize::MAX];

/// Walks `walks` random walks of up to `steps` tokens per regex, comparing the kernel with
/// the references at each state and budget, then random state sets; prints the figures.
async fn compare_on(vocab: &Vocabulary, regexes: &[String], walks: usize, steps: usize) {
    let gpu = gpu().await;
    let adapter = common::adapter_description(&gpu).await;
    let k = TokenMask::new(&gpu).await.expect("kernel compiles");
    let (mut checked, mut nonempty, mut kernel_ms) = (0usize, 0usize, 0f64);
    for (i, re) in regexes.iter().enumerate() {
        let c = RegexConstraint::from_regex(re, vocab).expect("regex compiles");
        let t = c.tensorized().expect("regex constraints are tensorized");
        let kernel = Kernel::new(&gpu, &k, t);
        let mut rng = SeededRng::new(77 + i as u64);
        for walk in 0..walks {
            let mut s = c.initial();
            for step in 0..steps {
                let q = c.tensor_state(&s).expect("walk states are indexed");
                let alpha = t.one_hot(q);
                for &rem in BUDGETS {
                    let ctx = format!("{re:?} walk {walk} step {step} state {q}");
                    kernel_ms += check(&kernel, t, &alpha, rem, &ctx).await;
                    // sampler-core's budget mask through the constraint seam agrees too.
                    let seam = c.budget_mask(&s, rem).expect("budget mask").to_u32_words();
                    let cpu = t.mask_from_edge_flags(&t.edge_flags(&alpha, rem));
                    assert_eq!(&seam[..cpu.len()], &cpu[..], "{ctx}: seam vs reference");
                    nonempty += usize::from(cpu.iter().any(|&w| w != 0));
                    checked += 1;
                }
                let allowed: Vec<TokenId> =
                    c.mask(&s).iter().filter(|&t| t != vocab.eos()).collect();
                if allowed.is_empty() {
                    break;
                }
                let tok = allowed[(rng.uniform() * allowed.len() as f64) as usize % allowed.len()];
                s = c.advance(&s, tok).expect("masked token advances");
            }
        }
        // Sets of several states (the NFA view): α after random tokens from random sets.
        for _ in 0..4 {
            let alpha: Vec<bool> = (0..t.num_states).map(|_| rng.bernoulli(0.4)).collect();
            for &rem in BUDGETS {
                kernel_ms += check(&kernel, t, &alpha, rem, &format!("{re:?} random alpha")).await;
                checked += 1;
            }
        }
    }
    say!(
        "{checked} kernel masks compared at V={} ({nonempty} non-empty walk masks); \
         {:.3} ms per mask (flags upload, dispatch, read-back) on {adapter}",
        vocab.len(),
        kernel_ms / (checked.max(1)) as f64
    );
    assert!(nonempty > checked / 3, "most masks compared are non-empty");
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn kernel_equals_cpu_masks_on_real_automata() {
    let vocab = real_vocab();
    assert_eq!(vocab.len(), 49152);
    sampler_core::block_on(compare_on(&vocab, &regexes(), 4, 12));
}

gpu_tests! {
    async fn kernel_equals_cpu_masks_on_a_synthetic_vocabulary() {
        let vocab = synthetic_vocab();
        assert_eq!(vocab.len(), 49152);
        compare_on(&vocab, &inline_regexes(), 2, 10).await;
    }

    async fn the_kernel_comparison_can_fail() {
        // A flipped flag changes the mask: the comparison is not vacuous.
        let vocab = synthetic_vocab();
        let gpu = gpu().await;
        let k = TokenMask::new(&gpu).await.expect("kernel compiles");
        let c = RegexConstraint::from_regex("(yes|no|maybe)", &vocab).unwrap();
        let t = c.tensorized().unwrap();
        let kernel = Kernel::new(&gpu, &k, t);
        let flags = t.edge_flags(&t.initial_alpha(), usize::MAX);
        let mut other = flags.clone();
        let e = other.iter().position(|&f| f != 0).expect("an active edge");
        other[e] = 0;
        assert_ne!(kernel.run(&flags).await, kernel.run(&other).await);
        assert_eq!(kernel.run(&flags).await, t.mask_from_edge_flags(&flags));
    }
}
