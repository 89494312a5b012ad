//! The syntax tree of a GBNF grammar.

use crate::error::Location;

/// One GBNF expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// `a | b | …` (a group or a rule body); one alternative is a plain sequence.
    Alt(Vec<Expr>),
    /// `a b …`; empty for the empty string.
    Seq(Vec<Expr>),
    /// A string literal, as characters (empty for `""`).
    Literal(Vec<char>),
    /// A character class `[…]` or `[^…]`: inclusive ranges.
    Class {
        /// Whether the class is negated (`[^…]`).
        negated: bool,
        /// The inclusive character ranges listed.
        ranges: Vec<(char, char)>,
    },
    /// `.`: any character.
    Any,
    /// A reference to a rule, with where it appears.
    Ref(String, Location),
    /// `x*`, `x+`, `x?`, `x{m}`, `x{m,}`, `x{m,n}`: at least `min`, at most `max` copies.
    Repeat {
        /// The repeated expression.
        item: Box<Expr>,
        /// Least number of copies.
        min: u32,
        /// Most copies, `None` for unbounded.
        max: Option<u32>,
    },
}

/// A rule `name ::= body`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The rule's name as written.
    pub name: String,
    /// Where the name is written.
    pub location: Location,
    /// The right-hand side.
    pub body: Expr,
}

/// A parsed GBNF grammar: its rules in source order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grammar {
    /// The rules, in the order they are defined.
    pub rules: Vec<Rule>,
}
