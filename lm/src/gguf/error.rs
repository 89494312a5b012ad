//! Why a GGUF file was refused.

use super::tensor::GgmlType;
use std::fmt;

/// A GGUF file that cannot be read, or metadata that is missing or of the wrong type.
///
/// Every variant says what was wrong and where, so a user who picked the wrong file
/// learns why from the message alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GgufError {
    /// The first four bytes are not `GGUF`.
    BadMagic([u8; 4]),
    /// The file holds fewer bytes than the `GGUF` mark (0: it is empty).
    TooShort(usize),
    /// A version this reader does not know (it reads versions 2 and 3).
    UnsupportedVersion(u32),
    /// The file ends before a field it announces.
    Truncated {
        /// What was being read.
        what: String,
        /// Byte offset where it starts.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the file from `offset`.
        available: u64,
    },
    /// A count or length that cannot fit in the rest of the file.
    TooLarge {
        /// What was counted.
        what: String,
        /// The count the file claims.
        count: u64,
        /// The most that could fit in the remaining bytes.
        max: u64,
    },
    /// A metadata value type id outside the GGUF spec.
    BadValueType {
        /// The key being read.
        key: String,
        /// The type id found.
        type_id: u32,
    },
    /// A string that is not UTF-8.
    BadUtf8 {
        /// What was being read.
        what: String,
        /// Byte offset of the string's bytes.
        offset: u64,
    },
    /// A bool stored as a byte other than 0 or 1.
    BadBool {
        /// The key being read.
        key: String,
        /// The byte found.
        byte: u8,
    },
    /// Arrays nested deeper than the reader allows.
    NestedTooDeep {
        /// The key being read.
        key: String,
    },
    /// The same metadata key twice.
    DuplicateKey(String),
    /// The same tensor name twice.
    DuplicateTensor(String),
    /// `general.alignment` is zero, not a power of two, or not an integer.
    BadAlignment(String),
    /// A tensor type this reader does not handle.
    UnsupportedTensorType {
        /// Tensor name.
        tensor: String,
        /// ggml type id.
        type_id: u32,
        /// ggml's name for it, when the id is a known ggml type.
        type_name: Option<&'static str>,
    },
    /// A tensor shape that is empty, has too many dimensions, a zero or overflowing
    /// dimension, or rows that are not whole quantization blocks.
    BadShape {
        /// Tensor name.
        tensor: String,
        /// What is wrong.
        reason: String,
    },
    /// A tensor whose data lies outside the data section or is misaligned.
    BadOffset {
        /// Tensor name.
        tensor: String,
        /// What is wrong.
        reason: String,
    },
    /// A metadata key the caller needs is absent.
    MissingKey(String),
    /// A metadata key has a type the caller cannot use.
    WrongType {
        /// The key.
        key: String,
        /// What the caller wanted.
        expected: &'static str,
        /// What the file holds.
        found: String,
    },
    /// A tensor the caller needs is absent.
    MissingTensor(String),
}

impl fmt::Display for GgufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use GgufError::*;
        match self {
            TooShort(0) => write!(f, "not a GGUF file: the file is empty (0 bytes)"),
            TooShort(n) => write!(
                f,
                "not a GGUF file: it holds {n} bytes, fewer than the 4 of the \"GGUF\" mark"
            ),
            BadMagic(m) => write!(
                f,
                "not a GGUF file: the first bytes are {m:02x?} ({:?}), expected \"GGUF\"",
                String::from_utf8_lossy(m)
            ),
            UnsupportedVersion(v) => {
                write!(
                    f,
                    "unsupported GGUF version {v} (this reader reads versions 2 and 3)"
                )
            }
            Truncated {
                what,
                offset,
                needed,
                available,
            } => write!(
                f,
                "GGUF file truncated: {what} at byte {offset} needs {needed} bytes, only {available} remain"
            ),
            TooLarge { what, count, max } => write!(
                f,
                "GGUF file claims {count} {what}, but at most {max} can fit in the rest of the file"
            ),
            BadValueType { key, type_id } => {
                write!(f, "metadata key {key:?} has unknown value type {type_id}")
            }
            BadUtf8 { what, offset } => write!(f, "{what} at byte {offset} is not valid UTF-8"),
            BadBool { key, byte } => {
                write!(
                    f,
                    "metadata key {key:?} holds bool byte {byte}, expected 0 or 1"
                )
            }
            NestedTooDeep { key } => write!(f, "metadata key {key:?} nests arrays too deeply"),
            DuplicateKey(k) => write!(f, "metadata key {k:?} appears twice"),
            DuplicateTensor(t) => write!(f, "tensor {t:?} appears twice"),
            BadAlignment(why) => write!(f, "bad general.alignment: {why}"),
            UnsupportedTensorType {
                tensor,
                type_id,
                type_name,
            } => {
                let name = type_name.map_or_else(
                    || format!("unknown type id {type_id}"),
                    |n| format!("{n} (ggml type {type_id})"),
                );
                let supported: Vec<&str> = GgmlType::ALL.iter().map(|t| t.name()).collect();
                write!(
                    f,
                    "tensor {tensor:?} has type {name}; this reader supports {}",
                    supported.join(", ")
                )
            }
            BadShape { tensor, reason } => write!(f, "tensor {tensor:?} has a bad shape: {reason}"),
            BadOffset { tensor, reason } => write!(f, "tensor {tensor:?} has bad data: {reason}"),
            MissingKey(k) => write!(f, "metadata key {k:?} is missing"),
            WrongType {
                key,
                expected,
                found,
            } => {
                write!(f, "metadata key {key:?} holds {found}, expected {expected}")
            }
            MissingTensor(t) => write!(f, "tensor {t:?} is missing"),
        }
    }
}

impl std::error::Error for GgufError {}
