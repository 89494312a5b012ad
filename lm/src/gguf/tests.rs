//! Bad files are refused with a clear error, never a panic or a giant allocation.

use super::*;
use crate::test_gguf::{Builder, gstr};
use proptest::prelude::*;

fn q4_1_block() -> Vec<u8> {
    let mut b = vec![0u8; 20];
    b[0..2].copy_from_slice(&0x3C00u16.to_le_bytes()); // d = 1
    b[2..4].copy_from_slice(&0x0000u16.to_le_bytes()); // m = 0
    for j in 0..16 {
        b[4 + j] = (j as u8) | ((j as u8) << 4);
    }
    b
}

/// A small valid file with every value type and each supported tensor type.
fn valid() -> Builder {
    let mut nested = 9u32.to_le_bytes().to_vec(); // array of arrays
    nested.extend_from_slice(&2u64.to_le_bytes());
    for n in [1u64, 2] {
        nested.extend_from_slice(&4u32.to_le_bytes());
        nested.extend_from_slice(&n.to_le_bytes());
        for i in 0..n as u32 {
            nested.extend_from_slice(&i.to_le_bytes());
        }
    }
    let mut q8 = vec![0u8; 34];
    q8[0..2].copy_from_slice(&0x4000u16.to_le_bytes()); // d = 2
    for j in 0..32 {
        q8[2 + j] = (j as i8 - 16) as u8;
    }
    Builder::default()
        .kv("u8", 0, vec![200])
        .kv("i8", 1, vec![0xFF])
        .kv("u16", 2, 5000u16.to_le_bytes().to_vec())
        .kv("i16", 3, (-5i16).to_le_bytes().to_vec())
        .u32("u32", 7)
        .kv("i32", 5, (-7i32).to_le_bytes().to_vec())
        .f32("f32", 0.5)
        .bool("bool", true)
        .str("string", "héllo")
        .kv("u64", 10, u64::MAX.to_le_bytes().to_vec())
        .kv("i64", 11, (-9i64).to_le_bytes().to_vec())
        .kv("f64", 12, 0.25f64.to_le_bytes().to_vec())
        .strings("strings", &["a", "", "ĠĊ"])
        .kv("nested", 9, nested)
        .f32_tensor("f32", &[4], &[1.0, -2.0, 3.5, 0.0])
        .tensor(
            "f16",
            &[2, 1],
            1,
            [0x3C00u16, 0xC000]
                .iter()
                .flat_map(|h| h.to_le_bytes())
                .collect(),
        )
        .tensor("q8_0", &[32, 1], 8, q8)
        .tensor("q4_1", &[32, 2], 3, [q4_1_block(), q4_1_block()].concat())
}

fn err(bytes: &[u8]) -> GgufError {
    Gguf::parse(bytes).expect_err("the file should be refused")
}

#[test]
fn reads_every_value_and_tensor_type() {
    let bytes = valid().build();
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.version, 3);
    assert_eq!(g.get("u8"), Some(&Value::U8(200)));
    assert_eq!(g.get("i8"), Some(&Value::I8(-1)));
    assert_eq!(g.get("u16"), Some(&Value::U16(5000)));
    assert_eq!(g.get("i16"), Some(&Value::I16(-5)));
    assert_eq!(g.get_u64("u32").unwrap(), 7);
    assert_eq!(g.get("i32"), Some(&Value::I32(-7)));
    assert_eq!(g.get_f64("f32").unwrap(), 0.5);
    assert!(g.get_bool("bool").unwrap());
    assert_eq!(g.get_str("string").unwrap(), "héllo");
    assert_eq!(g.get_u64("u64").unwrap(), u64::MAX);
    assert_eq!(g.get("i64"), Some(&Value::I64(-9)));
    assert_eq!(g.get_f64("f64").unwrap(), 0.25);
    assert_eq!(g.get_strings("strings").unwrap(), ["a", "", "ĠĊ"]);
    assert_eq!(
        g.get_array("nested").unwrap(),
        &Array::Array(vec![Array::U32(vec![0]), Array::U32(vec![0, 1])])
    );
    assert!(matches!(g.get_u64("i64"), Err(GgufError::WrongType { .. })));
    assert!(matches!(g.get_str("nope"), Err(GgufError::MissingKey(_))));

    let mut out = vec![0f32; 4];
    dequantize_f32(g.tensor_data(&bytes, "f32").unwrap(), &mut out);
    assert_eq!(out, [1.0, -2.0, 3.5, 0.0]);
    dequantize_f16(g.tensor_data(&bytes, "f16").unwrap(), &mut out[..2]);
    assert_eq!(out[..2], [1.0, -2.0]);
    let mut w = vec![0f32; 64];
    dequantize_q8_0(g.tensor_data(&bytes, "q8_0").unwrap(), &mut w[..32]);
    assert_eq!(w[0], -32.0);
    assert_eq!(w[31], 30.0);
    dequantize_q4_1(g.tensor_data(&bytes, "q4_1").unwrap(), &mut w);
    assert_eq!(w[3], 3.0);
    assert_eq!(w[19], 3.0);
    let t = g.tensor("q4_1").unwrap();
    assert_eq!(
        (t.ty, t.row_len(), t.n_rows(), t.size),
        (GgmlType::Q4_1, 32, 2, 40)
    );
    for t in &g.tensors {
        assert_eq!((t.offset - g.data_offset) % g.alignment, 0);
    }
}

#[test]
fn custom_alignment() {
    let mut b = valid().u32("general.alignment", 64);
    b.alignment = Some(64);
    let bytes = b.build();
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.alignment, 64);
    assert_eq!(g.data_offset % 64, 0);
    for bad in [0u32, 3, 48] {
        let e = err(&valid().u32("general.alignment", bad).build());
        assert!(matches!(e, GgufError::BadAlignment(_)), "{bad}: {e}");
    }
    let e = err(&valid().str("general.alignment", "32").build());
    assert!(e.to_string().contains("expected an integer"), "{e}");
}

#[test]
fn bad_magic() {
    let mut b = valid();
    b.magic = Some(*b"GGML");
    let e = err(&b.build());
    assert_eq!(e, GgufError::BadMagic(*b"GGML"));
    assert!(e.to_string().contains("not a GGUF file"));
    assert_eq!(err(b"GG"), GgufError::TooShort(2));
    assert!(
        err(b"").to_string().contains("the file is empty"),
        "{}",
        err(b"")
    );
}

#[test]
fn unsupported_version() {
    for v in [0, 1, 4, u32::MAX] {
        let mut b = valid();
        b.version = Some(v);
        let e = err(&b.build());
        assert_eq!(e, GgufError::UnsupportedVersion(v));
        assert!(e.to_string().contains(&format!("version {v}")));
    }
}

#[test]
fn every_truncation_is_refused() {
    let bytes = valid().build();
    for len in 0..bytes.len() {
        let e = err(&bytes[..len]);
        let msg = e.to_string();
        assert!(
            matches!(
                e,
                GgufError::TooShort(_)
                    | GgufError::Truncated { .. }
                    | GgufError::TooLarge { .. }
                    | GgufError::BadOffset { .. }
            ),
            "{len}: {msg}"
        );
    }
    // Cutting into the data section names the tensor.
    let e = err(&bytes[..bytes.len() - 1]);
    assert!(
        e.to_string().contains("\"q4_1\"") && e.to_string().contains("run past the end"),
        "{e}"
    );
}

#[test]
fn unknown_and_unsupported_tensor_types() {
    // IQ4_XS (ggml type 23): known to ggml, not read here; the message names it and
    // lists what is.
    let e = err(&Builder::default()
        .tensor("w", &[256], 23, vec![0; 136])
        .build());
    assert!(
        e.to_string().contains("IQ4_XS (ggml type 23)")
            && e.to_string().contains("supports F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K"),
        "{e}"
    );
    let e = err(&Builder::default()
        .tensor("w", &[32], 99, vec![0; 32])
        .build());
    assert!(e.to_string().contains("unknown type id 99"), "{e}");
}

#[test]
fn bad_shapes() {
    let cases: Vec<(Vec<u64>, u32, &str)> = vec![
        (vec![1, 1, 1, 1, 1], 0, "5 dimensions"),
        (vec![], 0, "0 dimensions"),
        (vec![4, 0], 0, "include a zero"),
        (vec![u64::MAX, 2], 0, "overflow"),
        (vec![1 << 40, 1 << 40], 0, "overflow"),
        (vec![48, 1], 3, "not a multiple of the Q4_1 block length 32"),
    ];
    for (dims, ty, want) in cases {
        let e = err(&Builder::default()
            .tensor("w", &dims, ty, vec![0; 64])
            .build());
        assert!(
            matches!(e, GgufError::BadShape { .. }) && e.to_string().contains(want),
            "{dims:?}: {e}"
        );
    }
}

#[test]
fn offsets_out_of_range_or_misaligned() {
    let mut b = Builder::default().f32_tensor("w", &[8], &[0.0; 8]);
    b.tensors[0].offset = Some(1 << 30);
    let e = err(&b.build());
    assert!(
        matches!(e, GgufError::BadOffset { .. }) && e.to_string().contains("run past the end"),
        "{e}"
    );
    let mut b = Builder::default().f32_tensor("w", &[8], &[0.0; 8]);
    b.tensors[0].offset = Some(u64::MAX - 4);
    assert!(matches!(err(&b.build()), GgufError::BadOffset { .. }));
    let mut b = Builder::default().f32_tensor("w", &[8], &[0.0; 8]);
    b.tensors[0].offset = Some(4);
    let e = err(&b.build());
    assert!(
        e.to_string().contains("not a multiple of the alignment 32"),
        "{e}"
    );
    // A tensor larger than the file.
    let e = err(&Builder::default()
        .tensor("w", &[1 << 30], 0, vec![0; 8])
        .build());
    assert!(matches!(e, GgufError::BadOffset { .. }), "{e}");
}

/// A header claiming `n_tensors` tensors and `n_kv` keys, then `rest`.
fn header(n_tensors: u64, n_kv: u64, rest: &[u8]) -> Vec<u8> {
    let mut v = b"GGUF".to_vec();
    v.extend_from_slice(&3u32.to_le_bytes());
    v.extend_from_slice(&n_tensors.to_le_bytes());
    v.extend_from_slice(&n_kv.to_le_bytes());
    v.extend_from_slice(rest);
    v
}

#[test]
fn absurd_counts_and_lengths_are_capped() {
    let e = err(&header(0, u64::MAX, &[0; 64]));
    assert!(
        matches!(e, GgufError::TooLarge { .. }) && e.to_string().contains("metadata entries"),
        "{e}"
    );
    let e = err(&header(u64::MAX, 0, &[0; 64]));
    assert!(
        matches!(e, GgufError::TooLarge { .. }) && e.to_string().contains("tensors"),
        "{e}"
    );
    // A key whose length is 2^63.
    let e = err(&header(
        0,
        1,
        &[(1u64 << 63).to_le_bytes().as_slice(), &[0; 64]].concat(),
    ));
    assert!(matches!(e, GgufError::Truncated { .. }), "{e}");
    // An array of 2^60 u32s, and of 2^60 strings.
    for elem in [4u32, 8] {
        let mut kv = gstr("k");
        kv.extend_from_slice(&9u32.to_le_bytes());
        kv.extend_from_slice(&elem.to_le_bytes());
        kv.extend_from_slice(&(1u64 << 60).to_le_bytes());
        kv.extend_from_slice(&[0; 32]);
        let e = err(&header(0, 1, &kv));
        assert!(
            matches!(e, GgufError::TooLarge { .. }) && e.to_string().contains("array"),
            "{e}"
        );
    }
    // A string value of length u64::MAX.
    let mut kv = gstr("k");
    kv.extend_from_slice(&8u32.to_le_bytes());
    kv.extend_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        err(&header(0, 1, &kv)),
        GgufError::Truncated { .. }
    ));
}

#[test]
fn bad_values() {
    let e = err(&Builder::default().kv("k", 13, vec![0; 8]).build());
    assert_eq!(
        e,
        GgufError::BadValueType {
            key: "k".into(),
            type_id: 13
        }
    );
    let e = err(&Builder::default().kv("k", 7, vec![2]).build());
    assert_eq!(
        e,
        GgufError::BadBool {
            key: "k".into(),
            byte: 2
        }
    );
    let e = err(&Builder::default()
        .kv("k", 8, {
            let mut p = 2u64.to_le_bytes().to_vec();
            p.extend_from_slice(&[0xFF, 0xFE]);
            p
        })
        .build());
    assert!(matches!(e, GgufError::BadUtf8 { .. }), "{e}");
    let e = err(&Builder::default().u32("k", 1).u32("k", 2).build());
    assert_eq!(e, GgufError::DuplicateKey("k".into()));
    let e = err(&Builder::default()
        .f32_tensor("w", &[1], &[0.0])
        .f32_tensor("w", &[1], &[0.0])
        .build());
    assert_eq!(e, GgufError::DuplicateTensor("w".into()));
    // Arrays nested past the limit.
    let mut p = Vec::new();
    for _ in 0..10 {
        p.extend_from_slice(&9u32.to_le_bytes());
        p.extend_from_slice(&1u64.to_le_bytes());
    }
    p.extend_from_slice(&4u32.to_le_bytes());
    p.extend_from_slice(&0u64.to_le_bytes());
    let e = err(&Builder::default().kv("deep", 9, p[12..].to_vec()).build());
    assert!(matches!(e, GgufError::NestedTooDeep { .. }), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Truncating and overwriting bytes anywhere never panics; what parses has its
    /// tensor data inside the file.
    #[test]
    fn mutations_never_panic(
        cut in 0usize..2000,
        edits in proptest::collection::vec((0usize..2000, any::<u8>()), 0..8),
    ) {
        let mut bytes = valid().build();
        for (at, v) in edits {
            let n = bytes.len();
            bytes[at % n] = v;
        }
        bytes.truncate(cut.min(bytes.len()));
        if let Ok(g) = Gguf::parse(&bytes) {
            for t in &g.tensors {
                prop_assert!(t.range().end <= bytes.len());
                prop_assert!(g.tensor_data(&bytes, &t.name).is_ok());
            }
        }
    }

    /// Random bytes after a valid magic and version never panic.
    #[test]
    fn random_headers_never_panic(rest in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut bytes = b"GGUF".to_vec();
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&rest);
        let _ = Gguf::parse(&bytes);
    }
}
