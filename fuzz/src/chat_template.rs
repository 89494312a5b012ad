//! A model file's Jinja chat template, rendered with minijinja under its fuel limit.

use crate::util::text;

/// Renders the input as a chat template (`\0` separates the template from the user
/// message); rendering ends with text or an error with a message.
pub fn run(data: &[u8]) {
    let s = text(data);
    let (template, user) = s.split_once('\0').unwrap_or((s, "hello"));
    match lm::chat_template::render(template, user, "<s>", "</s>") {
        Ok(_) => {}
        Err(e) => assert!(
            !e.to_string().is_empty(),
            "a template error without a message"
        ),
    }
}
