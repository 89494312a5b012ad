//! Static checks on a parsed GBNF grammar: duplicate, missing and undefined rules, and
//! whether the language is empty.

use std::collections::HashMap;

use super::ast::{Expr, Grammar};
use crate::error::{ErrorKind, GrammarError};

/// The rule every GBNF grammar starts from.
pub const ROOT: &str = "root";

/// Checks `g`: every referenced rule exists, no rule is defined twice, `root` exists and
/// derives at least one string.
pub fn check(g: &Grammar) -> Result<(), GrammarError> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, r) in g.rules.iter().enumerate() {
        if let Some(&first) = index.get(r.name.as_str()) {
            let l = g.rules[first].location;
            return Err(GrammarError::at(
                ErrorKind::Syntax,
                r.location,
                format!(
                    "rule `{}` is defined twice (first at line {}, column {})",
                    r.name, l.line, l.column
                ),
            ));
        }
        index.insert(&r.name, i);
    }
    for r in &g.rules {
        undefined_refs(&r.body, &index)?;
    }
    let Some(&root) = index.get(ROOT) else {
        return Err(GrammarError::new(
            ErrorKind::UndefinedRule,
            "the grammar has no `root` rule (GBNF grammars start at `root`)",
        ));
    };
    let productive = productive_rules(g, &index);
    if !productive[root] {
        return Err(GrammarError::at(
            ErrorKind::EmptyLanguage,
            g.rules[root].location,
            "the constraint matches no string: rule `root` never derives a finite string \
             (every alternative recurses forever or uses an empty character class)",
        ));
    }
    Ok(())
}

fn undefined_refs(e: &Expr, index: &HashMap<&str, usize>) -> Result<(), GrammarError> {
    match e {
        Expr::Alt(xs) | Expr::Seq(xs) => xs.iter().try_for_each(|x| undefined_refs(x, index)),
        Expr::Repeat { item, .. } => undefined_refs(item, index),
        Expr::Ref(name, loc) if !index.contains_key(name.as_str()) => Err(GrammarError::at(
            ErrorKind::UndefinedRule,
            *loc,
            format!("undefined rule `{name}`"),
        )),
        _ => Ok(()),
    }
}

/// Which rules derive at least one finite string (least fixpoint).
pub(crate) fn productive_rules(g: &Grammar, index: &HashMap<&str, usize>) -> Vec<bool> {
    let mut productive = vec![false; g.rules.len()];
    loop {
        let mut changed = false;
        for (i, r) in g.rules.iter().enumerate() {
            if !productive[i] && derives(&r.body, &productive, index) {
                productive[i] = true;
                changed = true;
            }
        }
        if !changed {
            return productive;
        }
    }
}

pub(crate) fn derives(e: &Expr, productive: &[bool], index: &HashMap<&str, usize>) -> bool {
    match e {
        Expr::Alt(xs) => xs.iter().any(|x| derives(x, productive, index)),
        Expr::Seq(xs) => xs.iter().all(|x| derives(x, productive, index)),
        Expr::Literal(_) | Expr::Any => true,
        Expr::Class { negated, ranges } => {
            if *negated {
                !covers_all_chars(ranges)
            } else {
                !ranges.is_empty()
            }
        }
        Expr::Ref(name, _) => index.get(name.as_str()).is_some_and(|&i| productive[i]),
        Expr::Repeat { item, min, .. } => *min == 0 || derives(item, productive, index),
    }
}

/// Whether `ranges` cover every Unicode scalar value.
fn covers_all_chars(ranges: &[(char, char)]) -> bool {
    let mut rs: Vec<(u32, u32)> = ranges.iter().map(|&(a, b)| (a as u32, b as u32)).collect();
    rs.sort();
    let mut next = 0u32;
    for (a, b) in rs {
        if a > next {
            // The surrogate gap is not made of characters.
            if !(next == 0xD800 && a == 0xE000) {
                return false;
            }
        }
        next = next.max(b + 1);
    }
    next > 0x10FFFF
}
