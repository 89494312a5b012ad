//! Removes the parts of a GBNF grammar that derive no finite string.
//!
//! llguidance predicts terminals without checking that the rest of a rule can finish, so
//! an alternative through a rule that never terminates would let tokens in that lead to
//! a dead end. Pruning those alternatives keeps every mask exact.

use std::collections::HashMap;

use super::ast::{Expr, Grammar, Rule};
use super::check::{derives, productive_rules};

/// `g` without unproductive rules and alternatives (call after [`super::check::check`]).
pub fn prune(g: &Grammar) -> Grammar {
    let index: HashMap<&str, usize> = g
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    let productive = productive_rules(g, &index);
    let rules = g
        .rules
        .iter()
        .enumerate()
        .filter(|&(i, _)| productive[i])
        .filter_map(|(_, r)| {
            Some(Rule {
                body: prune_expr(&r.body, &productive, &index)?,
                ..r.clone()
            })
        })
        .collect();
    Grammar { rules }
}

/// The productive part of `e`, or `None` when `e` derives no finite string.
fn prune_expr(e: &Expr, productive: &[bool], index: &HashMap<&str, usize>) -> Option<Expr> {
    if !derives(e, productive, index) {
        return None;
    }
    Some(match e {
        Expr::Alt(xs) => {
            let kept: Vec<Expr> = xs
                .iter()
                .filter_map(|x| prune_expr(x, productive, index))
                .collect();
            if kept.len() == 1 {
                kept.into_iter().next()?
            } else {
                Expr::Alt(kept)
            }
        }
        Expr::Seq(xs) => Expr::Seq(
            xs.iter()
                .map(|x| prune_expr(x, productive, index))
                .collect::<Option<Vec<_>>>()?,
        ),
        Expr::Repeat { item, min, max } => match prune_expr(item, productive, index) {
            Some(item) => Expr::Repeat {
                item: Box::new(item),
                min: *min,
                max: *max,
            },
            // Zero copies of something that never finishes: the empty string.
            None => Expr::Seq(Vec::new()),
        },
        other => other.clone(),
    })
}
