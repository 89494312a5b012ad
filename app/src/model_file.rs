//! The model file where the browser keeps it, outside the page's wasm memory: Cache
//! Storage's entry, the file the user picked, or (a download the cache refused) a `Blob`.
//! Each sampling worker gets the whole file read afresh; the page's thread reads only its
//! first bytes for the header and the tokenizer, and the weights only when it must run the
//! model itself (no worker, `?worker=off`, WebGPU). Wasm memory never shrinks, so a copy
//! the page's thread never makes is memory the tab never holds.

use crate::webgpu::js_error_message;
use js_sys::Uint8Array;
use wasm_bindgen_futures::JsFuture;

/// The first bytes the header is read from, doubled until it fits (SmolLM2's is 1.9 MB).
const FIRST_READ: u64 = 4 << 20;

/// A model file as the browser holds it.
#[derive(Clone, Debug)]
pub struct ModelFile {
    blob: web_sys::Blob,
}

impl ModelFile {
    /// A file the browser already holds (a Cache Storage body, a picked `File`).
    pub fn from_blob(blob: web_sys::Blob) -> ModelFile {
        ModelFile { blob }
    }

    /// A downloaded body nothing else holds.
    pub fn from_bytes(bytes: &Uint8Array) -> Result<ModelFile, String> {
        let parts = js_sys::Array::of1(bytes);
        web_sys::Blob::new_with_u8_array_sequence(&parts)
            .map(ModelFile::from_blob)
            .map_err(|e| format!("cannot keep the downloaded model: {}", js_error_message(&e)))
    }

    /// The `Blob` itself (posted to a worker that reads its own ranges of it).
    pub fn blob(&self) -> &web_sys::Blob {
        &self.blob
    }

    /// Its length in bytes.
    pub fn size(&self) -> u64 {
        self.blob.size() as u64
    }

    /// Bytes `start..end` (clamped to the file) in a new buffer of the page's JavaScript
    /// heap, not its wasm memory: a worker's copy is transferred, not copied again.
    pub async fn read(&self, start: u64, end: u64) -> Result<Uint8Array, String> {
        let part = self
            .blob
            .slice_with_f64_and_f64(start as f64, end.min(self.size()) as f64)
            .map_err(|e| js_error_message(&e))?;
        let buf = JsFuture::from(part.array_buffer()).await.map_err(|e| {
            format!(
                "the model file could not be read ({})",
                js_error_message(&e)
            )
        })?;
        Ok(Uint8Array::new(&buf))
    }

    /// The whole file (see [`ModelFile::read`]).
    pub async fn read_all(&self) -> Result<Uint8Array, String> {
        self.read(0, self.size()).await
    }

    /// The header, the configuration and the tokenizer, from the file's first bytes (read
    /// again, twice as many, while the header runs past them).
    pub async fn header(&self) -> Result<lm::ModelHeader, String> {
        let len = self.size();
        let mut n = FIRST_READ.min(len);
        loop {
            let prefix = self.read(0, n).await?.to_vec();
            match lm::ModelHeader::from_prefix(&prefix, len as usize) {
                Ok(Some(h)) => return Ok(h),
                Ok(None) if n < len => n = (n * 2).min(len),
                Ok(None) => return Err("the model file ends inside its header".into()),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}
