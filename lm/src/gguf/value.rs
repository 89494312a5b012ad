//! Metadata values: the twelve GGUF value types, arrays stored by element type.

use super::cursor::Cursor;
use super::error::GgufError;

/// How deep arrays of arrays may nest before the file is refused.
const MAX_ARRAY_DEPTH: usize = 4;

/// A metadata value as stored in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Type 0.
    U8(u8),
    /// Type 1.
    I8(i8),
    /// Type 2.
    U16(u16),
    /// Type 3.
    I16(i16),
    /// Type 4.
    U32(u32),
    /// Type 5.
    I32(i32),
    /// Type 6.
    F32(f32),
    /// Type 7 (a byte, 0 or 1).
    Bool(bool),
    /// Type 8 (u64 length, UTF-8 bytes).
    String(String),
    /// Type 9 (element type, u64 count, elements).
    Array(Array),
    /// Type 10.
    U64(u64),
    /// Type 11.
    I64(i64),
    /// Type 12.
    F64(f64),
}

/// A metadata array, held by element type so its memory stays proportional to the file.
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    /// Elements of type 0.
    U8(Vec<u8>),
    /// Elements of type 1.
    I8(Vec<i8>),
    /// Elements of type 2.
    U16(Vec<u16>),
    /// Elements of type 3.
    I16(Vec<i16>),
    /// Elements of type 4.
    U32(Vec<u32>),
    /// Elements of type 5.
    I32(Vec<i32>),
    /// Elements of type 6.
    F32(Vec<f32>),
    /// Elements of type 7.
    Bool(Vec<bool>),
    /// Elements of type 8.
    String(Vec<String>),
    /// Elements of type 9: arrays, each with its own element type.
    Array(Vec<Array>),
    /// Elements of type 10.
    U64(Vec<u64>),
    /// Elements of type 11.
    I64(Vec<i64>),
    /// Elements of type 12.
    F64(Vec<f64>),
}

impl Value {
    /// The GGUF name of this value's type, for messages.
    pub fn type_name(&self) -> String {
        match self {
            Value::U8(_) => "u8".into(),
            Value::I8(_) => "i8".into(),
            Value::U16(_) => "u16".into(),
            Value::I16(_) => "i16".into(),
            Value::U32(_) => "u32".into(),
            Value::I32(_) => "i32".into(),
            Value::F32(_) => "f32".into(),
            Value::Bool(_) => "bool".into(),
            Value::String(_) => "string".into(),
            Value::Array(a) => format!("array of {} {}", a.len(), a.element_type_name()),
            Value::U64(_) => "u64".into(),
            Value::I64(_) => "i64".into(),
            Value::F64(_) => "f64".into(),
        }
    }

    /// The value as an integer, if it is one of the integer types.
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Value::U8(v) => v.into(),
            Value::I8(v) => v.into(),
            Value::U16(v) => v.into(),
            Value::I16(v) => v.into(),
            Value::U32(v) => v.into(),
            Value::I32(v) => v.into(),
            Value::U64(v) => v.into(),
            Value::I64(v) => v.into(),
            _ => return None,
        })
    }

    /// The value as a float, if it is a float or an integer type.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v.into()),
            Value::F64(v) => Some(v),
            _ => self.as_i128().map(|v| v as f64),
        }
    }
}

impl Array {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Array::U8(v) => v.len(),
            Array::I8(v) => v.len(),
            Array::U16(v) => v.len(),
            Array::I16(v) => v.len(),
            Array::U32(v) => v.len(),
            Array::I32(v) => v.len(),
            Array::F32(v) => v.len(),
            Array::Bool(v) => v.len(),
            Array::String(v) => v.len(),
            Array::Array(v) => v.len(),
            Array::U64(v) => v.len(),
            Array::I64(v) => v.len(),
            Array::F64(v) => v.len(),
        }
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The GGUF name of the element type, for messages.
    pub fn element_type_name(&self) -> &'static str {
        match self {
            Array::U8(_) => "u8",
            Array::I8(_) => "i8",
            Array::U16(_) => "u16",
            Array::I16(_) => "i16",
            Array::U32(_) => "u32",
            Array::I32(_) => "i32",
            Array::F32(_) => "f32",
            Array::Bool(_) => "bool",
            Array::String(_) => "string",
            Array::Array(_) => "array",
            Array::U64(_) => "u64",
            Array::I64(_) => "i64",
            Array::F64(_) => "f64",
        }
    }

    /// The elements as integers, if the element type is an integer type.
    pub fn to_i128_vec(&self) -> Option<Vec<i128>> {
        fn conv<T: Copy + Into<i128>>(v: &[T]) -> Vec<i128> {
            v.iter().map(|&x| x.into()).collect()
        }
        Some(match self {
            Array::U8(v) => conv(v),
            Array::I8(v) => conv(v),
            Array::U16(v) => conv(v),
            Array::I16(v) => conv(v),
            Array::U32(v) => conv(v),
            Array::I32(v) => conv(v),
            Array::U64(v) => conv(v),
            Array::I64(v) => conv(v),
            _ => return None,
        })
    }
}

/// The fewest bytes one value of type `type_id` occupies, or `None` for an unknown type.
fn min_encoded_size(type_id: u32) -> Option<u64> {
    Some(match type_id {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 => 8,  // u64 length of an empty string
        9 => 12, // element type + count of an empty array
        10..=12 => 8,
        _ => return None,
    })
}

/// Reads one value of type `type_id` for metadata key `key`.
pub(crate) fn read_value(c: &mut Cursor<'_>, key: &str, type_id: u32) -> Result<Value, GgufError> {
    let what = || format!("value of metadata key {key:?}");
    Ok(match type_id {
        0 => Value::U8(c.array::<1>(&what)?[0]),
        1 => Value::I8(c.array::<1>(&what)?[0] as i8),
        2 => Value::U16(u16::from_le_bytes(c.array(&what)?)),
        3 => Value::I16(i16::from_le_bytes(c.array(&what)?)),
        4 => Value::U32(u32::from_le_bytes(c.array(&what)?)),
        5 => Value::I32(i32::from_le_bytes(c.array(&what)?)),
        6 => Value::F32(f32::from_le_bytes(c.array(&what)?)),
        7 => Value::Bool(read_bool(c, key)?),
        8 => Value::String(c.string(&what)?),
        9 => Value::Array(read_array(c, key, 1)?),
        10 => Value::U64(u64::from_le_bytes(c.array(&what)?)),
        11 => Value::I64(i64::from_le_bytes(c.array(&what)?)),
        12 => Value::F64(f64::from_le_bytes(c.array(&what)?)),
        _ => {
            return Err(GgufError::BadValueType {
                key: key.to_string(),
                type_id,
            });
        }
    })
}

fn read_bool(c: &mut Cursor<'_>, key: &str) -> Result<bool, GgufError> {
    match c.array::<1>(&|| format!("bool of metadata key {key:?}"))?[0] {
        0 => Ok(false),
        1 => Ok(true),
        byte => Err(GgufError::BadBool {
            key: key.to_string(),
            byte,
        }),
    }
}

/// Reads an array header and its elements; the count is capped by the bytes left.
fn read_array(c: &mut Cursor<'_>, key: &str, depth: usize) -> Result<Array, GgufError> {
    if depth > MAX_ARRAY_DEPTH {
        return Err(GgufError::NestedTooDeep {
            key: key.to_string(),
        });
    }
    let what = || format!("array of metadata key {key:?}");
    let elem = c.u32(&what)?;
    let count = c.u64(&what)?;
    let min = min_encoded_size(elem).ok_or_else(|| GgufError::BadValueType {
        key: key.to_string(),
        type_id: elem,
    })?;
    let max = c.remaining() as u64 / min;
    if count > max {
        return Err(GgufError::TooLarge {
            what: format!("elements in the array of metadata key {key:?}"),
            count,
            max,
        });
    }
    let n = count as usize;
    fn fixed<T, const N: usize>(
        c: &mut Cursor<'_>,
        n: usize,
        what: &dyn Fn() -> String,
        conv: fn([u8; N]) -> T,
    ) -> Result<Vec<T>, GgufError> {
        let bytes = c.take((n * N) as u64, what)?;
        let (chunks, _) = bytes.as_chunks::<N>();
        Ok(chunks.iter().map(|&b| conv(b)).collect())
    }
    Ok(match elem {
        0 => Array::U8(fixed(c, n, &what, |b: [u8; 1]| b[0])?),
        1 => Array::I8(fixed(c, n, &what, |b: [u8; 1]| b[0] as i8)?),
        2 => Array::U16(fixed(c, n, &what, u16::from_le_bytes)?),
        3 => Array::I16(fixed(c, n, &what, i16::from_le_bytes)?),
        4 => Array::U32(fixed(c, n, &what, u32::from_le_bytes)?),
        5 => Array::I32(fixed(c, n, &what, i32::from_le_bytes)?),
        6 => Array::F32(fixed(c, n, &what, f32::from_le_bytes)?),
        7 => Array::Bool(
            (0..n)
                .map(|_| read_bool(c, key))
                .collect::<Result<_, _>>()?,
        ),
        8 => Array::String((0..n).map(|_| c.string(&what)).collect::<Result<_, _>>()?),
        9 => Array::Array(
            (0..n)
                .map(|_| read_array(c, key, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        10 => Array::U64(fixed(c, n, &what, u64::from_le_bytes)?),
        11 => Array::I64(fixed(c, n, &what, i64::from_le_bytes)?),
        12 => Array::F64(fixed(c, n, &what, f64::from_le_bytes)?),
        _ => {
            return Err(GgufError::BadValueType {
                key: key.to_string(),
                type_id: elem,
            });
        }
    })
}
