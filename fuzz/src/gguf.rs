//! The GGUF reader, and the model loaded from the file up to its first forward pass.

use lm::Model;
use lm::gguf::Gguf;

/// Parses `data` as a GGUF file; when it loads as a model, tokenizes a string, renders
/// the chat prompt and runs one forward pass. Every error must carry a message, and a
/// model that loads must give finite logits of its vocabulary's size.
pub fn run(data: &[u8]) {
    match Gguf::parse(data) {
        Ok(g) => {
            for name in ["general.architecture", "tokenizer.ggml.model"] {
                let _ = g.get_str(name);
            }
        }
        Err(e) => assert!(!e.to_string().is_empty(), "a GGUF error without a message"),
    }
    let model = match Model::from_bytes(data.to_vec()) {
        Ok(m) => m,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "a load error without a message");
            return;
        }
    };
    let tok = model.tokenizer();
    let _ = tok.encode("ab a");
    let prompt = match tok.encode_prompt("a", true) {
        Ok(p) if !p.is_empty() => p,
        _ => vec![0],
    };
    let mut cache = model.new_cache();
    let take = prompt.len().min(model.config().context_length);
    match model.forward(&mut cache, &prompt[..take], take.saturating_sub(1)) {
        Ok(logits) => {
            assert_eq!(logits.len() % model.config().vocab_size.max(1), 0);
            // Weights are arbitrary bytes: infinities and NaNs are the file's, but the
            // logits exist for every token.
            assert!(take == 0 || logits.len() == model.config().vocab_size);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}
