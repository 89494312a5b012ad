//! The tokenizer of a GGUF file: byte-level BPE built with the `tokenizers` crate from
//! `tokenizer.ggml.*` metadata, plus the [`Vocabulary`] the samplers need.
//!
//! Matches llama.cpp's `gpt2` tokenizer model: the pre-tokenizer named by
//! `tokenizer.ggml.pre` splits text with a sequence of regexes before BPE runs on each
//! piece. Special (control) tokens are matched in the text only when asked
//! ([`Tokenizer::encode_special`]); user-defined tokens always are, as in llama.cpp.

use crate::byte_level;
use crate::error::LoadError;
use crate::gguf::{Array, Gguf};
use sampler_core::{TokenId, Vocabulary};
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{PreTokenizerWrapper, SplitDelimiterBehavior};

/// llama.cpp's token types (`tokenizer.ggml.token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenType {
    /// 0: undefined (treated as normal).
    Undefined,
    /// 1: a normal token.
    Normal,
    /// 2: the unknown token.
    Unknown,
    /// 3: a control token such as `<|im_end|>`.
    Control,
    /// 4: a user-defined token, always matched as a whole in text.
    UserDefined,
    /// 5: an unused slot.
    Unused,
    /// 6: a raw byte `<0xNN>` (SentencePiece vocabularies).
    Byte,
}

impl TokenType {
    fn from_id(id: i128) -> Option<Self> {
        Some(match id {
            0 => TokenType::Undefined,
            1 => TokenType::Normal,
            2 => TokenType::Unknown,
            3 => TokenType::Control,
            4 => TokenType::UserDefined,
            5 => TokenType::Unused,
            6 => TokenType::Byte,
            _ => return None,
        })
    }
}

/// A byte-level BPE tokenizer read from GGUF metadata.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    tokens: Vec<String>,
    types: Vec<TokenType>,
    bytes: Vec<Vec<u8>>,
    eos: TokenId,
    bos: Option<TokenId>,
    add_bos: bool,
    /// Control and user-defined tokens by text, longest first.
    specials: Vec<(String, TokenId, TokenType)>,
    chat_template: Option<String>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.tokens.len())
            .field("eos", &self.eos)
            .field("bos", &self.bos)
            .finish_non_exhaustive()
    }
}

fn err(m: impl Into<String>) -> LoadError {
    LoadError::Tokenizer(m.into())
}

impl Tokenizer {
    /// Builds the tokenizer from `tokenizer.ggml.*` metadata.
    pub fn from_gguf(g: &Gguf) -> Result<Self, LoadError> {
        let model = g.get_str("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(err(format!(
                "tokenizer.ggml.model is {model:?}; only byte-level BPE (\"gpt2\") is supported"
            )));
        }
        let tokens = g.get_strings("tokenizer.ggml.tokens")?.to_vec();
        let n = tokens.len();
        if n == 0 || n > u32::MAX as usize {
            return Err(err(format!("{n} tokens in tokenizer.ggml.tokens")));
        }
        let types = match g.get("tokenizer.ggml.token_type") {
            None => vec![TokenType::Normal; n],
            Some(_) => {
                let ids = g
                    .get_array("tokenizer.ggml.token_type")?
                    .to_i128_vec()
                    .ok_or_else(|| err("tokenizer.ggml.token_type is not an integer array"))?;
                if ids.len() != n {
                    return Err(err(format!("{} token types for {n} tokens", ids.len())));
                }
                ids.iter()
                    .map(|&t| {
                        TokenType::from_id(t).ok_or_else(|| err(format!("unknown token type {t}")))
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        let merges: Vec<(String, String)> = match g.get_array("tokenizer.ggml.merges")? {
            Array::String(m) => m
                .iter()
                .map(|m| {
                    m.split_once(' ')
                        .map(|(a, b)| (a.to_string(), b.to_string()))
                        .ok_or_else(|| {
                            err(format!(
                                "merge {m:?} is not two tokens separated by a space"
                            ))
                        })
                })
                .collect::<Result<_, _>>()?,
            a => {
                return Err(err(format!(
                    "tokenizer.ggml.merges is an array of {}",
                    a.element_type_name()
                )));
            }
        };
        let id = |key: &str| -> Result<Option<TokenId>, LoadError> {
            match g.get(key) {
                None => Ok(None),
                Some(_) => {
                    let v = g.get_u64(key)?;
                    if v >= n as u64 {
                        return Err(err(format!("{key} = {v} is outside the vocabulary of {n}")));
                    }
                    Ok(Some(v as TokenId))
                }
            }
        };
        let eos = id("tokenizer.ggml.eos_token_id")?
            .ok_or_else(|| err("tokenizer.ggml.eos_token_id is missing"))?;
        let bos = id("tokenizer.ggml.bos_token_id")?;
        let pre = pre_tokenizer(g.get_str("tokenizer.ggml.pre")?)?;
        let add_bos = match g.get("tokenizer.ggml.add_bos_token") {
            None => pre.add_bos,
            Some(_) => g.get_bool("tokenizer.ggml.add_bos_token")?,
        };

        let mut vocab = Vocab::default();
        for (i, t) in tokens.iter().enumerate() {
            // Duplicate texts keep the first id, as a lookup by text would.
            vocab.entry(t.clone()).or_insert(i as u32);
        }
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .ignore_merges(pre.ignore_merges)
            .build()
            .map_err(|e| err(format!("building BPE: {e}")))?;
        let mut inner = tokenizers::Tokenizer::new(bpe);
        inner.with_pre_tokenizer(Some(pre.pre_tokenizer));

        let inverse = byte_level::char_to_byte();
        let bytes = tokens
            .iter()
            .zip(&types)
            .map(|(t, ty)| match ty {
                TokenType::Normal
                | TokenType::Undefined
                | TokenType::Unknown
                | TokenType::Unused => {
                    byte_level::decode_token(t, &inverse).unwrap_or_else(|| t.as_bytes().to_vec())
                }
                // Control and user-defined tokens are their literal text (as llama.cpp
                // detokenizes them); Byte tokens do not occur in byte-level vocabularies.
                _ => t.as_bytes().to_vec(),
            })
            .collect();
        let mut specials: Vec<(String, TokenId, TokenType)> = tokens
            .iter()
            .zip(&types)
            .enumerate()
            .filter(|(_, (t, ty))| {
                matches!(ty, TokenType::Control | TokenType::UserDefined) && !t.is_empty()
            })
            .map(|(i, (t, &ty))| (t.clone(), i as TokenId, ty))
            .collect();
        specials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let chat_template = match g.get("tokenizer.chat_template") {
            None => None,
            Some(_) => Some(g.get_str("tokenizer.chat_template")?.to_string()),
        };
        Ok(Tokenizer {
            inner,
            tokens,
            types,
            bytes,
            eos,
            bos,
            add_bos,
            specials,
            chat_template,
        })
    }

    /// Number of tokens.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The end-of-sequence token.
    pub fn eos(&self) -> TokenId {
        self.eos
    }

    /// The beginning-of-sequence token, if the file names one.
    pub fn bos(&self) -> Option<TokenId> {
        self.bos
    }

    /// Whether prompts start with BOS (`tokenizer.ggml.add_bos_token`; false for SmolLM2).
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// The token's text as stored in the file (byte-level characters, e.g. `Ġthe`).
    pub fn token_text(&self, t: TokenId) -> Option<&str> {
        self.tokens.get(t as usize).map(String::as_str)
    }

    /// The token's type.
    pub fn token_type(&self, t: TokenId) -> Option<TokenType> {
        self.types.get(t as usize).copied()
    }

    /// The bytes a token stands for.
    pub fn token_bytes(&self, t: TokenId) -> Option<&[u8]> {
        self.bytes.get(t as usize).map(Vec::as_slice)
    }

    /// The chat template from `tokenizer.chat_template`, if any.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// Tokenizes plain text: control-token text such as `<|im_end|>` is ordinary text
    /// here (llama.cpp's `parse_special = false`). No BOS is added.
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>, LoadError> {
        self.encode_parts(text, false)
    }

    /// Tokenizes text in which control-token text stands for the control token (for
    /// rendered chat templates; llama.cpp's `parse_special = true`). No BOS is added.
    pub fn encode_special(&self, text: &str) -> Result<Vec<TokenId>, LoadError> {
        self.encode_parts(text, true)
    }

    /// Tokenizes a prompt as the command line does: through the chat template when
    /// `chat` is set (special tokens parsed), as plain text otherwise; BOS first when
    /// the model asks for it.
    pub fn encode_prompt(&self, prompt: &str, chat: bool) -> Result<Vec<TokenId>, LoadError> {
        let mut ids = if chat {
            self.encode_special(&self.apply_chat_template(prompt)?)?
        } else {
            self.encode(prompt)?
        };
        if let (true, Some(bos)) = (self.add_bos, self.bos)
            && ids.first() != Some(&bos)
        {
            ids.insert(0, bos);
        }
        Ok(ids)
    }

    /// Concatenated bytes of the tokens (control tokens give their text); ids outside
    /// the vocabulary are skipped.
    pub fn decode(&self, ids: &[TokenId]) -> Vec<u8> {
        ids.iter()
            .filter_map(|&t| self.token_bytes(t))
            .flatten()
            .copied()
            .collect()
    }

    /// The vocabulary for the samplers: every token's bytes, EOS, and as special tokens
    /// every control, unknown and unused token other than EOS.
    pub fn vocabulary(&self) -> Vocabulary {
        let special: Vec<TokenId> = self
            .types
            .iter()
            .enumerate()
            .filter(|&(i, ty)| {
                i as TokenId != self.eos
                    && matches!(
                        ty,
                        TokenType::Control | TokenType::Unknown | TokenType::Unused
                    )
            })
            .map(|(i, _)| i as TokenId)
            .collect();
        Vocabulary::new(self.bytes.clone(), self.eos, &special)
    }

    /// Renders the chat template for one user message, with the assistant's turn opened.
    pub fn apply_chat_template(&self, user_prompt: &str) -> Result<String, LoadError> {
        let template = self.chat_template.as_deref().ok_or_else(|| {
            LoadError::ChatTemplate("the model file has no tokenizer.chat_template".into())
        })?;
        let name =
            |t: Option<TokenId>| t.and_then(|t| self.token_text(t)).unwrap_or("").to_string();
        crate::chat_template::render(
            template,
            user_prompt,
            &name(self.bos),
            &name(Some(self.eos)),
        )
    }

    fn encode_parts(&self, text: &str, parse_special: bool) -> Result<Vec<TokenId>, LoadError> {
        let mut out = Vec::new();
        let mut plain_start = 0;
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            let hit = self.specials.iter().find(|(s, _, ty)| {
                (parse_special || *ty == TokenType::UserDefined) && rest.starts_with(s.as_str())
            });
            match hit {
                Some((s, id, _)) => {
                    self.encode_plain(&text[plain_start..i], &mut out)?;
                    out.push(*id);
                    i += s.len();
                    plain_start = i;
                }
                None => i += rest.chars().next().map_or(1, char::len_utf8),
            }
        }
        self.encode_plain(&text[plain_start..], &mut out)?;
        Ok(out)
    }

    fn encode_plain(&self, text: &str, out: &mut Vec<TokenId>) -> Result<(), LoadError> {
        if text.is_empty() {
            return Ok(());
        }
        let enc = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| err(format!("encoding: {e}")))?;
        out.extend_from_slice(enc.get_ids());
        Ok(())
    }
}

/// What a `tokenizer.ggml.pre` name means in llama.cpp: the regexes that split text
/// before BPE, whether a piece found whole in the vocabulary skips the merges, and whether
/// prompts start with BOS when the file does not say.
struct PreTokenization {
    pre_tokenizer: PreTokenizerWrapper,
    ignore_merges: bool,
    add_bos: bool,
}

/// Llama 3's split (llama.cpp's `LLAMA_VOCAB_PRE_TYPE_LLAMA3` regex): contractions, letters
/// with at most one leading non-letter, digits in runs of up to three, punctuation with its
/// trailing newlines, newlines, spaces.
const LLAMA3_SPLIT: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Qwen2's split (`LLAMA_VOCAB_PRE_TYPE_QWEN2`): Llama 3's with digits one by one.
const QWEN2_SPLIT: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The pre-tokenizer llama.cpp uses for a `tokenizer.ggml.pre` name (its
/// `llm_tokenizer_bpe` regex lists and `llama_vocab::load` flags). The byte-level
/// pre-tokenizer's own regex is GPT-2's
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
fn pre_tokenizer(pre: &str) -> Result<PreTokenization, LoadError> {
    let byte_level = ByteLevel::new(false, false, true);
    let split = |regex: &str| -> Result<PreTokenizerWrapper, LoadError> {
        let split = Split::new(
            SplitPattern::Regex(regex.into()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| err(format!("pre-tokenizer regex: {e}")))?;
        // The split replaces GPT-2's regex: byte-level mapping only.
        Ok(Sequence::new(vec![
            split.into(),
            ByteLevel::new(false, false, false).into(),
        ])
        .into())
    };
    let plain = |pre_tokenizer| PreTokenization {
        pre_tokenizer,
        ignore_merges: false,
        add_bos: false,
    };
    match pre {
        // llama.cpp: digits split one by one (`\p{N}`), then the GPT-2 word regex.
        "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" => {
            let digits = Split::new(
                SplitPattern::Regex(r"\p{N}".into()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| err(format!("digit regex: {e}")))?;
            Ok(plain(
                Sequence::new(vec![digits.into(), byte_level.into()]).into(),
            ))
        }
        // llama.cpp: the GPT-2 word regex alone.
        "gpt2" | "mpt" | "olmo" | "jais" => Ok(plain(byte_level.into())),
        // llama.cpp: LLAMA3, with `ignore_merges` and BOS by default.
        "llama-bpe" | "llama3" | "llama-v3" | "falcon3" | "pixtral" => Ok(PreTokenization {
            pre_tokenizer: split(LLAMA3_SPLIT)?,
            ignore_merges: true,
            add_bos: true,
        }),
        // llama.cpp: QWEN2.
        "qwen2" | "deepseek-r1-qwen" => Ok(plain(split(QWEN2_SPLIT)?)),
        other => Err(err(format!(
            "pre-tokenizer {other:?} is not supported (supported: smollm, gpt2, llama-bpe, qwen2 and their llama.cpp aliases)"
        ))),
    }
}
