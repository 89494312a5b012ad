//! A GGUF writer for tests: tiny synthetic files, valid or broken on purpose.
// Outside this crate's tests only `tiny_llama` is used (feature `test-files`).
#![cfg_attr(not(test), allow(dead_code))]

use crate::gguf::GgmlType;

/// A metadata value to write: type id and encoded payload.
pub(crate) struct Kv {
    pub key: String,
    pub type_id: u32,
    pub payload: Vec<u8>,
}

/// A tensor to write.
pub(crate) struct T {
    pub name: String,
    pub dims: Vec<u64>,
    pub type_id: u32,
    /// Offset relative to the data section; `None` places it after the previous one.
    pub offset: Option<u64>,
    pub data: Vec<u8>,
}

/// Builds a GGUF file.
#[derive(Default)]
pub(crate) struct Builder {
    pub magic: Option<[u8; 4]>,
    pub version: Option<u32>,
    pub kvs: Vec<Kv>,
    pub tensors: Vec<T>,
    pub alignment: Option<usize>,
}

pub(crate) fn gstr(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

impl Builder {
    pub fn kv(mut self, key: &str, type_id: u32, payload: Vec<u8>) -> Self {
        self.kvs.push(Kv {
            key: key.into(),
            type_id,
            payload,
        });
        self
    }
    pub fn str(self, key: &str, v: &str) -> Self {
        self.kv(key, 8, gstr(v))
    }
    pub fn u32(self, key: &str, v: u32) -> Self {
        self.kv(key, 4, v.to_le_bytes().to_vec())
    }
    pub fn f32(self, key: &str, v: f32) -> Self {
        self.kv(key, 6, v.to_le_bytes().to_vec())
    }
    pub fn bool(self, key: &str, v: bool) -> Self {
        self.kv(key, 7, vec![v as u8])
    }
    pub fn strings(self, key: &str, v: &[&str]) -> Self {
        let mut p = 8u32.to_le_bytes().to_vec();
        p.extend_from_slice(&(v.len() as u64).to_le_bytes());
        for s in v {
            p.extend(gstr(s));
        }
        self.kv(key, 9, p)
    }
    pub fn i32s(self, key: &str, v: &[i32]) -> Self {
        let mut p = 5u32.to_le_bytes().to_vec();
        p.extend_from_slice(&(v.len() as u64).to_le_bytes());
        for x in v {
            p.extend_from_slice(&x.to_le_bytes());
        }
        self.kv(key, 9, p)
    }
    pub fn tensor(mut self, name: &str, dims: &[u64], type_id: u32, data: Vec<u8>) -> Self {
        self.tensors.push(T {
            name: name.into(),
            dims: dims.to_vec(),
            type_id,
            offset: None,
            data,
        });
        self
    }
    pub fn f32_tensor(self, name: &str, dims: &[u64], values: &[f32]) -> Self {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.tensor(name, dims, 0, data)
    }

    pub fn build(&self) -> Vec<u8> {
        let align = self.alignment.unwrap_or(32) as u64;
        let mut out = Vec::new();
        out.extend_from_slice(&self.magic.unwrap_or(*b"GGUF"));
        out.extend_from_slice(&self.version.unwrap_or(3).to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.kvs.len() as u64).to_le_bytes());
        for kv in &self.kvs {
            out.extend(gstr(&kv.key));
            out.extend_from_slice(&kv.type_id.to_le_bytes());
            out.extend_from_slice(&kv.payload);
        }
        let mut offsets = Vec::new();
        let mut next = 0u64;
        for t in &self.tensors {
            let off = t.offset.unwrap_or(next);
            offsets.push(off);
            next = off
                .saturating_add(t.data.len() as u64)
                .checked_next_multiple_of(align)
                .unwrap_or(u64::MAX);
            out.extend(gstr(&t.name));
            out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.type_id.to_le_bytes());
            out.extend_from_slice(&off.to_le_bytes());
        }
        let data_start = (out.len() as u64).next_multiple_of(align) as usize;
        out.resize(data_start, 0);
        for (t, off) in self.tensors.iter().zip(offsets) {
            if off > 1 << 24 {
                continue; // deliberately out of range: no data written
            }
            let at = data_start + off as usize;
            if out.len() < at + t.data.len() {
                out.resize(at + t.data.len(), 0);
            }
            out[at..at + t.data.len()].copy_from_slice(&t.data);
        }
        out
    }
}

/// Two mixes of tensor types that between them hold all 13 the engines read, in the order
/// [`tiny_llama_typed`] gives them to the matrices (the embeddings the first): the
/// every-type tests' files.
pub(crate) const EVERY_TYPE_MIXES: [&[GgmlType]; 2] = {
    use GgmlType as T;
    [
        &[
            T::Q8_0,
            T::Q4_0,
            T::Q5_0,
            T::Q5_1,
            T::Bf16,
            T::F16,
            T::F32,
            T::Q4_1,
        ],
        &[
            T::Q6K,
            T::Q2K,
            T::Q3K,
            T::Q4K,
            T::Q5K,
            T::Q6K,
            T::Q4_1,
            T::Q8_0,
        ],
    ]
};

/// A tiny llama model (d = 64, 2 blocks, 4 heads, 2 KV heads, vocab 8, context 16) with
/// deterministic pseudo-random weights: Q4_1 attention and FFN, Q8_0 tied embeddings.
pub(crate) fn tiny_llama() -> Vec<u8> {
    tiny_llama_typed(64, &[GgmlType::Q8_0, GgmlType::Q4_1])
}

/// [`tiny_llama`] of width `d` (= the FFN width; a multiple of 256 for K-quants) whose
/// matrices take the types of `types`: the embeddings the first, the blocks' matrices the
/// others in turn, cycling (all the first when it is alone). Random codes with small
/// finite scales.
pub(crate) fn tiny_llama_typed(d: u64, types: &[GgmlType]) -> Vec<u8> {
    tiny_llama_builder(d, types).build()
}

/// [`tiny_llama_typed`]'s file before it is built (for a test to add a tensor).
pub(crate) fn tiny_llama_builder(d: u64, types: &[GgmlType]) -> Builder {
    let (ff, vocab, layers) = (d, 8u64, 2);
    let mut seed = 12345u64;
    let mut rnd = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    let rest = if types.len() > 1 { &types[1..] } else { types };
    let mut next_type = types[..1].iter().chain(rest.iter().cycle()).copied();
    // (ggml type id, bytes) of a rows × cols matrix of the next type.
    let mut matrix = |rows: u64, cols: u64| -> (u32, Vec<u8>) {
        let ty = next_type.next().expect("at least one type");
        let n = (rows * cols) as usize;
        let mut v: Vec<u8> = (0..n / ty.block_len() * ty.block_bytes())
            .map(|_| rnd() as u8)
            .collect();
        match ty {
            GgmlType::F32 => {
                for (i, w) in v.chunks_exact_mut(4).enumerate() {
                    let x = ((i * 7919) % 200) as f32 / 1000.0 - 0.1;
                    w.copy_from_slice(&x.to_le_bytes());
                }
            }
            // Halves of magnitude below 0.2 (exponent ≤ 12): bounded activations.
            GgmlType::F16 => v
                .chunks_exact_mut(2)
                .for_each(|h| h[1] = (h[1] & 0x83) | 0x2C),
            GgmlType::Bf16 => v
                .chunks_exact_mut(2)
                .for_each(|h| h[1] = (h[1] & 0x80) | 0x3D),
            _ => {
                // Each block's f16 scale fields: d = 1/128-ish, minimums −1/64-ish.
                let fields: &[(usize, u16)] = match ty {
                    GgmlType::Q4_1 | GgmlType::Q5_1 => &[(0, 0x2000), (2, 0xA400)],
                    GgmlType::Q2K => &[(80, 0x2000), (82, 0x2000)],
                    GgmlType::Q3K => &[(108, 0x1C00)],
                    GgmlType::Q4K | GgmlType::Q5K => &[(0, 0x1C00), (2, 0x1C00)],
                    GgmlType::Q6K => &[(208, 0x1800)],
                    _ => &[(0, 0x2000)],
                };
                for block in v.chunks_exact_mut(ty.block_bytes()) {
                    for &(at, bits) in fields {
                        block[at..at + 2].copy_from_slice(&bits.to_le_bytes());
                    }
                }
            }
        }
        (ty.id(), v)
    };
    let tokens = [
        "<|endoftext|>",
        "<|im_start|>",
        "a",
        "b",
        "c",
        "Ġ",
        "ab",
        "Ġa",
    ];
    let mut b = Builder::default()
        .str("general.architecture", "llama")
        .u32("llama.block_count", layers)
        .u32("llama.context_length", 16)
        .u32("llama.embedding_length", d as u32)
        .u32("llama.feed_forward_length", ff as u32)
        .u32("llama.attention.head_count", 4)
        .u32("llama.attention.head_count_kv", 2)
        .f32("llama.rope.freq_base", 10000.0)
        .f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
        .str("tokenizer.ggml.model", "gpt2")
        .str("tokenizer.ggml.pre", "smollm")
        .strings("tokenizer.ggml.tokens", &tokens)
        .i32s("tokenizer.ggml.token_type", &[3, 3, 1, 1, 1, 1, 1, 1])
        .strings("tokenizer.ggml.merges", &["a b", "Ġ a"])
        .u32("tokenizer.ggml.eos_token_id", 0)
        .u32("tokenizer.ggml.bos_token_id", 1)
        .bool("tokenizer.ggml.add_bos_token", false);
    let (ty, data) = matrix(vocab, d);
    b = b.tensor("token_embd.weight", &[d, vocab], ty, data);
    let ones = vec![1.0f32; d as usize];
    let kv = d / 2;
    for l in 0..layers {
        let name = |n: &str| format!("blk.{l}.{n}.weight");
        b = b.f32_tensor(&name("attn_norm"), &[d], &ones);
        for (m, dims) in [
            ("attn_q", [d, d]),
            ("attn_k", [d, kv]),
            ("attn_v", [d, kv]),
            ("attn_output", [d, d]),
        ] {
            let (ty, data) = matrix(dims[1], dims[0]);
            b = b.tensor(&name(m), &dims, ty, data);
        }
        b = b.f32_tensor(&name("ffn_norm"), &[d], &ones);
        for (m, dims) in [
            ("ffn_gate", [d, ff]),
            ("ffn_up", [d, ff]),
            ("ffn_down", [ff, d]),
        ] {
            let (ty, data) = matrix(dims[1], dims[0]);
            b = b.tensor(&name(m), &dims, ty, data);
        }
    }
    b.f32_tensor("output_norm.weight", &[d], &ones)
}
