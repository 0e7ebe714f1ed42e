//! List-then-watch of one kind of object, as Kubernetes clients keep a view
//! of the cluster: list (which gives a resource version), then watch from
//! that version; re-watch from the last version seen when a watch ends, and
//! list again when the version is too old (`410 Gone`) or a call fails.
//! Each list is delivered whole, so the receiver can notice objects that
//! disappeared while no watch was open.

use std::fmt::Debug;
use std::time::Duration;

use futures_util::StreamExt;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::Resource;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

/// What a watcher reports.
#[derive(Debug)]
pub enum Change<K> {
    /// A complete list: every object that exists now.
    Listed(Vec<K>),
    /// An object was added or changed.
    Applied(K),
    /// An object was deleted (its last state).
    Deleted(K),
}

/// How long one watch request stays open; the API server's own limit is
/// usually a little longer, so the watch ends on Jobdeck's terms.
const WATCH_TIMEOUT_SECONDS: u32 = 290;

/// Which objects a watch asks for; the API server filters, so the others
/// never travel.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    /// A label selector (`app.kubernetes.io/managed-by=jobdeck`).
    pub labels: Option<String>,
    /// A field selector (`involvedObject.kind=Pod`); each kind of object
    /// supports its own few fields.
    pub fields: Option<String>,
}

impl Selector {
    fn list_params(&self) -> ListParams {
        let mut params = ListParams::default();
        if let Some(labels) = &self.labels {
            params = params.labels(labels);
        }
        if let Some(fields) = &self.fields {
            params = params.fields(fields);
        }
        params
    }

    fn watch_params(&self) -> WatchParams {
        let mut params = WatchParams::default().timeout(WATCH_TIMEOUT_SECONDS);
        if let Some(labels) = &self.labels {
            params = params.labels(labels);
        }
        if let Some(fields) = &self.fields {
            params = params.fields(fields);
        }
        params
    }
}

/// How many changes a watch may be ahead of the controller. When the
/// controller falls behind, the watch stops reading its stream (the API
/// server holds the rest, or ends the watch and it lists again) instead of
/// queueing changes in memory without end.
pub const BUFFER: usize = 64;

/// Watches the objects `api` sees that match `selector`, sending every
/// change to `tx`, until `tx` is closed.
pub async fn run<K>(api: Api<K>, selector: Selector, tx: mpsc::Sender<Change<K>>, what: &'static str)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let mut backoff = Duration::from_millis(250);
    'relist: loop {
        if tx.is_closed() {
            return;
        }
        let mut version = match api.list(&selector.list_params()).await {
            Ok(list) => {
                backoff = Duration::from_millis(250);
                let version = list.metadata.resource_version.clone().unwrap_or_default();
                if tx.send(Change::Listed(list.items)).await.is_err() {
                    return;
                }
                version
            }
            Err(e) => {
                tracing::warn!("kubernetes: cannot list {what}: {e}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
                continue 'relist;
            }
        };
        loop {
            let stream = match api.watch(&selector.watch_params(), &version).await {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::warn!("kubernetes: cannot watch {what}: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    continue 'relist;
                }
            };
            futures_util::pin_mut!(stream);
            let opened = std::time::Instant::now();
            while let Some(event) = stream.next().await {
                let change = match event {
                    Ok(WatchEvent::Added(object)) | Ok(WatchEvent::Modified(object)) => {
                        version = object.meta().resource_version.clone().unwrap_or(version);
                        Change::Applied(object)
                    }
                    Ok(WatchEvent::Deleted(object)) => {
                        version = object.meta().resource_version.clone().unwrap_or(version);
                        Change::Deleted(object)
                    }
                    Ok(WatchEvent::Bookmark(bookmark)) => {
                        version = bookmark.metadata.resource_version;
                        continue;
                    }
                    Ok(WatchEvent::Error(status)) => {
                        if status.code != 410 {
                            tracing::warn!("kubernetes: watching {what} failed: {}", status.message);
                        }
                        continue 'relist;
                    }
                    Err(e) => {
                        tracing::warn!("kubernetes: the watch of {what} broke: {e}");
                        tokio::time::sleep(backoff).await;
                        break;
                    }
                };
                if tx.send(change).await.is_err() {
                    return;
                }
            }
            // A watch the server closes at once must not become a busy loop.
            if opened.elapsed() < Duration::from_secs(1) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}
