//! The thread pool of the CPU forward pass: a rayon pool natively (every core by default,
//! [`set_threads`] to choose), the calling thread alone on wasm32.
//!
//! A product split from outside the pool hands its chunks over to the workers and sleeps
//! until they finish: two thread switches for each of the ~200 products of a token. A
//! caller that runs its whole work through [`run`] (the CLI does) is itself a worker,
//! so the chunks are split in place and the calling thread computes its share.

#[cfg(not(target_arch = "wasm32"))]
static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();

/// Stack of each worker: the whole of a command may run on one ([`run`]).
#[cfg(not(target_arch = "wasm32"))]
const WORKER_STACK: usize = 16 << 20;

#[cfg(not(target_arch = "wasm32"))]
fn build(n: usize) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .stack_size(WORKER_STACK)
        .thread_name(|i| format!("strait-forward-{i}"))
        .build()
        .map_err(|e| format!("cannot start {n} threads for the forward pass: {e}"))
}

#[cfg(not(target_arch = "wasm32"))]
fn pool() -> &'static rayon::ThreadPool {
    POOL.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Without threads the forward pass can still run: one worker.
        build(n)
            .or_else(|_| build(1))
            .expect("a pool of one thread")
    })
}

/// Sets how many threads the forward pass uses (at least 1), once per process before
/// the first forward pass; `Err` with the reason when the pool already exists or cannot
/// start.
pub fn set_threads(n: usize) -> Result<(), String> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let p = build(n.max(1))?;
        POOL.set(p)
            .map_err(|_| "the thread count is set once, before the first forward pass".into())
    }
    #[cfg(target_arch = "wasm32")]
    {
        if n > 1 {
            return Err("threads are not available in wasm32".into());
        }
        Ok(())
    }
}

/// Threads the forward pass runs on.
pub fn threads() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        pool().current_num_threads()
    }
    #[cfg(target_arch = "wasm32")]
    {
        1
    }
}

/// Runs `f` on a worker of the pool and returns what it returns: forward passes inside
/// it split their products without handing them across threads.
pub fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    #[cfg(not(target_arch = "wasm32"))]
    {
        pool().install(f)
    }
    #[cfg(target_arch = "wasm32")]
    {
        f()
    }
}

/// Calls `f(i, chunk)` for each `chunk`-long piece `i` of `data`, on the pool.
pub(crate) fn for_each_chunk<F>(data: &mut [f32], chunk: usize, f: F)
where
    F: Fn(usize, &mut [f32]) + Sync + Send,
{
    let chunk = chunk.max(1);
    #[cfg(not(target_arch = "wasm32"))]
    if data.len() > chunk && threads() > 1 {
        use rayon::prelude::*;
        let split = |data: &mut [f32]| {
            data.par_chunks_mut(chunk)
                .enumerate()
                .for_each(|(i, c)| f(i, c))
        };
        if rayon::current_thread_index().is_some() {
            split(data); // already on a worker (of this pool: the only one we start)
        } else {
            pool().install(|| split(data));
        }
        return;
    }
    for (i, c) in data.chunks_mut(chunk).enumerate() {
        f(i, c);
    }
}

/// Calls `f(i, item)` for every item of `items`, on the pool when there is more than one
/// item and thread (each item is one task: a sequence's attention, say).
pub(crate) fn for_each_mut<T, F>(items: &mut [T], f: F)
where
    T: Send,
    F: Fn(usize, &mut T) + Sync + Send,
{
    #[cfg(not(target_arch = "wasm32"))]
    if items.len() > 1 && threads() > 1 {
        use rayon::prelude::*;
        let split = |items: &mut [T]| {
            items
                .par_iter_mut()
                .with_max_len(1)
                .enumerate()
                .for_each(|(i, t)| f(i, t))
        };
        if rayon::current_thread_index().is_some() {
            split(items);
        } else {
            pool().install(|| split(items));
        }
        return;
    }
    for (i, t) in items.iter_mut().enumerate() {
        f(i, t);
    }
}

/// `f` of every item of `items`, in order, computed on the pool when there is more than
/// one item and thread.
pub fn map<T, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync + Send,
{
    #[cfg(not(target_arch = "wasm32"))]
    if items.len() > 1 && threads() > 1 {
        use rayon::prelude::*;
        let go = || items.par_iter().with_max_len(1).map(&f).collect();
        return if rayon::current_thread_index().is_some() {
            go()
        } else {
            pool().install(go)
        };
    }
    items.iter().map(f).collect()
}
