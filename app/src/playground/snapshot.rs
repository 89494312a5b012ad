//! Views as files for slides: every view exports as SVG and as PNG (its buttons,
//! [`ExportButtons`], sit in its heading).
//!
//! The SVG holds the view's own figures (its `<svg>` elements, stacked under the view's
//! title) with the page's styles written into each element, so it opens the same in any
//! SVG editor or slide tool. A view without figures, and every PNG, is a picture of the
//! whole panel as shown: the panel's copy, its styles inlined, inside an SVG
//! `<foreignObject>`, drawn on a canvas at twice its size for the PNG.
//!
//! Hooks: `button.export-svg[data-view]`, `button.export-png[data-view]`; the file names
//! are `strait-<view>.svg` and `strait-<view>.png`.

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::Element;

const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// The computed properties an SVG figure needs to look as on the page.
const SVG_PROPS: &[&str] = &[
    "fill",
    "fill-opacity",
    "stroke",
    "stroke-width",
    "stroke-dasharray",
    "stroke-opacity",
    "opacity",
    "font-family",
    "font-size",
    "font-weight",
    "font-style",
    "text-decoration-line",
    "text-anchor",
    "dominant-baseline",
    "visibility",
];

/// The computed properties an HTML panel needs to look as on the page (longhands:
/// shorthands read back empty when their sides differ).
const HTML_PROPS: &[&str] = &[
    "display",
    "box-sizing",
    "width",
    "height",
    "margin-top",
    "margin-right",
    "margin-bottom",
    "margin-left",
    "padding-top",
    "padding-right",
    "padding-bottom",
    "padding-left",
    "border-top-width",
    "border-top-style",
    "border-top-color",
    "border-right-width",
    "border-right-style",
    "border-right-color",
    "border-bottom-width",
    "border-bottom-style",
    "border-bottom-color",
    "border-left-width",
    "border-left-style",
    "border-left-color",
    "border-radius",
    "border-collapse",
    "background-color",
    "color",
    "font-family",
    "font-size",
    "font-weight",
    "font-style",
    "line-height",
    "text-align",
    "text-decoration-line",
    "white-space",
    "vertical-align",
    "flex-direction",
    "flex-wrap",
    "align-items",
    "justify-content",
    "gap",
    "opacity",
    "font-variant-numeric",
];

/// Copies `props` of `from`'s computed style (and of each descendant's) into `to`'s
/// `style` attribute; `to` is a deep clone of `from`.
fn inline_styles(from: &Element, to: &Element) {
    let props = if from.namespace_uri().as_deref() == Some(SVG_NS) {
        SVG_PROPS
    } else {
        HTML_PROPS
    };
    if let Ok(Some(cs)) = window().get_computed_style(from) {
        let mut css = String::new();
        for p in props {
            let v = cs.get_property_value(p).unwrap_or_default();
            if !v.is_empty() {
                css.push_str(&format!("{p}:{v};"));
            }
        }
        let _ = to.set_attribute("style", &css);
    }
    let (a, b) = (from.children(), to.children());
    for i in 0..a.length().min(b.length()) {
        if let (Some(x), Some(y)) = (a.item(i), b.item(i)) {
            inline_styles(&x, &y);
        }
    }
}

fn svg_element(name: &str) -> Option<Element> {
    document().create_element_ns(Some(SVG_NS), name).ok()
}

fn number_attr(e: &Element, name: &str) -> Option<f64> {
    e.get_attribute(name)?.parse().ok()
}

fn serialize(e: &Element) -> Option<String> {
    web_sys::XmlSerializer::new()
        .ok()?
        .serialize_to_string(e)
        .ok()
}

fn view_title(view: &Element) -> String {
    view.query_selector("h3")
        .ok()
        .flatten()
        .and_then(|h| h.text_content())
        .unwrap_or_default()
}

/// The view's figures stacked under its title, as standalone SVG; `None` when it has none.
fn figures_svg(view: &Element) -> Option<String> {
    let list = view.query_selector_all("svg").ok()?;
    let figures: Vec<Element> = (0..list.length())
        .filter_map(|i| list.item(i)?.dyn_into::<Element>().ok())
        .filter(|s| number_attr(s, "width").is_some() && number_attr(s, "height").is_some())
        .collect();
    if figures.is_empty() {
        return None;
    }
    let root = svg_element("svg")?;
    let background = svg_element("rect")?;
    let title = svg_element("text")?;
    let _ = title.set_attribute("x", "8");
    let _ = title.set_attribute("y", "20");
    let _ = title.set_attribute(
        "style",
        "font: bold 15px system-ui, sans-serif; fill: #1d1f24",
    );
    title.set_text_content(Some(&view_title(view)));
    let _ = background.set_attribute("fill", "#ffffff");
    let _ = root.append_child(&background);
    let _ = root.append_child(&title);
    let (mut y, mut width) = (32.0_f64, 0.0_f64);
    for f in figures {
        let copy: Element = f.clone_node_with_deep(true).ok()?.dyn_into().ok()?;
        inline_styles(&f, &copy);
        let (w, h) = (number_attr(&f, "width")?, number_attr(&f, "height")?);
        let _ = copy.set_attribute("x", "8");
        let _ = copy.set_attribute("y", &y.to_string());
        let _ = copy.remove_attribute("id");
        let _ = root.append_child(&copy);
        y += h + 12.0;
        width = width.max(w + 16.0);
    }
    for (e, k, v) in [
        (&root, "width", width),
        (&root, "height", y),
        (&background, "width", width),
        (&background, "height", y),
    ] {
        let _ = e.set_attribute(k, &v.to_string());
    }
    let _ = root.set_attribute("viewBox", &format!("0 0 {width} {y}"));
    serialize(&root)
}

/// The whole panel as shown, as SVG (a `<foreignObject>` holding its styled copy), with
/// its size in CSS pixels.
fn panel_svg(view: &Element) -> Option<(String, f64, f64)> {
    let copy: Element = view.clone_node_with_deep(true).ok()?.dyn_into().ok()?;
    inline_styles(view, &copy);
    // Everything, not just what the panel's scroll box shows; no export buttons.
    let (w, h) = (
        f64::from(view.client_width().max(1)),
        f64::from(view.scroll_height().max(1)),
    );
    let style = copy.get_attribute("style").unwrap_or_default();
    let _ = copy.set_attribute(
        "style",
        &format!("{style}max-height:none;overflow:visible;height:auto;margin:0;"),
    );
    if let Ok(buttons) = copy.query_selector_all(".export") {
        for i in 0..buttons.length() {
            if let Some(b) = buttons.item(i).and_then(|b| b.dyn_into::<Element>().ok()) {
                b.remove();
            }
        }
    }
    let root = svg_element("svg")?;
    let object = svg_element("foreignObject")?;
    for (e, k, v) in [(&root, "width", w), (&root, "height", h)] {
        let _ = e.set_attribute(k, &v.to_string());
    }
    let _ = object.set_attribute("width", "100%");
    let _ = object.set_attribute("height", "100%");
    let _ = object.append_child(&copy);
    let _ = root.append_child(&object);
    Some((serialize(&root)?, w, h))
}

fn view_element(id: &str) -> Result<Element, String> {
    document()
        .get_element_by_id(id)
        .ok_or_else(|| "This view is not on the page now; run a sampler that shows it.".into())
}

fn file_stem(id: &str) -> String {
    format!("strait-{}", id.trim_start_matches("view-"))
}

/// Downloads the view `id` as an SVG file.
pub fn download_svg(id: &str) -> Result<(), String> {
    let view = view_element(id)?;
    let text = figures_svg(&view)
        .or_else(|| panel_svg(&view).map(|(s, _, _)| s))
        .ok_or("The view could not be copied as SVG.")?;
    super::link::download(&format!("{}.svg", file_stem(id)), "image/svg+xml", &text);
    Ok(())
}

/// Downloads the view `id` as a PNG file, drawn at twice its size on the page.
pub async fn download_png(id: &str) -> Result<(), String> {
    let view = view_element(id)?;
    let (svg, w, h) = panel_svg(&view).ok_or("The view could not be copied.")?;
    let image = web_sys::HtmlImageElement::new().map_err(|_| "No image element.")?;
    image.set_src(&format!(
        "data:image/svg+xml;charset=utf-8,{}",
        String::from(js_sys::encode_uri_component(&svg))
    ));
    JsFuture::from(image.decode())
        .await
        .map_err(|e| format!("The browser could not draw the view: {}", js_error(&e)))?;
    let canvas: web_sys::HtmlCanvasElement = document()
        .create_element("canvas")
        .map_err(|_| "No canvas.")?
        .unchecked_into();
    let scale = 2.0;
    canvas.set_width((w * scale).ceil() as u32);
    canvas.set_height((h * scale).ceil() as u32);
    let ctx: web_sys::CanvasRenderingContext2d = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .ok_or("No 2D canvas.")?
        .unchecked_into();
    ctx.set_fill_style_str("#ffffff");
    ctx.fill_rect(0.0, 0.0, w * scale, h * scale);
    let _ = ctx.scale(scale, scale);
    ctx.draw_image_with_html_image_element(&image, 0.0, 0.0)
        .map_err(|e| format!("The browser could not draw the view: {}", js_error(&e)))?;
    let url = canvas
        .to_data_url_with_type("image/png")
        .map_err(|e| format!("The browser refused to make a PNG: {}", js_error(&e)))?;
    super::link::download_url(&format!("{}.png", file_stem(id)), &url);
    Ok(())
}

fn js_error(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "unknown error".into())
}

/// The SVG and PNG buttons of the view `id` (labelled for screen readers with `what`).
#[component]
pub fn ExportButtons(id: &'static str, what: &'static str) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    view! {
        <span class="export">
            <button class="secondary small export-svg" data-view=id
                aria-label=format!("Download the {what} as SVG")
                on:click=move |_| error.set(download_svg(id).err())>"SVG"</button>
            <button class="secondary small export-png" data-view=id
                aria-label=format!("Download the {what} as PNG")
                on:click=move |_| {
                    leptos::task::spawn_local(async move { error.set(download_png(id).await.err()) })
                }>"PNG"</button>
            {move || error.get().map(|e| view! { <span class="export-error error" role="alert">{e}</span> })}
        </span>
    }
}
