//! Serving the built console: files, SPA fallback, cache headers, CSP and
//! compression.

use crate::common;

use axum::http::{header, Method, StatusCode};
use common::TestApp;

const INDEX: &str = r#"<!doctype html><html><head><script type="module">import init from '/app-0123456789abcdef.js';init();</script></head><body></body></html>"#;

async fn app_with_console() -> (TestApp, tempfile::TempDir) {
    let dist = tempfile::tempdir().unwrap();
    std::fs::write(dist.path().join("index.html"), INDEX).unwrap();
    std::fs::write(dist.path().join("app-0123456789abcdef.js"), "export default function init() {}\n".repeat(200))
        .unwrap();
    let dir = dist.path().to_path_buf();
    let app = TestApp::with_config(move |c| c.console_dir = Some(dir)).await;
    (app, dist)
}

#[tokio::test]
async fn deep_links_outside_the_api_get_the_console() {
    let (app, _dist) = app_with_console().await;
    for path in ["/", "/jobs", "/jobs/abc/replicas", "/login"] {
        let res = app.request(Method::GET, path, None, None).await;
        assert_eq!(res.status, StatusCode::OK, "{path}");
        assert_eq!(res.text(), INDEX, "{path}");
        assert_eq!(res.headers[header::CACHE_CONTROL], "no-cache");
        let csp = res.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("'sha256-"), "the bootstrap script is allowed by hash: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{csp}");
    }
}

/// `lep job list` links each job id to the Lepton dashboard's job page,
/// which for Jobdeck is this server: it lands on the job's replicas.
#[tokio::test]
async fn lepton_dashboard_job_links_land_on_the_job() {
    let (app, _dist) = app_with_console().await;
    let res = app.request(Method::GET, "/compute/jobs/detail/train-4k2x9/replicas/list", None, None).await;
    assert_eq!(res.status, StatusCode::FOUND);
    assert_eq!(res.headers[header::LOCATION], "/jobs/train-4k2x9/replicas");
    let odd = app.request(Method::GET, "/compute/jobs/detail/%0d%0aX:1/replicas/list", None, None).await;
    assert_eq!(odd.status, StatusCode::OK, "not a job id: the console answers");
    assert_eq!(odd.text(), INDEX);
}

#[tokio::test]
async fn hashed_assets_are_immutable_and_compressed() {
    let (app, _dist) = app_with_console().await;
    let res = app.request(Method::GET, "/app-0123456789abcdef.js", None, None).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.headers[header::CACHE_CONTROL], "public, max-age=31536000, immutable");

    let request = axum::http::Request::builder()
        .uri("/app-0123456789abcdef.js")
        .header(header::ACCEPT_ENCODING, "br")
        .body(axum::body::Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.router.clone(), request).await.unwrap();
    assert_eq!(res.headers()[header::CONTENT_ENCODING], "br");
}

#[tokio::test]
async fn missing_assets_and_unknown_api_paths_are_404s_not_html() {
    let (app, _dist) = app_with_console().await;
    let res = app.request(Method::GET, "/missing-0000000000000000.wasm", None, None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    let res = app.request(Method::GET, "/api/v1/jobs", None, None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.json()["code"], "not_found");
}

#[tokio::test]
async fn hashed_assets_are_served_precompressed_with_brotli() {
    let (app, dist) = app_with_console().await;
    let original = std::fs::read(dist.path().join("app-0123456789abcdef.js")).unwrap();
    let fetch = || async {
        let request = axum::http::Request::builder()
            .uri("/app-0123456789abcdef.js")
            .header(header::ACCEPT_ENCODING, "gzip, br")
            .body(axum::body::Body::empty())
            .unwrap();
        let res = tower::ServiceExt::oneshot(app.router.clone(), request).await.unwrap();
        let headers = res.headers().clone();
        let body = http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes();
        (headers, body)
    };
    let mut expected = Vec::new();
    brotli::BrotliCompress(&mut &original[..], &mut expected, &jobdeck_server::http::console::brotli_params()).unwrap();
    // The compression runs in the background after start-up; the answer is
    // brotli either way, and exactly the precompressed bytes once ready.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (headers, body) = fetch().await;
        assert_eq!(headers[header::CONTENT_ENCODING], "br");
        assert_eq!(headers[header::CONTENT_TYPE], "text/javascript");
        let mut decoded = Vec::new();
        brotli::BrotliDecompress(&mut &body[..], &mut decoded).unwrap();
        assert_eq!(decoded, original);
        if body[..] == expected[..] {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never served precompressed");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The build writes each hashed file's brotli next to it
/// (scripts/pack-console.mjs); the server sends those bytes as they are
/// instead of compressing the file again.
#[tokio::test]
async fn the_builds_brotli_is_sent_as_it_is() {
    let dist = tempfile::tempdir().unwrap();
    std::fs::write(dist.path().join("index.html"), INDEX).unwrap();
    let pack = b"JDPK\x00\x00\x00\x00".repeat(100);
    std::fs::write(dist.path().join("pack-0123456789abcdef.bin"), &pack).unwrap();
    // Compressed at a quality the server never uses, so only the build's
    // file can be the answer.
    let mut built = Vec::new();
    let params = brotli::enc::BrotliEncoderParams { quality: 1, ..Default::default() };
    brotli::BrotliCompress(&mut &pack[..], &mut built, &params).unwrap();
    std::fs::write(dist.path().join("pack-0123456789abcdef.bin.br"), &built).unwrap();
    let dir = dist.path().to_path_buf();
    let app = TestApp::with_config(move |c| c.console_dir = Some(dir)).await;

    let fetch = |path: &'static str| {
        let router = app.router.clone();
        async move {
            let request = axum::http::Request::builder()
                .uri(path)
                .header(header::ACCEPT_ENCODING, "br")
                .body(axum::body::Body::empty())
                .unwrap();
            let res = tower::ServiceExt::oneshot(router, request).await.unwrap();
            let (status, headers) = (res.status(), res.headers().clone());
            let body = http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes();
            (status, headers, body)
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, headers, body) = fetch("/pack-0123456789abcdef.bin").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_ENCODING], "br");
        if body[..] == built[..] {
            assert_eq!(headers[header::CONTENT_TYPE], "application/octet-stream");
            assert_eq!(headers[header::CACHE_CONTROL], "public, max-age=31536000, immutable");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the build's brotli was never sent");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // A missing pack is a 404, not the console's page.
    let (status, _, _) = fetch("/pack-fedcba9876543210.bin").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A browser that holds the core module as a compression dictionary (RFC
/// 9842) gets the packs compressed against it; every other request gets
/// brotli, and a body against a dictionary the console does not have is
/// never sent.
#[tokio::test]
async fn packs_go_compressed_against_the_core_to_a_browser_that_holds_it() {
    use base64::Engine;

    let dist = tempfile::tempdir().unwrap();
    std::fs::write(dist.path().join("index.html"), INDEX).unwrap();
    let core: Vec<u8> = (0..20_000u32).flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()).collect();
    let mut pack = b"JDPK".to_vec();
    pack.extend_from_slice(&core[20_000..50_000]);
    std::fs::write(dist.path().join("jobdeck-console-0123456789abcdef_bg.wasm"), &core).unwrap();
    std::fs::write(dist.path().join("pack5-0123456789abcdef.bin"), &pack).unwrap();
    let dcb = jobdeck_precompress::encode(&core, &pack, 5).unwrap();
    std::fs::write(dist.path().join("pack5-0123456789abcdef.bin.dcb"), &dcb).unwrap();
    // A pack compressed against bytes no file of the console holds.
    std::fs::write(dist.path().join("pack6-0123456789abcdef.bin"), &pack).unwrap();
    let stranger = b"not a module of this console".repeat(10);
    let stray = jobdeck_precompress::encode(&stranger, &pack, 5).unwrap();
    std::fs::write(dist.path().join("pack6-0123456789abcdef.bin.dcb"), &stray).unwrap();
    let dir = dist.path().to_path_buf();
    let app = TestApp::with_config(move |c| c.console_dir = Some(dir)).await;

    let fetch = |path: &'static str, accept: &'static str, available: Option<String>| {
        let router = app.router.clone();
        async move {
            let mut request = axum::http::Request::builder().uri(path).header(header::ACCEPT_ENCODING, accept);
            if let Some(available) = available {
                request = request.header("available-dictionary", available);
            }
            let res =
                tower::ServiceExt::oneshot(router, request.body(axum::body::Body::empty()).unwrap()).await.unwrap();
            let headers = res.headers().clone();
            let body = http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes();
            (headers, body)
        }
    };
    let brotli_decoded = |body: &[u8]| {
        let mut decoded = Vec::new();
        brotli::BrotliDecompress(&mut &body[..], &mut decoded).unwrap();
        decoded
    };

    // The server reads the build's files after start-up; the core says it is
    // a dictionary once they are read.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let core_headers = loop {
        let (headers, body) = fetch("/jobdeck-console-0123456789abcdef_bg.wasm", "gzip, br, zstd", None).await;
        assert_eq!(brotli_decoded(&body), core);
        if headers.contains_key("use-as-dictionary") {
            break headers;
        }
        assert!(std::time::Instant::now() < deadline, "the core never became a dictionary");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(core_headers["use-as-dictionary"], r#"match="/pack*""#);

    let hash = jobdeck_precompress::dictionary_hash(&core);
    let available = format!(":{}:", base64::engine::general_purpose::STANDARD.encode(hash));
    let (headers, body) = fetch("/pack5-0123456789abcdef.bin", "gzip, br, zstd, dcb", Some(available.clone())).await;
    assert_eq!(headers[header::CONTENT_ENCODING], "dcb");
    assert_eq!(headers[header::VARY], "accept-encoding, available-dictionary");
    assert_eq!(headers[header::CONTENT_TYPE], "application/octet-stream");
    assert_eq!(headers[header::CACHE_CONTROL], "public, max-age=31536000, immutable");
    assert_eq!(body[..], dcb[..], "the build's bytes, as they are");
    assert_eq!(jobdeck_precompress::decode(&core, &body).unwrap(), pack);

    let other_hash = format!(":{}:", base64::engine::general_purpose::STANDARD.encode([7u8; 32]));
    for (accept, available) in [
        // No dictionary held.
        ("gzip, br, zstd, dcb", None),
        // Another dictionary.
        ("gzip, br, zstd, dcb", Some(other_hash)),
        // The dictionary, but dcb not accepted or refused.
        ("gzip, br, zstd", Some(available.clone())),
        ("gzip, br, dcb;q=0", Some(available.clone())),
    ] {
        let (headers, body) = fetch("/pack5-0123456789abcdef.bin", accept, available.clone()).await;
        assert_eq!(headers[header::CONTENT_ENCODING], "br", "{accept} {available:?}");
        assert_eq!(headers[header::VARY], "accept-encoding, available-dictionary", "{accept} {available:?}");
        assert_eq!(brotli_decoded(&body), pack, "{accept} {available:?}");
    }

    // Served from the file itself (no brotli asked for, as before the
    // server has compressed it), a pack still varies on the dictionary.
    let (headers, body) = fetch("/pack5-0123456789abcdef.bin", "identity", None).await;
    assert!(!headers.contains_key(header::CONTENT_ENCODING), "{headers:?}");
    assert_eq!(headers[header::VARY], "accept-encoding, available-dictionary");
    assert_eq!(body[..], pack[..]);

    let stranger_hash = jobdeck_precompress::dictionary_hash(&stranger);
    let stranger_available = format!(":{}:", base64::engine::general_purpose::STANDARD.encode(stranger_hash));
    let (headers, body) = fetch("/pack6-0123456789abcdef.bin", "br, dcb", Some(stranger_available)).await;
    assert_eq!(headers[header::CONTENT_ENCODING], "br");
    assert_eq!(brotli_decoded(&body), pack);
}
