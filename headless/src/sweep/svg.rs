//! The sweep's two pictures as standalone SVG: a line chart (KL against LM calls, one line
//! per sampler, log-scaled calls) and a bar chart (generations per 100 valid samples).

use std::fmt::Write;

/// One line of a line chart.
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// (x, y) points; drawn in order of x.
    pub points: Vec<(f64, f64)>,
    /// Its colour's index (a sampler keeps its colour from chart to chart).
    pub colour: usize,
}

const W: f64 = 720.0;
const H: f64 = 420.0;
/// Plot area: left, top, right, bottom.
const AREA: (f64, f64, f64, f64) = (70.0, 50.0, 520.0, 360.0);
/// Colours that stay apart for the common kinds of colour blindness (Okabe–Ito).
const COLOURS: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
];

/// A line chart with a log-scaled x axis and a linear y axis from 0.
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs
        .filter(|x| *x > 0.0)
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (lx0, lx1) = if lo > hi {
        (0.0, 1.0)
    } else {
        (
            lo.log10().floor(),
            hi.log10().ceil().max(lo.log10().floor() + 1.0),
        )
    };
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let ymax = nice_max(ymax);
    let (l, t, r, b) = AREA;
    let px = |x: f64| l + (x.log10() - lx0) / (lx1 - lx0) * (r - l);
    let py = |y: f64| b - y / ymax * (b - t);
    let mut s = head(title);
    for k in 0..=(lx1 - lx0) as i32 {
        let e = lx0 + k as f64;
        let x = px(10f64.powf(e));
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{t}" x2="{x:.1}" y2="{b}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            b + 18.0,
            pow10(e as i32)
        );
    }
    y_ticks(&mut s, ymax, &py);
    axes(&mut s, x_label, y_label);
    for (i, se) in series.iter().enumerate() {
        let colour = COLOURS[se.colour % COLOURS.len()];
        let mut pts: Vec<(f64, f64)> = se.points.iter().copied().filter(|p| p.0 > 0.0).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for &(x, y) in &pts {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{colour}"><title>{}: {} calls, {}</title></circle>"#,
                px(x),
                py(y),
                escape(&se.name),
                super::summary::num(x),
                super::summary::num(y)
            );
        }
        legend(&mut s, i, colour, &se.name);
    }
    s + "</svg>\n"
}

/// A horizontal bar chart, one bar per (label, colour index, value), x linear from 0; the
/// chart grows with the bars.
pub fn bar_chart(title: &str, x_label: &str, bars: &[(String, usize, f64)]) -> String {
    const ROW: f64 = 22.0;
    const LEFT: f64 = 190.0;
    const RIGHT: f64 = 640.0;
    let top = 50.0;
    let bottom = top + ROW * bars.len() as f64;
    let height = bottom + 50.0;
    let xmax = nice_max(bars.iter().map(|b| b.2).fold(0.0f64, f64::max));
    let px = |x: f64| LEFT + x / xmax * (RIGHT - LEFT);
    let t = escape(title);
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" aria-label="{t}" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{W}" height="{height}" fill="#fff"/><text x="20" y="28" font-size="15" font-weight="bold">{t}</text>"##
    );
    for k in 0..=5 {
        let v = xmax * k as f64 / 5.0;
        let x = px(v);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            bottom + 16.0,
            tick(v)
        );
    }
    for (i, (label, colour, v)) in bars.iter().enumerate() {
        let colour = COLOURS[colour % COLOURS.len()];
        let y = top + ROW * i as f64;
        let _ = write!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text><rect x="{LEFT}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}"><title>{}: {}</title></rect><text x="{:.1}" y="{:.1}">{}</text>"#,
            LEFT - 8.0,
            y + 15.0,
            escape(label),
            y + 3.0,
            px(*v) - LEFT,
            ROW - 6.0,
            escape(label),
            super::summary::num(*v),
            px(*v) + 4.0,
            y + 15.0,
            super::summary::num(*v)
        );
    }
    let _ = write!(
        s,
        r##"<path d="M{LEFT} {top}V{bottom}H{RIGHT}" fill="none" stroke="#333"/><text x="{}" y="{}" text-anchor="middle">{}</text>"##,
        (LEFT + RIGHT) / 2.0,
        bottom + 38.0,
        escape(x_label)
    );
    s + "</svg>\n"
}

/// The SVG's opening, its accessible title and the chart's heading.
fn head(title: &str) -> String {
    let t = escape(title);
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{t}" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{W}" height="{H}" fill="#fff"/><text x="{}" y="28" font-size="15" font-weight="bold">{t}</text>"##,
        AREA.0
    )
}

/// Horizontal grid lines and labels at five even steps of the y axis.
fn y_ticks(s: &mut String, ymax: f64, py: &dyn Fn(f64) -> f64) {
    let (l, _, r, _) = AREA;
    for k in 0..=5 {
        let v = ymax * k as f64 / 5.0;
        let y = py(v);
        let _ = write!(
            s,
            r##"<line x1="{l}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            l - 6.0,
            y + 4.0,
            tick(v)
        );
    }
}

/// The axes' lines and labels.
fn axes(s: &mut String, x_label: &str, y_label: &str) {
    let (l, t, r, b) = AREA;
    let _ = write!(
        s,
        r##"<path d="M{l} {t}V{b}H{r}" fill="none" stroke="#333"/><text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}</text>"##,
        (l + r) / 2.0,
        b + 40.0,
        escape(x_label),
        (t + b) / 2.0,
        escape(y_label)
    );
}

/// The i-th legend entry, right of the plot.
fn legend(s: &mut String, i: usize, colour: &str, name: &str) {
    let y = AREA.1 + 10.0 + 20.0 * i as f64;
    let x = AREA.2 + 20.0;
    let _ = write!(
        s,
        r#"<rect x="{x}" y="{:.1}" width="12" height="12" fill="{colour}"/><text x="{}" y="{y:.1}">{}</text>"#,
        y - 10.0,
        x + 18.0,
        escape(name)
    );
}

/// 1, 2 or 5 times a power of ten, at least `x` (1 for nothing to show).
fn nice_max(x: f64) -> f64 {
    if !(x > 0.0 && x.is_finite()) {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&v| v >= x)
        .unwrap_or(10.0 * p)
}

/// An axis label: at most three significant digits, no trailing zeros.
fn tick(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() {
        "0".into()
    } else {
        s.to_string()
    }
}

/// 10^e as a label: 1, 10, 100, 1000, then 1e4 …; 0.1, 0.01, then 1e-3 ….
fn pow10(e: i32) -> String {
    match e {
        0..=3 => format!("{}", 10u64.pow(e as u32)),
        -2..=-1 => format!("{}", 10f64.powi(e)),
        _ => format!("1e{e}"),
    }
}

/// Text safe inside SVG elements and attributes.
fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_place_points_on_their_axes_and_escape_names() {
        let s = line_chart(
            "KL <a&b>",
            "LM calls",
            "KL",
            &[Series {
                name: "mcmc \"k\"".into(),
                points: vec![(100.0, 0.5), (10.0, 1.0)],
                colour: 0,
            }],
        );
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert!(s.contains("KL &lt;a&amp;b&gt;") && s.contains("mcmc &quot;k&quot;"));
        // x from 10 to 100 over the area's width, y from 0 to 1 over its height.
        let (l, t, r, b) = AREA;
        assert!(
            s.contains(&format!("{l:.1},{t:.1} {r:.1},{:.1}", (t + b) / 2.0)),
            "{s}"
        );
        assert_eq!(nice_max(0.37), 0.5);
        assert_eq!(nice_max(120.0), 200.0);
        let bars = bar_chart(
            "g",
            "per 100",
            &[("cars".into(), 0, 150.0), ("rs".into(), 1, 400.0)],
        );
        assert_eq!(bars.matches("<rect x=").count(), 2, "one bar each");
        // 400 on an axis to 500: four fifths of the bars' width.
        assert!(bars.contains(r#"width="360.0""#), "{bars}");
        assert_eq!(
            (tick(8.0), tick(0.25), tick(10.0)),
            ("8".into(), "0.25".into(), "10".into())
        );
    }
}
