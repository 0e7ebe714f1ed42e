//! The audit log (a Jobdeck extension): every change to the workspace,
//! every sign-in and every refused attempt, with who, when, what and from
//! where (`GET /audit`, admins only; docs/teams.md, "Audit log").

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum AuditOutcome {
    /// It was done.
    #[default]
    Ok,
    /// It was refused (not signed in, not allowed, invalid, in conflict)
    /// or failed; `detail` says how.
    Refused,
}

impl AuditOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOutcome::Ok => "ok",
            AuditOutcome::Refused => "refused",
        }
    }

    pub fn parse(text: &str) -> Option<AuditOutcome> {
        [AuditOutcome::Ok, AuditOutcome::Refused].into_iter().find(|o| o.as_str() == text)
    }
}

/// One entry of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    /// Increasing: `before=<id>` pages to older entries.
    pub id: i64,
    /// Unix ms.
    pub time: i64,
    /// Who: a user's name; empty for someone not signed in.
    pub actor: String,
    /// What, as `area.verb`: `job.create`, `job.stop`, `secret.create`,
    /// `token.revoke`, `user.remove`, `quota.set`, `sign_in`,
    /// `sign_in.failed`, … (docs/teams.md lists them).
    pub action: String,
    /// What it was done to: a job's id, a user's or a secret's name; may be
    /// empty.
    pub target: String,
    pub outcome: AuditOutcome,
    /// How it ended, in words: the refusal's status, the reason a sign-in
    /// failed, the role given.
    pub detail: String,
    /// Where from: the address the request came from, or `cli` for the
    /// server's command line.
    pub source: String,
}

/// `GET /audit`: entries newest first; `next` is the `before` of the
/// following page, absent on the last.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditList {
    pub items: Vec<AuditEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<i64>,
}

/// The most entries one page of `GET /audit` holds, and how many when the
/// request does not say.
pub const AUDIT_PAGE_MAX: i64 = 500;
pub const AUDIT_PAGE_DEFAULT: i64 = 100;
