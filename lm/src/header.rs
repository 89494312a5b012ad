//! What a model file says before its weights: the GGUF header, the configuration and the
//! tokenizer. [`crate::Model`] builds on it; the page's thread holds it alone when the
//! weights live in its sampling workers (read from the file's first bytes, so the page
//! keeps no copy of the weights).

use crate::config::LlamaConfig;
use crate::error::LoadError;
use crate::gguf::{GgmlType, Gguf, GgufError};
use crate::tokenizer::Tokenizer;

/// A model file's header, configuration and tokenizer, without its weights.
#[derive(Debug)]
pub struct ModelHeader {
    gguf: Gguf,
    config: LlamaConfig,
    tokenizer: Tokenizer,
}

impl ModelHeader {
    /// Reads them from the whole file's bytes (the weights' ranges checked).
    pub fn from_file(bytes: &[u8]) -> Result<ModelHeader, LoadError> {
        ModelHeader::read(Gguf::parse(bytes)?, bytes)
    }

    /// Reads them from the first bytes of a file of `file_len` bytes; `Ok(None)` when the
    /// header (or a tensor the configuration reads, such as Llama 3's `rope_freqs`) goes
    /// past `prefix`, so that the caller reads more of the file and tries again.
    pub fn from_prefix(prefix: &[u8], file_len: usize) -> Result<Option<ModelHeader>, LoadError> {
        let whole = prefix.len() >= file_len;
        let more = |e: &GgufError| {
            !whole
                && matches!(
                    e,
                    GgufError::Truncated { .. }
                        | GgufError::TooLarge { .. }
                        | GgufError::BadOffset { .. }
                )
        };
        let gguf = match Gguf::parse_prefix(prefix, file_len) {
            Ok(g) => g,
            Err(e) if more(&e) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        match ModelHeader::read(gguf, prefix) {
            Err(LoadError::Gguf(e)) if more(&e) => Ok(None),
            // A configuration error may come of tensor data past the prefix: the whole
            // file says for sure.
            Err(LoadError::Config(_)) if !whole => Ok(None),
            r => r.map(Some),
        }
    }

    /// The configuration and the tokenizer of a parsed header, checked against each other.
    fn read(gguf: Gguf, bytes: &[u8]) -> Result<ModelHeader, LoadError> {
        let config = LlamaConfig::from_gguf(&gguf, bytes)?;
        let tokenizer = Tokenizer::from_gguf(&gguf)?;
        if tokenizer.vocab_size() != config.vocab_size {
            return Err(LoadError::Config(format!(
                "the tokenizer has {} tokens but token_embd.weight has {} rows",
                tokenizer.vocab_size(),
                config.vocab_size
            )));
        }
        Ok(ModelHeader {
            gguf,
            config,
            tokenizer,
        })
    }

    /// The parsed GGUF header (metadata and tensor infos).
    pub fn gguf(&self) -> &Gguf {
        &self.gguf
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The whole file's length in bytes.
    pub fn file_len(&self) -> usize {
        self.gguf.file_len
    }

    /// The parts, for [`crate::Model`].
    pub(crate) fn into_parts(self) -> (Gguf, LlamaConfig, Tokenizer) {
        (self.gguf, self.config, self.tokenizer)
    }

    /// One line on what the file holds: architecture, size, and its tensors' types with
    /// how many of each, the most frequent first, and how the matrices run
    /// (e.g. `llama · 98.4 MB · Q4_1 ×210, F32 ×61, Q8_0 ×1`).
    pub fn summary(&self) -> String {
        summary(&self.gguf)
    }
}

/// [`ModelHeader::summary`] of a parsed header.
pub(crate) fn summary(gguf: &Gguf) -> String {
    let mut counts: Vec<(GgmlType, usize)> = Vec::new();
    for t in &gguf.tensors {
        match counts.iter_mut().find(|(ty, _)| *ty == t.ty) {
            Some((_, n)) => *n += 1,
            None => counts.push((t.ty, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.id().cmp(&b.0.id())));
    let types: Vec<String> = counts
        .iter()
        .map(|(ty, n)| format!("{} ×{n}", ty.name()))
        .collect();
    // F32 tensors are norms (or plain matrices); Q4_0 runs as Q4_1.
    let dequantized = counts
        .iter()
        .any(|(ty, _)| !ty.runs_quantized() && !matches!(ty, GgmlType::Q4_0 | GgmlType::F32));
    format!(
        "{} · {:.1} MB · {}{}",
        gguf.get_str("general.architecture").unwrap_or("?"),
        gguf.file_len as f64 / 1e6,
        types.join(", "),
        if dequantized {
            " (types without kernels decoded to f32 row by row)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_gguf::tiny_llama;

    /// The shortest prefix of `file` the header reads from, found by reading more each time
    /// it asks (as the page does), starting from `first` bytes.
    fn read_growing(file: &[u8], first: usize) -> (ModelHeader, usize) {
        let mut n = first;
        loop {
            let n_now = n.min(file.len());
            match ModelHeader::from_prefix(&file[..n_now], file.len()).unwrap() {
                Some(h) => return (h, n_now),
                None => {
                    assert!(n_now < file.len(), "asked for more than the whole file");
                    n *= 2;
                }
            }
        }
    }

    #[test]
    fn a_prefix_gives_the_header_the_whole_file_gives() {
        let file = tiny_llama();
        let whole = ModelHeader::from_file(&file).unwrap();
        let (h, read) = read_growing(&file, 16);
        assert!(read < file.len(), "read {read} of {} bytes", file.len());
        assert!(read >= h.gguf().data_offset || read == file.len());
        assert_eq!(h.file_len(), file.len());
        assert_eq!(h.summary(), whole.summary());
        assert_eq!(format!("{:?}", h.config()), format!("{:?}", whole.config()));
        assert_eq!(h.tokenizer().vocab_size(), whole.tokenizer().vocab_size());
        for t in 0..h.tokenizer().vocab_size() as u32 {
            assert_eq!(
                h.tokenizer().token_bytes(t),
                whole.tokenizer().token_bytes(t)
            );
        }
        let model = crate::Model::from_bytes(file.clone()).unwrap();
        assert_eq!(model.summary(), h.summary());
    }

    #[test]
    fn a_prefix_inside_the_header_asks_for_more_and_a_broken_file_still_fails() {
        let file = tiny_llama();
        let data_offset = ModelHeader::from_file(&file).unwrap().gguf().data_offset;
        for n in [4, 8, 24, 100, data_offset / 2] {
            assert!(
                ModelHeader::from_prefix(&file[..n], file.len())
                    .unwrap()
                    .is_none(),
                "{n} bytes"
            );
        }
        // A file that is not GGUF fails at once, whatever is left to read.
        let mut bad = file.clone();
        bad[0] = b'X';
        assert!(ModelHeader::from_prefix(&bad[..64], bad.len()).is_err());
        // A header whose tensors run past the file's end fails once the file is whole.
        let short = &file[..file.len() - 1];
        assert!(ModelHeader::from_prefix(short, short.len()).is_err());
    }

    #[test]
    fn factors_the_configuration_reads_past_the_prefix_ask_for_more() {
        use crate::gguf::GgmlType;
        // Llama 3's RoPE factors, the file's last tensor (head size 16: 8 factors).
        let factors = [1.0f32, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0, 8.0];
        let file = crate::test_gguf::tiny_llama_builder(64, &[GgmlType::Q8_0, GgmlType::Q4_1])
            .f32_tensor("rope_freqs.weight", &[8], &factors)
            .build();
        let whole = ModelHeader::from_file(&file).unwrap();
        let data_offset = whole.gguf().data_offset;
        // Past the header, short of the factors: more, not a panic or a wrong angle.
        let short = &file[..file.len() - 4];
        assert!(short.len() > data_offset);
        assert!(
            ModelHeader::from_prefix(short, file.len())
                .unwrap()
                .is_none()
        );
        let (h, _) = read_growing(&file, data_offset + 1);
        assert_eq!(h.config().rope_freqs, whole.config().rope_freqs);
    }
}
