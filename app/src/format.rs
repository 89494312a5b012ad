//! Text formatting shared by the page's views: sizes and probabilities.

/// A byte count in megabytes, one decimal (`98.4 MB`).
pub fn fmt_mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Formats a probability compactly (scientific below 0.001).
pub fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}
