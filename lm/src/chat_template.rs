//! Rendering a model's Jinja chat template (`tokenizer.chat_template`) with minijinja.

use crate::error::LoadError;
use minijinja::{Environment, Error, ErrorKind, context};

/// Most template instructions one rendering may run: a model file's template is untrusted,
/// and nested loops could otherwise run for hours. Real chat templates use a few hundred.
pub const TEMPLATE_FUEL: u64 = 1_000_000;

/// Renders `template` for one user message with `add_generation_prompt = true`, the way
/// Hugging Face's `apply_chat_template` does (`trim_blocks`, `lstrip_blocks`,
/// `raise_exception`).
pub fn render(
    template: &str,
    user_prompt: &str,
    bos_token: &str,
    eos_token: &str,
) -> Result<String, LoadError> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_fuel(Some(TEMPLATE_FUEL));
    env.add_function("raise_exception", |msg: String| -> Result<String, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    let messages = vec![context! { role => "user", content => user_prompt }];
    env.render_str(
        template,
        context! { messages, add_generation_prompt => true, bos_token, eos_token },
    )
    .map_err(|e| LoadError::ChatTemplate(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_chatml_template() {
        let t = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        let out = render(t, "Hi", "", "").unwrap();
        assert_eq!(
            out,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn template_errors_are_reported() {
        let e = render("{{ raise_exception('no system role') }}", "x", "", "").unwrap_err();
        assert!(e.to_string().contains("no system role"), "{e}");
        assert!(render("{% for %}", "x", "", "").is_err());
    }

    #[test]
    fn a_runaway_template_stops_with_a_message() {
        let t = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}";
        let e = render(t, "x", "", "").unwrap_err();
        assert!(e.to_string().contains("fuel"), "{e}");
    }
}
