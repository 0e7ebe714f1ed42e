//! Serving the built console (trunk's `dist/`).
//!
//! Files are served as they are; any other path outside `/api/` answers the
//! console's `index.html`, so a shared link such as `/jobs/abc/replicas`
//! opened cold still starts the app, which then routes on the client. Hashed
//! assets are cached for a year; `index.html` is revalidated every time.
//! Every page carries a strict Content-Security-Policy whose script hashes
//! are computed from the inline bootstrap script trunk writes.
//!
//! Hashed assets are sent brotli-compressed at its best quality, so a browser
//! downloads the smallest bytes without the server paying for maximum
//! compression on every request: the build writes each one's compressed bytes
//! next to it (`FILE.br`, scripts/pack-console.mjs), which are read at
//! start-up; an asset without them is compressed once in the background.
//! Until that is done (and for other files) responses are compressed on the
//! fly.
//!
//! Packs of page modules go smaller still to a browser that holds the core
//! module as a compression dictionary (RFC 9842): the core's response says
//! `Use-As-Dictionary`, and a later request for a pack that names the core's
//! hash in `Available-Dictionary` and accepts `dcb` gets the pack compressed
//! against the core (`FILE.dcb`, written by the build with
//! crates/precompress).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use sha2::{Digest, Sha256};
use tower::ServiceExt;
use tower_http::services::ServeDir;

use crate::AppState;

/// The console's files and the headers computed from them at start-up.
struct ConsoleFiles {
    dir: PathBuf,
    index_html: Option<String>,
    csp: HeaderValue,
    /// Brotli-compressed bodies of hashed assets, by request path.
    brotli: RwLock<HashMap<String, bytes::Bytes>>,
    /// Packs compressed against the core module, and the core.
    dictionary_compressed: DictionaryCompressed,
}

/// The build's dcb bodies (`FILE.dcb`) and the dictionary they were
/// compressed against. Empty when the build wrote none or their dictionary
/// is not among the console's files.
#[derive(Default)]
struct DictionaryCompressed {
    /// The request path of the dictionary (the core module).
    dictionary_path: String,
    /// The dictionary's hash as a browser names it in `Available-Dictionary`:
    /// a structured-field byte sequence, `:base64:`.
    available: String,
    /// dcb bodies by request path.
    bodies: HashMap<String, bytes::Bytes>,
}

/// Where the core module may serve as a dictionary: the packs, the only
/// downloads that share its code (URL pattern syntax, RFC 9842).
const DICTIONARY_MATCH: &str = "match=\"/pack*\"";

/// Adds the console to `router` as the fallback for every path outside
/// `/api/`.
pub fn serve(router: Router<AppState>, dir: &Path) -> Router<AppState> {
    let index_html = std::fs::read_to_string(dir.join("index.html")).ok();
    if index_html.is_none() {
        tracing::warn!(dir = %dir.display(), "the console directory has no index.html");
    }
    let csp = content_security_policy(index_html.as_deref().unwrap_or(""));
    let files = Arc::new(ConsoleFiles {
        dir: dir.to_path_buf(),
        index_html,
        csp: HeaderValue::from_str(&csp).expect("the policy is ASCII"),
        // The build's compressed files are read before the first request
        // (tens of milliseconds), so no early browser misses them.
        brotli: RwLock::new(read_built_brotli(dir)),
        dictionary_compressed: read_dictionary_compressed(dir),
    });
    tracing::info!(
        brotli = files.brotli.read().map(|m| m.len()).unwrap_or(0),
        dictionary_compressed = files.dictionary_compressed.bodies.len(),
        "console assets read"
    );
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let files = files.clone();
        runtime.spawn_blocking(move || compress_the_rest(&files));
    }
    router.fallback(move |req: Request| {
        let files = files.clone();
        async move { serve_console(files, req).await }
    })
}

async fn serve_console(files: Arc<ConsoleFiles>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    if path == "/api" || path.starts_with("/api/") {
        return crate::http::error::AppError::NotFound(format!("no API route for {path}")).into_response();
    }
    if let Some(location) = lepton_dashboard_link(&path) {
        return with_security_headers(&files, redirect(&location));
    }
    if let Some(body) = files.dictionary_compressed_body(&req, &path) {
        let mut response = precompressed_response(&path, body, "dcb");
        vary_on_dictionary(&mut response);
        return with_security_headers(&files, response);
    }
    if accepts_coding(&req, "br") {
        let body = files.brotli.read().ok().and_then(|m| m.get(&path).cloned());
        if let Some(body) = body {
            let mut response = precompressed_response(&path, body, "br");
            files.mark_dictionary(&path, &mut response);
            return with_security_headers(&files, response);
        }
    }
    let served = ServeDir::new(&files.dir).append_index_html_on_directories(false).oneshot(req).await;
    let response = match served {
        Ok(res) if res.status() != StatusCode::NOT_FOUND && path != "/" => {
            let mut res = res.map(Body::new);
            let cache = if is_hashed_asset(&path) { "public, max-age=31536000, immutable" } else { "no-cache" };
            res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
            // Before its brotli is ready (the server compresses after it
            // starts), a pack still answers as one that depends on the
            // dictionary a browser holds, and the core still offers itself.
            files.mark_dictionary(&path, &mut res);
            res
        }
        _ if looks_like_asset(&path) => (StatusCode::NOT_FOUND, "not found").into_response(),
        _ => match &files.index_html {
            Some(html) => {
                let mut res = (StatusCode::OK, html.clone()).into_response();
                let headers = res.headers_mut();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
                headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                res
            }
            None => (
                StatusCode::SERVICE_UNAVAILABLE,
                "the console is not built: run `trunk build --release` (scripts/run.sh does this)",
            )
                .into_response(),
        },
    };
    with_security_headers(&files, response)
}

/// Where a Lepton dashboard link to a job lands in the console. `lep job
/// list` makes each job id a link to `<workspace URL without /api/v2>` +
/// `/compute/jobs/detail/<id>/replicas/list`, which on Jobdeck is this
/// server; it opens the job's replicas tab.
fn lepton_dashboard_link(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/compute/jobs/detail/")?;
    let id = rest.split('/').next().filter(|id| !id.is_empty())?;
    // Job ids are lowercase letters, digits and hyphens; anything else is no
    // job, and is not echoed into a header.
    id.bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        .then(|| format!("/jobs/{id}/replicas"))
}

fn redirect(location: &str) -> Response {
    let mut res = StatusCode::FOUND.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        res.headers_mut().insert(header::LOCATION, value);
    }
    res
}

fn with_security_headers(files: &ConsoleFiles, mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, files.csp.clone());
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

impl ConsoleFiles {
    /// The dcb body of `path` when the request may have it: it accepts
    /// `dcb` and names the dictionary the body was compressed against.
    fn dictionary_compressed_body(&self, req: &Request, path: &str) -> Option<bytes::Bytes> {
        let compressed = &self.dictionary_compressed;
        let body = compressed.bodies.get(path)?;
        let available = req.headers().get("available-dictionary")?.to_str().ok()?.trim();
        (available == compressed.available && accepts_coding(req, "dcb")).then(|| body.clone())
    }

    /// Offers the core module as a dictionary for the packs (its response
    /// only), and says that the packs' answers depend on the dictionary a
    /// browser has.
    fn mark_dictionary(&self, path: &str, response: &mut Response) {
        let compressed = &self.dictionary_compressed;
        if compressed.bodies.contains_key(path) {
            vary_on_dictionary(response);
        } else if !compressed.bodies.is_empty() && path == compressed.dictionary_path {
            response.headers_mut().insert("use-as-dictionary", HeaderValue::from_static(DICTIONARY_MATCH));
        }
    }
}

fn vary_on_dictionary(response: &mut Response) {
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("accept-encoding, available-dictionary"));
}

/// The best brotli quality in release builds; a fast one in debug builds,
/// where the compressor itself is unoptimized and tests start many servers.
pub const BROTLI_QUALITY: u32 = if cfg!(debug_assertions) { 5 } else { 11 };

/// The hashed assets of the console directory (not the compressed files
/// next to them), as (request path, file).
fn hashed_assets(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .map(|entry| (entry.file_name().to_string_lossy().into_owned(), entry.path()))
        .filter(|(name, _)| is_hashed_asset(name) && !name.ends_with(".br") && !name.ends_with(".dcb"))
        .map(|(name, file)| (format!("/{name}"), file))
        .collect()
}

/// The brotli bytes the build wrote for the hashed assets, by request path.
fn read_built_brotli(dir: &Path) -> HashMap<String, bytes::Bytes> {
    hashed_assets(dir).into_iter().filter_map(|(path, file)| Some((path, built_brotli(&file)?.into()))).collect()
}

/// Compresses every hashed asset the build wrote no brotli for.
fn compress_the_rest(files: &ConsoleFiles) {
    let started = std::time::Instant::now();
    let mut count = 0;
    for (path, file) in hashed_assets(&files.dir) {
        if files.brotli.read().is_ok_and(|map| map.contains_key(&path)) {
            continue;
        }
        let Some(compressed) = compress(&file) else { continue };
        if let Ok(mut map) = files.brotli.write() {
            map.insert(path, compressed.into());
            count += 1;
        }
    }
    if count > 0 {
        tracing::info!(count, elapsed_ms = started.elapsed().as_millis() as u64, "console assets compressed");
    }
}

/// The build's dcb bodies whose dictionary is one of the console's modules.
/// A body against any other dictionary is left out: no browser could have
/// it from this console.
fn read_dictionary_compressed(dir: &Path) -> DictionaryCompressed {
    let mut by_dictionary: HashMap<[u8; 32], HashMap<String, bytes::Bytes>> = HashMap::new();
    let mut modules = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(asset) = name.strip_suffix(".dcb").filter(|asset| is_hashed_asset(asset)) {
            let Ok(body) = std::fs::read(entry.path()) else { continue };
            if let Some(hash) = jobdeck_precompress::hash_in(&body) {
                by_dictionary.entry(hash).or_default().insert(format!("/{asset}"), body.into());
            }
        } else if name.ends_with(".wasm") && is_hashed_asset(&name) {
            modules.push(name);
        }
    }
    if by_dictionary.is_empty() {
        return DictionaryCompressed::default();
    }
    for name in modules {
        let Ok(bytes) = std::fs::read(dir.join(&name)) else { continue };
        let hash = jobdeck_precompress::dictionary_hash(&bytes);
        if let Some(bodies) = by_dictionary.remove(&hash) {
            return DictionaryCompressed {
                dictionary_path: format!("/{name}"),
                available: format!(":{}:", base64(&hash)),
                bodies,
            };
        }
    }
    tracing::warn!("the console's dcb files name a dictionary the console does not have; they are not served");
    DictionaryCompressed::default()
}

/// The brotli bytes the build wrote next to an asset, if it did. The build
/// writes them last, after every file is final, and a hashed name changes
/// with every build of that file, so the two cannot belong to different
/// builds.
fn built_brotli(asset: &Path) -> Option<Vec<u8>> {
    let mut name = asset.file_name()?.to_os_string();
    name.push(".br");
    std::fs::read(asset.with_file_name(name)).ok().filter(|bytes| !bytes.is_empty())
}

fn compress(asset: &Path) -> Option<Vec<u8>> {
    let raw = std::fs::read(asset).ok()?;
    let mut compressed = Vec::with_capacity(raw.len() / 3);
    brotli::BrotliCompress(&mut &raw[..], &mut compressed, &brotli_params()).ok()?;
    Some(compressed)
}

/// The encoder settings for precompressed assets.
pub fn brotli_params() -> brotli::enc::BrotliEncoderParams {
    brotli::enc::BrotliEncoderParams { quality: BROTLI_QUALITY as i32, lgwin: 22, ..Default::default() }
}

/// Whether the request's `Accept-Encoding` lists `coding` without refusing it.
fn accepts_coding(req: &Request, coding: &str) -> bool {
    req.headers()
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|listed| {
            let mut parts = listed.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            name.eq_ignore_ascii_case(coding) && !refused
        })
}

fn precompressed_response(path: &str, body: bytes::Bytes, coding: &'static str) -> Response {
    let content_type = match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        _ => "application/octet-stream",
    };
    let mut response = Response::new(Body::from(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    response
}

/// Trunk names built files `<stem>-<hash>.<ext>` (and `<stem>-<hash>_bg.wasm`),
/// the hash a 64-bit number in hex without leading zeros: 16 digits, or
/// fewer for one build in sixteen (`main-e6a99db0c375c9e.css` was seen). Such
/// a name changes whenever the content does. Fewer than 12 digits (one build
/// in 65,536) is taken for part of a name.
fn is_hashed_asset(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or("");
    let stem = file.split('.').next().unwrap_or("");
    let stem = stem.strip_suffix("_bg").unwrap_or(stem);
    match stem.rsplit_once('-') {
        Some((_, hash)) => (12..=16).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        None => false,
    }
}

/// A missing file with one of these extensions is a 404, not the app: a
/// browser asking for a script or a pack of modules must never get HTML
/// back.
fn looks_like_asset(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or("");
    matches!(
        file.rsplit_once('.').map(|(_, ext)| ext),
        Some("js" | "wasm" | "css" | "map" | "png" | "svg" | "ico" | "woff2" | "json" | "txt" | "bin" | "br")
    )
}

/// The policy for console pages: nothing but this origin, and inline scripts
/// only when their hash is listed (trunk's bootstrap script).
fn content_security_policy(index_html: &str) -> String {
    let mut script_src = String::from("'self' 'wasm-unsafe-eval'");
    for script in inline_scripts(index_html) {
        script_src.push_str(" 'sha256-");
        script_src.push_str(&base64(&Sha256::digest(script.as_bytes())));
        script_src.push('\'');
    }
    format!(
        "default-src 'self'; script-src {script_src}; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// The bodies of `<script>` elements that have no `src`.
fn inline_scripts(html: &str) -> Vec<&str> {
    let mut scripts = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<script") {
        let after = &rest[start..];
        let Some(tag_end) = after.find('>') else { break };
        let tag = &after[..tag_end];
        let body_start = tag_end + 1;
        let Some(close) = after[body_start..].find("</script>") else { break };
        if !tag.contains(" src=") {
            scripts.push(&after[body_start..body_start + close]);
        }
        rest = &after[body_start + close..];
    }
    scripts
}

/// Standard base64 with padding, as CSP hash sources need.
fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(TABLE[(n >> shift) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_asset_names() {
        for (path, hashed) in [
            ("/jobdeck-console-0123456789abcdef.js", true),
            ("/jobdeck-console-0123456789abcdef_bg.wasm", true),
            ("/style-fedcba9876543210.css", true),
            // A hash that began with a zero digit.
            ("/jobdeck-console-fad539f0209e900_bg.wasm", true),
            ("/main-e6a99db0c375c9e.css", true),
            ("/index.html", false),
            ("/favicon.ico", false),
            ("/jobs/train-01", false),
            ("/x-0123.js", false),
        ] {
            assert_eq!(is_hashed_asset(path), hashed, "{path}");
        }
    }

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (input, output) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), output);
        }
    }

    #[test]
    fn policy_lists_inline_scripts_only() {
        let html = r#"<script src="/a.js"></script><script type="module">init()</script>"#;
        assert_eq!(inline_scripts(html), vec!["init()"]);
        let policy = content_security_policy(html);
        let expected = base64(&Sha256::digest(b"init()"));
        assert!(policy.contains(&format!("'sha256-{expected}'")), "{policy}");
        assert!(policy.contains("object-src 'none'"));
    }
}
