//! Whether a model file is likely to fit in a browser tab, asked before the page reads it.
//!
//! Each sampling worker keeps the file's bytes in its WebAssembly memory (a 32-bit address
//! space: 4 GiB at most per instance, and browsers often grant less), and the KV cache and
//! activations come on top; the page's thread reads only the header while workers run the
//! model, and holds a copy of its own where it runs the model itself (WebGPU, no worker).

/// Largest file the page loads without asking: a third of the 4 GiB address space leaves
/// room for the copy held while it is read, the KV cache and f32 expansions.
pub const PAGE_COMFORT_BYTES: u64 = 1_400_000_000;

/// A warning for a file of `file_bytes` on a device reporting `device_memory_gib`
/// (`navigator.deviceMemory`, Chromium only, rounded down and capped at 8), or `None`
/// when it should fit: the page's workers hold about twice the file between them (1.75
/// times where two split it by rows, [`worker_pool_plan`]).
pub fn page_load_warning(file_bytes: u64, device_memory_gib: Option<f64>) -> Option<String> {
    let gb = |b: f64| format!("{:.1} GB", b / 1e9);
    let size = file_bytes as f64;
    if file_bytes > PAGE_COMFORT_BYTES {
        return Some(format!(
            "This file is {}. The page keeps the model in WebAssembly memory (4 GB at most, \
             often less), and its sampling workers hold it again: loading will likely \
             fail or make the tab run out of memory. Files up to {} load reliably.",
            gb(size),
            gb(PAGE_COMFORT_BYTES as f64)
        ));
    }
    let device = device_memory_gib.filter(|m| m.is_finite() && *m > 0.0)? * 1024f64.powi(3);
    (2.0 * size > device / 2.0).then(|| {
        format!(
            "This file is {}; the page's sampling workers hold about twice that between them \
             (more with a whole copy each), more than half of the {} of memory this device \
             reports. The tab may run out of memory.",
            gb(size),
            gb(device)
        )
    })
}

/// Most sampling workers the page starts: compare mode runs at most four samplers, so a
/// fifth worker would have nothing of its own to do.
pub const MAX_POOL: usize = 4;

/// Most workers `?workers=N` may ask for.
pub const MAX_REQUESTED_POOL: usize = 8;

/// How many sampling workers the page starts, and why that many.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolPlan {
    /// Workers to start (at least one) where each holds a whole copy of the model.
    pub workers: usize,
    /// What decided the number, for the page's worker line (e.g. "4 cores").
    pub why: String,
    /// How many workers split the model by rows between them (`crate::shard`: the lead
    /// holds it whole, each other worker its share of every matrix), and why: the page's default
    /// wherever two or more workers would run and that fits (the page falls back to
    /// `workers` whole copies where the model's types cannot be split, or with
    /// `?pool=copies`). `None` where one worker would run, or where even that would not fit.
    pub shares: Option<(usize, String)>,
}

/// What `workers` splitting a model of `file_bytes` by rows hold together, about: the
/// lead a whole copy with its KV caches and scratch (as each worker of whole copies), each
/// other worker its share of the matrices.
fn shares_bytes(file_bytes: u64, workers: usize) -> f64 {
    let helpers = workers.saturating_sub(1) as f64 / workers.max(1) as f64;
    file_bytes as f64 * (1.25 + helpers)
}

/// The pool for a model file of `file_bytes` on a device with `cores` logical cores
/// (`navigator.hardwareConcurrency`) and `device_memory_gib` (`navigator.deviceMemory`,
/// where reported): one worker per core up to [`MAX_POOL`], each holding its own copy of
/// the model, so the copies stay within half the reported memory and within 2 GB where
/// none is reported (the page's thread holds none while its workers run the model: it
/// reads the file's header alone), and, where two or more would run, the same workers
/// splitting one copy between them ([`PoolPlan::shares`], what the page starts where it
/// can). `requested` (`?workers=N`) overrides the core count (1 to
/// [`MAX_REQUESTED_POOL`]) but not the memory cap.
pub fn worker_pool_plan(
    file_bytes: u64,
    cores: Option<usize>,
    device_memory_gib: Option<f64>,
    requested: Option<usize>,
) -> PoolPlan {
    let (wanted, mut why) = match requested {
        Some(n) => {
            let n = n.clamp(1, MAX_REQUESTED_POOL);
            (n, format!("?workers={n}"))
        }
        None => match cores.filter(|&c| c > 0) {
            Some(c) if c > MAX_POOL => (MAX_POOL, format!("{c} cores, at most {MAX_POOL}")),
            Some(c) => (c, format!("{c} core{}", if c == 1 { "" } else { "s" })),
            None => (1, "the browser does not say how many cores it has".into()),
        },
    };
    // Bytes the copies may take: half the device's memory.
    let device = device_memory_gib.filter(|m| m.is_finite() && *m > 0.0);
    let budget = match device {
        Some(gib) => gib * 1024f64.powi(3) / 2.0,
        None => 2e9,
    };
    // Each worker: the file's bytes plus about a quarter more for KV caches and scratch.
    let per_worker = (file_bytes as f64 * 1.25).max(1.0);
    let fits = (budget / per_worker).floor().max(1.0) as usize;
    let shares = (wanted >= 2 && shares_bytes(file_bytes, wanted) <= budget).then(|| {
        if fits >= wanted {
            return (wanted, why.clone());
        }
        let room = match device {
            Some(gib) => format!("half of the {gib} GB this device reports"),
            None => "2 GB".into(),
        };
        let why = format!("{why}; the model split between them fits in {room}");
        (wanted, why)
    });
    if fits < wanted {
        why = match device {
            Some(gib) => format!("{why}; {fits} fit in half of the {gib} GB this device reports"),
            None => format!("{why}; {fits} copies of the model fit in 2 GB"),
        };
        return PoolPlan {
            workers: fits,
            why,
            shares,
        };
    }
    PoolPlan {
        workers: wanted,
        why,
        shares,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_follows_the_cores_and_the_memory() {
        const SMOL: u64 = 98_362_432;
        let plan = |cores, mem, req| worker_pool_plan(SMOL, cores, mem, req);
        assert_eq!(plan(Some(2), Some(8.0), None).workers, 2);
        assert_eq!(plan(Some(2), Some(8.0), None).why, "2 cores");
        assert_eq!(plan(Some(1), None, None).workers, 1);
        let many = plan(Some(16), Some(8.0), None);
        assert_eq!(
            (many.workers, many.why.as_str()),
            (4, "16 cores, at most 4")
        );
        assert_eq!(plan(None, None, None).workers, 1);
        assert_eq!(plan(Some(0), None, None).workers, 1);
        // ?workers=N wins over the cores, within 1..=8.
        assert_eq!(plan(Some(2), Some(8.0), Some(3)).workers, 3);
        assert_eq!(plan(Some(2), Some(8.0), Some(0)).workers, 1);
        assert_eq!(plan(Some(2), Some(8.0), Some(99)).workers, 8);
        // A 1 GB file on 4 GiB: half is 2.1 GB, which fits one worker (1.25 GB each).
        let big = worker_pool_plan(1_000_000_000, Some(8), Some(4.0), None);
        assert_eq!(big.workers, 1, "{big:?}");
        assert!(big.why.contains("4 GB"), "{}", big.why);
        // Without a memory report, 2 GB in all: room for 2 workers of a 600 MB file.
        let mid = worker_pool_plan(600_000_000, Some(8), None, Some(8));
        assert_eq!(mid.workers, 2, "{mid:?}");
        assert!(mid.why.contains("2 GB"), "{}", mid.why);
        // A nonsense memory report counts as none.
        assert_eq!(plan(Some(4), Some(f64::NAN), None).workers, 4);
        // Every core's worker splitting the model by rows, where two or more would run;
        // where whole copies would not fit, the same cores can still split it, if that fits
        // (a 1 GB file on 4 workers: 2 GB).
        let four = plan(Some(4), Some(8.0), None);
        assert_eq!(four.shares.as_ref().map(|s| s.0), Some(4), "{four:?}");
        assert_eq!(four.shares.unwrap().1, "4 cores");
        assert_eq!(plan(Some(1), Some(8.0), None).shares, None);
        assert_eq!(plan(Some(2), Some(8.0), Some(1)).shares, None);
        assert_eq!(mid.shares.as_ref().map(|s| s.0), Some(8), "{mid:?}");
        assert!(
            mid.shares
                .as_ref()
                .unwrap()
                .1
                .contains("split between them")
        );
        assert_eq!(big.shares.as_ref().map(|s| s.0), Some(4), "{big:?}");
        // 1 GB on 2 GiB (1.07 GB for the workers): one copy is started anyway (it is
        // 1.25 GB); shares (1.75 GB on two workers) would not fit either.
        let tight = worker_pool_plan(1_000_000_000, Some(4), Some(2.0), None);
        assert_eq!((tight.workers, tight.shares), (1, None));
    }

    #[test]
    fn small_files_pass_and_large_ones_are_named() {
        assert_eq!(page_load_warning(98_362_432, None), None);
        assert_eq!(page_load_warning(98_362_432, Some(8.0)), None);
        let w = page_load_warning(2_000_000_000, None).unwrap();
        assert!(w.contains("2.0 GB") && w.contains("WebAssembly"), "{w}");
        // 500 MB is fine with 8 GiB, not with 1 GiB (2 × 0.5 GB > 0.54 GB).
        assert_eq!(page_load_warning(500_000_000, Some(8.0)), None);
        let w = page_load_warning(500_000_000, Some(1.0)).unwrap();
        assert!(w.contains("0.5 GB") && w.contains("1.1 GB"), "{w}");
        // A nonsense report is ignored.
        assert_eq!(page_load_warning(500_000_000, Some(f64::NAN)), None);
        assert_eq!(page_load_warning(500_000_000, Some(0.0)), None);
    }
}
