//! A trie of token byte strings, walked once per mask with dead subtrees skipped.

use crate::{ByteAutomaton, TokenId, Vocabulary};

/// The tokens of a vocabulary as a byte trie, stored flat in preorder.
///
/// Special tokens (EOS included) and empty tokens are left out: they never extend the
/// byte string. Walking from an automaton state visits every token whose bytes keep the
/// automaton alive, skipping each subtree at the first dead byte.
#[derive(Clone, Debug)]
pub struct TokenTrie {
    /// Nodes in preorder, plus a sentinel whose `tok_start` ends the last node's tokens.
    nodes: Vec<Node>,
    tokens: Vec<TokenId>,
    max_depth: usize,
    vocab_size: usize,
}

/// One trie node; the fields the walk reads together sit together.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// `tokens[tok_start..next node's tok_start]` end exactly at this node.
    tok_start: u32,
    /// One past the last node of this node's subtree.
    subtree_end: u32,
    /// Depth (root 0).
    depth: u32,
    /// Byte labelling the edge into this node (the root has none).
    byte: u8,
}

impl TokenTrie {
    /// Builds the trie over every non-special, non-empty token of `vocab`.
    pub fn new(vocab: &Vocabulary) -> Self {
        let eos = vocab.eos();
        let mut toks: Vec<(&[u8], TokenId)> = (0..vocab.len() as TokenId)
            .filter(|&t| t != eos && !vocab.is_special(t) && !vocab.bytes(t).is_empty())
            .map(|t| (vocab.bytes(t), t))
            .collect();
        toks.sort_unstable();
        let root = Node {
            tok_start: 0,
            subtree_end: 0,
            depth: 0,
            byte: 0,
        };
        let mut trie = TokenTrie {
            nodes: vec![root],
            tokens: Vec::with_capacity(toks.len()),
            max_depth: 0,
            vocab_size: vocab.len(),
        };
        // `path[d]` is the node at depth d on the current branch.
        let mut path: Vec<u32> = vec![0];
        let mut prev: &[u8] = &[];
        for (bytes, t) in toks {
            let lcp = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            while path.len() > lcp + 1 {
                let done = path.pop().unwrap_or(0);
                trie.nodes[done as usize].subtree_end = trie.nodes.len() as u32;
            }
            for &b in &bytes[lcp..] {
                let id = trie.nodes.len() as u32;
                trie.nodes.push(Node {
                    tok_start: trie.tokens.len() as u32,
                    subtree_end: 0,
                    depth: path.len() as u32,
                    byte: b,
                });
                path.push(id);
            }
            trie.tokens.push(t);
            trie.max_depth = trie.max_depth.max(bytes.len());
            prev = bytes;
        }
        while let Some(done) = path.pop() {
            trie.nodes[done as usize].subtree_end = trie.nodes.len() as u32;
        }
        let end = trie.nodes.len() as u32;
        trie.nodes.push(Node {
            tok_start: trie.tokens.len() as u32,
            subtree_end: end,
            depth: 0,
            byte: 0,
        });
        trie
    }

    /// Number of trie nodes (root included).
    pub fn num_nodes(&self) -> usize {
        self.nodes.len() - 1
    }

    /// Vocabulary size the trie was built from.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Calls `visit(token, state_after_token)` for every token whose bytes keep `automaton`
    /// alive from `state`, pruning each subtree where the automaton dies.
    pub fn walk<A: ByteAutomaton>(
        &self,
        automaton: &A,
        state: A::State,
        mut visit: impl FnMut(TokenId, A::State),
    ) {
        let mut stack = vec![state; self.max_depth + 1];
        let n = self.nodes.len() - 1;
        let mut i = 1;
        while i < n {
            let node = self.nodes[i];
            let d = node.depth as usize;
            match automaton.step(stack[d - 1], node.byte) {
                None => i = node.subtree_end as usize,
                Some(next) => {
                    stack[d] = next;
                    let (a, b) = (
                        node.tok_start as usize,
                        self.nodes[i + 1].tok_start as usize,
                    );
                    for &t in &self.tokens[a..b] {
                        visit(t, next);
                    }
                    i += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regex::RegexAutomaton;

    #[test]
    fn walk_visits_exactly_live_tokens() {
        let words: Vec<&[u8]> = vec![b"a", b"ab", b"abc", b"b", b"", b"ab", b"<e>", b"ba", b"c"];
        let vocab = Vocabulary::new(words.iter().map(|w| w.to_vec()).collect(), 6, &[]);
        let trie = TokenTrie::new(&vocab);
        // root + a, ab, abc, b, ba, c
        assert_eq!(trie.num_nodes(), 7);
        let a = RegexAutomaton::new("ab*").unwrap();
        let mut seen = Vec::new();
        trie.walk(&a, a.initial(), |t, _| seen.push(t));
        seen.sort();
        assert_eq!(seen, vec![0, 1, 5]);
        let mut seen = Vec::new();
        let after_a = a.step(0, b'a').unwrap();
        trie.walk(&a, after_a, |t, s| {
            assert!(a.is_accepting(s));
            seen.push(t)
        });
        assert_eq!(seen, vec![3]);
    }
}
