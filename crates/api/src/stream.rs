//! The event stream's messages (`GET /stream`, docs/api.md "Live changes").
//!
//! The stream is Server-Sent Events. Every message is a snapshot of what it
//! names — a job as `GET /jobs/{id}` answers it, a job's replicas or events
//! whole, a log's lines with their numbers — so a client replaces what it
//! holds with it: a message applied twice, or a late one, cannot leave it
//! with a wrong state, and resuming after a cut needs no history of values.

use serde::{Deserialize, Serialize};

use crate::{Decode, JobEvent, LogLine, Replica};

/// The name of a message (the SSE `event:` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMessage {
    /// The stream is open and nothing was asked to resume: load what the
    /// page shows, and apply what follows.
    Open,
    /// The stream resumed after `Last-Event-ID` with nothing missed.
    Resumed,
    /// Changes were missed (the cut was longer than the server keeps, the
    /// server restarted, or the client read too slowly): reload what the
    /// page shows, then apply what follows.
    Resync,
    /// A job changed or was created: the job (`LeptonJob`).
    Job,
    /// A job was deleted ([`StreamJobRef`]).
    JobDeleted,
    /// A job's replicas ([`StreamReplicas`]).
    Replicas,
    /// A job's events ([`StreamEvents`]).
    Events,
    /// One event of a job, new or seen again (`GET /jobs/{id}/events` as a
    /// stream; a [`JobEvent`]).
    Event,
    /// A job's metrics have new points ([`StreamJobRef`]); read them with
    /// `GET /jobs/{id}/metrics`.
    Metrics,
    /// New lines of a followed log ([`StreamLog`]).
    Log,
    /// The stream ends, and why ([`StreamEnd`]): the token was revoked or
    /// expired. The client signs in again; reconnecting with the same
    /// token would be refused.
    End,
}

impl StreamMessage {
    pub const ALL: [StreamMessage; 11] = [
        Self::Open,
        Self::Resumed,
        Self::Resync,
        Self::Job,
        Self::JobDeleted,
        Self::Replicas,
        Self::Events,
        Self::Event,
        Self::Metrics,
        Self::Log,
        Self::End,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Resumed => "resumed",
            Self::Resync => "resync",
            Self::Job => "job",
            Self::JobDeleted => "job_deleted",
            Self::Replicas => "replicas",
            Self::Events => "events",
            Self::Event => "event",
            Self::Metrics => "metrics",
            Self::Log => "log",
            Self::End => "end",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

/// A message naming a job.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StreamJobRef {
    pub job: String,
}

/// A job's replicas, as `GET /jobs/{id}/replicas` lists them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StreamReplicas {
    pub job: String,
    pub replicas: Vec<Replica>,
}

/// A job's events, as `GET /jobs/{id}/events` lists them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StreamEvents {
    pub job: String,
    pub events: Vec<JobEvent>,
}

/// Lines of a followed log: those after the last one sent (or after
/// `log_from` when the stream opened), as a line range answers them. A
/// client keeps the lines whose numbers it does not hold yet.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StreamLog {
    pub job: String,
    pub replica: String,
    /// How many lines the log holds now.
    pub total_lines: u64,
    /// The attempt has ended and every line has been sent.
    pub ended: bool,
    pub lines: Vec<LogLine>,
}

/// Why the stream ends.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StreamEnd {
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_name_reads_back() {
        for message in StreamMessage::ALL {
            assert_eq!(StreamMessage::parse(message.as_str()), Some(message));
        }
        assert_eq!(StreamMessage::parse("nothing"), None);
    }
}
