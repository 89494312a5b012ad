//! A loaded model: the file's bytes, its header, configuration, tokenizer and weights.

use crate::config::LlamaConfig;
use crate::error::LoadError;
use crate::forward::Layout;
use crate::forward::{self, KvCache, NoPause, Pause, Weights};
use crate::gguf::Gguf;
use crate::header::ModelHeader;
use crate::shard::{FileRows, Shard, ShardFile};
use crate::tokenizer::Tokenizer;
use sampler_core::{LmError, TokenId, block_on};
use std::path::Path;

/// What a model holds of its file.
enum Held {
    /// The whole file.
    Whole(Box<dyn AsRef<[u8]> + Send + Sync>),
    /// A lead worker's share ([`crate::shard`]): every tensor, packed; the other workers
    /// hold shares of the matrices' rows.
    Shard(ShardFile),
}

/// A llama-architecture GGUF model held in memory (weights stay quantized).
pub struct Model {
    held: Held,
    gguf: Gguf,
    config: LlamaConfig,
    tokenizer: Tokenizer,
    weights: Weights,
    /// KV caches handed from one [`crate::PromptedModel`] to the next, when kept.
    pub(crate) stash: crate::kv_stash::Stash,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Reads a model file; a missing file gives the command that fetches the default one.
    pub fn load(path: impl AsRef<Path>) -> Result<Model, LoadError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => LoadError::NotFound(path.to_path_buf()),
            _ => LoadError::Io(path.to_path_buf(), e),
        })?;
        Model::from_bytes(bytes)
    }

    /// Builds a model from the bytes of a GGUF file: a `Vec<u8>`, a downloaded buffer,
    /// or a memory map.
    pub fn from_bytes(bytes: impl AsRef<[u8]> + Send + Sync + 'static) -> Result<Model, LoadError> {
        let bytes: Box<dyn AsRef<[u8]> + Send + Sync> = Box::new(bytes);
        let b = (*bytes).as_ref();
        let (gguf, config, tokenizer) = ModelHeader::from_file(b)?.into_parts();
        let weights = Weights::new(&gguf, b, &config, Layout::Whole)?;
        Ok(Model {
            held: Held::Whole(bytes),
            gguf,
            config,
            tokenizer,
            weights,
            stash: Default::default(),
        })
    }

    /// The lead's share of a model split by rows between workers ([`crate::shard`]): its
    /// forward pass computes every product with the other shares' holders, through the
    /// thread's split helpers (`forward::split`), and alone without them.
    pub fn from_shard(header: ModelHeader, file: ShardFile) -> Result<Model, LoadError> {
        if !file.shard().is_lead() || file.file_len() != header.file_len() {
            return Err(LoadError::Config(format!(
                "a model runs on the lead's share (0) of its own file, not on {:?}",
                file.shard()
            )));
        }
        let (gguf, config, tokenizer) = header.into_parts();
        let weights = Weights::new(&gguf, file.data(), &config, Layout::Shard(&file))?;
        Ok(Model {
            held: Held::Shard(file),
            gguf,
            config,
            tokenizer,
            weights,
            stash: Default::default(),
        })
    }

    /// The share of the model this one holds, if it holds only one.
    pub fn shard(&self) -> Option<Shard> {
        match &self.held {
            Held::Whole(_) => None,
            Held::Shard(f) => Some(f.shard()),
        }
    }

    /// What the split products' helpers read this model's rows from: the whole file, or
    /// the share held.
    pub fn file_rows(&self) -> &dyn FileRows {
        match &self.held {
            Held::Whole(b) => b,
            Held::Shard(f) => f,
        }
    }

    /// Whether a [`crate::PromptedModel`] of this model leaves its KV caches to the next
    /// one when dropped (off unless set): the next run then finds the prompt, or the part
    /// of it the two share, already computed, and so does every sequence the last run left
    /// in its caches. The page keeps them: a run there costs a prefill of seconds in wasm.
    pub fn set_keep_caches(&mut self, on: bool) {
        self.stash.on = on;
    }

    /// How activations enter the CPU forward pass's quantized products
    /// ([`crate::forward::Activations::F32`] unless set).
    pub fn activations(&self) -> crate::forward::Activations {
        self.weights.activations
    }

    /// Chooses how activations enter the CPU forward pass's quantized products.
    pub fn set_activations(&mut self, a: crate::forward::Activations) {
        self.weights.activations = a;
        // Kept caches were computed in the other precision.
        self.stash.clear();
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The weights as the CPU forward pass reads them (for the other engines).
    #[cfg_attr(not(feature = "burn"), allow(dead_code))]
    pub(crate) fn weights(&self) -> &Weights {
        &self.weights
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The parsed GGUF header (metadata and tensor infos).
    pub fn gguf(&self) -> &Gguf {
        &self.gguf
    }

    /// The whole file; tensor data lies at [`crate::gguf::TensorInfo::range`]. For a
    /// share ([`Model::shard`]), the bytes it holds, packed, where those ranges do not
    /// apply: the GPU engines refuse such a model.
    pub fn bytes(&self) -> &[u8] {
        match &self.held {
            Held::Whole(b) => (**b).as_ref(),
            Held::Shard(f) => f.data(),
        }
    }

    /// One line on what the file holds: architecture, size, and its tensors' types with
    /// how many of each, the most frequent first, and how the matrices run
    /// (e.g. `llama · 98.4 MB · Q4_1 ×210, F32 ×61, Q8_0 ×1`).
    pub fn summary(&self) -> String {
        crate::header::summary(&self.gguf)
    }

    /// An empty KV cache for this model.
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(&self.config)
    }

    /// Runs `tokens` after the positions already in `cache` (appending theirs) and
    /// returns the logits of positions `logits_from..tokens.len()`, `vocab_size` each.
    pub fn forward(
        &self,
        cache: &mut KvCache,
        tokens: &[TokenId],
        logits_from: usize,
    ) -> Result<Vec<f32>, LmError> {
        block_on(self.forward_pausing(cache, tokens, logits_from, &mut NoPause))
    }

    /// [`Model::forward`], asking `pause` three times per block whether to hand control back
    /// (the page's thread keeps painting while a token is computed).
    pub async fn forward_pausing(
        &self,
        cache: &mut KvCache,
        tokens: &[TokenId],
        logits_from: usize,
        pause: &mut impl Pause,
    ) -> Result<Vec<f32>, LmError> {
        forward::forward(
            &self.config,
            &self.weights,
            self.bytes(),
            cache,
            tokens,
            logits_from,
            pause,
        )
        .await
    }

    /// Runs several sequences in one pass, `tokens[i]` after the positions in `caches[i]`
    /// (appending theirs), and returns the logits after the last token of each. The
    /// matrix products take all sequences' tokens together. Each token list must be
    /// non-empty.
    pub async fn forward_batch_pausing(
        &self,
        caches: &mut [&mut KvCache],
        tokens: &[&[TokenId]],
        pause: &mut impl Pause,
    ) -> Result<Vec<Vec<f32>>, LmError> {
        forward::forward_batch(
            &self.config,
            &self.weights,
            self.bytes(),
            caches,
            tokens,
            pause,
        )
        .await
    }

    /// Log-probability of each text token and then of EOS, after the prompt:
    /// `text.len() + 1` values. The prompt must not be empty.
    pub fn token_logprobs(
        &self,
        prompt: &[TokenId],
        text: &[TokenId],
    ) -> Result<Vec<f64>, LmError> {
        if prompt.is_empty() {
            return Err(LmError(
                "cannot score after an empty prompt: the model needs at least one token".into(),
            ));
        }
        let seq: Vec<TokenId> = prompt.iter().chain(text).copied().collect();
        let mut cache = self.new_cache();
        let logits = self.forward(&mut cache, &seq, prompt.len() - 1)?;
        let targets = text.iter().copied().chain([self.tokenizer.eos()]);
        let logprobs: Vec<f64> = logits
            .chunks_exact(self.config.vocab_size)
            .zip(targets)
            .map(|(row, t)| forward::log_softmax(row)[t as usize])
            .collect();
        // NaN or +∞ (a corrupt file, an overflow) is an error, never a score.
        if let Some(i) = sampler_core::first_not_a_logprob(&logprobs) {
            return Err(LmError(format!(
                "the model gave the text's token {i} the log-probability {}: its weights or its \
                 arithmetic are broken (a corrupt file, or an overflow)",
                logprobs[i]
            )));
        }
        Ok(logprobs)
    }

    /// `log P(text · EOS | prompt)`: the sum of [`Model::token_logprobs`].
    pub fn score(&self, prompt: &[TokenId], text: &[TokenId]) -> Result<f64, LmError> {
        Ok(self.token_logprobs(prompt, text)?.iter().sum())
    }
}
