//! Why a sign-in through the identity provider did not work, as the server
//! sends it to the console's sign-in page (`/login?problem=CODE`).
//!
//! The page shows the sentence for a code it knows and nothing for any
//! other: anyone can make a link with any query, so free text there would
//! let a stranger put words on Jobdeck's sign-in page ("your account is
//! locked, call …"). The details stay in the server's log.

/// One reason a sign-in through the identity provider ended without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInProblem {
    /// The sign-in's state is unknown, expired or already used.
    Expired,
    /// The provider answered with an error, or would not trade the code.
    ProviderRefused,
    /// The answer names another issuer (RFC 9207).
    OtherIssuer,
    /// The answer failed a check: the ID token (signature, issuer,
    /// audience, expiry, nonce), the access token's hash, userinfo.
    InvalidAnswer,
    /// The provider did not say the claim that names the user here.
    NoUsername,
    /// The allowed domains or groups do not admit the account.
    NotAdmitted,
    /// The provider could not be reached or its answer could not be used.
    Unreachable,
    /// The invitation the sign-in came with is used, expired or withdrawn.
    InvitationUnusable,
    /// The workspace lets new people in only with an invitation
    /// (`auth.oidc.invitation_required`).
    NotInvited,
    /// An admin removed the user; an invitation lets them back.
    Removed,
}

impl SignInProblem {
    pub const ALL: [SignInProblem; 10] = [
        SignInProblem::Expired,
        SignInProblem::ProviderRefused,
        SignInProblem::OtherIssuer,
        SignInProblem::InvalidAnswer,
        SignInProblem::NoUsername,
        SignInProblem::NotAdmitted,
        SignInProblem::Unreachable,
        SignInProblem::InvitationUnusable,
        SignInProblem::NotInvited,
        SignInProblem::Removed,
    ];

    /// The code in the sign-in page's address.
    pub fn code(self) -> &'static str {
        match self {
            SignInProblem::Expired => "expired",
            SignInProblem::ProviderRefused => "provider-refused",
            SignInProblem::OtherIssuer => "other-issuer",
            SignInProblem::InvalidAnswer => "invalid-answer",
            SignInProblem::NoUsername => "no-username",
            SignInProblem::NotAdmitted => "not-admitted",
            SignInProblem::Unreachable => "unreachable",
            SignInProblem::InvitationUnusable => "invitation-unusable",
            SignInProblem::NotInvited => "not-invited",
            SignInProblem::Removed => "removed",
        }
    }

    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.code() == code)
    }

    /// What the sign-in page says.
    pub fn sentence(self) -> &'static str {
        match self {
            SignInProblem::Expired => "This sign-in expired or was already used. Start again.",
            SignInProblem::ProviderRefused => {
                "The identity provider refused the sign-in. Try again, or ask an admin to look at the server's log."
            }
            SignInProblem::OtherIssuer => "The answer came from another identity provider, so nobody was signed in.",
            SignInProblem::InvalidAnswer => {
                "The identity provider's answer did not pass Jobdeck's checks, so nobody was signed in. Ask an admin to look at the server's log."
            }
            SignInProblem::NoUsername => {
                "The identity provider did not say the name you have here; ask an admin to check auth.oidc.username_claim."
            }
            SignInProblem::NotAdmitted => {
                "Your account is not in the e-mail domains or groups this workspace admits. Ask an admin."
            }
            SignInProblem::Unreachable => {
                "The identity provider could not be reached or gave an answer Jobdeck cannot use. Try again, or ask an admin to look at the server's log."
            }
            SignInProblem::InvitationUnusable => {
                "This invitation was already used, has expired or was withdrawn. Ask an admin for a new one."
            }
            SignInProblem::NotInvited => "New people sign in here with an invitation. Ask an admin for one.",
            SignInProblem::Removed => "Your account here was removed. Ask an admin for an invitation to come back.",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_has_its_own_code_and_only_codes_are_read() {
        for problem in SignInProblem::ALL {
            assert_eq!(SignInProblem::from_code(problem.code()), Some(problem));
            assert!(problem.code().bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        }
        assert_eq!(SignInProblem::from_code(SignInProblem::Expired.sentence()), None);
        assert_eq!(SignInProblem::from_code("Your account is locked, call +1 555"), None);
    }
}
