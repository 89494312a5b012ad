//! Emits llguidance Lark from a checked GBNF grammar.
//!
//! GBNF is a character-level context-free grammar, while llguidance lexes greedily
//! (longest match) with its terminals. To keep GBNF's meaning exactly, every terminal we
//! emit matches exactly one character: literals become sequences of one-character strings
//! and classes become one-character regexes. UTF-8 is prefix-free, so greedy lexing never
//! has two lexemes of different lengths to choose between.

use std::collections::HashMap;
use std::fmt::Write;

use super::ast::{Expr, Grammar};
use super::check::ROOT;

/// Translates `g` (already checked) to Lark text with a `start` rule.
pub fn to_lark(g: &Grammar) -> String {
    let names: HashMap<&str, String> = g
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), lark_name(i, &r.name)))
        .collect();
    let mut out = Emitter {
        names: &names,
        helpers: String::new(),
        next_helper: 0,
    };
    let mut text = format!("start: {}\n", names[ROOT]);
    for r in &g.rules {
        let body = out.expr(&r.body);
        let _ = writeln!(text, "{}: {}", names[r.name.as_str()], body);
    }
    text.push_str(&out.helpers);
    text
}

/// A Lark rule name for GBNF rule number `i`: lowercase, unique, readable.
fn lark_name(i: usize, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("r{i}_{clean}")
}

struct Emitter<'a> {
    names: &'a HashMap<&'a str, String>,
    helpers: String,
    next_helper: usize,
}

/// Where an expression is written, which decides whether it needs parentheses: Lark's
/// `|` binds loosest, then juxtaposition, then the postfix operators. Writing only the
/// parentheses the meaning needs keeps Lark's nesting within the GBNF's (each group or
/// postfix operator of the source is at most one level here), which `MAX_NESTING` bounds
/// below llguidance's own limit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A rule's body, or inside parentheses: anything goes.
    Top,
    /// A branch of `|`, or an item of a sequence: a sequence needs none.
    Branch,
    /// The operand of `*`, `+` or `?`: only an atom goes bare.
    Operand,
}

impl Emitter<'_> {
    fn expr(&mut self, e: &Expr) -> String {
        self.expr_at(e, Place::Top)
    }

    fn expr_at(&mut self, e: &Expr, at: Place) -> String {
        let (text, kind) = match e {
            Expr::Alt(xs) => {
                let parts: Vec<String> =
                    xs.iter().map(|x| self.expr_at(x, Place::Branch)).collect();
                (parts.join(" | "), Place::Top)
            }
            Expr::Seq(xs) if xs.is_empty() => ("\"\"".to_string(), Place::Operand),
            Expr::Seq(xs) if xs.len() == 1 => return self.expr_at(&xs[0], at),
            Expr::Seq(xs) => {
                let parts: Vec<String> =
                    xs.iter().map(|x| self.expr_at(x, Place::Branch)).collect();
                (parts.join(" "), Place::Branch)
            }
            Expr::Literal(cs) if cs.is_empty() => ("\"\"".to_string(), Place::Operand),
            Expr::Literal(cs) => {
                let parts: Vec<String> = cs.iter().map(|&c| char_terminal(c)).collect();
                let kind = if parts.len() == 1 {
                    Place::Operand
                } else {
                    Place::Branch
                };
                (parts.join(" "), kind)
            }
            Expr::Class { negated, ranges } => (class_terminal(*negated, ranges), Place::Operand),
            Expr::Any => ("/(?s:.)/".to_string(), Place::Operand),
            Expr::Ref(name, _) => (self.names[name.as_str()].clone(), Place::Operand),
            Expr::Repeat { item, min, max } => self.repeat(item, *min, *max),
        };
        // A loose expression in a tighter place is parenthesized.
        let fits = match at {
            Place::Top => true,
            Place::Branch => kind != Place::Top,
            Place::Operand => kind == Place::Operand,
        };
        if fits { text } else { format!("({text})") }
    }

    /// `item` repeated `min` to `max` times, and how tightly the text binds.
    fn repeat(&mut self, item: &Expr, min: u32, max: Option<u32>) -> (String, Place) {
        match (min, max) {
            // A postfix operator's result is a sequence item, not an operand: another
            // operator after it takes it in parentheses.
            (0, None) => {
                return (
                    format!("{}*", self.expr_at(item, Place::Operand)),
                    Place::Branch,
                );
            }
            (1, None) => {
                return (
                    format!("{}+", self.expr_at(item, Place::Operand)),
                    Place::Branch,
                );
            }
            (0, Some(1)) => {
                return (
                    format!("{}?", self.expr_at(item, Place::Operand)),
                    Place::Branch,
                );
            }
            _ => {}
        }
        // Name the item once so the expansion stays linear in the counts.
        let x = self.expr(item);
        let item_rule = self.helper(&x);
        let mut parts: Vec<String> = (0..min).map(|_| item_rule.clone()).collect();
        match max {
            None => parts.push(format!("{item_rule}*")),
            Some(max) if max > min => {
                // opt_k: (x opt_{k-1})?  — unambiguous and not nested in the text.
                let mut opt = self.helper(&format!("{item_rule}?"));
                for _ in 1..(max - min) {
                    opt = self.helper(&format!("({item_rule} {opt})?"));
                }
                parts.push(opt);
            }
            Some(_) => {}
        }
        match parts.len() {
            0 => ("\"\"".to_string(), Place::Operand),
            1 if !parts[0].ends_with('*') => (parts.remove(0), Place::Operand),
            _ => (parts.join(" "), Place::Branch),
        }
    }

    fn helper(&mut self, body: &str) -> String {
        let name = format!("h{}_rep", self.next_helper);
        self.next_helper += 1;
        let _ = writeln!(self.helpers, "{name}: {body}");
        name
    }
}

/// A terminal matching exactly `c`.
fn char_terminal(c: char) -> String {
    if c.is_ascii_alphanumeric() || (c.is_ascii_punctuation() && c != '"' && c != '\\') || c == ' '
    {
        format!("\"{c}\"")
    } else {
        format!("/{}/", regex_char(c))
    }
}

/// A one-character regex terminal for a class.
fn class_terminal(negated: bool, ranges: &[(char, char)]) -> String {
    let mut s = String::from("/[");
    if negated {
        s.push('^');
    }
    for &(a, b) in ranges {
        s.push_str(&regex_char(a));
        if b != a {
            s.push('-');
            s.push_str(&regex_char(b));
        }
    }
    s.push_str("]/");
    if ranges.is_empty() {
        // `[]` matches nothing and `[^]` everything; regex syntax has no empty class.
        return if negated {
            "/(?s:.)/".to_string()
        } else {
            "/[^\\x{0}-\\x{10FFFF}]/".to_string()
        };
    }
    s
}

/// `c` as a regex atom: alphanumerics literally, everything else as `\x{…}`.
fn regex_char(c: char) -> String {
    if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        format!("\\x{{{:x}}}", c as u32)
    }
}
