//! A bounds-checked little-endian reader over the file's bytes.

use super::error::GgufError;

/// Reads fields front to back; every read checks the remaining length first.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// Current byte offset.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left after the current offset.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes, or a truncation error naming `what`.
    pub(crate) fn take(
        &mut self,
        n: u64,
        what: &dyn Fn() -> String,
    ) -> Result<&'a [u8], GgufError> {
        let available = self.remaining() as u64;
        if n > available {
            return Err(GgufError::Truncated {
                what: what(),
                offset: self.pos as u64,
                needed: n,
                available,
            });
        }
        let n = n as usize;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(
        &mut self,
        what: &dyn Fn() -> String,
    ) -> Result<[u8; N], GgufError> {
        let bytes = self.take(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(crate) fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A GGUF string: u64 length, then that many UTF-8 bytes.
    pub(crate) fn string(&mut self, what: &dyn Fn() -> String) -> Result<String, GgufError> {
        let len = self.u64(&|| format!("length of {}", what()))?;
        let offset = self.pos as u64;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| GgufError::BadUtf8 {
            what: what(),
            offset,
        })
    }
}
