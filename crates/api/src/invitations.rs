//! Invitations (Jobdeck extensions): how an admin lets a teammate in
//! without a shell on the server.
//!
//! An admin makes an invitation with a role (`POST /invitations`) and sends
//! its link, `<console>/invite#code=…`; the code is in the fragment, so it
//! never reaches a server's log. The teammate opens it and either signs in
//! through the workspace's identity provider (the invitation binds to the
//! identity the provider returns, which must still be one the allowed
//! domains or groups admit) or, without one, picks a name and gets a local
//! account and a personal token. An invitation works once, until it
//! expires or an admin withdraws it.

use serde::{Deserialize, Serialize};

use crate::decode::Decode;
use crate::Role;

/// An invitation's lifetime when the request does not say, in days.
pub const INVITATION_DEFAULT_DAYS: u32 = 7;
/// The longest an invitation may stay open, in days.
pub const INVITATION_MAX_DAYS: u32 = 30;
/// The longest note an invitation may carry.
pub const INVITATION_NOTE_MAX_LEN: usize = 200;
/// The longest user name.
pub const USER_NAME_MAX_LEN: usize = 64;
/// The console's page an invitation link opens.
pub const INVITATION_PAGE: &str = "/invite";

/// `POST /invitations`: a new invitation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct InvitationCreate {
    /// The role the teammate gets.
    pub role: Role,
    /// Whom it is for (`bob@example.com`), shown in the list; may be empty.
    #[serde(default)]
    pub note: String,
    /// Days it stays open: 1 to [`INVITATION_MAX_DAYS`]; absent,
    /// [`INVITATION_DEFAULT_DAYS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
}

impl InvitationCreate {
    pub fn days(&self) -> u32 {
        self.expires_in_days.unwrap_or(INVITATION_DEFAULT_DAYS)
    }

    /// The rules of a new invitation, one message per broken rule by field.
    pub fn problems(&self) -> crate::FieldErrors {
        let mut problems = crate::FieldErrors::new();
        if self.note.chars().count() > INVITATION_NOTE_MAX_LEN {
            problems.entry("note".into()).or_default().push(format!("at most {INVITATION_NOTE_MAX_LEN} characters"));
        }
        if self.note.chars().any(char::is_control) {
            problems.entry("note".into()).or_default().push("no control characters (line breaks, tabs)".into());
        }
        if !(1..=INVITATION_MAX_DAYS).contains(&self.days()) {
            problems.entry("expires_in_days".into()).or_default().push(format!("from 1 to {INVITATION_MAX_DAYS} days"));
        }
        problems
    }
}

/// Where an invitation stands at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum InvitationState {
    /// It still lets someone in.
    #[default]
    Open,
    /// Someone came in with it.
    Used,
    Expired,
    /// An admin took it back.
    Withdrawn,
}

/// One invitation as `GET /invitations` lists it, never its code.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvitationInfo {
    /// The number `DELETE /invitations/{id}` takes.
    pub id: i64,
    pub role: Role,
    #[serde(default)]
    pub note: String,
    /// The admin who made it; `None` once that user is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// Unix milliseconds, as every time here.
    pub created_at: i64,
    pub expires_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<i64>,
    /// Who came in with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdrawn_at: Option<i64>,
    /// Where it stands at the time of the answer.
    pub state: InvitationState,
}

impl InvitationInfo {
    /// Where the invitation stands at `now`.
    pub fn state_at(&self, now: i64) -> InvitationState {
        if self.used_at.is_some() {
            InvitationState::Used
        } else if self.withdrawn_at.is_some() {
            InvitationState::Withdrawn
        } else if self.expires_at <= now {
            InvitationState::Expired
        } else {
            InvitationState::Open
        }
    }
}

/// `GET /invitations`: every invitation, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvitationList {
    pub invitations: Vec<InvitationInfo>,
}

/// `POST /invitations`'s answer: the code and the link, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedInvitation {
    pub code: String,
    /// The link to send: the console's invitation page with the code in
    /// the fragment. Relative (`/invite#code=…`) when the server does not
    /// know its public address (`[auth] public_url`).
    pub link: String,
    pub info: InvitationInfo,
}

/// `POST /invitations/check` and `POST /invitations/redeem` (no token
/// needed): the code from the link, and for a local account the name the
/// teammate picks.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct InvitationRedeem {
    pub code: String,
    #[serde(default)]
    pub name: String,
}

/// `POST /invitations/check`'s answer: what the invitation page says
/// before the teammate accepts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvitationPreview {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invited_by: Option<String>,
    pub expires_at: i64,
    /// Present when the teammate accepts by signing in through the
    /// workspace's identity provider rather than by picking a name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single_sign_on: Option<crate::SingleSignOnMethod>,
}

/// `POST /invitations/redeem`'s answer: the new local account and its
/// personal token, shown this once; the console trades it for a session.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RedeemedInvitation {
    pub user: String,
    pub role: Role,
    pub token: crate::CreatedToken,
}

/// The rules of a user name a person picks: 1 to [`USER_NAME_MAX_LEN`]
/// letters, digits and `._@+-`, starting with a letter or digit. (Names
/// an identity provider suggests are cleaned to the same characters.)
/// Whether `c` may be in a user's name: an ASCII letter or digit, or one
/// of `._@+-` (a name starts with a letter or a digit).
pub fn is_user_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._@+-".contains(c)
}

pub fn user_name_problems(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if name.is_empty() || name.chars().count() > USER_NAME_MAX_LEN {
        problems.push(format!("1 to {USER_NAME_MAX_LEN} characters"));
    }
    if !name.chars().all(is_user_name_char) {
        problems.push("only letters, digits and . _ @ + -".into());
    }
    if name.chars().next().is_some_and(|c| !c.is_ascii_alphanumeric()) {
        problems.push("starts with a letter or a digit".into());
    }
    problems
}

/// The invitation code in a link's fragment (`#code=…`), if any.
pub fn code_from_fragment(fragment: &str) -> Option<&str> {
    fragment.trim_start_matches('#').split('&').find_map(|pair| pair.strip_prefix("code=")).filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invitation_is_open_until_used_withdrawn_or_expired() {
        let open = InvitationInfo { expires_at: 100, ..InvitationInfo::default() };
        assert_eq!(open.state_at(99), InvitationState::Open);
        assert_eq!(open.state_at(100), InvitationState::Expired);
        let used = InvitationInfo { used_at: Some(5), withdrawn_at: Some(6), ..open.clone() };
        assert_eq!(used.state_at(200), InvitationState::Used, "used wins: it says who came in");
        assert_eq!(InvitationInfo { withdrawn_at: Some(5), ..open }.state_at(0), InvitationState::Withdrawn);
    }

    #[test]
    fn a_new_invitation_is_bounded() {
        assert!(InvitationCreate::default().problems().is_empty());
        let bad = InvitationCreate { note: "a\nb".into(), expires_in_days: Some(31), ..InvitationCreate::default() };
        let problems = bad.problems();
        assert!(problems.contains_key("note") && problems.contains_key("expires_in_days"), "{problems:?}");
        assert!(InvitationCreate { expires_in_days: Some(0), ..InvitationCreate::default() }.problems().len() == 1);
    }

    #[test]
    fn user_names_are_plain() {
        for fine in ["bob", "ann.lee@example.com", "r2-d2", "x_1+tag"] {
            assert!(user_name_problems(fine).is_empty(), "{fine}");
        }
        for (bad, why) in [
            ("", "1 to 64"),
            ("-rf", "starts with"),
            ("../etc", "only letters"),
            ("a b", "only letters"),
            ("bob\u{202e}", "only letters"),
            ("x\n", "only letters"),
        ] {
            let problems = user_name_problems(bad);
            assert!(problems.iter().any(|p| p.contains(why)), "{bad:?}: {problems:?}");
        }
        assert!(!user_name_problems(&"x".repeat(65)).is_empty());
    }

    #[test]
    fn the_code_comes_from_the_fragment() {
        assert_eq!(code_from_fragment("#code=abc"), Some("abc"));
        assert_eq!(code_from_fragment("#x=1&code=abc"), Some("abc"));
        assert_eq!(code_from_fragment("#code="), None);
        assert_eq!(code_from_fragment(""), None);
    }
}
