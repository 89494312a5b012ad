//! A model file split by rows between the page's workers: the lead holds it whole, each
//! other worker one share of every matrix's rows, so that together they hold well under a
//! copy each (one and a half on two workers, under two on any number).
//!
//! Every weight matrix's rows are cut into `of × CHUNKS_PER_SHARE` chunks; worker `index`
//! of `of` owns `CHUNKS_PER_SHARE` of them in a row. A helper (index 1 and up) holds its
//! own chunks and nothing else of the matrices; the lead (index 0), which runs the
//! forward pass, holds the whole file ([`Shard::rows`]). Each product is computed by
//! every worker: a helper its own chunks, the lead its own and then whichever of the
//! helpers' no one has taken yet, the ones they come to last first ([`Shard::order`]).
//! So the lead never waits for a helper that has not started a chunk: where a helper is
//! slower (the cores of a machine are not alike: on the 2-core machine the project
//! develops on, one is about 1.5 times slower than the other) or not running at all (the
//! machine busy with something else), the lead computes its rows, as with whole copies.
//!
//! [`ShardFile`] holds a worker's byte ranges of the file packed one after another, and
//! finds the bytes of a range of the file in them ([`FileRows`], which the whole file's
//! bytes also answer).

use crate::gguf::{GgmlType, Gguf, TensorInfo};
use std::ops::Range;

/// One worker's place among the workers that share a model by rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This worker's share, from 0 (the lead).
    pub index: usize,
    /// Workers in all (at least 2).
    pub of: usize,
}

/// Chunks each share owns of every matrix.
pub const CHUNKS_PER_SHARE: usize = 4;

impl Shard {
    /// Chunks of a matrix in all.
    pub fn chunks(&self) -> usize {
        self.of * CHUNKS_PER_SHARE
    }

    /// The chunks this share owns (the first ones it computes).
    fn own_chunks(&self) -> Range<usize> {
        self.index * CHUNKS_PER_SHARE..(self.index + 1) * CHUNKS_PER_SHARE
    }

    /// The chunks this share holds: all of them for the lead, its own for a helper.
    pub fn held_chunks(&self) -> Range<usize> {
        if self.is_lead() {
            0..self.chunks()
        } else {
            self.own_chunks()
        }
    }

    /// The rows this share holds of a matrix of `total` rows (its held chunks').
    pub fn rows(&self, total: usize) -> Range<usize> {
        let held = self.held_chunks();
        let n = self.chunks();
        shard_rows(total, held.start, n).start..shard_rows(total, held.end - 1, n).end
    }

    /// The chunks (of one matrix's [`Shard::chunks`]) this share computes, in the order it
    /// tries them: its own; then, for the lead, the helpers' from the last each comes to,
    /// one helper's after another's.
    pub fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = self.own_chunks().collect();
        if self.is_lead() {
            for k in (0..CHUNKS_PER_SHARE).rev() {
                order.extend((1..self.of).map(|h| h * CHUNKS_PER_SHARE + k));
            }
        }
        order
    }

    /// Whether this is the lead (which runs the forward pass and holds the rest).
    pub fn is_lead(&self) -> bool {
        self.index == 0
    }
}

/// Share `index` of `of` of `total` rows: contiguous, a multiple of four rows long (for the
/// four-row kernels) except the last, which may be shorter or empty.
pub fn shard_rows(total: usize, index: usize, of: usize) -> Range<usize> {
    let per = total.div_ceil(of.max(1)).div_ceil(4) * 4;
    (index * per).min(total)..((index + 1) * per).min(total)
}

/// The bytes of ranges of a model file: the whole file, or the ranges one worker holds.
pub trait FileRows {
    /// The whole file's length.
    fn file_len(&self) -> usize;
    /// The bytes of `file` (a range of the whole file), where they are held.
    fn get(&self, file: Range<usize>) -> Option<&[u8]>;
}

impl FileRows for Vec<u8> {
    fn file_len(&self) -> usize {
        self.len()
    }
    fn get(&self, file: Range<usize>) -> Option<&[u8]> {
        self.as_slice().get(file)
    }
}

impl FileRows for Box<dyn AsRef<[u8]> + Send + Sync> {
    fn file_len(&self) -> usize {
        (**self).as_ref().len()
    }
    fn get(&self, file: Range<usize>) -> Option<&[u8]> {
        (**self).as_ref().get(file)
    }
}

/// Types whose rows a worker can compute for another (the split products' kernels).
fn splittable(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_1 | GgmlType::Q8_0)
}

/// The name of the token embeddings, which are also the output layer where the file has
/// no `output.weight`.
const EMBEDDINGS: &str = "token_embd.weight";

/// One piece of a [`ShardFile`]: a range of the file and where its bytes start.
#[derive(Clone, Debug)]
struct Piece {
    file: Range<usize>,
    at: usize,
}

/// The byte ranges of a model file one worker holds ([`ShardFile::plan`]), packed.
pub struct ShardFile {
    shard: Shard,
    file_len: usize,
    pieces: Vec<Piece>,
    data: Vec<u8>,
}

impl std::fmt::Debug for ShardFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardFile")
            .field("shard", &self.shard)
            .field("pieces", &self.pieces.len())
            .field("bytes", &self.data.len())
            .finish()
    }
}

impl ShardFile {
    /// Whether a model can be shared by rows: every matrix (2-D tensor) is of a type the
    /// split products compute (Q4_1, Q8_0), the token embeddings excepted where the file
    /// has its own output layer. The reason where not.
    pub fn supported(gguf: &Gguf) -> Result<(), String> {
        let tied = gguf.tensor("output.weight").is_none();
        for t in gguf.tensors.iter().filter(|t| t.dims.len() == 2) {
            if t.name == EMBEDDINGS && !tied {
                continue;
            }
            if !splittable(t.ty) {
                return Err(format!(
                    "its matrix {} is {:?}, which the workers cannot split by rows (only Q4_1 \
                     and Q8_0)",
                    t.name, t.ty
                ));
            }
        }
        Ok(())
    }

    /// The file's byte ranges `shard` holds, in order, touching ones joined: for the lead
    /// every tensor whole, for a helper its rows of every matrix.
    pub fn plan(gguf: &Gguf, shard: Shard) -> Result<Vec<Range<usize>>, String> {
        ShardFile::supported(gguf)?;
        let tied = gguf.tensor("output.weight").is_none();
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for t in &gguf.tensors {
            let matrix = t.dims.len() == 2 && (t.name != EMBEDDINGS || tied);
            if shard.is_lead() {
                ranges.push(t.range());
            } else if matrix {
                ranges.push(rows_range(t, shard.rows(t.n_rows())));
            }
        }
        ranges.retain(|r| !r.is_empty());
        ranges.sort_by_key(|r| r.start);
        let mut joined: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match joined.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => joined.push(r),
            }
        }
        Ok(joined)
    }

    /// An empty (zeroed) shard of a file of `file_len` bytes holding `ranges` (from
    /// [`ShardFile::plan`]); [`ShardFile::piece_mut`] fills each.
    pub fn new(shard: Shard, file_len: usize, ranges: &[Range<usize>]) -> ShardFile {
        let mut at = 0;
        let pieces = ranges
            .iter()
            .map(|r| {
                let p = Piece {
                    file: r.clone(),
                    at,
                };
                at += r.len();
                p
            })
            .collect();
        ShardFile {
            shard,
            file_len,
            pieces,
            data: vec![0; at],
        }
    }

    /// Where this share stands among the workers.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// The file ranges held, in order (what [`ShardFile::piece_mut`] fills).
    pub fn ranges(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.pieces.iter().map(|p| p.file.clone())
    }

    /// The bytes of the `i`-th range, to be filled with the file's.
    pub fn piece_mut(&mut self, i: usize) -> &mut [u8] {
        let p = &self.pieces[i];
        &mut self.data[p.at..p.at + p.file.len()]
    }

    /// The bytes held, packed (what the lead's weights index with [`ShardFile::locate`]).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Where `file` (a range of the file) lies in [`ShardFile::data`], if it is held.
    pub fn locate(&self, file: Range<usize>) -> Option<Range<usize>> {
        let i = self.pieces.partition_point(|p| p.file.start <= file.start);
        let p = self.pieces.get(i.checked_sub(1)?)?;
        (file.end <= p.file.end && file.start <= file.end)
            .then(|| p.at + (file.start - p.file.start)..p.at + (file.end - p.file.start))
    }
}

impl FileRows for ShardFile {
    fn file_len(&self) -> usize {
        self.file_len
    }
    fn get(&self, file: Range<usize>) -> Option<&[u8]> {
        self.locate(file).map(|r| &self.data[r])
    }
}

/// The file's bytes of rows `rows` of matrix `t`.
pub(crate) fn rows_range(t: &TensorInfo, rows: Range<usize>) -> Range<usize> {
    let per = t.size / t.n_rows().max(1);
    t.offset + rows.start * per..t.offset + rows.end * per
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forward::split::{RowHelpers, SplitJob, compute_chunk};

    /// Each chunk is owned once and tried by its owner and at most the lead, which holds
    /// every chunk and tries the helpers' from the last each comes to; a helper holds its
    /// own rows only.
    #[test]
    fn shares_own_each_chunk_once_and_the_lead_may_take_any() {
        for of in 2..=4 {
            let shards: Vec<Shard> = (0..of).map(|index| Shard { index, of }).collect();
            let n = shards[0].chunks();
            for j in 0..n {
                let owners = shards
                    .iter()
                    .filter(|s| s.order()[..CHUNKS_PER_SHARE].contains(&j));
                assert_eq!(owners.count(), 1, "chunk {j} of {of} shares");
                let tried: Vec<usize> = shards
                    .iter()
                    .filter(|s| s.order().contains(&j))
                    .map(|s| s.index)
                    .collect();
                assert!(tried.len() <= 2 && tried[0] == 0, "{tried:?}");
            }
            let lead = shards[0];
            assert_eq!(lead.order().len(), n, "the lead tries every chunk");
            assert_eq!(lead.rows(1536), 0..1536);
            for s in &shards[1..] {
                assert_eq!(s.order().len(), CHUNKS_PER_SHARE);
                let rows = s.rows(1536);
                for &j in &s.order() {
                    let r = shard_rows(1536, j, n);
                    assert!(
                        rows.start <= r.start && r.end <= rows.end,
                        "{s:?} chunk {j}"
                    );
                }
                assert!(rows.len() <= 1536 / of + 4, "{s:?} holds {rows:?}");
            }
            if of == 2 {
                assert_eq!(shards[1].rows(1536), 768..1536);
                assert_eq!(shards[0].order(), [0, 1, 2, 3, 7, 6, 5, 4]);
                assert_eq!(shards[1].order(), [4, 5, 6, 7]);
            }
            if of == 3 {
                assert_eq!(&shards[0].order()[4..], [7, 11, 6, 10, 5, 9, 4, 8]);
            }
        }
    }

    #[test]
    fn shares_cover_the_rows_once_in_fours() {
        for total in [8, 64, 192, 576, 1000, 1536, 49_152] {
            for of in 2..=4 {
                let shares: Vec<_> = (0..of).map(|i| shard_rows(total, i, of)).collect();
                assert_eq!(shares[0].start, 0);
                assert_eq!(shares[of - 1].end, total);
                for w in shares.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                    assert_eq!(w[0].len() % 4, 0, "{total} rows, {of} shares");
                }
            }
        }
    }

    /// The plan of every share of the tiny model: the lead holds every tensor whole, each
    /// helper its rows of every matrix and nothing else; a piece read back through `get`.
    #[test]
    fn the_lead_holds_the_file_and_each_helper_its_rows() {
        let bytes = crate::test_gguf::tiny_llama();
        let g = Gguf::parse(&bytes).unwrap();
        for of in 2..=3 {
            let files = shares(&bytes, of);
            for t in &g.tensors {
                let matrix = t.dims.len() == 2;
                let held: Vec<bool> = files.iter().map(|f| f.get(t.range()).is_some()).collect();
                assert!(held[0], "the lead holds {} whole", t.name);
                if !matrix || t.name == EMBEDDINGS {
                    assert!(
                        held[1..].iter().all(|h| !h),
                        "only the lead holds {}",
                        t.name
                    );
                }
                if matrix {
                    for (index, f) in files.iter().enumerate() {
                        let rows = rows_range(t, Shard { index, of }.rows(t.n_rows()));
                        if rows.is_empty() {
                            continue; // the tiny vocabulary's last share of three
                        }
                        assert_eq!(f.get(rows.clone()), Some(&bytes[rows]), "{}", t.name);
                    }
                }
            }
            let total: usize = files.iter().map(|f| f.data().len()).sum();
            assert!(
                total < bytes.len() * 2,
                "{total} bytes for a {} file",
                bytes.len()
            );
            assert_eq!(files[1].get(0..1), None, "a helper holds no header");
        }
    }

    /// `of` shares of `bytes`, each filled from it.
    fn shares(bytes: &[u8], of: usize) -> Vec<ShardFile> {
        let g = Gguf::parse(bytes).unwrap();
        (0..of)
            .map(|index| {
                let shard = Shard { index, of };
                let plan = ShardFile::plan(&g, shard).unwrap();
                let mut f = ShardFile::new(shard, bytes.len(), &plan);
                for (i, r) in plan.iter().enumerate() {
                    f.piece_mut(i).copy_from_slice(&bytes[r.clone()]);
                }
                f
            })
            .collect()
    }

    /// The other shares, in the same thread: each offer's chunks computed at once by the
    /// share that holds them (or, `lose`, never answered by that one).
    struct Shares {
        lead: std::sync::Arc<crate::Model>,
        others: Vec<ShardFile>,
        lose: std::cell::Cell<Option<usize>>,
        job: std::cell::RefCell<Option<(SplitJob, Vec<f32>)>>,
        next: std::cell::Cell<usize>,
        offers: std::cell::Cell<usize>,
        /// A slow lead: the others take every chunk they hold as the job is offered (else
        /// they come when it collects, a slow helper's case: the lead has taken them all).
        helpers_first: std::cell::Cell<bool>,
        taken: std::cell::RefCell<Vec<usize>>,
        early: std::cell::RefCell<Vec<(usize, Option<Vec<f32>>)>>,
    }

    impl Shares {
        /// The other shares' chunks not taken yet, each taken and computed (or, lost,
        /// only taken): `(chunk, result)`, `None` for a lost one.
        fn helpers_take(&self, job: &SplitJob, x: &[f32]) -> Vec<(usize, Option<Vec<f32>>)> {
            let mut done = Vec::new();
            for (k, file) in self.others.iter().enumerate().map(|(k, f)| (k + 1, f)) {
                for c in job.order_for(k) {
                    if self.taken.borrow().contains(&c) {
                        continue;
                    }
                    self.taken.borrow_mut().push(c);
                    if self.lose.get() == Some(k) {
                        done.push((c, None));
                        continue;
                    }
                    let mut out = vec![0f32; job.n * job.rows_of(c).len()];
                    compute_chunk(file, job, c, x, &mut out).unwrap();
                    done.push((c, Some(out)));
                }
            }
            done
        }
    }

    impl RowHelpers for Shares {
        fn model(&self) -> &dyn FileRows {
            self.lead.file_rows()
        }
        fn shards(&self) -> usize {
            self.others.len() + 1
        }
        fn capacity(&self) -> Option<(usize, usize)> {
            Some((3 * 64, 3 * 192)) // three vectors of the tiny model's widest product
        }
        fn offer(&self, job: &SplitJob, x: &[f32]) -> bool {
            assert!(job.n <= 3, "groups of vectors that fit");
            self.offers.set(self.offers.get() + 1);
            self.next.set(0);
            self.taken.borrow_mut().clear();
            *self.job.borrow_mut() = Some((*job, x.to_vec()));
            if self.helpers_first.get() {
                *self.early.borrow_mut() = self.helpers_take(job, x);
            }
            true
        }
        fn claim(&self) -> Option<usize> {
            let (job, _) = self.job.borrow().clone().unwrap();
            let order = job.order_for(0);
            loop {
                let k = self.next.get();
                let c = *order.get(k)?;
                self.next.set(k + 1);
                if !self.taken.borrow().contains(&c) {
                    self.taken.borrow_mut().push(c);
                    return Some(c);
                }
            }
        }
        fn collect(&self, job: &SplitJob, got: &mut dyn FnMut(usize, &[f32])) -> Vec<usize> {
            let (_, x) = self.job.borrow().clone().unwrap();
            let mut lost = Vec::new();
            let early: Vec<_> = self.early.borrow_mut().drain(..).collect();
            for (c, out) in early.into_iter().chain(self.helpers_take(job, &x)) {
                match out {
                    Some(out) => got(c, &out),
                    None => lost.push(c),
                }
            }
            // Every chunk computed by someone.
            for c in (0..job.chunks()).filter(|&c| !job.rows_of(c).is_empty()) {
                assert!(self.taken.borrow().contains(&c), "chunk {c} of {job:?}");
            }
            lost
        }
    }

    /// The lead's forward pass, with the other shares computing their rows, gives the
    /// whole model's logits bit for bit (a prefill, single tokens, a batch), and so does
    /// a pass where a helper takes its chunks and never answers (the lead computes them)
    /// or where no helpers are there at all.
    #[test]
    fn shares_compute_the_whole_models_logits() {
        use crate::forward::split::set_helpers;
        let bytes = crate::test_gguf::tiny_llama();
        let whole = crate::Model::from_bytes(bytes.clone()).unwrap();
        let prompt: Vec<u32> = vec![1, 5, 2, 7, 3, 3, 0];
        let mut cache = whole.new_cache();
        let mut expected = whole.forward(&mut cache, &prompt, 0).unwrap();
        expected.extend(whole.forward(&mut cache, &[4], 0).unwrap());
        let batch_expected = {
            let mut caches = [whole.new_cache(), whole.new_cache()];
            let mut refs: Vec<&mut crate::KvCache> = caches.iter_mut().collect();
            let tokens: [&[u32]; 2] = [&[1, 2, 3, 4, 5], &[6]];
            sampler_core::block_on(whole.forward_batch_pausing(
                &mut refs,
                &tokens,
                &mut crate::NoPause,
            ))
            .unwrap()
        };
        for of in 2..=3 {
            let mut files = shares(&bytes, of);
            let others = files.split_off(1);
            let header = crate::ModelHeader::from_file(&bytes).unwrap();
            let lead = std::sync::Arc::new(
                crate::Model::from_shard(header, files.pop().unwrap()).unwrap(),
            );
            let helpers = std::rc::Rc::new(Shares {
                lead: lead.clone(),
                others,
                lose: Default::default(),
                job: Default::default(),
                next: Default::default(),
                offers: Default::default(),
                helpers_first: Default::default(),
                taken: Default::default(),
                early: Default::default(),
            });
            set_helpers(Some(helpers.clone()));
            let mut cache = lead.new_cache();
            let mut got = lead.forward(&mut cache, &prompt, 0).unwrap();
            // A helper that takes its chunks and never answers: the lead computes them,
            // the same logits.
            helpers.helpers_first.set(true);
            helpers.lose.set(Some(1));
            let mut lost_cache = lead.new_cache();
            let mut lost = lead.forward(&mut lost_cache, &prompt, 0).unwrap();
            lost.extend(lead.forward(&mut lost_cache, &[4], 0).unwrap());
            helpers.lose.set(None);
            helpers.helpers_first.set(false);
            got.extend(lead.forward(&mut cache, &[4], 0).unwrap());
            let same = |a: &[f32], b: &[f32]| {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            };
            assert!(same(&got, &expected), "{of} shares");
            assert!(same(&lost, &expected), "{of} shares, a helper lost");
            let mut caches = [lead.new_cache(), lead.new_cache()];
            let mut refs: Vec<&mut crate::KvCache> = caches.iter_mut().collect();
            let tokens: [&[u32]; 2] = [&[1, 2, 3, 4, 5], &[6]];
            let batch = sampler_core::block_on(lead.forward_batch_pausing(
                &mut refs,
                &tokens,
                &mut crate::NoPause,
            ))
            .unwrap();
            assert!(batch.iter().zip(&batch_expected).all(|(a, b)| same(a, b)));
            assert!(helpers.offers.get() > 0);
            // A slow lead: the others take every chunk they hold first, and it computes
            // the rest. The same logits.
            helpers.helpers_first.set(true);
            let before = helpers.offers.get();
            let mut cache = lead.new_cache();
            let mut slow = lead.forward(&mut cache, &prompt, 0).unwrap();
            slow.extend(lead.forward(&mut cache, &[4], 0).unwrap());
            assert!(same(&slow, &expected), "{of} shares, a slow lead");
            assert!(helpers.offers.get() > before);
            helpers.helpers_first.set(false);
            set_helpers(None);
            // Without the other shares the lead runs alone.
            let mut cache = lead.new_cache();
            let mut alone = lead.forward(&mut cache, &prompt, 0).unwrap();
            alone.extend(lead.forward(&mut cache, &[4], 0).unwrap());
            assert!(same(&alone, &expected), "{of} shares, the lead alone");
        }
    }
}
