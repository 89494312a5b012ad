//! The model download: streamed with `fetch` and a `ReadableStream` reader so progress
//! shows bytes of total, and cached in Cache Storage under a key made of the URL and the
//! size, so a reload reads it from the cache and a half-written entry is detected.
//!
//! Cache key: `<url>?strait-bytes=<size>` (or `&strait-bytes=` when the URL has a query).
//! The size comes from a `HEAD` request (the server's `Content-Length`); an entry is used
//! only when its body has exactly that many bytes, otherwise it is deleted and the model
//! is fetched again. When the server cannot be reached, a complete entry for the same URL
//! (any size) is used.

use crate::model_file::ModelFile;
use crate::webgpu::js_error_message;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Cache, Request, RequestInit, Response};

/// The Cache Storage bucket that holds models.
const CACHE_NAME: &str = "strait-models-v1";
const SIZE_PARAM: &str = "strait-bytes=";

/// Where the bytes came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Downloaded now (and stored in the cache when it could be).
    Network {
        /// Whether Cache Storage accepted the copy.
        cached: bool,
    },
    /// Read from Cache Storage.
    Cache,
}

/// A note for the user along the way (cache problems are not fatal).
pub type Notify<'a> = &'a dyn Fn(String);

/// Fetches `url`, reporting `(bytes so far, total if known)` as it streams; the file stays
/// where the browser keeps it (Cache Storage, or a `Blob` when the cache refused it).
pub async fn fetch_model(
    url: &str,
    progress: &dyn Fn(u64, Option<u64>),
    notify: Notify<'_>,
) -> Result<(ModelFile, Source), String> {
    let window = web_sys::window().ok_or("no window")?;
    let url = &absolute(url);
    let cache = open_cache(&window).await;
    if cache.is_none() {
        notify(
            "Cache Storage is unavailable here; the model will be downloaded on every visit."
                .into(),
        );
    }

    // 1. The size, from the server.
    let size = match head_size(&window, url).await {
        Ok(size) => size,
        Err(HeadError::Status(msg)) => return Err(msg),
        Err(HeadError::Unreachable(msg)) => {
            // Offline or the server is down: any complete cached copy of this URL will do.
            if let Some(cache) = &cache
                && let Some(file) = any_complete_entry(cache, url).await
            {
                notify(format!(
                    "{url} is unreachable ({msg}); using the copy cached in this browser."
                ));
                progress(file.size(), Some(file.size()));
                return Ok((file, Source::Cache));
            }
            return Err(msg);
        }
    };

    // 2. The cache, keyed by URL and size.
    if let (Some(cache), Some(size)) = (&cache, size) {
        let key = cache_key(url, size);
        if let Some(resp) = cache_match(cache, &key).await {
            match body(&resp).await {
                Ok(file) if file.size() == size => {
                    progress(size, Some(size));
                    return Ok((file, Source::Cache));
                }
                Ok(file) => {
                    notify(format!(
                        "The cached copy of the model was incomplete ({} of {size} bytes); downloading it again.",
                        file.size()
                    ));
                    let _ = JsFuture::from(cache.delete_with_str(&key)).await;
                }
                Err(e) => notify(format!(
                    "The cached copy could not be read ({e}); downloading it again."
                )),
            }
        }
    }

    // 3. The network, streamed.
    let resp = fetch(&window, url, "GET")
        .await
        .map_err(|e| unreachable_message(url, &e))?;
    if !resp.ok() {
        return Err(status_message(url, &resp));
    }
    let total = size.or_else(|| content_length(&resp));
    let buf = stream_body(&resp, total, progress).await?;
    if let Some(size) = size
        && buf.length() as u64 != size
    {
        return Err(format!(
            "The download of {url} stopped after {} of {size} bytes; reload to try again.",
            buf.length()
        ));
    }

    // 4. Into the cache; older sizes of the same URL go. The page then holds the file as
    // the cache's entry (on disk), else as a `Blob` of the download.
    let mut cached = None;
    if let Some(cache) = &cache {
        let size = buf.length() as u64;
        delete_other_sizes(cache, url, size).await;
        let key = cache_key(url, size);
        match Response::new_with_opt_buffer_source(Some(&buf)) {
            Ok(r) => match JsFuture::from(cache.put_with_str(&key, &r)).await {
                Ok(_) => {
                    if let Some(resp) = cache_match(cache, &key).await
                        && let Ok(file) = body(&resp).await
                        && file.size() == size
                    {
                        cached = Some(file);
                    }
                }
                Err(e) => notify(format!(
                    "The model could not be stored in the browser cache ({}); it will be downloaded again next time.",
                    js_error_message(&e)
                )),
            },
            Err(e) => notify(format!(
                "cannot build the cache entry: {}",
                js_error_message(&e)
            )),
        }
    }
    let is_cached = cached.is_some();
    let file = match cached {
        Some(file) => file,
        None => ModelFile::from_bytes(&buf)?,
    };
    Ok((file, Source::Network { cached: is_cached }))
}

/// Removes every cached copy of `url` (the "clear cache" button).
pub async fn forget(url: &str) {
    let Some(window) = web_sys::window() else {
        return;
    };
    if let Some(cache) = open_cache(&window).await {
        delete_other_sizes(&cache, &absolute(url), u64::MAX).await;
    }
}

/// `url?strait-bytes=N`.
pub fn cache_key(url: &str, size: u64) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{SIZE_PARAM}{size}")
}

/// The size encoded in a cache key for `url` (both absolute), if the key belongs to it.
pub fn size_from_key(key_url: &str, url: &str) -> Option<u64> {
    let rest = key_url.strip_prefix(url)?;
    rest.strip_prefix(['?', '&'])?
        .strip_prefix(SIZE_PARAM)?
        .parse()
        .ok()
}

/// `url` made absolute against the page's address (cache keys come back absolute).
fn absolute(url: &str) -> String {
    web_sys::window()
        .and_then(|w| w.location().href().ok())
        .and_then(|base| web_sys::Url::new_with_base(url, &base).ok())
        .map(|u| u.href())
        .unwrap_or_else(|| url.to_string())
}

/// The size the server of `url` gives in its headers (a HEAD request: no body), for the
/// question asked before a model on another origin is downloaded; `None` when it does not
/// say or cannot be asked (no CORS).
pub async fn announced_size(url: &str) -> Option<u64> {
    let window = web_sys::window()?;
    head_size(&window, &absolute(url)).await.ok().flatten()
}

enum HeadError {
    /// The server answered with an error status: the message for the user.
    Status(String),
    /// No answer at all.
    Unreachable(String),
}

async fn head_size(window: &web_sys::Window, url: &str) -> Result<Option<u64>, HeadError> {
    let resp = fetch(window, url, "HEAD")
        .await
        .map_err(|e| HeadError::Unreachable(unreachable_message(url, &e)))?;
    if !resp.ok() {
        return Err(HeadError::Status(status_message(url, &resp)));
    }
    Ok(content_length(&resp))
}

async fn fetch(window: &web_sys::Window, url: &str, method: &str) -> Result<Response, JsValue> {
    let init = RequestInit::new();
    init.set_method(method);
    let req = Request::new_with_str_and_init(url, &init)?;
    let resp = JsFuture::from(window.fetch_with_request(&req)).await?;
    resp.dyn_into::<Response>()
}

fn content_length(resp: &Response) -> Option<u64> {
    resp.headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse().ok())
}

fn status_message(url: &str, resp: &Response) -> String {
    format!(
        "The model could not be fetched from {url}: the server answered HTTP {} {}. \
         With the dev server, `cargo xtask serve` fetches the model first (`cargo xtask setup`).",
        resp.status(),
        resp.status_text()
    )
}

fn unreachable_message(url: &str, e: &JsValue) -> String {
    // A browser tells a refused cross-origin request from an unreachable server to no page
    // (by design), so a request to another origin names both causes.
    match other_origin(url) {
        Some(origin) => format!(
            "The model could not be fetched from {url}: {}. It is on another origin \
             ({origin}): its server must allow this page with CORS (the header \
             Access-Control-Allow-Origin), or it is not reachable.",
            js_error_message(e)
        ),
        None => format!(
            "The model could not be fetched from {url}: {} (is the server running? `cargo xtask serve`)",
            js_error_message(e)
        ),
    }
}

/// The origin of `url` when it is not the page's own.
pub fn other_origin(url: &str) -> Option<String> {
    let page = web_sys::window()?.location();
    let base = page.href().ok()?;
    let origin = web_sys::Url::new_with_base(url, &base).ok()?.origin();
    (origin != page.origin().ok()?).then_some(origin)
}

/// Reads the body chunk by chunk into one buffer, reporting progress.
async fn stream_body(
    resp: &Response,
    total: Option<u64>,
    progress: &dyn Fn(u64, Option<u64>),
) -> Result<Uint8Array, String> {
    let body = resp.body().ok_or("the response has no body")?;
    let reader: web_sys::ReadableStreamDefaultReader = body
        .get_reader()
        .dyn_into()
        .map_err(|_| "the body has no default reader".to_string())?;
    let mut buf = Uint8Array::new_with_length(total.unwrap_or(1 << 20) as u32);
    let mut done_bytes: u64 = 0;
    progress(0, total);
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(|e| {
            format!(
                "the download failed after {done_bytes} bytes: {}",
                js_error_message(&e)
            )
        })?;
        let done = Reflect::get(&chunk, &"done".into())
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(true);
        if done {
            break;
        }
        let value: Uint8Array = Reflect::get(&chunk, &"value".into())
            .map_err(|e| js_error_message(&e))?
            .dyn_into()
            .map_err(|_| "a chunk that is not bytes".to_string())?;
        let n = value.length() as u64;
        if done_bytes + n > buf.length() as u64 {
            if total.is_some() {
                return Err(format!(
                    "the server sent more than the announced {} bytes",
                    buf.length()
                ));
            }
            // Unknown size: grow geometrically.
            let bigger = Uint8Array::new_with_length(((done_bytes + n) * 2) as u32);
            bigger.set(&buf.subarray(0, done_bytes as u32), 0);
            buf = bigger;
        }
        buf.set(&value, done_bytes as u32);
        done_bytes += n;
        progress(done_bytes, total);
    }
    Ok(if buf.length() as u64 == done_bytes {
        buf
    } else {
        buf.slice(0, done_bytes as u32)
    })
}

/// A response's body as the browser holds it (for a Cache Storage entry, on disk).
async fn body(resp: &Response) -> Result<ModelFile, String> {
    let p = resp.blob().map_err(|e| js_error_message(&e))?;
    let blob = JsFuture::from(p).await.map_err(|e| js_error_message(&e))?;
    Ok(ModelFile::from_blob(blob.unchecked_into()))
}

async fn open_cache(window: &web_sys::Window) -> Option<Cache> {
    let storage = window.caches().ok()?;
    JsFuture::from(storage.open(CACHE_NAME))
        .await
        .ok()?
        .dyn_into()
        .ok()
}

async fn cache_match(cache: &Cache, key: &str) -> Option<Response> {
    let v = JsFuture::from(cache.match_with_str(key)).await.ok()?;
    v.dyn_into().ok()
}

/// Cache keys (absolute URLs) of entries for `url`, with their sizes.
async fn entries_for(cache: &Cache, url: &str) -> Vec<(String, u64)> {
    let Ok(keys) = JsFuture::from(cache.keys()).await else {
        return Vec::new();
    };
    let keys: js_sys::Array = keys.unchecked_into();
    keys.iter()
        .filter_map(|k| {
            let key_url = Reflect::get(&k, &"url".into()).ok()?.as_string()?;
            let size = size_from_key(&key_url, url)?;
            Some((key_url, size))
        })
        .collect()
}

async fn any_complete_entry(cache: &Cache, url: &str) -> Option<ModelFile> {
    for (key, size) in entries_for(cache, url).await {
        if let Some(resp) = cache_match(cache, &key).await
            && let Ok(file) = body(&resp).await
            && file.size() == size
        {
            return Some(file);
        }
    }
    None
}

async fn delete_other_sizes(cache: &Cache, url: &str, keep: u64) {
    for (key, size) in entries_for(cache, url).await {
        if size != keep {
            let _ = JsFuture::from(cache.delete_with_str(&key)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_size() {
        assert_eq!(
            cache_key("/models/m.gguf", 42),
            "/models/m.gguf?strait-bytes=42"
        );
        assert_eq!(cache_key("/m.gguf?v=2", 42), "/m.gguf?v=2&strait-bytes=42");
        let url = "http://127.0.0.1:8080/models/m.gguf";
        assert_eq!(
            size_from_key("http://127.0.0.1:8080/models/m.gguf?strait-bytes=42", url),
            Some(42)
        );
        assert_eq!(
            size_from_key(
                "http://127.0.0.1:8080/models/m.gguf.bak?strait-bytes=42",
                url
            ),
            None
        );
        assert_eq!(
            size_from_key("http://127.0.0.1:8080/models/m.gguf", url),
            None
        );
    }
}
