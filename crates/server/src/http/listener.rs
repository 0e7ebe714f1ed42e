//! The accept loop: HTTP/1.1 connections served by hyper with the bounds
//! `axum::serve` does not set (`[limits]`, docs/security.md "Requests"):
//! a connection must send a request's headers within `idle_timeout`, and
//! is closed when it sits that long between requests; at most
//! `connections` are open at once, and more wait in the kernel's queue.

use std::future::Future;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use jobdeck_core::config::LimitsConfig;

/// Serves `app` on `listener` until `shutdown` completes, then lets every
/// open connection finish its current request and waits for them.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: &LimitsConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.connections));
    let (closing_tx, closing_rx) = watch::channel(false);
    let idle = limits.idle_timeout;
    tokio::pin!(shutdown);
    loop {
        // A free place first, then a connection: a full server leaves new
        // ones in the kernel's queue instead of taking and dropping them.
        let place = tokio::select! {
            place = open.clone().acquire_owned() => place.expect("the semaphore is never closed"),
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait a moment
                    // rather than spin, as axum::serve does.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        // Each request carries the peer's address (the audit log's source).
        let service = TowerToHyperService::new(tower::ServiceExt::map_request(
            app.clone(),
            move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            },
        ));
        let mut closing = closing_rx.clone();
        tokio::spawn(async move {
            let _place = place;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(idle).keep_alive(true);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "connection ended");
                    }
                    return;
                }
                _ = closing.wait_for(|closing| *closing) => connection.as_mut().graceful_shutdown(),
            }
            let _ = connection.await;
        });
    }
    drop(listener);
    let _ = closing_tx.send(true);
    // Every connection holds a place until it ends: all places free means
    // all connections are done.
    let _ = open.acquire_many(limits.connections as u32).await;
    Ok(())
}
