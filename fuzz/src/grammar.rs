//! GBNF, Lark and JSON Schema through our front ends into llguidance.

use crate::util::{steps, text, vocab};
use grammars::{CfgConstraint, Compiler, ErrorKind, Format, GrammarError};
use sampler_core::Constraint;
use std::sync::OnceLock;

/// One compiler for the fuzz vocabulary (built once per process).
fn compiler() -> &'static Compiler {
    static C: OnceLock<Compiler> = OnceLock::new();
    C.get_or_init(|| Compiler::new(vocab()).expect("the fuzz vocabulary compiles"))
}

/// A GBNF grammar: parsed, checked and translated by `grammars::gbnf`. When the
/// translation succeeds, llguidance must accept the Lark it produced or refuse it for a
/// reason that is the grammar's (empty language, a size limit), never a syntax error or
/// an undefined rule in our own output.
pub fn gbnf(data: &[u8]) {
    let source = text(data);
    match grammars::gbnf::to_lark(source) {
        Ok(lark) => {
            let r = compiler().compile(&lark, Some(Format::Lark));
            if let Err(e) = &r {
                assert!(
                    !matches!(e.kind, ErrorKind::Syntax | ErrorKind::UndefinedRule),
                    "GBNF {source:?} translated to Lark that llguidance rejects: {e}\n{lark}"
                );
            }
            walk(r, data, source);
        }
        // `Compiler::compile` with `Format::Gbnf` is `to_lark` then this Lark path, so
        // this is the compiler's GBNF path too.
        Err(e) => check_error(&e, source),
    }
}

/// A Lark grammar, as written, through llguidance.
pub fn lark(data: &[u8]) {
    let source = text(data);
    walk(compiler().compile(source, Some(Format::Lark)), data, source);
}

/// A JSON Schema through our keyword check and llguidance's compiler.
pub fn json_schema(data: &[u8]) {
    let source = text(data);
    walk(
        compiler().compile(source, Some(Format::JsonSchema)),
        data,
        source,
    );
}

/// An error must say something and point inside the source when it points anywhere.
fn check_error(e: &GrammarError, source: &str) {
    assert!(!e.message.trim().is_empty(), "an error without a message");
    if let Some(loc) = e.location {
        let lines = source.lines().count().max(1);
        assert!(
            loc.line >= 1 && loc.line <= lines + 1,
            "error at line {} of a {lines}-line source: {e}",
            loc.line
        );
    }
}

/// Walks a compiled constraint a few steps (tokens chosen by the input's tail), checking
/// that `allows`, `mask` and `advance` agree; reports an error's shape otherwise.
fn walk(r: Result<CfgConstraint, GrammarError>, data: &[u8], source: &str) {
    let c = match r {
        Ok(c) => c,
        Err(e) => return check_error(&e, source),
    };
    let mut state = c.initial();
    for pick in steps(data) {
        let mask = c.mask(&state);
        if let Some(e) = c.take_error() {
            assert!(!e.message.is_empty(), "an engine error without a message");
            return;
        }
        let allowed: Vec<u32> = mask.iter().collect();
        if allowed.is_empty() {
            return;
        }
        let t = allowed[pick % allowed.len()];
        assert!(
            c.allows(&state, t),
            "mask allows token {t} but allows() does not"
        );
        if t == c.eos() {
            assert!(c.is_complete(&state), "EOS allowed in an incomplete state");
            return;
        }
        match c.advance(&state, t) {
            Some(s) => state = s,
            None => {
                assert!(
                    c.take_error().is_some(),
                    "a masked-in token could not advance"
                );
                return;
            }
        }
    }
}
