//! A recursive-descent parser for llama.cpp's GBNF, with errors that name line, column and
//! what was expected.

use super::ast::{Expr, Grammar, Rule};
use crate::error::{ErrorKind, GrammarError, Location};
use std::cell::Cell;

/// Largest count allowed in `{m,n}` repetitions.
pub const MAX_REPETITION: u32 = 10_000;

/// Deepest nesting of groups and stacked `*`/`+`/`?`/`{m,n}` allowed: deeper trees would
/// overflow the stack of the recursive passes (1 MB on wasm), and llguidance's Lark, which
/// the grammar is translated to, refuses 29 nested parentheses (the translation nests no
/// deeper than the source: `lark.rs` writes only the parentheses the meaning needs).
pub const MAX_NESTING: usize = 28;

/// Parses GBNF source into rules.
pub fn parse(source: &str) -> Result<Grammar, GrammarError> {
    let mut p = Parser {
        src: source,
        pos: 0,
        depth: 0,
        last_loc: Cell::new((0, Location { line: 1, column: 1 })),
    };
    let mut rules = Vec::new();
    loop {
        p.skip_space(true);
        if p.at_end() {
            break;
        }
        rules.push(p.rule()?);
    }
    Ok(Grammar { rules })
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    /// Groups and postfix operators enclosing the item being parsed.
    depth: usize,
    /// The last location computed, so that `loc` scans forward from it (linear parsing).
    last_loc: Cell<(usize, Location)>,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

impl Parser<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }
    fn loc(&self) -> Location {
        let (from, at) = self.last_loc.get();
        let loc = if from <= self.pos {
            at.advanced_over(&self.src[from..self.pos])
        } else {
            Location::of_offset(self.src, self.pos)
        };
        self.last_loc.set((self.pos, loc));
        loc
    }
    /// Enters a group or a postfix operator at `location`, refusing past [`MAX_NESTING`].
    fn nest(&mut self, location: Location) -> Result<(), GrammarError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(GrammarError::at(
                ErrorKind::TooLarge,
                location,
                format!("groups and repetitions nested deeper than {MAX_NESTING}"),
            ));
        }
        Ok(())
    }
    fn describe_here(&self) -> String {
        match self.peek() {
            None => "end of input".to_string(),
            Some('\n') => "end of line".to_string(),
            Some(c) => format!("`{}`", c.escape_default()),
        }
    }
    fn error(&self, expected: &str) -> GrammarError {
        GrammarError::at(
            ErrorKind::Syntax,
            self.loc(),
            format!("expected {expected}, found {}", self.describe_here()),
        )
    }

    /// Skips blanks and `#` comments; newlines too when `newlines` is set.
    fn skip_space(&mut self, newlines: bool) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => {
                    self.bump();
                }
                '\r' | '\n' if newlines => {
                    self.bump();
                }
                '#' => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Option<String> {
        let start = self.pos;
        while self.peek().is_some_and(is_word_char) {
            self.bump();
        }
        (self.pos > start).then(|| self.src[start..self.pos].to_string())
    }

    fn rule(&mut self) -> Result<Rule, GrammarError> {
        let location = self.loc();
        let name = self.name().ok_or_else(|| self.error("a rule name"))?;
        self.skip_space(false);
        if !self.src[self.pos..].starts_with("::=") {
            return Err(self.error("`::=` after the rule name"));
        }
        self.pos += 3;
        self.skip_space(true);
        let body = self.alternates(false)?;
        self.skip_space(false);
        match self.peek() {
            None | Some('\n') | Some('\r') => Ok(Rule {
                name,
                location,
                body,
            }),
            Some(')') => Err(GrammarError::at(
                ErrorKind::Syntax,
                self.loc(),
                "unmatched `)`: expected a new line or `|` after the rule body",
            )),
            _ => Err(self.error("an expression, `|` or the end of the line")),
        }
    }

    fn alternates(&mut self, nested: bool) -> Result<Expr, GrammarError> {
        let mut alts = vec![self.sequence(nested)?];
        while self.peek() == Some('|') {
            self.bump();
            self.skip_space(true);
            alts.push(self.sequence(nested)?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Expr::Seq(Vec::new()))
        } else {
            Expr::Alt(alts)
        })
    }

    fn sequence(&mut self, nested: bool) -> Result<Expr, GrammarError> {
        let mut items = Vec::new();
        loop {
            let location = self.loc();
            let item = match self.peek() {
                Some('"') => {
                    self.bump();
                    Expr::Literal(self.literal()?)
                }
                Some('[') => {
                    self.bump();
                    self.class()?
                }
                Some('(') => {
                    self.nest(location)?;
                    self.bump();
                    self.skip_space(true);
                    let inner = self.alternates(true)?;
                    if self.peek() != Some(')') {
                        return Err(self.error("`)` to close the group"));
                    }
                    self.bump();
                    self.depth -= 1;
                    inner
                }
                Some('.') => {
                    self.bump();
                    Expr::Any
                }
                Some(c) if is_word_char(c) => {
                    // A name followed by `::=` starts the next rule: the sequence ends here.
                    let save = self.pos;
                    let name = self.name().unwrap_or_default();
                    let after = self.pos;
                    self.skip_space(false);
                    if self.src[self.pos..].starts_with("::=") {
                        self.pos = save;
                        return Err(GrammarError::at(
                            ErrorKind::Syntax,
                            location,
                            format!(
                                "expected `)` or a new line before the definition of rule `{name}`"
                            ),
                        ));
                    }
                    self.pos = after;
                    Expr::Ref(name, location)
                }
                _ => break,
            };
            let outer = self.depth;
            let item = self.postfix(item)?;
            self.depth = outer;
            items.push(item);
            self.skip_space(nested);
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Expr::Seq(Vec::new()))
        } else {
            Expr::Seq(items)
        })
    }

    /// Applies the `*`, `+`, `?` and `{m,n}` that follow `item`; each one nests it a level.
    fn postfix(&mut self, mut item: Expr) -> Result<Expr, GrammarError> {
        loop {
            if matches!(self.peek(), Some('*' | '+' | '?' | '{')) {
                self.nest(self.loc())?;
            }
            let (min, max) = match self.peek() {
                Some('*') => {
                    self.bump();
                    (0, None)
                }
                Some('+') => {
                    self.bump();
                    (1, None)
                }
                Some('?') => {
                    self.bump();
                    (0, Some(1))
                }
                Some('{') => {
                    self.bump();
                    self.braces()?
                }
                _ => return Ok(item),
            };
            item = Expr::Repeat {
                item: Box::new(item),
                min,
                max,
            };
        }
    }

    /// `{m}`, `{m,}`, `{m,n}` or `{,n}`, after the `{`.
    fn braces(&mut self) -> Result<(u32, Option<u32>), GrammarError> {
        self.skip_space(false);
        let min = self.number()?.unwrap_or(0);
        self.skip_space(false);
        let max = match self.peek() {
            Some('}') => Some(min),
            Some(',') => {
                self.bump();
                self.skip_space(false);
                let max = self.number()?;
                self.skip_space(false);
                max
            }
            _ => return Err(self.error("`,` or `}` in a repetition count")),
        };
        if self.peek() != Some('}') {
            return Err(self.error("`}` to close the repetition count"));
        }
        let at = self.loc();
        self.bump();
        if let Some(max) = max
            && max < min
        {
            return Err(GrammarError::at(
                ErrorKind::Syntax,
                at,
                format!("repetition `{{{min},{max}}}` has its maximum below its minimum"),
            ));
        }
        Ok((min, max))
    }

    fn number(&mut self) -> Result<Option<u32>, GrammarError> {
        let start = self.pos;
        let loc = self.loc();
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        if self.pos == start {
            return Ok(None);
        }
        match self.src[start..self.pos].parse::<u32>() {
            Ok(n) if n <= MAX_REPETITION => Ok(Some(n)),
            _ => Err(GrammarError::at(
                ErrorKind::TooLarge,
                loc,
                format!("repetition count above the limit of {MAX_REPETITION}"),
            )),
        }
    }

    /// The characters of a string literal, after its opening `"`.
    fn literal(&mut self) -> Result<Vec<char>, GrammarError> {
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None | Some('\n') => return Err(self.error("`\"` to close the string")),
                Some('"') => {
                    self.bump();
                    return Ok(out);
                }
                Some('\\') => out.push(self.escape()?),
                Some(c) => {
                    self.bump();
                    out.push(c);
                }
            }
        }
    }

    /// A character class after its `[`.
    fn class(&mut self) -> Result<Expr, GrammarError> {
        let negated = self.peek() == Some('^');
        if negated {
            self.bump();
        }
        let mut ranges = Vec::new();
        loop {
            let lo = match self.peek() {
                None | Some('\n') => return Err(self.error("`]` to close the character class")),
                Some(']') => {
                    self.bump();
                    return Ok(Expr::Class { negated, ranges });
                }
                Some('\\') => self.escape()?,
                Some(c) => {
                    self.bump();
                    c
                }
            };
            let rest = &self.src[self.pos..];
            let hi = if rest.starts_with('-') && !rest[1..].starts_with(']') {
                self.bump();
                let at = self.loc();
                let hi = match self.peek() {
                    None | Some('\n') => {
                        return Err(self.error("the end of a character range"));
                    }
                    Some('\\') => self.escape()?,
                    Some(c) => {
                        self.bump();
                        c
                    }
                };
                if hi < lo {
                    return Err(GrammarError::at(
                        ErrorKind::Syntax,
                        at,
                        format!(
                            "character range `{}-{}` ends before it starts",
                            lo.escape_default(),
                            hi.escape_default()
                        ),
                    ));
                }
                hi
            } else {
                lo
            };
            ranges.push((lo, hi));
        }
    }

    /// An escape sequence at `\`: `\n \r \t \\ \" \[ \] \- \/ \xHH \uHHHH \UHHHHHHHH`.
    fn escape(&mut self) -> Result<char, GrammarError> {
        let at = self.loc();
        self.bump();
        let c = self
            .bump()
            .ok_or_else(|| self.error("an escaped character after `\\`"))?;
        let digits = match c {
            'n' => return Ok('\n'),
            'r' => return Ok('\r'),
            't' => return Ok('\t'),
            '0' => return Ok('\0'),
            '\\' | '"' | '[' | ']' | '-' | '/' | '^' | '.' | '\'' => return Ok(c),
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => {
                return Err(GrammarError::at(
                    ErrorKind::Syntax,
                    at,
                    format!(
                        "unknown escape `\\{}` (expected one of \\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)",
                        c.escape_default()
                    ),
                ));
            }
        };
        let start = self.pos;
        for _ in 0..digits {
            if !self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                return Err(self.error(&format!("{digits} hexadecimal digits after `\\{c}`")));
            }
            self.bump();
        }
        let code = u32::from_str_radix(&self.src[start..self.pos], 16).unwrap_or(u32::MAX);
        char::from_u32(code).ok_or_else(|| {
            GrammarError::at(
                ErrorKind::Syntax,
                at,
                format!("`\\{c}{:X}` is not a Unicode scalar value", code),
            )
        })
    }
}
