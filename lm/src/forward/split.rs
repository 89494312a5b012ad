//! One product's rows shared with helpers that hold their own copy of the model file: the
//! page's idle sampling workers, so that one sequence's forward pass uses every core.
//!
//! A product is offered as a [`SplitJob`]: the matrix named by its place in the file, its
//! shape and the batch. Its rows are cut into chunks; the caller and the helpers take
//! chunks one at a time ([`RowHelpers::claim`] on the caller's side), each computes its
//! chunk with the same kernels on its own copy of the weights ([`compute_chunk`]), and the
//! caller gathers the helpers' chunks ([`RowHelpers::collect`]). A row's result does not
//! depend on the chunk or the worker that computed it, so the split product is bit for
//! bit the product computed alone. A helper that never answers costs only time: the
//! caller computes the chunks it did not get.
//!
//! [`set_helpers`] installs the helpers of the calling thread (the page's worker does);
//! with none installed, nothing here runs.

use super::kernels::{Activations, Kernels};
use super::matmul::{WeightData, matmul_with};
use crate::gguf::{BlockQ4_1, BlockQ8_0};
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

/// Chunks a product is cut into at most.
pub const MAX_CHUNKS: usize = 32;

/// One product offered to helpers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitJob {
    /// Where the matrix's blocks start in the model file.
    pub offset: usize,
    /// Their length in bytes.
    pub len: usize,
    /// Their type: 0 for Q4_1, 1 for Q8_0.
    pub quant: u32,
    /// Rows (the product's output width).
    pub rows: usize,
    /// Columns (its input width).
    pub cols: usize,
    /// Activation vectors in the batch.
    pub n: usize,
    /// Activations: 0 for f32, 1 for 8-bit.
    pub act: u32,
    /// The model file's length (a helper checks it holds the same file).
    pub file_len: usize,
}

/// Words in [`SplitJob::to_words`].
pub const JOB_WORDS: usize = 8;

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
        self.rows.div_ceil(self.chunk_rows())
    }

    /// The rows of chunk `c`.
    pub fn rows_of(&self, c: usize) -> Range<usize> {
        let r = self.chunk_rows();
        (c * r).min(self.rows)..((c + 1) * r).min(self.rows)
    }

    /// The job as 32-bit words (for a `SharedArrayBuffer`).
    pub fn to_words(&self) -> [u32; JOB_WORDS] {
        [
            self.offset as u32,
            self.len as u32,
            self.quant,
            self.rows as u32,
            self.cols as u32,
            self.n as u32,
            self.act,
            self.file_len as u32,
        ]
    }

    /// [`SplitJob::to_words`] read back.
    pub fn from_words(w: &[u32; JOB_WORDS]) -> Self {
        SplitJob {
            offset: w[0] as usize,
            len: w[1] as usize,
            quant: w[2],
            rows: w[3] as usize,
            cols: w[4] as usize,
            n: w[5] as usize,
            act: w[6],
            file_len: w[7] as usize,
        }
    }
}

/// What a product's rows can be handed to (the page's idle workers).
pub trait RowHelpers {
    /// The model file (the caller's copy) whose matrices the helpers hold too.
    fn model(&self) -> &[u8];
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

/// The job for a product of `w` that helpers could share: a Q4_1 or Q8_0 matrix inside
/// the model file, enough work to pay for the round trip.
fn job_for(
    model: &[u8],
    w: WeightData<'_>,
    rows: usize,
    cols: usize,
    n: usize,
    act: Activations,
) -> Option<SplitJob> {
    let (quant, data) = match w {
        WeightData::Q4_1(d) => (0, d),
        WeightData::Q8_0(d) => (1, d),
        _ => return None,
    };
    if rows * cols * n < MIN_WORK {
        return None;
    }
    let base = model.as_ptr() as usize;
    let at = (data.as_ptr() as usize).checked_sub(base)?;
    if at + data.len() > model.len() || u32::try_from(model.len()).is_err() {
        return None; // a matrix rewritten at load (Q4_0 as Q4_1), or a file past 4 GiB
    }
    Some(SplitJob {
        offset: at,
        len: data.len(),
        quant,
        rows,
        cols,
        n,
        act: match act {
            Activations::F32 => 0,
            Activations::Q8 => 1,
        },
        file_len: model.len(),
    })
}

/// The rows `rows` of the matrix `data` of type `quant`, as weights for a product.
fn rows_of<'a>(quant: u32, data: &'a [u8], cols: usize, rows: Range<usize>) -> WeightData<'a> {
    let per = |bytes: usize| cols / 32 * bytes;
    match quant {
        0 => WeightData::Q4_1(
            &data[rows.start * per(BlockQ4_1::BYTES)..rows.end * per(BlockQ4_1::BYTES)],
        ),
        _ => WeightData::Q8_0(
            &data[rows.start * per(BlockQ8_0::BYTES)..rows.end * per(BlockQ8_0::BYTES)],
        ),
    }
}

/// Chunk `c` of `job` over `model` (this worker's copy of the file): `out` gets the chunk's
/// `n × rows`, vector by vector. An error where the job does not fit the file.
pub fn compute_chunk(
    model: &[u8],
    job: &SplitJob,
    c: usize,
    x: &[f32],
    out: &mut [f32],
) -> Result<(), String> {
    let rows = job.rows_of(c);
    let per_row = job.cols / 32
        * if job.quant == 0 {
            BlockQ4_1::BYTES
        } else {
            BlockQ8_0::BYTES
        };
    if model.len() != job.file_len
        || !job.cols.is_multiple_of(32)
        || job.len != job.rows * per_row
        || job.offset + job.len > model.len()
        || x.len() != job.n * job.cols
        || out.len() != job.n * rows.len()
        || rows.is_empty()
    {
        return Err(format!(
            "split job {job:?} chunk {c} does not fit this model"
        ));
    }
    let data = &model[job.offset..job.offset + job.len];
    let act = if job.act == 0 {
        Activations::F32
    } else {
        Activations::Q8
    };
    let w = rows_of(job.quant, data, job.cols, rows.clone());
    matmul_with(Kernels::best(), w, rows.len(), job.cols, x, job.n, out, act);
    Ok(())
}

/// Writes a chunk's `n × rows` into the product's `out` (`n × job.rows`).
fn place(job: &SplitJob, c: usize, part: &[f32], out: &mut [f32]) {
    let rows = job.rows_of(c);
    for (t, vals) in part.chunks_exact(rows.len()).enumerate() {
        out[t * job.rows + rows.start..t * job.rows + rows.end].copy_from_slice(vals);
    }
}

/// `out (n × rows) = x (n × cols) · Wᵀ`, with the activations in precision `act`: every
/// product of the forward pass. Shared with the thread's helpers where it has some (the
/// page's idle workers) and it is large enough; otherwise [`matmul_with`] alone.
pub(crate) fn matmul(
    w: WeightData<'_>,
    rows: usize,
    cols: usize,
    x: &[f32],
    n: usize,
    out: &mut [f32],
    act: Activations,
) {
    if !try_split(w, rows, cols, x, n, out, act) {
        matmul_with(Kernels::best(), w, rows, cols, x, n, out, act)
    }
}

/// The product shared with the calling thread's helpers, if it has any and the product is
/// worth it; `false` where the caller computes it alone.
fn try_split(
    w: WeightData<'_>,
    rows: usize,
    cols: usize,
    x: &[f32],
    n: usize,
    out: &mut [f32],
    act: Activations,
) -> bool {
    let Some(h) = helpers() else { return false };
    let model = h.model();
    let Some(job) = job_for(model, w, rows, cols, n, act) else {
        return false;
    };
    if !h.offer(&job, x) {
        return false;
    }
    let mut part = Vec::new();
    let mut local = |c: usize, out: &mut [f32]| {
        part.resize(n * job.rows_of(c).len(), 0.0);
        compute_chunk(model, &job, c, x, &mut part).expect("the caller's own job fits its file");
        place(&job, c, &part, out);
    };
    while let Some(c) = h.claim() {
        local(c, out);
    }
    let lost = h.collect(&job, &mut |c, got| place(&job, c, got, out));
    for c in lost {
        local(c, out);
    }
    true
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
        fn model(&self) -> &[u8] {
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

    fn random_q4_1(rows: usize, cols: usize) -> Vec<u8> {
        let mut seed = 3u64;
        let mut m = vec![0u8; rows * cols / 32 * BlockQ4_1::BYTES];
        for b in m.chunks_exact_mut(BlockQ4_1::BYTES) {
            for byte in b.iter_mut() {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *byte = (seed >> 33) as u8;
            }
            b[..4].copy_from_slice(&[0x00, 0x20, 0x00, 0xa0]); // d = 2^-7, m = −2^-7
        }
        m
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
            let x: Vec<f32> = (0..n * cols)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
                .collect();
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
                    let h = Rc::new(Inline {
                        model: file.clone(),
                        lose,
                        next: Cell::new(0),
                        job: RefCell::new(None),
                        helper_chunks: RefCell::new(Vec::new()),
                        offered: Cell::new(0),
                    });
                    set_helpers(Some(h.clone()));
                    let w = WeightData::Q4_1(&h.model[100..]);
                    let mut split = vec![0f32; n * rows];
                    assert!(try_split(w, rows, cols, &x, n, &mut split, act));
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
        let h = Rc::new(Inline {
            model: file.clone(),
            lose: false,
            next: Cell::new(0),
            job: RefCell::new(None),
            helper_chunks: RefCell::new(Vec::new()),
            offered: Cell::new(0),
        });
        set_helpers(Some(h.clone()));
        let x = vec![1f32; cols];
        let mut out = vec![0f32; rows];
        assert!(!try_split(
            WeightData::Q4_1(&matrix),
            rows,
            cols,
            &x,
            1,
            &mut out,
            Activations::F32
        ));
        let small = &h.model[100..100 + 8 * cols / 32 * BlockQ4_1::BYTES];
        assert!(!try_split(
            WeightData::Q4_1(small),
            8,
            cols,
            &x,
            1,
            &mut out[..8],
            Activations::F32
        ));
        set_helpers(None);
        assert_eq!(h.offered.get(), 0);
    }

    /// A job read back from its words is the job; a helper refuses a job that does not fit
    /// its file.
    #[test]
    fn jobs_round_trip_and_a_foreign_job_is_refused() {
        let job = SplitJob {
            offset: 100,
            len: 1000 * 18 * BlockQ4_1::BYTES,
            quant: 0,
            rows: 1000,
            cols: 576,
            n: 2,
            act: 0,
            file_len: 100 + 1000 * 18 * BlockQ4_1::BYTES,
        };
        assert_eq!(SplitJob::from_words(&job.to_words()), job);
        assert_eq!(job.chunk_rows() % 4, 0);
        let covered: usize = (0..job.chunks()).map(|c| job.rows_of(c).len()).sum();
        assert_eq!(covered, job.rows);
        assert!(job.chunks() <= MAX_CHUNKS);
        let other_file = vec![0u8; job.file_len + 1];
        let x = vec![0f32; 2 * 576];
        let mut out = vec![0f32; 2 * job.rows_of(0).len()];
        assert!(compute_chunk(&other_file, &job, 0, &x, &mut out).is_err());
    }
}
