//! Size limits for compiling constraints, on by default (users paste arbitrary patterns).

/// Every size limit applied while compiling a regex into a DFA and a tensorized automaton.
///
/// The defaults keep compilation within a few hundred MiB and a few seconds; raise them
/// with the `with_*` methods (or set a field to `usize::MAX` to lift a limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Heap bytes of the Thompson NFA (`nfa_size_limit`).
    pub nfa_size_bytes: usize,
    /// Heap bytes of the dense DFA (`dfa_size_limit`).
    pub dfa_size_bytes: usize,
    /// Auxiliary heap bytes used while determinizing (`determinize_size_limit`).
    pub determinize_size_bytes: usize,
    /// Live states of the tensorized automaton, the final state included (`max_states`).
    pub max_states: usize,
    /// Edges (source, destination pairs) of the tensorized automaton (`max_edges`).
    pub max_edges: usize,
    /// Bytes of the edge-by-token bitset B_f (`max_bf_bytes`).
    pub max_bf_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            nfa_size_bytes: 10 << 20,
            dfa_size_bytes: 64 << 20,
            determinize_size_bytes: 64 << 20,
            max_states: 10_000,
            max_edges: 100_000,
            max_bf_bytes: 256 << 20,
        }
    }
}

impl Limits {
    /// Sets the NFA size limit in bytes.
    pub fn with_nfa_size_bytes(mut self, bytes: usize) -> Self {
        self.nfa_size_bytes = bytes;
        self
    }
    /// Sets the dense DFA size limit in bytes.
    pub fn with_dfa_size_bytes(mut self, bytes: usize) -> Self {
        self.dfa_size_bytes = bytes;
        self
    }
    /// Sets the determinization scratch size limit in bytes.
    pub fn with_determinize_size_bytes(mut self, bytes: usize) -> Self {
        self.determinize_size_bytes = bytes;
        self
    }
    /// Sets the maximum number of tensorized states.
    pub fn with_max_states(mut self, n: usize) -> Self {
        self.max_states = n;
        self
    }
    /// Sets the maximum number of tensorized edges.
    pub fn with_max_edges(mut self, n: usize) -> Self {
        self.max_edges = n;
        self
    }
    /// Sets the maximum size of B_f in bytes.
    pub fn with_max_bf_bytes(mut self, bytes: usize) -> Self {
        self.max_bf_bytes = bytes;
        self
    }
}

/// A size limit was exceeded while compiling; names the limit and the sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitExceeded {
    /// The limit's name, as in [`Limits`] (e.g. `max_states`, `dfa_size_limit`).
    pub limit: &'static str,
    /// The configured maximum.
    pub max: usize,
    /// The size reached when compilation stopped, when known.
    pub reached: Option<usize>,
}

impl std::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "size limit exceeded: {} = {}", self.limit, self.max)?;
        if let Some(r) = self.reached {
            write!(f, " (reached {r})")?;
        }
        f.write_str("; raise the limit or simplify the constraint")
    }
}

impl std::error::Error for LimitExceeded {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_limit_and_sizes() {
        let e = LimitExceeded {
            limit: "max_states",
            max: 10,
            reached: Some(11),
        };
        let s = e.to_string();
        assert!(
            s.contains("max_states = 10") && s.contains("reached 11"),
            "{s}"
        );
        let e = LimitExceeded {
            limit: "dfa_size_limit",
            max: 5,
            reached: None,
        };
        assert!(!e.to_string().contains("reached"));
        assert_eq!(Limits::default().with_max_edges(3).max_edges, 3);
    }
}
