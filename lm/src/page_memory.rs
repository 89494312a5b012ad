//! Whether a model file is likely to fit in a browser tab, asked before the page reads it.
//!
//! The page keeps the file's bytes in WebAssembly memory (a 32-bit address space: 4 GiB at
//! most per instance, and browsers often grant less), the sampling worker holds a second
//! copy in its own instance, and the KV cache and activations come on top.

/// Largest file the page loads without asking: a third of the 4 GiB address space leaves
/// room for the copy held while it is read, the KV cache and f32 expansions.
pub const PAGE_COMFORT_BYTES: u64 = 1_400_000_000;

/// A warning for a file of `file_bytes` on a device reporting `device_memory_gib`
/// (`navigator.deviceMemory`, Chromium only, rounded down and capped at 8), or `None`
/// when it should fit: the page and its worker hold about twice the file.
pub fn page_load_warning(file_bytes: u64, device_memory_gib: Option<f64>) -> Option<String> {
    let gb = |b: f64| format!("{:.1} GB", b / 1e9);
    let size = file_bytes as f64;
    if file_bytes > PAGE_COMFORT_BYTES {
        return Some(format!(
            "This file is {}. The page keeps the model in WebAssembly memory (4 GB at most, \
             often less), and its sampling worker holds a second copy: loading will likely \
             fail or make the tab run out of memory. Files up to {} load reliably.",
            gb(size),
            gb(PAGE_COMFORT_BYTES as f64)
        ));
    }
    let device = device_memory_gib.filter(|m| m.is_finite() && *m > 0.0)? * 1024f64.powi(3);
    (2.0 * size > device / 2.0).then(|| {
        format!(
            "This file is {}; the page and its sampling worker hold about twice that, more \
             than half of the {} of memory this device reports. The tab may run out of memory.",
            gb(size),
            gb(device)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
