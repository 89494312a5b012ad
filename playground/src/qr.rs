//! A shared link as a QR code (the `qrcode` crate's SVG renderer), so a class can open on
//! its phones what the projector shows.

use qrcode::render::svg;
use qrcode::{EcLevel, QrCode};

/// The QR code of `text` as an SVG document of `size` pixels a side (a quiet zone around
/// it), or why there is none: a link longer than a QR code holds.
pub fn svg(text: &str, size: u32) -> Result<String, String> {
    // Low error correction: the most data per code, and a screen is not a torn sticker.
    let code = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::L).map_err(|_| {
        format!(
            "this link is {} characters long, more than a QR code holds (about 2,900): \
             share it as text",
            text.chars().count()
        )
    })?;
    Ok(code
        .render::<svg::Color<'_>>()
        .min_dimensions(size, size)
        .quiet_zone(true)
        .dark_color(svg::Color("#000000"))
        .light_color(svg::Color("#ffffff"))
        .build())
}

/// Modules a side of the code for `text` (21 for the smallest), for tests and sizing.
pub fn modules(text: &str) -> Option<usize> {
    QrCode::with_error_correction_level(text.as_bytes(), EcLevel::L)
        .ok()
        .map(|c| c.width())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short link fits the smallest code; a permalink-sized one a larger code; the SVG
    /// is a document of at least the size asked; past capacity there is a message, no
    /// panic.
    #[test]
    fn links_become_svg_codes_and_too_long_ones_say_so() {
        assert_eq!(modules("https://x.org/"), Some(21));
        let link = format!("https://example.org/strait/#v=1&s={}", "A".repeat(600));
        let m = modules(&link).unwrap();
        assert!(m > 21 && m <= 177, "{m}");
        let s = svg(&link, 240).unwrap();
        assert!(s.contains("<svg") && s.contains("#000000"), "{}", &s[..200]);
        let w: f64 = s
            .split("width=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        assert!(w >= 240.0, "{w}");
        let e = svg(&"A".repeat(5000), 240).unwrap_err();
        assert!(e.contains("5000 characters"), "{e}");
    }
}
