//! Rendering a model's Jinja chat template (`tokenizer.chat_template`) with minijinja.

use crate::error::LoadError;
use minijinja::syntax::SyntaxConfig;
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
    refuse_repetition(template)?;
    let mut env = Environment::new();
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build();
    env.set_syntax(syntax.map_err(|e| LoadError::ChatTemplate(format!("{e:#}")))?);
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

/// Most `+`/`-` signs in a row inside a tag (real templates write one or two).
const MAX_SIGNS: usize = 16;

/// Refuses a template that multiplies (`*`) inside its `{{ … }}` or `{% … %}` tags.
///
/// minijinja repeats a sequence lazily (`[1] * 10000000000`) and its fuel does not count
/// what a filter, an `in` test or the output does with the result in Rust, so one such
/// expression runs for about 22 minutes (found by `cargo xtask fuzz chat_template`:
/// `m in messages * 9999999999`). Chat templates do not multiply; the error says what to
/// do instead.
fn refuse_repetition(template: &str) -> Result<(), LoadError> {
    let b = template.as_bytes();
    let (mut i, mut in_tag, mut quote) = (0, false, None::<u8>);
    // Signs in a row (`- - - x`): each is one more level of minijinja's recursive parser, and
    // a long chain overflows the stack (found by `cargo xtask fuzz chat_template`).
    let mut signs = 0;
    let (mut line, mut col) = (1, 1);
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if let Some(q) = quote {
            if c == b'\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
        } else if !in_tag {
            if c == b'{' && matches!(next, Some(b'{' | b'%')) {
                in_tag = true;
                i += 1;
                col += 1;
            }
        } else {
            match c {
                b'-' | b'+' => signs += 1,
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ => signs = 0,
            }
            if signs > MAX_SIGNS {
                return Err(LoadError::ChatTemplate(format!(
                    "the chat template chains more than {MAX_SIGNS} signs (`{}` at line {line}, \
                     column {col}), which this renderer refuses: such an expression nests \
                     without bound; sample without the chat template (no --chat) or fix the \
                     template",
                    c as char
                )));
            }
            match c {
                b'\'' | b'"' => quote = Some(c),
                b'}' | b'%' if next == Some(b'}') => in_tag = false,
                b'*' if next == Some(b'*') => {
                    i += 1;
                    col += 1;
                }
                b'*' => {
                    return Err(LoadError::ChatTemplate(format!(
                        "the chat template multiplies (`*` at line {line}, column {col}), which \
                         this renderer refuses: repeating a sequence has no bound; \
                         sample without the chat template (no --chat) or fix the template"
                    )));
                }
                _ => {}
            }
        }
        if c == b'\n' {
            (line, col) = (line + 1, 1);
        } else {
            col += 1;
        }
        i += 1;
    }
    Ok(())
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

    /// The fuzzer's hang (`fuzz/regressions/chat_template/`): a sequence repeated 10¹⁰
    /// times inside an `in` test. Refused at once, with its position; a `*` in text, in a
    /// string, or as `**` is not.
    #[test]
    fn sequence_repetition_is_refused() {
        let t = "hi\n{{ 999-999 or m in messages * 9999999999 or 9 }}";
        let e = render(t, "x", "", "").unwrap_err().to_string();
        assert!(
            e.contains("line 2, column 29") && e.contains("no --chat"),
            "{e}"
        );
        let e = render("{% set x = [1] * 10 %}{{ x }}", "x", "", "").unwrap_err();
        assert!(e.to_string().contains("multiplies"), "{e}");
        let ok = render("* {{ '*' ~ \"a*b\" }} {{ 2 ** 3 }} *", "x", "", "").unwrap();
        assert_eq!(ok, "* *a*b 8 *");
    }

    /// The fuzzer's panic (`fuzz/regressions/chat_template/crash-2026-11-27-slice-*`):
    /// minijinja 2.24 indexed an empty sequence sliced with a negative step. Such slices
    /// render as Python's do, and the reversal real templates use (`messages[::-1]`) works.
    #[test]
    fn negative_slice_steps_render_like_python() {
        let t = "{{ ''[::-1] }}|{{ [][::-2] | length }}|{{ 'abc'[:5:-1] }}|{{ [1, 2, 3][5:][::-1] | length }}|{{ 'abc'[::-1] }}|{{ [1, 2, 3][::-2] | join(',') }}";
        assert_eq!(render(t, "x", "", "").unwrap(), "|0||0|cba|3,1");
        let t = "{% for m in messages[::-1] %}{{ m.content }}{% endfor %}";
        assert_eq!(render(t, "hello", "", "").unwrap(), "hello");
        let e = render("{{ P[:] [:8] [::-----8] }}", "x", "", "");
        assert!(e.is_ok() || e.unwrap_err().to_string().contains("chat template"));
    }

    /// The fuzzer's stack overflows (`fuzz/regressions/chat_template/crash-2026-11-27-signs-*`):
    /// a long chain of unary signs. Refused with its position; a few signs render.
    #[test]
    fn long_chains_of_signs_are_refused() {
        let t = format!("x\n{{{{ 1 {} 2 }}}}", "- ".repeat(40));
        let e = render(&t, "x", "", "").unwrap_err().to_string();
        assert!(e.contains("signs") && e.contains("line 2"), "{e}");
        assert_eq!(
            render("{{ 5 - -2 - 1 }}{%- if 1 -%} y {%- endif -%}", "x", "", "").unwrap(),
            "6y"
        );
    }

    #[test]
    fn a_runaway_template_stops_with_a_message() {
        let t = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}";
        let e = render(t, "x", "", "").unwrap_err();
        assert!(e.to_string().contains("fuel"), "{e}");
    }
}
