//! One log line per API request: its method, its route template, the
//! status and latency of its answer and, for a 500, the cause.
//!
//! The route is the template the router matched (`/api/v2/jobs/{id}`),
//! never the address: an address holds job names, secret names and
//! queries, which a log shared with an operator must not. A request no
//! route matched is logged as `(no route)`. The console's own files are
//! not logged; a page load asks for a hundred of them.

use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::{Request, Response};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{MakeSpan, OnResponse, TraceLayer};
use tracing::Span;

use crate::http::error::InternalCause;

/// The layer that writes the request log, for the API router.
pub fn layer() -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>, RequestSpan, (), LogAnswer, (), (), ()> {
    TraceLayer::new_for_http()
        .make_span_with(RequestSpan)
        .on_request(())
        .on_response(LogAnswer)
        .on_body_chunk(())
        .on_eos(())
        .on_failure(())
}

/// A span per request holding its method and route, so the answer's line
/// and anything logged while handling it name the request.
#[derive(Clone, Copy, Debug)]
pub struct RequestSpan;

impl<B> MakeSpan<B> for RequestSpan {
    fn make_span(&mut self, request: &Request<B>) -> Span {
        let route = request.extensions().get::<MatchedPath>().map_or("(no route)", MatchedPath::as_str);
        // At error level, so a 500's line names its request at every log
        // level (`JOBDECK_LOG=warn` keeps it).
        tracing::error_span!("request", method = %request.method(), route = %route)
    }
}

/// Writes the answer's line: status and latency, and the cause of a 500.
#[derive(Clone, Copy, Debug)]
pub struct LogAnswer;

impl<B> OnResponse<B> for LogAnswer {
    fn on_response(self, response: &Response<B>, latency: Duration, _span: &Span) {
        let status = response.status().as_u16();
        let latency_ms = format!("{:.1}", latency.as_secs_f64() * 1000.0);
        match response.extensions().get::<InternalCause>() {
            // Quoted and escaped (`?`): a cause may carry text from a
            // request or a stored row, and a line break in it must not
            // forge a line of its own.
            Some(InternalCause(cause)) => tracing::error!(status, %latency_ms, ?cause, "answered"),
            None if response.status().is_server_error() => tracing::warn!(status, %latency_ms, "answered"),
            None => tracing::info!(status, %latency_ms, "answered"),
        }
    }
}
