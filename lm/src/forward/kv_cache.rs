//! The KV cache: keys and values of every position run so far, per block, in pages of
//! [`PAGE`] positions. A cache that takes another's prefix (a particle after resampling, a
//! rejection sampler's restart, an MCMC truncation point) shares that prefix's full pages
//! instead of copying them; a shared page is copied only when one of its holders writes to
//! it (copy on write: the partly filled last page of a prefix). So the KV-cache slots of a
//! run (`PromptedModel`) hold the prompt and every common prefix once: a prefix tree of
//! pages.

use crate::config::LlamaConfig;
use std::collections::HashSet;
use std::sync::Arc;

/// Positions per page.
pub const PAGE: usize = 16;

/// One page: up to [`PAGE`] rows of `kv_dim` floats.
type Page = Arc<Vec<f32>>;

/// Keys and values of every position run so far, per block (f32), in shared pages.
#[derive(Debug, Clone)]
pub struct KvCache {
    k: Vec<Vec<Page>>,
    v: Vec<Vec<Page>>,
    pub(super) len: usize,
    kv_dim: usize,
}

/// The keys (or values) of one block, row by row.
#[derive(Clone, Copy)]
pub(super) struct Rows<'a> {
    pages: &'a [Page],
    kv_dim: usize,
}

impl<'a> Rows<'a> {
    /// Position `j`'s row.
    #[cfg(test)]
    pub(super) fn row(&self, j: usize) -> &'a [f32] {
        &self.pages[j / PAGE][(j % PAGE) * self.kv_dim..][..self.kv_dim]
    }

    /// Page `p`'s rows one after another (`kv_dim` floats each, as many as it holds).
    #[inline]
    pub(super) fn page(&self, p: usize) -> &'a [f32] {
        &self.pages[p]
    }

    /// Floats per row.
    pub(super) fn kv_dim(&self) -> usize {
        self.kv_dim
    }
}

impl KvCache {
    /// An empty cache for a model with this configuration.
    pub fn new(config: &LlamaConfig) -> Self {
        KvCache {
            k: vec![Vec::new(); config.n_layers],
            v: vec![Vec::new(); config.n_layers],
            len: 0,
            kv_dim: config.kv_dim(),
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes this cache hold the first `n` positions of `other` (at most its length): its
    /// full pages are shared, the rows of a partly used last page copied. A branch point
    /// shared without running its tokens again.
    pub fn clone_prefix_from(&mut self, other: &KvCache, n: usize) {
        let n = n.min(other.len);
        let (full, rest) = (n / PAGE, n % PAGE);
        for (mine, theirs) in self
            .k
            .iter_mut()
            .zip(&other.k)
            .chain(self.v.iter_mut().zip(&other.v))
        {
            mine.clear();
            mine.extend_from_slice(&theirs[..full]);
            if rest > 0 {
                let mut page = Vec::with_capacity(PAGE * self.kv_dim);
                page.extend_from_slice(&theirs[full][..rest * self.kv_dim]);
                mine.push(Arc::new(page));
            }
        }
        self.len = n;
    }

    /// Bytes of keys and values this cache reads (pages shared with other caches counted
    /// here too; [`KvCache::unique_bytes`] counts each page once).
    pub fn bytes(&self) -> usize {
        self.pages().map(|p| p.len() * 4).sum()
    }

    /// Bytes of keys and values held by `caches` together, each shared page once.
    pub fn unique_bytes<'a>(caches: impl IntoIterator<Item = &'a KvCache>) -> usize {
        let mut seen = HashSet::new();
        caches
            .into_iter()
            .flat_map(KvCache::pages)
            .filter(|p| seen.insert(Arc::as_ptr(p)))
            .map(|p| p.len() * 4)
            .sum()
    }

    fn pages(&self) -> impl Iterator<Item = &Page> {
        self.k.iter().chain(&self.v).flatten()
    }

    /// Keeps the first `n` positions (no-op if it holds fewer).
    pub fn truncate(&mut self, n: usize) {
        if n < self.len {
            self.len = n;
            let kv_dim = self.kv_dim;
            for layer in self.k.iter_mut().chain(self.v.iter_mut()) {
                truncate_pages(layer, n, kv_dim);
            }
        }
    }

    /// Writes block `layer`'s keys and values (`k`, `v`: whole rows) at positions `at`
    /// onwards, dropping whatever that block held from `at` on.
    pub(super) fn write(&mut self, layer: usize, at: usize, k: &[f32], v: &[f32]) {
        let kv_dim = self.kv_dim;
        for (pages, rows) in [(&mut self.k[layer], k), (&mut self.v[layer], v)] {
            truncate_pages(pages, at, kv_dim);
            for row in rows.chunks_exact(kv_dim) {
                if pages.last().is_none_or(|p| p.len() == PAGE * kv_dim) {
                    pages.push(Arc::new(Vec::with_capacity(PAGE * kv_dim)));
                }
                // A page shared with another cache is copied before it is written.
                let last = pages.last_mut().expect("a page was just ensured");
                Arc::make_mut(last).extend_from_slice(row);
            }
        }
    }

    /// Block `layer`'s keys and values.
    pub(super) fn rows(&self, layer: usize) -> (Rows<'_>, Rows<'_>) {
        let kv_dim = self.kv_dim;
        (
            Rows {
                pages: &self.k[layer],
                kv_dim,
            },
            Rows {
                pages: &self.v[layer],
                kv_dim,
            },
        )
    }
}

/// Keeps the first `n` positions of one block's pages.
fn truncate_pages(pages: &mut Vec<Page>, n: usize, kv_dim: usize) {
    pages.truncate(n.div_ceil(PAGE));
    let rest = n % PAGE;
    if rest > 0
        && let Some(last) = pages.last_mut()
        && last.len() > rest * kv_dim
    {
        Arc::make_mut(last).truncate(rest * kv_dim);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-block cache of `n` positions whose rows are `[pos·10 + layer, …]` (kv_dim 2).
    fn filled(n: usize) -> KvCache {
        let mut c = KvCache {
            k: vec![Vec::new(); 2],
            v: vec![Vec::new(); 2],
            len: 0,
            kv_dim: 2,
        };
        for l in 0..2 {
            let rows: Vec<f32> = (0..n).flat_map(|p| [(p * 10 + l) as f32; 2]).collect();
            let neg: Vec<f32> = rows.iter().map(|x| -x).collect();
            c.write(l, 0, &rows, &neg);
        }
        c.len = n;
        c
    }

    fn row0(c: &KvCache, l: usize, j: usize) -> (f32, f32) {
        let (k, v) = c.rows(l);
        (k.row(j)[0], v.row(j)[0])
    }

    #[test]
    fn prefixes_share_full_pages_and_copy_on_write() {
        let a = filled(40); // pages of 16, 16, 8
        let mut b = filled(0);
        b.clone_prefix_from(&a, 35);
        assert_eq!(b.len(), 35);
        for j in [0, 15, 16, 34] {
            assert_eq!(row0(&b, 1, j), row0(&a, 1, j));
        }
        // Two full pages per block and side are shared; the third page's 3 rows copied.
        assert_eq!(a.bytes(), 40 * 2 * 2 * 2 * 4);
        assert_eq!(
            KvCache::unique_bytes([&a, &b]),
            a.bytes() + 3 * 2 * 2 * 2 * 4
        );
        // Writing into b's shared pages (after truncating into the second page) copies
        // that page: a keeps its rows.
        b.truncate(20);
        b.write(0, 20, &[7.0, 7.0], &[8.0, 8.0]);
        b.truncate(18);
        b.write(1, 18, &[5.0, 5.0], &[6.0, 6.0]);
        b.len = 19;
        assert_eq!(row0(&b, 1, 18), (5.0, 6.0));
        assert_eq!(row0(&a, 1, 18), (181.0, -181.0));
        assert_eq!(row0(&b, 1, 17), row0(&a, 1, 17));
        // The first page is still shared, the second no longer.
        assert!(Arc::ptr_eq(&a.k[1][0], &b.k[1][0]));
        assert!(!Arc::ptr_eq(&a.k[1][1], &b.k[1][1]));
        // A prefix longer than the cache is the whole cache.
        let mut c = filled(0);
        c.clone_prefix_from(&a, 99);
        assert_eq!(c.len(), 40);
        assert_eq!(row0(&c, 0, 39), (390.0, -390.0));
    }
}
