//! The regex front end: pattern → byte DFA → token constraint and tensorized automaton.

use crate::util::{steps, vocab};
use sampler_core::{ByteAutomaton, Constraint, Limits, RegexAutomaton, RegexConstraint};

/// The default limits with the DFA capped at 4 MiB instead of 64: a pattern that reaches
/// 64 MiB takes about a second to refuse (fuzz/regressions/regex/hang-dotstar-dfa, 0.94 s
/// in release), which AFL's instrumented build turns into a hang; the smaller cap keeps
/// the search on the code's paths rather than on determinizing large DFAs.
fn limits() -> Limits {
    Limits {
        dfa_size_bytes: 4 << 20,
        determinize_size_bytes: 4 << 20,
        ..Limits::default()
    }
}

/// The input is `pattern \0 subject` (no NUL: the whole input is the pattern and the
/// subject is empty). The byte DFA must accept the subject exactly when the `regex`
/// crate matches all of it, and the token constraint built over the fuzz vocabulary must
/// agree with the DFA on the subject's bytes.
pub fn run(data: &[u8]) {
    let (pattern, subject) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(pattern) = std::str::from_utf8(pattern) else {
        return;
    };
    let dfa = match RegexAutomaton::with_limits(pattern, &limits()) {
        Ok(a) => a,
        Err(e) => {
            assert!(!e.to_string().is_empty(), "a regex error without a message");
            return;
        }
    };
    let accepted = dfa
        .walk(dfa.initial(), subject)
        .is_some_and(|q| dfa.is_accepting(q));
    // The reference: the same syntax, anchored at both ends, on bytes.
    if let Ok(re) = regex::bytes::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(1 << 24)
        .build()
    {
        assert_eq!(
            accepted,
            re.is_match(subject),
            "pattern {pattern:?} on {subject:?}: DFA and regex crate disagree"
        );
    }
    let c = match RegexConstraint::from_regex_with_limits(pattern, vocab(), &limits()) {
        Ok(c) => c,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    // The subject's bytes as single-byte tokens: the constraint follows the DFA.
    let mut state = Some(c.initial());
    for &b in subject {
        state = state.and_then(|s| c.advance(&s, b as u32));
    }
    let via_tokens = state.as_ref().is_some_and(|s| c.is_complete(s));
    assert_eq!(
        via_tokens, accepted,
        "token constraint and DFA disagree on {subject:?}"
    );
    // A few steps through the mask, with the tensorized automaton's state beside.
    let mut s = c.initial();
    for pick in steps(subject) {
        let mask = c.mask(&s);
        let allowed: Vec<u32> = mask.iter().collect();
        let by_trie: Vec<u32> = c.trie_mask(&s).iter().collect();
        assert_eq!(allowed, by_trie, "the mask and the trie walk disagree");
        if allowed.is_empty() {
            break;
        }
        let t = allowed[pick % allowed.len()];
        if let Some(tz) = c.tensorized() {
            assert!(
                c.tensor_state(&s)
                    .is_some_and(|q| (q as usize) < tz.num_states)
            );
        }
        if t == c.eos() {
            assert!(
                c.is_complete(&s),
                "EOS masked in before the language is complete"
            );
            break;
        }
        s = c.advance(&s, t).expect("a token in the mask advances");
    }
}
