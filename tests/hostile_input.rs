//! Hostile input against the real server over real sockets (issue 20): what
//! an in-process router test cannot show, such as how a client that writes a
//! whole oversized body before reading sees the answer.

use jobdeck_e2e::Server;

/// Over the 4 MiB limit.
const TEN_MB: usize = 10 * 1000 * 1000;

/// Posts `body` to `/jobs`, with a Content-Length when `sized`, else chunked.
fn post(server: &Server, body: &[u8], sized: bool) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let request = agent
        .post(&server.api_url("/jobs"))
        .header("Authorization", &format!("Bearer {}", server.admin_token))
        .header("Content-Type", "application/json");
    let mut reader = body;
    let response = if sized { request.send(body) } else { request.send(ureq::SendBody::from_reader(&mut reader)) }
        .unwrap_or_else(|e| panic!("sized={sized}: the client must read an answer, not a broken connection: {e}"));
    let status = response.status().as_u16();
    (status, response.into_body().read_to_string().unwrap_or_default())
}

/// A body over the limit is refused with 413 from its `Content-Length`,
/// before it is read, and the client (which writes the whole body before it
/// reads) still gets that answer; one without a length is cut at the limit
/// with the same answer. The server keeps serving.
#[test]
fn an_oversized_body_gets_a_413_the_client_can_read() {
    let server = Server::start_api_with_config("");
    let body = vec![b'a'; TEN_MB];
    // With a Content-Length.
    let (status, text) = post(&server, &body, true);
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("\"code\":\"payload_too_large\"") && text.contains("4194304"), "{text}");
    // Chunked, with no length to go by.
    let (status, text) = post(&server, &body, false);
    assert_eq!(status, 413, "{text}");
    let (status, _) = server.call("GET", "/jobs", &server.admin_token, None);
    assert_eq!(status, 200, "the server still answers");
}

/// A client without a token that streams a body of unknown length (chunked)
/// is refused before its body is read: the 401 arrives while the body is
/// still unfinished. Before, the server read up to 4 MiB of it first, for
/// anyone.
#[test]
fn an_anonymous_chunked_body_is_refused_before_it_is_read() {
    use std::io::{Read, Write};
    let server = Server::start_api_with_config("");
    let address = server.base_url.trim_start_matches("http://").to_string();
    let mut socket = std::net::TcpStream::connect(&address).unwrap();
    write!(
        socket,
        "POST /api/v2/jobs HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n5\r\n{{\"a\":\r\n"
    )
    .unwrap();
    socket.flush().unwrap();
    // The body is never finished: only an answer that did not wait for it
    // arrives. The timeout bounds a failure, it does not pace the test.
    socket.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let mut answer = [0u8; 64];
    let read = socket.read(&mut answer).expect("an answer before the body ends");
    let head = String::from_utf8_lossy(&answer[..read]);
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
}

/// Reads from `socket` until the server closes it (end of stream or a
/// reset); the read timeout bounds a failure, it does not pace the test.
/// Returns what arrived before.
fn read_until_closed(socket: &mut std::net::TcpStream) -> Result<Vec<u8>, String> {
    use std::io::Read;
    socket.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let mut got = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match socket.read(&mut buffer) {
            Ok(0) => return Ok(got),
            Ok(n) => got.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(got),
            Err(e) => return Err(format!("still open after 60 s ({e}); got {:?}", String::from_utf8_lossy(&got))),
        }
    }
}

/// A client that sends its headers a byte at a time and never finishes
/// (slowloris), and one that stays connected without asking anything more,
/// are both closed after `limits.idle_timeout`; the server goes on
/// answering everyone else.
#[test]
fn slow_and_idle_connections_are_closed() {
    use std::io::Write;
    let server = Server::start_api_with_config("[limits]\nidle_timeout = \"1s\"\n");
    let address = server.base_url.trim_start_matches("http://").to_string();

    let mut slow = std::net::TcpStream::connect(&address).unwrap();
    write!(slow, "GET /api/v2/jobs HTTP/1.1\r\nHost: {address}\r\nX-Slow: ").unwrap();
    let got = read_until_closed(&mut slow).expect("the slow client is closed");
    let head = String::from_utf8_lossy(&got);
    assert!(head.is_empty() || head.starts_with("HTTP/1.1 408"), "{head}");

    let mut idle = std::net::TcpStream::connect(&address).unwrap();
    write!(
        idle,
        "GET /api/v2/jobs HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\r\n",
        server.admin_token
    )
    .unwrap();
    let got = read_until_closed(&mut idle).expect("the idle connection is closed after its answer");
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"), "it was answered first");

    assert_eq!(server.call("GET", "/jobs", &server.admin_token, None).0, 200);
}

/// With `limits.connections = 2`, a third connection waits in the
/// kernel's queue, unanswered, until one of the first two closes; then it
/// is served.
#[test]
fn connections_over_the_bound_wait_until_one_closes() {
    use std::io::{Read, Write};
    let server = Server::start_api_with_config("[limits]\nconnections = 2\n");
    let address = server.base_url.trim_start_matches("http://").to_string();
    let request =
        format!("GET /api/v2/jobs HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\r\n", server.admin_token);
    let answered = |socket: &mut std::net::TcpStream| {
        socket.write_all(request.as_bytes()).unwrap();
        socket.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
        let mut head = [0u8; 12];
        socket.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
    };
    // Two kept-alive connections, each answered once and still open.
    let mut first = std::net::TcpStream::connect(&address).unwrap();
    answered(&mut first);
    let mut second = std::net::TcpStream::connect(&address).unwrap();
    answered(&mut second);

    let mut third = std::net::TcpStream::connect(&address).unwrap();
    third.write_all(request.as_bytes()).unwrap();
    // Not answered while both places are taken (a broken bound answers in
    // milliseconds; a busy machine can only make this pass, never fail).
    third.set_read_timeout(Some(std::time::Duration::from_secs(1))).unwrap();
    let mut head = [0u8; 12];
    let early = third.read(&mut head);
    assert!(early.is_err(), "the third connection was served while two were open: {early:?}");

    drop(first);
    third.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    third.read_exact(&mut head).expect("served once a place is free");
    assert_eq!(&head, b"HTTP/1.1 200");
}
