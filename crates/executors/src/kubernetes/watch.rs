//! The view of one kind of object, kept by kube-runtime's `watcher`: it
//! lists (page by page), watches from the list's resource version, resumes
//! after a watch ends, lists again when the version is too old (`410 Gone`),
//! and backs off after failures. Its stream is turned into `Change`s here,
//! and each list is delivered whole, so the receiver can notice objects that
//! disappeared while no watch was open.

use std::fmt::Debug;

use futures_util::StreamExt;
use kube::api::Api;
use kube::runtime::watcher::{self, watcher};
use kube::runtime::WatchStreamExt;
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
    fn watcher_config(&self) -> watcher::Config {
        let mut config = watcher::Config::default();
        if let Some(labels) = &self.labels {
            config = config.labels(labels);
        }
        if let Some(fields) = &self.fields {
            config = config.fields(fields);
        }
        config
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
    let stream = watcher(api, selector.watcher_config()).default_backoff();
    futures_util::pin_mut!(stream);
    // The objects of a list in progress, delivered whole at its end.
    let mut listing: Vec<K> = Vec::new();
    while let Some(event) = stream.next().await {
        let change = match event {
            Ok(watcher::Event::Init) => {
                listing.clear();
                continue;
            }
            Ok(watcher::Event::InitApply(object)) => {
                listing.push(object);
                continue;
            }
            Ok(watcher::Event::InitDone) => Change::Listed(std::mem::take(&mut listing)),
            Ok(watcher::Event::Apply(object)) => Change::Applied(object),
            Ok(watcher::Event::Delete(object)) => Change::Deleted(object),
            // The watcher lists or watches again after its back-off.
            Err(e) => {
                tracing::warn!("kubernetes: watching {what}: {e}");
                continue;
            }
        };
        if tx.send(change).await.is_err() {
            return;
        }
    }
}
