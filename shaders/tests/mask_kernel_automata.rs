//! The WGSL token-mask kernel on real tensorized automata: for regexes over the real
//! SmolLM2 vocabulary, at states met on seeded random walks and for several remaining
//! budgets, the kernel fed `edge_flags(..)` and the automaton's B_f words equals the CPU
//! reference `mask_from_edge_flags` and sampler-core's `budget_mask`, word for word. Runs
//! on whatever adapter is present (Mesa lavapipe natively); with none it fails.

use sampler_core::{
    Constraint, RandomSource, RegexConstraint, SeededRng, TensorizedAutomaton, TokenId, Vocabulary,
    block_on,
};
use shaders::{Gpu, TokenMask};

/// The regexes checked (the same as grammars/tests/regex_differential.rs), plus every
/// `assets/examples/*.regex`.
fn regexes() -> Vec<String> {
    let mut out: Vec<String> = [
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
    .collect();
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

fn real_vocab() -> Vocabulary {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("model file {} (run setup): {e}", path.display()));
    gguf_vocab::read(&bytes)
}

fn gpu() -> Gpu {
    block_on(Gpu::new()).unwrap_or_else(|e| {
        panic!(
            "no GPU adapter for the WGSL mask kernel test: {e}. Install Mesa lavapipe and set \
             VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
        )
    })
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

    fn run(&self, flags: &[u32]) -> Vec<u32> {
        self.gpu.write_words(&self.flags, 0, flags);
        self.gpu
            .run(|p| self.k.dispatch(p, &self.bind, self.words))
            .unwrap();
        block_on(self.gpu.read_words(&self.mask, 0, self.words)).unwrap()
    }
}

/// Compares the kernel, the CPU reference and `budget_mask` at `alpha` for `remaining`.
fn check(
    kernel: &Kernel<'_>,
    t: &TensorizedAutomaton,
    alpha: &[bool],
    remaining: usize,
    ctx: &str,
) {
    let flags = t.edge_flags(alpha, remaining);
    let cpu = t.mask_from_edge_flags(&flags);
    let gpu = kernel.run(&flags);
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
}

const BUDGETS: &[usize] = &[0, 1, 2, 3, 5, 8, 13, 40, usize::MAX];

#[test]
fn kernel_equals_cpu_masks_on_real_automata() {
    let vocab = real_vocab();
    assert_eq!(vocab.len(), 49152);
    let gpu = gpu();
    let k = block_on(TokenMask::new(&gpu)).expect("kernel compiles");
    let mut checked = 0;
    let mut nonempty = 0;
    for (i, re) in regexes().iter().enumerate() {
        let c = RegexConstraint::from_regex(re, &vocab).expect("regex compiles");
        let t = c.tensorized().expect("regex constraints are tensorized");
        let kernel = Kernel::new(&gpu, &k, t);
        let mut rng = SeededRng::new(77 + i as u64);
        for walk in 0..4 {
            let mut s = c.initial();
            for step in 0..12 {
                let q = c.tensor_state(&s).expect("walk states are indexed");
                let alpha = t.one_hot(q);
                for &rem in BUDGETS {
                    let ctx = format!("{re:?} walk {walk} step {step} state {q}");
                    check(&kernel, t, &alpha, rem, &ctx);
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
                check(&kernel, t, &alpha, rem, &format!("{re:?} random alpha"));
                checked += 1;
            }
        }
    }
    eprintln!("{checked} kernel masks compared ({nonempty} non-empty walk masks)");
    assert!(nonempty > checked / 3, "most masks compared are non-empty");
}

#[test]
fn the_kernel_comparison_can_fail() {
    // A flipped flag changes the mask: the comparison is not vacuous.
    let vocab = real_vocab();
    let gpu = gpu();
    let k = block_on(TokenMask::new(&gpu)).expect("kernel compiles");
    let c = RegexConstraint::from_regex("(yes|no|maybe)", &vocab).unwrap();
    let t = c.tensorized().unwrap();
    let kernel = Kernel::new(&gpu, &k, t);
    let flags = t.edge_flags(&t.initial_alpha(), usize::MAX);
    let mut other = flags.clone();
    let e = other.iter().position(|&f| f != 0).expect("an active edge");
    other[e] = 0;
    assert_ne!(kernel.run(&flags), kernel.run(&other));
    assert_eq!(kernel.run(&flags), t.mask_from_edge_flags(&flags));
}
