//! A small static file server for `dist/` (std only): GET and HEAD, correct MIME types
//! (`application/wasm` for streaming compilation), `Content-Length` so the page can show
//! download progress, and no path escapes.

use crate::build;
use crate::setup;
use crate::util::{Result, root, step};
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::thread;

/// `cargo xtask serve [--port N] [--no-build] [--burn]`.
pub fn command(flags: &[String]) -> Result<ExitCode> {
    let mut port = 8080u16;
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        if f == "--port" {
            port = it
                .next()
                .and_then(|p| p.parse().ok())
                .ok_or("--port needs a number")?;
        }
    }
    // `--burn`: the page built with the burn engine (`?engine=burn`), in `dist-burn/`.
    let burn = flags.iter().any(|f| f == "--burn");
    let dist = if flags.iter().any(|f| f == "--no-build") {
        setup::ensure_model()?;
        root().join(if burn { "dist-burn" } else { "dist" })
    } else {
        build::build_variant(burn, build::Link::Served)?.dist
    };
    if !dist.join("index.html").is_file() {
        return Err(format!(
            "{} has no index.html: run `cargo xtask build`",
            dist.display()
        ));
    }
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    step(format!("serving {}", dist.display()));
    println!("Strait is at http://127.0.0.1:{port}/  (Ctrl+C stops the server)");
    serve_forever(listener, dist);
    Ok(ExitCode::SUCCESS)
}

/// Serves `dir` on a free port of 127.0.0.1 from a background thread; returns the address.
pub fn spawn(dir: PathBuf) -> Result<SocketAddr> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    thread::spawn(move || serve_forever(listener, dir));
    Ok(addr)
}

fn serve_forever(listener: TcpListener, dir: PathBuf) {
    for stream in listener.incoming().flatten() {
        let dir = dir.clone();
        thread::spawn(move || {
            let _ = handle(stream, &dir);
        });
    }
}

fn handle(stream: TcpStream, dir: &Path) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    // One request per connection keeps this simple; the page makes few requests.
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    if method != "GET" && method != "HEAD" {
        return respond(
            &mut out,
            "405 Method Not Allowed",
            "text/plain",
            b"GET or HEAD only\n",
        );
    }
    let Some(path) = resolve(dir, target) else {
        return respond(&mut out, "404 Not Found", "text/plain", b"not found\n");
    };
    let Ok(mut file) = fs::File::open(&path) else {
        return respond(&mut out, "404 Not Found", "text/plain", b"not found\n");
    };
    let len = file.metadata()?.len();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {len}\r\nCache-Control: no-cache\r\n{ISOLATION}Connection: close\r\n\r\n",
        mime(&path)
    );
    out.write_all(head.as_bytes())?;
    if method == "GET" {
        io::copy(&mut file, &mut out)?;
    }
    out.flush()
}

/// Cross-origin isolation (COOP + COEP): what `SharedArrayBuffer`, and so wasm threads,
/// need; every resource of the page is same-origin, so nothing else changes.
const ISOLATION: &str =
    "Cross-Origin-Opener-Policy: same-origin\r\nCross-Origin-Embedder-Policy: require-corp\r\n";

fn respond(out: &mut TcpStream, status: &str, ctype: &str, body: &[u8]) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// Maps a request target to a file under `dir`: query and fragment dropped, percent-escapes
/// decoded, `..` refused, `/` and folders served as `index.html`.
fn resolve(dir: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    let decoded = percent_decode(path)?;
    let mut out = dir.to_path_buf();
    for c in Path::new(decoded.trim_start_matches('/')).components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    Some(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn mime(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "lark" | "gbnf" | "regex" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_refuses_escapes_and_maps_folders() {
        let d = Path::new("/srv");
        assert_eq!(
            resolve(d, "/a/b.js?x=1"),
            Some(PathBuf::from("/srv/a/b.js"))
        );
        assert_eq!(resolve(d, "/../etc/passwd"), None);
        assert_eq!(resolve(d, "/%2e%2e/etc/passwd"), None);
        assert_eq!(
            resolve(d, "/models/a%20b.gguf"),
            Some(PathBuf::from("/srv/models/a b.gguf"))
        );
    }

    #[test]
    fn serves_a_file_with_its_length() {
        let dir = std::env::temp_dir().join(format!("xtask-serve-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("index.html"), b"<p>hi</p>").unwrap();
        let addr = spawn(dir.clone()).unwrap();
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut resp = String::new();
        io::Read::read_to_string(&mut s, &mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
        assert!(resp.contains("Content-Length: 9"), "{resp}");
        assert!(
            resp.contains("Cross-Origin-Embedder-Policy: require-corp"),
            "{resp}"
        );
        assert!(resp.ends_with("<p>hi</p>"), "{resp}");
        let _ = fs::remove_dir_all(dir);
    }
}
