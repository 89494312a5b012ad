//! A product's rows shared with helpers: the page's other sampling workers, so that one
//! sequence's forward pass uses every core.
//!
//! A product is offered as a [`SplitJob`]: the matrices named by their place in the file
//! (one, or those that read the same activations: attention's q, k and v, the
//! feed-forward's gate and up, joined so that helpers wake once for all of them), their
//! shape and the batch. Two ways to share its rows:
//! - **Claimed chunks** (every worker holds the whole file): the rows, one matrix's after
//!   the other's, are cut into chunks; the caller and the helpers take chunks one at a
//!   time ([`RowHelpers::claim`] on the caller's side), each computes its chunk with the
//!   same kernels on its own copy ([`compute_chunk`]), and the caller gathers the helpers'
//!   ([`RowHelpers::collect`]). A helper that never answers costs only time: the caller
//!   computes the chunks it did not get.
//! - **Fixed shares** (`SplitJob::shards` workers, `crate::shard`: the caller, share 0,
//!   holds the whole model, each other worker one share of every matrix's rows): chunk `c`
//!   is chunk `c % per_matrix` of matrix `c / per_matrix`; a helper takes its share's
//!   chunks, the caller its own and then any a helper has not taken ([`Shard::order`]).
//!   Every product is offered, however small, in groups of vectors that fit the helpers'
//!   buffer ([`RowHelpers::capacity`]).
//!
//! Either way a row's result does not depend on the chunk or the worker that computed it,
//! so the split product is bit for bit the product computed alone.
//!
//! [`set_helpers`] installs the helpers of the calling thread (the page's worker does);
//! with none installed, nothing here runs.

use super::kernels::{Activations, Kernels};
use super::matmul::{WeightData, matmul_with};
use super::weights::Matrix;
use crate::gguf::{BlockQ4_1, BlockQ8_0};
use crate::shard::{CHUNKS_PER_SHARE, FileRows, Shard, shard_rows};
use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

/// Below this many multiply-adds a product is not worth a helper's round trip.
pub const MIN_WORK: usize = 1 << 16;

/// Rows in a chunk at least (a multiple of four, for the four-row kernels).
const MIN_CHUNK_ROWS: usize = 32;

/// Multiply-adds in a chunk at least: each chunk costs a claim, a copy through the shared
/// buffer and a wake-up besides its arithmetic, so one sequence's chunks are cut no finer
/// than this (a batch's rows carry several vectors' work and stay at [`MIN_CHUNK_ROWS`]).
const MIN_CHUNK_WORK: usize = 1 << 16;

/// Chunks a product is cut into at most, where helpers claim them.
pub const MAX_CHUNKS: usize = 32;

/// Chunks a job has at most, with fixed shares too (3 matrices of 8 shares).
pub const MAX_JOB_CHUNKS: usize = MAX_PARTS * 8 * CHUNKS_PER_SHARE;

/// Matrices one job joins at most (q, k and v).
pub const MAX_PARTS: usize = 3;

/// One matrix of a [`SplitJob`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobPart {
    /// Where the matrix's blocks start in the model file.
    pub offset: usize,
    /// Their length in bytes.
    pub len: usize,
    /// Their type: 0 for Q4_1, 1 for Q8_0.
    pub quant: u32,
    /// Its rows.
    pub rows: usize,
}

impl JobPart {
    /// Bytes of one of its rows of `cols` weights.
    fn row_bytes(&self, cols: usize) -> usize {
        cols / 32
            * if self.quant == 0 {
                BlockQ4_1::BYTES
            } else {
                BlockQ8_0::BYTES
            }
    }

    /// Its rows `rows` in `model`, as weights for a product of `cols` columns, where
    /// `model` holds them.
    fn rows_in<'a>(
        &self,
        model: &'a dyn FileRows,
        cols: usize,
        rows: Range<usize>,
    ) -> Option<WeightData<'a>> {
        let per = self.row_bytes(cols);
        let data = model.get(self.offset + rows.start * per..self.offset + rows.end * per)?;
        Some(if self.quant == 0 {
            WeightData::Q4_1(data)
        } else {
            WeightData::Q8_0(data)
        })
    }
}

/// One product offered to helpers: one matrix or several over the same activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitJob {
    /// The matrices (the first `count`), their rows one after the other's.
    pub parts: [JobPart; MAX_PARTS],
    /// How many.
    pub count: usize,
    /// Their rows added up (the product's output width).
    pub rows: usize,
    /// Columns (its input width).
    pub cols: usize,
    /// Activation vectors in the batch.
    pub n: usize,
    /// Activations: 0 for f32, 1 for 8-bit.
    pub act: u32,
    /// The model file's length (a helper checks it holds the same file).
    pub file_len: usize,
    /// 0: chunks claimed by whoever comes; otherwise the workers holding one share each of
    /// every matrix's rows (`crate::shard`): each matrix is cut into `shards ×
    /// CHUNKS_PER_SHARE` chunks, its chunks after the previous matrix's.
    pub shards: usize,
}

/// Words in [`SplitJob::to_words`].
pub const JOB_WORDS: usize = 6 + 4 * MAX_PARTS;

impl SplitJob {
    /// Rows per chunk: the rows over [`MAX_CHUNKS`], at least [`MIN_CHUNK_ROWS`] and
    /// [`MIN_CHUNK_WORK`] multiply-adds.
    pub fn chunk_rows(&self) -> usize {
        let by_work = MIN_CHUNK_WORK.div_ceil((self.cols * self.n).max(1));
        let per = self
            .rows
            .div_ceil(MAX_CHUNKS)
            .max(MIN_CHUNK_ROWS)
            .max(by_work);
        per.div_ceil(4) * 4
    }

    /// How many chunks.
    pub fn chunks(&self) -> usize {
        if self.shards > 0 {
            return self.count.min(MAX_PARTS) * self.per_matrix();
        }
        self.rows.div_ceil(self.chunk_rows())
    }

    /// With fixed shares, the chunks of each matrix.
    fn per_matrix(&self) -> usize {
        self.shards * CHUNKS_PER_SHARE
    }

    /// The rows of chunk `c` (of all the matrices' rows, one after the other's); with
    /// fixed shares, chunk `c % per_matrix` of matrix `c / per_matrix` (possibly empty).
    pub fn rows_of(&self, c: usize) -> Range<usize> {
        let per = self.per_matrix();
        if let Some(i) = c.checked_div(per) {
            let Some(part) = self.parts[..self.count.min(MAX_PARTS)].get(i) else {
                return self.rows..self.rows;
            };
            let start: usize = self.parts[..i].iter().map(|p| p.rows).sum();
            let r = shard_rows(part.rows, c % per, per);
            return start + r.start..start + r.end;
        }
        let r = self.chunk_rows();
        (c * r).min(self.rows)..((c + 1) * r).min(self.rows)
    }

    /// With fixed shares, the chunks share `index` computes, in the order it tries them
    /// ([`Shard::order`], matrix by matrix at each step), empty ones left out; none
    /// otherwise.
    pub fn order_for(&self, index: usize) -> Vec<usize> {
        if self.shards == 0 || index >= self.shards {
            return Vec::new();
        }
        let per = self.per_matrix();
        let order = Shard {
            index,
            of: self.shards,
        }
        .order();
        order
            .iter()
            .flat_map(|&j| (0..self.count.min(MAX_PARTS)).map(move |i| i * per + j))
            .filter(|&c| !self.rows_of(c).is_empty())
            .collect()
    }

    /// The matrices `rows` (of all the rows) falls in: for each, its index, its rows
    /// there and where they start within `rows`.
    fn pieces(&self, rows: Range<usize>) -> impl Iterator<Item = (usize, Range<usize>, usize)> {
        let mut first = 0;
        self.parts[..self.count.min(MAX_PARTS)]
            .iter()
            .enumerate()
            .filter_map(move |(i, p)| {
                let (start, end) = (first, first + p.rows);
                first = end;
                let (a, b) = (rows.start.max(start), rows.end.min(end));
                (a < b).then(|| (i, a - start..b - start, a - rows.start))
            })
    }

    /// The job as 32-bit words (for a `SharedArrayBuffer`).
    pub fn to_words(&self) -> [u32; JOB_WORDS] {
        let mut w = [0u32; JOB_WORDS];
        w[..6].copy_from_slice(&[
            self.count as u32,
            self.cols as u32,
            self.n as u32,
            self.act,
            self.file_len as u32,
            self.shards as u32,
        ]);
        for (k, p) in self.parts.iter().enumerate() {
            w[6 + 4 * k..10 + 4 * k].copy_from_slice(&[
                p.offset as u32,
                p.len as u32,
                p.quant,
                p.rows as u32,
            ]);
        }
        w
    }

    /// [`SplitJob::to_words`] read back.
    pub fn from_words(w: &[u32; JOB_WORDS]) -> Self {
        let parts: [JobPart; MAX_PARTS] = std::array::from_fn(|k| JobPart {
            offset: w[6 + 4 * k] as usize,
            len: w[7 + 4 * k] as usize,
            quant: w[8 + 4 * k],
            rows: w[9 + 4 * k] as usize,
        });
        let count = (w[0] as usize).min(MAX_PARTS);
        SplitJob {
            rows: parts[..count].iter().map(|p| p.rows).sum(),
            parts,
            count,
            cols: w[1] as usize,
            n: w[2] as usize,
            act: w[3],
            file_len: w[4] as usize,
            shards: (w[5] as usize).min(MAX_JOB_CHUNKS / MAX_PARTS / CHUNKS_PER_SHARE),
        }
    }
}

/// What a product's rows can be handed to (the page's idle workers).
pub trait RowHelpers {
    /// The caller's model file (whole, or its share) whose matrices the helpers hold too.
    fn model(&self) -> &dyn FileRows;
    /// 0 where the helpers claim chunks of rows they all hold; otherwise how many workers
    /// (the caller being share 0) hold one share each of every matrix's rows.
    fn shards(&self) -> usize {
        0
    }
    /// Most activation and result floats one job carries, if limited (fixed shares then
    /// offer a large product in groups of vectors).
    fn capacity(&self) -> Option<(usize, usize)> {
        None
    }
    /// Offers `job` with its activations `x` (`n × cols`): whether helpers may take
    /// chunks of it (else the caller computes it alone and nothing else is called).
    fn offer(&self, job: &SplitJob, x: &[f32]) -> bool;
    /// The next chunk for the caller itself, or `None` once every chunk is taken.
    fn claim(&self) -> Option<usize>;
    /// Waits for the chunks the helpers took and hands each to `got` (`n × rows` of the
    /// chunk, vector by vector); returns the chunks it could not get, for the caller.
    fn collect(&self, job: &SplitJob, got: &mut dyn FnMut(usize, &[f32])) -> Vec<usize>;
}

thread_local! {
    static HELPERS: RefCell<Option<Rc<dyn RowHelpers>>> = const { RefCell::new(None) };
}

/// Installs (or with `None` removes) the calling thread's helpers.
pub fn set_helpers(helpers: Option<Rc<dyn RowHelpers>>) {
    HELPERS.with(|h| *h.borrow_mut() = helpers);
}

/// The calling thread's helpers.
fn helpers() -> Option<Rc<dyn RowHelpers>> {
    HELPERS.with(|h| h.borrow().clone())
}

/// One matrix of a product over shared activations, and where its `n × rows` go.
pub(crate) struct Product<'a, 'o> {
    /// Its weights.
    pub w: WeightData<'a>,
    /// Its rows.
    pub rows: usize,
    /// The whole matrix's bytes in the file, where a helper can find them.
    pub file: Option<Range<usize>>,
    /// Its result, vector by vector.
    pub out: &'o mut [f32],
}

impl<'a, 'o> Product<'a, 'o> {
    /// `out (n × rows) = x · mᵀ` as one of a set, `m` read from `bytes` (the model's).
    pub fn of(m: &'a Matrix, bytes: &'a [u8], out: &'o mut [f32]) -> Self {
        Product {
            w: m.data(bytes),
            rows: m.rows(),
            file: m.in_file(),
            out,
        }
    }
}

/// The job for products of `set` that helpers could share: Q4_1 or Q8_0 matrices inside
/// the model file, with enough work to pay for the round trip where helpers claim chunks
/// (a share's holder computes its rows of every product).
fn job_for(
    file_len: usize,
    set: &[Product<'_, '_>],
    (cols, n): (usize, usize),
    act: Activations,
    shards: usize,
) -> Option<SplitJob> {
    let rows: usize = set.iter().map(|p| p.rows).sum();
    if set.is_empty() || set.len() > MAX_PARTS || (shards == 0 && rows * cols * n < MIN_WORK) {
        return None;
    }
    if u32::try_from(file_len).is_err() {
        return None; // a file past 4 GiB
    }
    let mut parts = [JobPart::default(); MAX_PARTS];
    for (slot, p) in parts.iter_mut().zip(set) {
        let quant = match p.w {
            WeightData::Q4_1(_) => 0,
            WeightData::Q8_0(_) => 1,
            _ => return None,
        };
        // `None`: a matrix rewritten at load (Q4_0 as Q4_1), which helpers do not hold.
        let file = p.file.clone().filter(|f| f.end <= file_len)?;
        *slot = JobPart {
            offset: file.start,
            len: file.len(),
            quant,
            rows: p.rows,
        };
    }
    Some(SplitJob {
        parts,
        count: set.len(),
        rows,
        cols,
        n,
        act: match act {
            Activations::F32 => 0,
            Activations::Q8 => 1,
        },
        file_len,
        shards,
    })
}

/// Chunk `c` of `job` over `model` (this worker's copy of the file, or its share): `out`
/// gets the chunk's `n × rows`, vector by vector. An error where the job does not fit the
/// file or the chunk's rows are not held here.
pub fn compute_chunk(
    model: &dyn FileRows,
    job: &SplitJob,
    c: usize,
    x: &[f32],
    out: &mut [f32],
) -> Result<(), String> {
    let rows = job.rows_of(c);
    let parts = &job.parts[..job.count.min(MAX_PARTS)];
    let file_len = model.file_len();
    let fits = |p: &JobPart| {
        p.quant <= 1 && p.len == p.rows * p.row_bytes(job.cols) && p.offset + p.len <= file_len
    };
    if file_len != job.file_len
        || !job.cols.is_multiple_of(32)
        || parts.is_empty()
        || !parts.iter().all(fits)
        || x.len() != job.n * job.cols
        || out.len() != job.n * rows.len()
        || rows.is_empty()
    {
        return Err(format!(
            "split job {job:?} chunk {c} does not fit this model"
        ));
    }
    let act = if job.act == 0 {
        Activations::F32
    } else {
        Activations::Q8
    };
    let mut pieces = job.pieces(rows.clone()).peekable();
    let mut tmp = Vec::new();
    while let Some((i, part_rows, at)) = pieces.next() {
        let w = parts[i]
            .rows_in(model, job.cols, part_rows.clone())
            .ok_or_else(|| format!("chunk {c} of split job {job:?}: rows not held here"))?;
        let len = part_rows.len();
        if at == 0 && pieces.peek().is_none() {
            // The chunk within one matrix: straight into `out`.
            matmul_with(Kernels::best(), w, len, job.cols, x, job.n, out, act);
            break;
        }
        tmp.resize(job.n * len, 0.0);
        matmul_with(Kernels::best(), w, len, job.cols, x, job.n, &mut tmp, act);
        for (t, vals) in tmp.chunks_exact(len).enumerate() {
            out[t * rows.len() + at..][..len].copy_from_slice(vals);
        }
    }
    Ok(())
}

/// Writes a chunk's `n × rows` into the results of the matrices of `set` it covers.
fn place(job: &SplitJob, c: usize, part: &[f32], set: &mut [Product<'_, '_>]) {
    let rows = job.rows_of(c);
    for (i, part_rows, at) in job.pieces(rows.clone()) {
        let (p, len) = (&mut set[i], part_rows.len());
        for t in 0..job.n {
            p.out[t * p.rows + part_rows.start..][..len]
                .copy_from_slice(&part[t * rows.len() + at..][..len]);
        }
    }
}

/// `out (n × rows) = x (n × cols) · Wᵀ`, with the activations in precision `act`: every
/// product of the forward pass. Shared with the thread's helpers where it has some (the
/// page's idle workers, or the holders of a model's shares) and they take it; otherwise
/// [`matmul_with`] alone.
pub(crate) fn matmul(p: Product<'_, '_>, cols: usize, x: &[f32], n: usize, act: Activations) {
    matmul_set(&mut [p], cols, x, n, act)
}

/// [`matmul`] of several matrices over the same activations `x`, offered to the helpers
/// as one job (one wake-up, one gathering).
pub(crate) fn matmul_set(
    set: &mut [Product<'_, '_>],
    cols: usize,
    x: &[f32],
    n: usize,
    act: Activations,
) {
    if !try_split(set, cols, x, n, act) {
        for p in set {
            matmul_with(Kernels::best(), p.w, p.rows, cols, x, n, p.out, act)
        }
    }
}

/// The products shared with the calling thread's helpers, if it has any and they take
/// them; `false` where the caller computes them alone (also after a group of vectors the
/// helpers refused or one that could not be computed: every group again, alone).
fn try_split(
    set: &mut [Product<'_, '_>],
    cols: usize,
    x: &[f32],
    n: usize,
    act: Activations,
) -> bool {
    let Some(h) = helpers() else {
        return false;
    };
    let model = h.model();
    let shards = h.shards();
    let Some(job) = job_for(model.file_len(), set, (cols, n), act, shards) else {
        return false;
    };
    // Fixed shares offer every product, in groups of vectors that fit the buffer.
    let per = match (shards, h.capacity()) {
        (1.., Some((xs, outs))) => (xs / cols.max(1)).min(outs / job.rows.max(1)),
        _ => n,
    };
    if per == 0 {
        return false;
    }
    if per >= n {
        // One group: the products as they are (no per-product allocation).
        return offer_group(&*h, model, &job, x, set);
    }
    let mut v0 = 0;
    while v0 < n {
        let v1 = (v0 + per).min(n);
        let group = SplitJob { n: v1 - v0, ..job };
        let mut sub: Vec<Product<'_, '_>> = set
            .iter_mut()
            .map(|p| Product {
                w: p.w,
                rows: p.rows,
                file: p.file.clone(),
                out: &mut p.out[v0 * p.rows..v1 * p.rows],
            })
            .collect();
        let xg = &x[v0 * cols..v1 * cols];
        if !offer_group(&*h, model, &group, xg, &mut sub) {
            return false;
        }
        v0 = v1;
    }
    true
}

/// Offers `job` over `x` and runs it into `set`: whether it was computed (`false` where
/// the helpers refused it, or where a chunk could not be computed here: the caller then
/// computes the products alone).
fn offer_group(
    h: &dyn RowHelpers,
    model: &dyn FileRows,
    job: &SplitJob,
    x: &[f32],
    set: &mut [Product<'_, '_>],
) -> bool {
    if !h.offer(job, x) {
        return false;
    }
    run_offered(h, model, job, x, set)
}

/// Computes the caller's chunks of the offered `job` and gathers the helpers'; computes
/// itself the chunks a helper lost. Whether every chunk was computed (`false` where one
/// could not be here; the caller then computes the products alone).
fn run_offered(
    h: &dyn RowHelpers,
    model: &dyn FileRows,
    job: &SplitJob,
    x: &[f32],
    set: &mut [Product<'_, '_>],
) -> bool {
    let mut part = Vec::new();
    let mut local = |c: usize, set: &mut [Product<'_, '_>]| {
        part.resize(job.n * job.rows_of(c).len(), 0.0);
        let ok = compute_chunk(model, job, c, x, &mut part).is_ok();
        if ok {
            place(job, c, &part, set);
        }
        ok
    };
    let mut ok = true;
    while let Some(c) = h.claim() {
        ok &= local(c, set);
    }
    for c in h.collect(job, &mut |c, got| place(job, c, got, set)) {
        ok &= local(c, set);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    /// Helpers in the same thread: each offer is taken by a "helper" that claims every
    /// other chunk and computes it at once (or, `lose`, claims them and never answers).
    struct Inline {
        model: Vec<u8>,
        lose: bool,
        next: Cell<usize>,
        job: RefCell<Option<(SplitJob, Vec<f32>)>>,
        helper_chunks: RefCell<Vec<usize>>,
        offered: Cell<usize>,
    }

    impl RowHelpers for Inline {
        fn model(&self) -> &dyn FileRows {
            &self.model
        }
        fn offer(&self, job: &SplitJob, x: &[f32]) -> bool {
            self.offered.set(self.offered.get() + 1);
            self.next.set(0);
            self.helper_chunks.borrow_mut().clear();
            *self.job.borrow_mut() = Some((*job, x.to_vec()));
            true
        }
        fn claim(&self) -> Option<usize> {
            let (job, _) = self.job.borrow().clone().unwrap();
            loop {
                let c = self.next.get();
                if c >= job.chunks() {
                    return None;
                }
                self.next.set(c + 1);
                if c % 2 == 1 {
                    self.helper_chunks.borrow_mut().push(c); // the helper's
                } else {
                    return Some(c);
                }
            }
        }
        fn collect(&self, job: &SplitJob, got: &mut dyn FnMut(usize, &[f32])) -> Vec<usize> {
            let (_, x) = self.job.borrow().clone().unwrap();
            let chunks = self.helper_chunks.borrow().clone();
            if self.lose {
                return chunks;
            }
            for c in chunks {
                let mut out = vec![0f32; job.n * job.rows_of(c).len()];
                compute_chunk(&self.model, job, c, &x, &mut out).unwrap();
                got(c, &out);
            }
            Vec::new()
        }
    }

    /// Random blocks of `bytes` each (Q4_1: 20, Q8_0: 34), each with a small f16 scale
    /// (and for Q4_1 a minimum).
    fn random_blocks(rows: usize, cols: usize, bytes: usize, seed: u64) -> Vec<u8> {
        let mut seed = seed;
        let mut m = vec![0u8; rows * cols / 32 * bytes];
        for b in m.chunks_exact_mut(bytes) {
            for byte in b.iter_mut() {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *byte = (seed >> 33) as u8;
            }
            b[..2].copy_from_slice(&[0x00, 0x20]); // d = 2^-7
            if bytes == BlockQ4_1::BYTES {
                b[2..4].copy_from_slice(&[0x00, 0xa0]); // m = −2^-7
            }
        }
        m
    }

    fn random_q4_1(rows: usize, cols: usize) -> Vec<u8> {
        random_blocks(rows, cols, BlockQ4_1::BYTES, 3)
    }

    fn helpers_over(model: Vec<u8>, lose: bool) -> Rc<Inline> {
        Rc::new(Inline {
            model,
            lose,
            next: Cell::new(0),
            job: RefCell::new(None),
            helper_chunks: RefCell::new(Vec::new()),
            offered: Cell::new(0),
        })
    }

    /// A product of a whole matrix lying at `at` in the file.
    fn whole<'a, 'o>(
        w: WeightData<'a>,
        rows: usize,
        at: usize,
        out: &'o mut [f32],
    ) -> Product<'a, 'o> {
        let len = match w {
            WeightData::Q4_1(d) | WeightData::Q8_0(d) => d.len(),
            _ => 0,
        };
        Product {
            w,
            rows,
            file: Some(at..at + len),
            out,
        }
    }

    fn x_of(n: usize, cols: usize) -> Vec<f32> {
        (0..n * cols)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
            .collect()
    }

    /// The split product is the product computed alone, bit for bit, with the helpers'
    /// chunks gathered or (a lost helper) computed by the caller; small products and
    /// matrices outside the file are not offered.
    #[test]
    fn a_split_product_is_the_product_alone() {
        let (rows, cols) = (1000, 576);
        let matrix = random_q4_1(rows, cols);
        let mut file = vec![7u8; 100];
        file.extend_from_slice(&matrix);
        for n in [1, 3, 9] {
            let x = x_of(n, cols);
            for act in [Activations::F32, Activations::Q8] {
                let mut alone = vec![0f32; n * rows];
                matmul_with(
                    Kernels::best(),
                    WeightData::Q4_1(&matrix),
                    rows,
                    cols,
                    &x,
                    n,
                    &mut alone,
                    act,
                );
                for lose in [false, true] {
                    let h = helpers_over(file.clone(), lose);
                    set_helpers(Some(h.clone()));
                    let w = WeightData::Q4_1(&h.model[100..]);
                    let mut split = vec![0f32; n * rows];
                    let mut set = [whole(w, rows, 100, &mut split)];
                    assert!(try_split(&mut set, cols, &x, n, act));
                    set_helpers(None);
                    assert!(h.helper_chunks.borrow().len() >= 2, "the helper took part");
                    let same = alone
                        .iter()
                        .zip(&split)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "n {n} {act:?} lose {lose}");
                }
            }
        }
        // Not offered: a matrix that is not in the file, a product too small.
        let h = helpers_over(file.clone(), false);
        set_helpers(Some(h.clone()));
        let x = vec![1f32; cols];
        let mut out = vec![0f32; rows];
        let mut outside = [Product {
            file: None,
            ..whole(WeightData::Q4_1(&matrix), rows, 0, &mut out)
        }];
        assert!(!try_split(&mut outside, cols, &x, 1, Activations::F32));
        let small = &h.model[100..100 + 8 * cols / 32 * BlockQ4_1::BYTES];
        let mut small = [whole(WeightData::Q4_1(small), 8, 100, &mut out[..8])];
        assert!(!try_split(&mut small, cols, &x, 1, Activations::F32));
        set_helpers(None);
        assert_eq!(h.offered.get(), 0);
    }

    /// Matrices joined in one job (as q, k and v are), of two types and sizes whose chunks
    /// straddle them: each result bit for bit its product alone, in one offer.
    #[test]
    fn joined_matrices_are_each_their_product_alone() {
        let cols = 576;
        let shapes = [
            (100, BlockQ4_1::BYTES),
            (36, BlockQ8_0::BYTES),
            (300, BlockQ4_1::BYTES),
        ];
        let mut file = vec![7u8; 64];
        let mut at = Vec::new();
        for (k, &(rows, bytes)) in shapes.iter().enumerate() {
            let m = random_blocks(rows, cols, bytes, 5 + k as u64);
            at.push(file.len()..file.len() + m.len());
            file.extend_from_slice(&m);
        }
        fn weights<'m>(model: &'m [u8], at: &Range<usize>, bytes: usize) -> WeightData<'m> {
            let data = &model[at.clone()];
            if bytes == BlockQ4_1::BYTES {
                WeightData::Q4_1(data)
            } else {
                WeightData::Q8_0(data)
            }
        }
        for n in [1, 2] {
            let x = x_of(n, cols);
            let alone: Vec<Vec<f32>> = (0..3)
                .map(|k| {
                    let mut out = vec![0f32; n * shapes[k].0];
                    let w = weights(&file, &at[k], shapes[k].1);
                    matmul_with(
                        Kernels::best(),
                        w,
                        shapes[k].0,
                        cols,
                        &x,
                        n,
                        &mut out,
                        Activations::F32,
                    );
                    out
                })
                .collect();
            for lose in [false, true] {
                let h = helpers_over(file.clone(), lose);
                set_helpers(Some(h.clone()));
                let mut outs: Vec<Vec<f32>> = shapes.iter().map(|s| vec![0f32; n * s.0]).collect();
                let mut set: Vec<Product> = outs
                    .iter_mut()
                    .enumerate()
                    .map(|(k, out)| {
                        let w = weights(&h.model, &at[k], shapes[k].1);
                        whole(w, shapes[k].0, at[k].start, out)
                    })
                    .collect();
                assert!(try_split(&mut set, cols, &x, n, Activations::F32));
                set_helpers(None);
                let job = h.job.borrow().clone().unwrap().0;
                assert_eq!((job.count, job.rows), (3, 436));
                assert!(
                    (0..job.chunks()).any(|c| job.pieces(job.rows_of(c)).count() > 1),
                    "a chunk straddles two matrices"
                );
                assert_eq!(h.offered.get(), 1, "one offer for the three");
                assert!(!h.helper_chunks.borrow().is_empty(), "the helper took part");
                for k in 0..3 {
                    let same = alone[k]
                        .iter()
                        .zip(&outs[k])
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "matrix {k}, n {n}, lose {lose}");
                }
            }
        }
    }

    /// A job read back from its words is the job; its chunks cover its rows; a helper
    /// refuses a job that does not fit its file.
    #[test]
    fn jobs_round_trip_and_a_foreign_job_is_refused() {
        let part = |offset, rows, quant: u32, bytes: usize| JobPart {
            offset,
            len: rows * 18 * bytes,
            quant,
            rows,
        };
        let (a, b) = (
            part(100, 1000, 0, BlockQ4_1::BYTES),
            part(100 + 1000 * 18 * 20, 64, 1, 34),
        );
        let job = SplitJob {
            parts: [a, b, JobPart::default()],
            count: 2,
            rows: 1064,
            cols: 576,
            n: 2,
            act: 0,
            file_len: b.offset + b.len,
            shards: 0,
        };
        assert_eq!(SplitJob::from_words(&job.to_words()), job);
        assert_eq!(job.chunk_rows() % 4, 0);
        let covered: usize = (0..job.chunks()).map(|c| job.rows_of(c).len()).sum();
        assert_eq!(covered, job.rows);
        assert!(job.chunks() <= MAX_CHUNKS);
        let by_part: Vec<usize> = (0..2)
            .map(|i| {
                (0..job.chunks())
                    .flat_map(|c| job.pieces(job.rows_of(c)))
                    .filter(|p| p.0 == i)
                    .map(|p| p.1.len())
                    .sum()
            })
            .collect();
        assert_eq!(by_part, [1000, 64]);
        let other_file = vec![0u8; job.file_len + 1];
        let x = vec![0f32; 2 * 576];
        let mut out = vec![0f32; 2 * job.rows_of(0).len()];
        assert!(compute_chunk(&other_file, &job, 0, &x, &mut out).is_err());
        // A part past the file, or of an unknown type, is refused too.
        let file = vec![0u8; job.file_len];
        assert!(compute_chunk(&file, &job, 0, &x, &mut out).is_ok());
        for bad in [
            JobPart { quant: 2, ..b },
            JobPart {
                offset: b.offset + 1,
                ..b
            },
        ] {
            let job = SplitJob {
                parts: [a, bad, JobPart::default()],
                ..job
            };
            assert!(compute_chunk(&file, &job, 0, &x, &mut out).is_err());
        }
    }
}
