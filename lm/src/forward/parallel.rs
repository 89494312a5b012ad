//! The thread pool of the CPU forward pass: natively, the caller and the workers of the
//! `task-pool` crate (every core by default, [`set_threads`] to choose); the calling thread
//! alone on wasm32. Everything here is safe code: each task takes its own piece of the
//! output out of a slot of its own.

#[cfg(not(target_arch = "wasm32"))]
use task_pool::Pool;

#[cfg(not(target_arch = "wasm32"))]
static POOL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();

/// Stack of the thread [`run`] runs a whole command on.
#[cfg(not(target_arch = "wasm32"))]
const RUN_STACK: usize = 16 << 20;

#[cfg(not(target_arch = "wasm32"))]
fn pool() -> &'static Pool {
    POOL.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Without threads the forward pass can still run: on the caller alone.
        Pool::new(n)
            .or_else(|_| Pool::new(1))
            .expect("a pool of the caller alone starts no thread")
    })
}

/// Sets how many threads the forward pass uses (at least 1), once per process before
/// the first forward pass; `Err` with the reason when the pool already exists or cannot
/// start.
pub fn set_threads(n: usize) -> Result<(), String> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let once = || "the thread count is set once, before the first forward pass".to_string();
        if POOL.get().is_some() {
            return Err(once());
        }
        // A pool that loses the race to be set is dropped, which stops its workers.
        POOL.set(Pool::new(n.max(1))?).map_err(|_| once())
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
        pool().threads()
    }
    #[cfg(target_arch = "wasm32")]
    {
        1
    }
}

/// Runs `f` on a thread with a large stack (16 MB) and returns what it returns; a panic
/// in `f` is raised again here. The CLI runs each command through it.
pub fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let mut f = Some(f);
        let done = std::thread::scope(|s| {
            let body = || f.take().map(|f| f());
            match std::thread::Builder::new()
                .name("strait-main".into())
                .stack_size(RUN_STACK)
                .spawn_scoped(s, body)
            {
                Ok(t) => t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                Err(_) => None,
            }
        });
        // No thread to be had: on the caller's own stack.
        done.unwrap_or_else(|| f.take().expect("not taken by a thread that did not start")())
    }
    #[cfg(target_arch = "wasm32")]
    {
        f()
    }
}

/// Runs `f(i, piece)` for every piece of `pieces` on the pool, each piece handed to its
/// one task through a slot of its own (an uncontended lock: each index runs once).
#[cfg(not(target_arch = "wasm32"))]
fn on_pool<T: Send, F>(pieces: Vec<T>, f: F)
where
    F: Fn(usize, T) + Sync,
{
    let slots: Vec<std::sync::Mutex<Option<T>>> = pieces
        .into_iter()
        .map(|p| std::sync::Mutex::new(Some(p)))
        .collect();
    pool().run(slots.len(), &|i| {
        let piece = slots[i]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("the pool runs each index once");
        f(i, piece);
    });
}

/// Calls `f(i, chunk)` for each `chunk`-long piece `i` of `data`, on the pool.
pub(crate) fn for_each_chunk<F>(data: &mut [f32], chunk: usize, f: F)
where
    F: Fn(usize, &mut [f32]) + Sync + Send,
{
    let chunk = chunk.max(1);
    #[cfg(not(target_arch = "wasm32"))]
    if data.len() > chunk && threads() > 1 {
        on_pool(data.chunks_mut(chunk).collect(), f);
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
        on_pool(items.iter_mut().collect(), f);
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
    let mut out: Vec<Option<R>> = items.iter().map(|_| None).collect();
    for_each_mut(&mut out, |i, o| *o = Some(f(&items[i])));
    out.into_iter()
        .map(|o| o.expect("for_each_mut fills every item"))
        .collect()
}
