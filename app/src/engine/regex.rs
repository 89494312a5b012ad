//! The page's regex constraint: a byte-level DFA (regex-automata) lifted to tokens.
//!
//! The whole output must match the pattern (anchored at both ends). A prefix is viable
//! when the DFA state it reaches can still reach a match; EOS is allowed exactly when the
//! bytes so far match. Special tokens other than EOS, and tokens with no bytes, are never
//! allowed. This is the page's own lift until sampler-core's regex constraint lands in main;
//! it implements the same [`Constraint`] seam, so swapping it is one line in `engine`.

use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{Anchored, MatchKind};
use sampler_core::{Constraint, TokenId, Vocabulary};
use std::collections::{HashMap, HashSet, VecDeque};

/// DFAs larger than this are refused (a clear message instead of a frozen tab).
const MAX_STATES: usize = 200_000;

/// A regex over the output's bytes, as a token-level constraint.
pub struct RegexConstraint {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
    /// States from which a match is still reachable.
    live: HashSet<StateID>,
    vocab: Vocabulary,
}

impl std::fmt::Debug for RegexConstraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegexConstraint")
            .field("live_states", &self.live.len())
            .finish_non_exhaustive()
    }
}

impl RegexConstraint {
    /// Compiles `pattern`; errors name the position of a syntax error, or say that the
    /// pattern matches no string.
    pub fn new(pattern: &str, vocab: Vocabulary) -> Result<Self, String> {
        // Parse first for regex-syntax's message, which points at the offending position.
        regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .map_err(|e| format!("invalid regex:\n{e}"))?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Anchored)
                    .match_kind(MatchKind::All)
                    .dfa_size_limit(Some(64 << 20))
                    .determinize_size_limit(Some(64 << 20)),
            )
            .syntax(regex_automata::util::syntax::Config::new().utf8(false))
            .build(pattern)
            .map_err(|e| format!("the regex cannot be compiled: {e}"))?;
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::Yes))
            .map_err(|e| format!("the regex has no anchored start: {e}"))?;
        let live = live_states(&dfa, start)?;
        if !live.contains(&start) {
            return Err("the constraint matches no string".into());
        }
        Ok(RegexConstraint {
            dfa,
            start,
            live,
            vocab,
        })
    }

    fn walk(&self, mut s: StateID, bytes: &[u8]) -> Option<StateID> {
        for &b in bytes {
            s = self.dfa.next_state(s, b);
            if self.dfa.is_dead_state(s) || self.dfa.is_quit_state(s) {
                return None;
            }
        }
        self.live.contains(&s).then_some(s)
    }

    fn accepts_here(&self, s: StateID) -> bool {
        self.dfa.is_match_state(self.dfa.next_eoi_state(s))
    }
}

/// Every state reachable from `start` from which the end of a match is reachable.
fn live_states(dfa: &dense::DFA<Vec<u32>>, start: StateID) -> Result<HashSet<StateID>, String> {
    let mut index: HashMap<StateID, usize> = HashMap::from([(start, 0)]);
    let mut states = vec![start];
    let mut preds: Vec<Vec<usize>> = vec![Vec::new()];
    let mut queue = VecDeque::from([0usize]);
    while let Some(i) = queue.pop_front() {
        let s = states[i];
        let mut seen_here = HashSet::new();
        for b in 0..=255u8 {
            let t = dfa.next_state(s, b);
            if dfa.is_dead_state(t) || dfa.is_quit_state(t) || !seen_here.insert(t) {
                continue;
            }
            let j = match index.get(&t) {
                Some(&j) => j,
                None => {
                    if states.len() >= MAX_STATES {
                        return Err(format!(
                            "the regex needs more than {MAX_STATES} automaton states; simplify it"
                        ));
                    }
                    let j = states.len();
                    index.insert(t, j);
                    states.push(t);
                    preds.push(Vec::new());
                    queue.push_back(j);
                    j
                }
            };
            preds[j].push(i);
        }
    }
    let mut live = vec![false; states.len()];
    let mut stack: Vec<usize> = (0..states.len())
        .filter(|&i| dfa.is_match_state(dfa.next_eoi_state(states[i])))
        .collect();
    for &i in &stack {
        live[i] = true;
    }
    while let Some(j) = stack.pop() {
        for &i in &preds[j] {
            if !live[i] {
                live[i] = true;
                stack.push(i);
            }
        }
    }
    Ok(states
        .into_iter()
        .zip(live)
        .filter(|(_, l)| *l)
        .map(|(s, _)| s)
        .collect())
}

impl Constraint for RegexConstraint {
    type State = StateID;

    fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    fn eos(&self) -> TokenId {
        self.vocab.eos()
    }

    fn initial(&self) -> StateID {
        self.start
    }

    fn advance(&self, state: &StateID, token: TokenId) -> Option<StateID> {
        if token == self.vocab.eos() {
            return self.accepts_here(*state).then_some(*state);
        }
        if token as usize >= self.vocab.len() || self.vocab.is_special(token) {
            return None;
        }
        let bytes = self.vocab.bytes(token);
        if bytes.is_empty() {
            return None;
        }
        self.walk(*state, bytes)
    }

    fn is_complete(&self, state: &StateID) -> bool {
        self.accepts_here(*state)
    }

    fn is_regular(&self) -> bool {
        true
    }
}
