//! A regex as a [`ByteAutomaton`]: the DFA's live states in a compact transition table.

use super::compile::build_dfa;
use super::error::RegexError;
use super::minimize::{DEAD, minimize};
use crate::ByteAutomaton;
use crate::limits::Limits;
use regex_automata::Anchored;
use regex_automata::dfa::Automaton;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use std::collections::HashMap;

/// A regex compiled to a DFA with full-match semantics (the whole byte string must match)
/// and dead states pruned: every state it returns can still reach an accepting state.
///
/// States are `u32` indices `0..num_states()`, with the initial state `0`.
#[derive(Clone, Debug)]
pub struct RegexAutomaton {
    /// Byte to equivalence class.
    classes: [u8; 256],
    /// Number of byte classes.
    stride: usize,
    /// `trans[s * stride + class]`, `DEAD` when dead.
    trans: Vec<u32>,
    accepting: Vec<bool>,
}

impl RegexAutomaton {
    /// Compiles `pattern` with the default [`Limits`].
    pub fn new(pattern: &str) -> Result<Self, RegexError> {
        Self::with_limits(pattern, &Limits::default())
    }

    /// Compiles `pattern` under `limits`; errors carry positions, limit names, or
    /// "the constraint matches no string".
    pub fn with_limits(pattern: &str, limits: &Limits) -> Result<Self, RegexError> {
        let dfa = build_dfa(pattern, limits)?;
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::Yes))
            .map_err(|e| RegexError::Unsupported(e.to_string()))?;
        let mut classes = [0u8; 256];
        for b in 0..=255u8 {
            classes[b as usize] = dfa.byte_classes().get(b);
        }
        let stride = dfa.byte_classes().alphabet_len();
        let mut reps = vec![0u8; stride];
        for b in (0..=255u8).rev() {
            reps[classes[b as usize] as usize] = b;
        }
        // Enumerate reachable non-dead states by BFS.
        let mut ids: HashMap<StateID, u32> = HashMap::new();
        let mut order = vec![start];
        ids.insert(start, 0);
        let mut succ: Vec<Vec<u32>> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let s = order[i];
            let mut row = vec![DEAD; stride];
            for (c, &b) in reps.iter().enumerate() {
                let n = dfa.next_state(s, b);
                if dfa.is_dead_state(n) || dfa.is_quit_state(n) {
                    continue;
                }
                let next = order.len() as u32;
                let id = *ids.entry(n).or_insert_with(|| {
                    order.push(n);
                    next
                });
                row[c] = id;
            }
            succ.push(row);
            i += 1;
        }
        let raw_accepting: Vec<bool> = order
            .iter()
            .map(|&s| dfa.is_match_state(dfa.next_eoi_state(s)))
            .collect();
        let live = co_reachable(&succ, &raw_accepting);
        if !live[0] {
            return Err(RegexError::EmptyLanguage);
        }
        // Renumber live states, keeping BFS order (so the start stays 0).
        let mut new_id = vec![DEAD; order.len()];
        let mut n = 0u32;
        for (old, &l) in live.iter().enumerate() {
            if l {
                new_id[old] = n;
                n += 1;
            }
        }
        let mut trans = Vec::with_capacity(n as usize * stride);
        let mut accepting = Vec::with_capacity(n as usize);
        for (old, row) in succ.iter().enumerate() {
            if !live[old] {
                continue;
            }
            trans.extend(
                row.iter()
                    .map(|&t| if t == DEAD { DEAD } else { new_id[t as usize] }),
            );
            accepting.push(raw_accepting[old]);
        }
        let (trans, accepting) = minimize(&trans, &accepting, stride);
        Ok(RegexAutomaton {
            classes,
            stride,
            trans,
            accepting,
        })
    }

    /// Number of live states.
    pub fn num_states(&self) -> usize {
        self.accepting.len()
    }
}

/// States from which an accepting state is reachable (reverse BFS).
fn co_reachable(succ: &[Vec<u32>], accepting: &[bool]) -> Vec<bool> {
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); succ.len()];
    for (s, row) in succ.iter().enumerate() {
        for &t in row {
            if t != DEAD {
                preds[t as usize].push(s as u32);
            }
        }
    }
    let mut live = accepting.to_vec();
    let mut stack: Vec<u32> = (0..succ.len() as u32)
        .filter(|&s| live[s as usize])
        .collect();
    while let Some(t) = stack.pop() {
        for &p in &preds[t as usize] {
            if !live[p as usize] {
                live[p as usize] = true;
                stack.push(p);
            }
        }
    }
    live
}

impl ByteAutomaton for RegexAutomaton {
    type State = u32;

    fn initial(&self) -> u32 {
        0
    }

    fn step(&self, state: u32, byte: u8) -> Option<u32> {
        let i = (state as usize)
            .checked_mul(self.stride)?
            .checked_add(self.classes[byte as usize] as usize)?;
        match self.trans.get(i) {
            Some(&t) if t != DEAD => Some(t),
            _ => None,
        }
    }

    fn is_accepting(&self, state: u32) -> bool {
        self.accepting.get(state as usize).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_match(a: &RegexAutomaton, s: &str) -> bool {
        a.walk(a.initial(), s.as_bytes())
            .is_some_and(|q| a.is_accepting(q))
    }

    #[test]
    fn full_match_semantics() {
        let a = RegexAutomaton::new("a|ab").unwrap();
        assert!(full_match(&a, "a") && full_match(&a, "ab"));
        assert!(!full_match(&a, "abb") && !full_match(&a, "") && !full_match(&a, "b"));
        let d = RegexAutomaton::new(r"[0-9]{4}-[0-9]{2}").unwrap();
        assert!(full_match(&d, "2024-01"));
        assert!(!full_match(&d, "2024-1") && !full_match(&d, "x2024-01"));
        assert!(d.walk(0, b"20").is_some() && d.walk(0, b"2x").is_none());
    }

    #[test]
    fn dead_states_are_pruned() {
        // After "b", nothing can ever match: must be dead, not a live trap state.
        let a = RegexAutomaton::new("a(b|c[^\\s\\S])").unwrap();
        assert!(a.walk(0, b"ab").is_some());
        assert!(a.walk(0, b"ac").is_none());
    }

    #[test]
    fn empty_language_error() {
        let e = RegexAutomaton::new("a[^\\s\\S]").unwrap_err();
        assert_eq!(e.to_string(), "the constraint matches no string");
        assert_eq!(
            RegexAutomaton::new("[a&&b]").unwrap_err(),
            RegexError::EmptyLanguage
        );
    }

    #[test]
    fn syntax_error_has_position() {
        let e = RegexAutomaton::new("ab(cd").unwrap_err();
        match &e {
            RegexError::Syntax { offset, column, .. } => {
                assert_eq!((*offset, *column), (2, 3));
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("byte offset 2"), "{e}");
        let e = RegexAutomaton::new("abc{2,1}").unwrap_err();
        assert!(
            e.to_string().contains("invalid regex at byte offset"),
            "{e}"
        );
    }

    #[test]
    fn size_limit_error_names_limit() {
        let small = Limits::default().with_dfa_size_bytes(1000);
        let e = RegexAutomaton::with_limits(r"[a-z]{1,10}x[a-z]{20}", &small).unwrap_err();
        assert!(matches!(e, RegexError::Limit(_)), "{e:?}");
        assert!(e.to_string().contains("size limit exceeded"), "{e}");
        let small = Limits::default().with_nfa_size_bytes(100);
        let e = RegexAutomaton::with_limits(r"\w{50}", &small).unwrap_err();
        assert!(e.to_string().contains("nfa_size_limit = 100"), "{e}");
    }

    /// A regex nested far deeper than any real pattern is refused by the parser's nest
    /// limit, with its position, not by a stack overflow.
    #[test]
    fn deep_nesting_is_refused_with_its_position() {
        let deep = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
        let e = RegexAutomaton::new(&deep).unwrap_err();
        assert!(matches!(e, RegexError::Syntax { .. }), "{e:?}");
        assert!(
            e.to_string()
                .contains("maximum number of nested parentheses"),
            "{e}"
        );
        assert!(e.to_string().contains("line 1, column 251"), "{e}");
    }

    #[test]
    fn unsupported_feature_is_a_clear_error() {
        let e = RegexAutomaton::new(r"\bfoo\b").unwrap_err();
        assert!(matches!(e, RegexError::Unsupported(_)), "{e:?}");
        assert!(e.to_string().contains("word boundar"), "{e}");
        // The ASCII word boundary works.
        let a = RegexAutomaton::new(r"(?-u:\b)foo(?-u:\b)").unwrap();
        assert!(a.walk(0, b"foo").is_some_and(|s| a.is_accepting(s)));
    }

    #[test]
    fn multibyte_and_anchors() {
        let a = RegexAutomaton::new("é+").unwrap();
        assert!(full_match(&a, "éé"));
        assert!(a.walk(0, &[0xC3]).is_some() && !a.is_accepting(a.walk(0, &[0xC3]).unwrap()));
        let b = RegexAutomaton::new("^ab$").unwrap();
        assert!(full_match(&b, "ab"));
        assert!(!a.is_accepting(999) && a.step(999, b'a').is_none());
    }
}
