//! What changed in the store, in the order it was written, for the event
//! stream (`GET /stream`, docs/api.md "Live changes").
//!
//! Every write of a job, its replicas, its events or its metrics publishes
//! a [`Change`] after its transaction commits. A change only names what
//! changed: whoever follows the feed reads the current state of it, so a
//! change seen twice, or seen after a later one, still leaves a reader with
//! the true state. The feed keeps the newest [`WINDOW`] changes, numbered
//! from 1 since this process started; a reader that fell further behind
//! (a slow client, a cut longer than the window, a restart) is told it
//! missed some ([`Since::Missed`]) and reloads what it shows. The window is
//! the only memory the feed holds, whatever its readers do.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use jobdeck_api::Visibility;
use tokio::sync::watch;

/// How many changes the feed keeps for readers that fall behind or come
/// back after a cut.
pub const WINDOW: usize = 4096;

/// One change, naming what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A job's record (state, counts, spec, owner) changed, or it was created.
    Job(String),
    /// A job was deleted: who could see it is kept, since it can no longer
    /// be read.
    JobDeleted { id: String, created_by: String, visibility: Visibility },
    /// One of a job's replicas changed or started.
    Replicas(String),
    /// A job's events changed (a new one, or one seen again).
    Events(String),
    /// A job's metrics have new points.
    Metrics(String),
    /// Tokens were revoked: streams check theirs again.
    TokensRevoked,
}

impl Change {
    /// The job the change is about, if any.
    pub fn job_id(&self) -> Option<&str> {
        match self {
            Change::Job(id) | Change::Replicas(id) | Change::Events(id) | Change::Metrics(id) => Some(id),
            Change::JobDeleted { id, .. } => Some(id),
            Change::TokensRevoked => None,
        }
    }
}

/// The changes a reader has not seen, or that it missed some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// Every change after the reader's cursor, with its number, oldest first.
    Changes(Vec<(u64, Change)>),
    /// Changes after the cursor have left the window (or the cursor is from
    /// the future: another process's numbering).
    Missed,
}

/// The feed: a bounded window of numbered changes and a signal of the
/// newest number. Cheap to clone.
#[derive(Clone)]
pub struct ChangeFeed {
    inner: Arc<Inner>,
}

struct Inner {
    /// This feed's name, random: a cursor of another feed (another process,
    /// or one before a restart) is told apart by it.
    origin: String,
    window: Mutex<Window>,
    newest: watch::Sender<u64>,
    capacity: usize,
}

struct Window {
    /// The number of the newest change (0 before the first).
    newest: u64,
    changes: VecDeque<(u64, Change)>,
}

impl Default for ChangeFeed {
    fn default() -> Self {
        Self::with_capacity(WINDOW)
    }
}

impl ChangeFeed {
    /// A feed keeping `capacity` changes (tests make it small).
    pub fn with_capacity(capacity: usize) -> Self {
        let (newest, _) = watch::channel(0);
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).expect("the operating system has no random source");
        Self {
            inner: Arc::new(Inner {
                origin: random.iter().map(|b| format!("{b:02x}")).collect(),
                window: Mutex::new(Window { newest: 0, changes: VecDeque::with_capacity(capacity.min(WINDOW)) }),
                newest,
                capacity: capacity.max(1),
            }),
        }
    }

    /// Adds changes, in order, and wakes every reader.
    pub fn publish(&self, changes: impl IntoIterator<Item = Change>) {
        let newest = {
            let mut window = self.inner.window.lock().unwrap_or_else(|p| p.into_inner());
            for change in changes {
                window.newest += 1;
                let number = window.newest;
                if window.changes.len() == self.inner.capacity {
                    window.changes.pop_front();
                }
                window.changes.push_back((number, change));
            }
            window.newest
        };
        self.inner.newest.send_replace(newest);
    }

    /// This feed's name (16 hex digits), which cursors carry.
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }

    /// The number of the newest change.
    pub fn newest(&self) -> u64 {
        *self.inner.newest.borrow()
    }

    /// A signal that changes when a change is published.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.inner.newest.subscribe()
    }

    /// The changes after `cursor` (the number of the last one a reader saw).
    pub fn since(&self, cursor: u64) -> Since {
        let window = self.inner.window.lock().unwrap_or_else(|p| p.into_inner());
        if cursor > window.newest {
            return Since::Missed;
        }
        let oldest_kept = window.changes.front().map_or(window.newest + 1, |(number, _)| *number);
        if cursor + 1 < oldest_kept {
            return Since::Missed;
        }
        Since::Changes(window.changes.iter().filter(|(number, _)| *number > cursor).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_gets_every_change_after_its_cursor_in_order() {
        let feed = ChangeFeed::with_capacity(8);
        assert_eq!(feed.since(0), Since::Changes(vec![]));
        feed.publish([Change::Job("a".into()), Change::Events("a".into())]);
        feed.publish([Change::Replicas("b".into())]);
        assert_eq!(feed.newest(), 3);
        assert_eq!(
            feed.since(1),
            Since::Changes(vec![(2, Change::Events("a".into())), (3, Change::Replicas("b".into()))])
        );
        assert_eq!(feed.since(3), Since::Changes(vec![]));
    }

    #[test]
    fn a_reader_behind_the_window_or_from_another_numbering_missed_some() {
        let feed = ChangeFeed::with_capacity(2);
        feed.publish((0..5).map(|i| Change::Job(i.to_string())));
        // Kept: 4 and 5. A cursor of 3 still sees everything after it.
        assert_eq!(feed.since(3), Since::Changes(vec![(4, Change::Job("3".into())), (5, Change::Job("4".into()))]));
        assert_eq!(feed.since(2), Since::Missed, "change 3 has left the window");
        assert_eq!(feed.since(9), Since::Missed, "a cursor past the newest is another process's");
    }

    #[tokio::test]
    async fn publishing_wakes_a_reader() {
        let feed = ChangeFeed::default();
        let mut signal = feed.watch();
        let waiting = tokio::spawn(async move {
            signal.changed().await.unwrap();
            *signal.borrow()
        });
        feed.publish([Change::Metrics("a".into())]);
        assert_eq!(waiting.await.unwrap(), 1);
    }
}
