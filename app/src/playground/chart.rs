//! The line chart the views share: values in 0..=1 over steps, with a legend and an
//! optional threshold line, as SVG.

use leptos::prelude::*;

/// One line of a [`line_chart`].
pub struct Series {
    /// The legend's text.
    pub label: String,
    /// Values in 0..=1, one per step.
    pub values: Vec<f64>,
    /// Stroke colour.
    pub color: &'static str,
    /// Class of the `<polyline>` (a test hook).
    pub class: &'static str,
}

/// Lines of values in 0..=1 over steps, with the 0 and 1 gridlines, a legend with each
/// line's latest value, and `threshold` drawn dashed when given.
pub fn line_chart(
    id: &'static str,
    series: Vec<Series>,
    threshold: Option<f64>,
    width: f64,
    height: f64,
) -> impl IntoView + use<> {
    let legend_h = 16.0;
    let plot_h = height - legend_h;
    let aria = format!(
        "Chart over steps of {}",
        series
            .iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let lines = series
        .iter()
        .map(|s| {
            view! {
                <polyline class=s.class points=points(&s.values, width, plot_h) fill="none"
                    stroke=s.color stroke-width="1.8" data-last=s.values.last().map(|v| v.to_string())/>
            }
        })
        .collect_view();
    let mut x = 4.0;
    let legend = series
        .iter()
        .map(|s| {
            let last = s.values.last().map(|v| format!(" {v:.3}")).unwrap_or_default();
            let text = format!("{}{last}", s.label);
            let at = x;
            x += 12.0 + 7.0 * text.chars().count() as f64;
            view! {
                <g>
                    <rect x=at.to_string() y=(plot_h + 5.0).to_string() width="9" height="9" fill=s.color/>
                    <text x=(at + 12.0).to_string() y=(plot_h + 13.0).to_string() class="chart-legend">{text}</text>
                </g>
            }
        })
        .collect_view();
    let thr = threshold.map(|t| {
        let y = plot_h - t.clamp(0.0, 1.0) * plot_h;
        view! { <line class="chart-threshold" x1="0" x2=width.to_string() y1=y.to_string() y2=y.to_string()
            stroke="#b33" stroke-dasharray="4 3" stroke-width="1"/> }
    });
    view! {
        <svg id=id class="chart" width=width.to_string() height=height.to_string()
            viewBox=format!("0 0 {width} {height}") role="img" aria-label=aria>
            <rect x="0" y="0" width=width.to_string() height=plot_h.to_string() fill="#f4f5f8"/>
            <line x1="0" x2=width.to_string() y1="0.5" y2="0.5" stroke="#d5d8e0"/>
            <line x1="0" x2=width.to_string() y1=(plot_h - 0.5).to_string() y2=(plot_h - 0.5).to_string() stroke="#d5d8e0"/>
            {thr}
            {lines}
            {legend}
        </svg>
    }
}

/// SVG polyline points of `values` (in 0..=1) spread over `width`, 1 at the top.
fn points(values: &[f64], width: f64, height: f64) -> String {
    let n = values.len().max(2) - 1;
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{:.1},{:.1} ",
                i as f64 * width / n as f64,
                height - v.clamp(0.0, 1.0) * height
            )
        })
        .collect()
}

/// One line of an [`xy_chart`]: points (x, y) with x ≥ 0 and y ≥ 0.
pub struct XySeries {
    /// The legend's text.
    pub label: String,
    /// The points, in x order.
    pub points: Vec<(f64, f64)>,
    /// Stroke colour.
    pub color: &'static str,
}

/// Lines of (x, y) points on shared axes (x from 0 to the largest x, y from 0 to `y_cap`,
/// larger values drawn at the cap), with the axes' extremes written and a legend.
pub fn xy_chart(
    id: &str,
    series: Vec<XySeries>,
    (x_name, y_name, y_cap): (&'static str, &'static str, f64),
    width: f64,
    height: f64,
) -> impl IntoView + use<> {
    let id = id.to_string();
    let (legend_h, left, bottom) = (16.0, 34.0, 14.0);
    let aria = format!(
        "Chart of {y_name} against {x_name}: {}",
        series
            .iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let plot_w = width - left - 6.0;
    let plot_h = height - legend_h - bottom;
    let max_x = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0_f64, f64::max);
    let lines = series
        .iter()
        .map(|s| {
            let pts: String = s
                .points
                .iter()
                .map(|&(x, y)| {
                    format!(
                        "{:.1},{:.1} ",
                        left + x / max_x * plot_w,
                        plot_h - y.clamp(0.0, y_cap) / y_cap * plot_h
                    )
                })
                .collect();
            view! { <polyline class="xy-line" points=pts fill="none" stroke=s.color stroke-width="1.8"
                data-label=s.label.clone()/> }
        })
        .collect_view();
    let mut x = left;
    let legend = series
        .iter()
        .map(|s| {
            let at = x;
            x += 16.0 + 7.0 * s.label.chars().count() as f64;
            view! {
                <g>
                    <rect x=at.to_string() y=(height - 11.0).to_string() width="9" height="9" fill=s.color/>
                    <text x=(at + 12.0).to_string() y=(height - 3.0).to_string() class="chart-legend">{s.label.clone()}</text>
                </g>
            }
        })
        .collect_view();
    view! {
        <svg id=id class="chart" width=width.to_string() height=height.to_string()
            viewBox=format!("0 0 {width} {height}") role="img" aria-label=aria>
            <rect x=left.to_string() y="0" width=plot_w.to_string() height=plot_h.to_string() fill="#f4f5f8"/>
            <text class="chart-legend" x=(left - 3.0).to_string() y="9" text-anchor="end">{if y_cap >= 10.0 { format!("{y_cap:.0}") } else { format!("{y_cap:.3}") }}</text>
            <text class="chart-legend" x=(left - 3.0).to_string() y=plot_h.to_string() text-anchor="end">"0"</text>
            <text class="chart-legend" x=left.to_string() y=(plot_h + 11.0).to_string()>{format!("0 {x_name}")}</text>
            <text class="chart-legend" x=(left + plot_w).to_string() y=(plot_h + 11.0).to_string() text-anchor="end">{format!("{max_x:.0}")}</text>
            <text class="chart-legend" x=(left + 3.0).to_string() y="10">{y_name}</text>
            {lines}
            {legend}
        </svg>
    }
}
