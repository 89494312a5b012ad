//! A GGUF v3 reader over a byte slice.
//!
//! The file is read from `&[u8]`, so the same code serves a buffer downloaded in the
//! browser and a file read or memory-mapped natively. Parsing copies the metadata and the
//! tensor infos out of the buffer; tensor data stays where it is and is addressed by
//! byte range ([`TensorInfo::range`]).
//!
//! Layout (the GGUF spec, `docs/gguf.md` in the ggml repository): magic `GGUF`, u32
//! version, u64 tensor count, u64 metadata count, the metadata key/value pairs, the tensor
//! infos (name, u32 dims, u64 dims…, u32 type, u64 offset), padding to
//! `general.alignment` (default 32), then the data section; tensor offsets are relative
//! to it and aligned.
//!
//! Untrusted input: every count and length is checked against the bytes that remain
//! before anything is allocated, and every failure is a [`GgufError`], never a panic.

mod cursor;
mod error;
mod tensor;
mod value;

pub use error::GgufError;
pub use quant::{
    BlockQ4_1, BlockQ8_0, QK4_1, QK8_0, dequantize_f16, dequantize_f32, dequantize_q4_1,
    dequantize_q8_0, f16_to_f32,
};
pub use tensor::{GgmlType, TensorInfo};
pub use value::{Array, Value};

use cursor::Cursor;
use std::collections::BTreeMap;

/// The four magic bytes that open a GGUF file.
pub const MAGIC: [u8; 4] = *b"GGUF";
/// Data alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: usize = 32;
/// Most dimensions a ggml tensor has.
pub const MAX_DIMS: usize = 4;

/// A parsed GGUF header: metadata and tensor infos, with the data ranges checked.
#[derive(Debug, Clone)]
pub struct Gguf {
    /// Format version (2 or 3).
    pub version: u32,
    /// Metadata, by key.
    pub metadata: BTreeMap<String, Value>,
    /// Tensor infos in file order.
    pub tensors: Vec<TensorInfo>,
    /// Data alignment in bytes.
    pub alignment: usize,
    /// Absolute offset of the data section.
    pub data_offset: usize,
    /// Length of the whole file the header was read from.
    pub file_len: usize,
}

impl Gguf {
    /// Parses the header of a GGUF file and checks every tensor's data lies in `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Gguf, GgufError> {
        Gguf::parse_prefix(bytes, bytes.len())
    }

    /// Parses the header from the first bytes of a file of `file_len` bytes (the whole
    /// header must lie in `prefix`; a prefix that ends inside it gives
    /// [`GgufError::Truncated`] or a count [`GgufError::TooLarge`] for what remains) and
    /// checks every tensor's data lies within `file_len`: what a reader that holds only the
    /// start of the file needs (the page's thread, when the weights are in its workers).
    pub fn parse_prefix(prefix: &[u8], file_len: usize) -> Result<Gguf, GgufError> {
        let bytes = prefix;
        let file_len = file_len.max(bytes.len());
        if bytes.len() < MAGIC.len() {
            return Err(GgufError::TooShort(bytes.len()));
        }
        let mut c = Cursor::new(bytes);
        let magic = c.array::<4>(&|| "magic".into())?;
        if magic != MAGIC {
            return Err(GgufError::BadMagic(magic));
        }
        let version = c.u32(&|| "version".into())?;
        if !(2..=3).contains(&version) {
            return Err(GgufError::UnsupportedVersion(version));
        }
        let n_tensors = c.u64(&|| "tensor count".into())?;
        let n_kv = c.u64(&|| "metadata count".into())?;

        // A key/value pair takes at least 12 bytes (empty key, type id), a tensor info 24
        // (empty name, dim count, type, offset): cap both counts by what remains.
        let max_kv = c.remaining() as u64 / 12;
        if n_kv > max_kv {
            return Err(GgufError::TooLarge {
                what: "metadata entries".into(),
                count: n_kv,
                max: max_kv,
            });
        }
        let mut metadata = BTreeMap::new();
        for i in 0..n_kv {
            let key = c.string(&|| format!("key of metadata entry {i}"))?;
            let type_id = c.u32(&|| format!("type of metadata key {key:?}"))?;
            let value = value::read_value(&mut c, &key, type_id)?;
            if metadata.contains_key(&key) {
                return Err(GgufError::DuplicateKey(key));
            }
            metadata.insert(key, value);
        }

        let alignment = match metadata.get("general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v.as_i128() {
                Some(a) if a > 0 && (a as u128).is_power_of_two() && a <= 1 << 20 => a as usize,
                Some(a) => {
                    return Err(GgufError::BadAlignment(format!(
                        "{a} is not a power of two up to 2^20"
                    )));
                }
                None => {
                    return Err(GgufError::BadAlignment(format!(
                        "holds {}, expected an integer",
                        v.type_name()
                    )));
                }
            },
        };

        let max_tensors = c.remaining() as u64 / 24;
        if n_tensors > max_tensors {
            return Err(GgufError::TooLarge {
                what: "tensors".into(),
                count: n_tensors,
                max: max_tensors,
            });
        }
        let mut raw = Vec::with_capacity(n_tensors as usize);
        for i in 0..n_tensors {
            raw.push(read_tensor_info(&mut c, i)?);
        }

        let data_offset = c.pos().next_multiple_of(alignment);
        let data_len = file_len.saturating_sub(data_offset) as u64;
        let mut names = std::collections::HashSet::new();
        let mut tensors = Vec::with_capacity(raw.len());
        for r in raw {
            if !names.insert(r.name.clone()) {
                return Err(GgufError::DuplicateTensor(r.name));
            }
            tensors.push(check_tensor(r, alignment, data_offset, data_len)?);
        }
        Ok(Gguf {
            version,
            metadata,
            tensors,
            alignment,
            data_offset,
            file_len,
        })
    }

    /// The value of a metadata key, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    /// A string value.
    pub fn get_str(&self, key: &str) -> Result<&str, GgufError> {
        match self.require(key)? {
            Value::String(s) => Ok(s),
            v => Err(wrong(key, "a string", v)),
        }
    }

    /// An integer value of any integer type that fits in `u64`.
    pub fn get_u64(&self, key: &str) -> Result<u64, GgufError> {
        let v = self.require(key)?;
        v.as_i128()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| wrong(key, "a non-negative integer", v))
    }

    /// A float value (f32, f64, or an integer).
    pub fn get_f64(&self, key: &str) -> Result<f64, GgufError> {
        let v = self.require(key)?;
        v.as_f64().ok_or_else(|| wrong(key, "a number", v))
    }

    /// A bool value.
    pub fn get_bool(&self, key: &str) -> Result<bool, GgufError> {
        match self.require(key)? {
            Value::Bool(b) => Ok(*b),
            v => Err(wrong(key, "a bool", v)),
        }
    }

    /// An array value.
    pub fn get_array(&self, key: &str) -> Result<&Array, GgufError> {
        match self.require(key)? {
            Value::Array(a) => Ok(a),
            v => Err(wrong(key, "an array", v)),
        }
    }

    /// An array of strings.
    pub fn get_strings(&self, key: &str) -> Result<&[String], GgufError> {
        match self.get_array(key)? {
            Array::String(s) => Ok(s),
            a => Err(GgufError::WrongType {
                key: key.into(),
                expected: "an array of strings",
                found: format!("an array of {}", a.element_type_name()),
            }),
        }
    }

    /// The info of a tensor, by name.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The data bytes of a tensor within `file`, the buffer the header was parsed from.
    pub fn tensor_data<'a>(&self, file: &'a [u8], name: &str) -> Result<&'a [u8], GgufError> {
        let t = self
            .tensor(name)
            .ok_or_else(|| GgufError::MissingTensor(name.into()))?;
        file.get(t.range()).ok_or_else(|| GgufError::BadOffset {
            tensor: name.into(),
            reason: format!(
                "the buffer has {} bytes, not the {} parsed",
                file.len(),
                self.file_len
            ),
        })
    }

    fn require(&self, key: &str) -> Result<&Value, GgufError> {
        self.metadata
            .get(key)
            .ok_or_else(|| GgufError::MissingKey(key.into()))
    }
}

fn wrong(key: &str, expected: &'static str, v: &Value) -> GgufError {
    GgufError::WrongType {
        key: key.into(),
        expected,
        found: v.type_name(),
    }
}

struct RawTensor {
    name: String,
    dims: Vec<u64>,
    type_id: u32,
    offset: u64,
}

fn read_tensor_info(c: &mut Cursor<'_>, i: u64) -> Result<RawTensor, GgufError> {
    let name = c.string(&|| format!("name of tensor {i}"))?;
    let n_dims = c.u32(&|| format!("dimension count of tensor {name:?}"))?;
    if n_dims == 0 || n_dims as usize > MAX_DIMS {
        return Err(GgufError::BadShape {
            tensor: name,
            reason: format!("{n_dims} dimensions (ggml tensors have 1 to {MAX_DIMS})"),
        });
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for _ in 0..n_dims {
        dims.push(c.u64(&|| format!("dimensions of tensor {name:?}"))?);
    }
    let type_id = c.u32(&|| format!("type of tensor {name:?}"))?;
    let offset = c.u64(&|| format!("offset of tensor {name:?}"))?;
    Ok(RawTensor {
        name,
        dims,
        type_id,
        offset,
    })
}

fn check_tensor(
    r: RawTensor,
    alignment: usize,
    data_offset: usize,
    data_len: u64,
) -> Result<TensorInfo, GgufError> {
    let ty =
        GgmlType::from_id(r.type_id).map_err(|type_name| GgufError::UnsupportedTensorType {
            tensor: r.name.clone(),
            type_id: r.type_id,
            type_name,
        })?;
    let bad_shape = |reason: String| GgufError::BadShape {
        tensor: r.name.clone(),
        reason,
    };
    if r.dims.contains(&0) {
        return Err(bad_shape(format!("dimensions {:?} include a zero", r.dims)));
    }
    let n_elements = r
        .dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= i64::MAX as u64)
        .ok_or_else(|| bad_shape(format!("dimensions {:?} overflow", r.dims)))?;
    if !r.dims[0].is_multiple_of(ty.block_len() as u64) {
        return Err(bad_shape(format!(
            "row length {} is not a multiple of the {} block length {}",
            r.dims[0],
            ty.name(),
            ty.block_len()
        )));
    }
    let size = (n_elements / ty.block_len() as u64)
        .checked_mul(ty.block_bytes() as u64)
        .ok_or_else(|| bad_shape(format!("dimensions {:?} overflow", r.dims)))?;
    let bad_offset = |reason: String| GgufError::BadOffset {
        tensor: r.name.clone(),
        reason,
    };
    if !r.offset.is_multiple_of(alignment as u64) {
        return Err(bad_offset(format!(
            "offset {} is not a multiple of the alignment {alignment}",
            r.offset
        )));
    }
    match r.offset.checked_add(size) {
        Some(end) if end <= data_len => {}
        _ => {
            return Err(bad_offset(format!(
                "{size} bytes at data offset {} run past the end of the data section ({data_len} bytes)",
                r.offset
            )));
        }
    }
    // Both fit in the buffer's length, so they fit in usize.
    Ok(TensorInfo {
        name: r.name,
        dims: r.dims,
        ty,
        offset: data_offset + r.offset as usize,
        size: size as usize,
    })
}

#[cfg(test)]
mod tests;
