//! Roles (a Jobdeck extension; Lepton's workspaces have none) and the one
//! rule about who may change a job, which the server enforces and the
//! console follows to offer only the actions that will be accepted.
//!
//! Which role each route needs is the server's authorization table
//! (`crates/server/src/http/access.rs`); docs/teams.md lists it.

use serde::{Deserialize, Serialize};

use crate::decode::Decode;
use crate::Visibility;

/// What a user may do in the workspace. The order is the order of power:
/// each role may do everything the one before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads what is public and opens shared links; changes nothing but
    /// their own sign-ins and tokens.
    Viewer,
    /// Creates jobs, secrets and pull secrets and manages their own; sees
    /// what is public. A user made without a role is a member.
    #[default]
    Member,
    /// Everything a member may, and users, roles and every public job.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Member, Role::Admin];

    /// The name on the wire, in the database and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Member => "member",
            Role::Admin => "admin",
        }
    }

    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// Whether a user of `role` named `user` may stop, start, change or delete
/// a job made by `creator` with `visibility`: its creator, unless a viewer,
/// and an admin for every public job. Another user's private job is never
/// anyone else's to change.
pub fn may_change_job(user: &str, role: Role, creator: &str, visibility: Visibility) -> bool {
    match role {
        Role::Viewer => false,
        Role::Member => creator == user,
        Role::Admin => creator == user || visibility == Visibility::Public,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_have_one_name_on_the_wire_in_both_decoders_and_are_ordered_by_power() {
        for role in Role::ALL {
            let json = serde_json::to_string(&role).unwrap();
            assert_eq!(json, format!("\"{}\"", role.as_str()));
            assert_eq!(serde_json::from_str::<Role>(&json).unwrap(), role);
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(<Role as Decode>::decode(&value, true).unwrap(), role);
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert!(Role::Viewer < Role::Member && Role::Member < Role::Admin);
        assert_eq!(Role::parse("Admin"), None, "names are exact");
    }

    #[test]
    fn a_creator_changes_their_job_an_admin_every_public_one_and_a_viewer_none() {
        use Visibility::{Private, Public};
        let cases = [
            ("ann", Role::Member, "ann", Private, true),
            ("ann", Role::Member, "bob", Public, false),
            ("ann", Role::Viewer, "ann", Public, false),
            ("ann", Role::Admin, "bob", Public, true),
            ("ann", Role::Admin, "bob", Private, false),
            ("ann", Role::Admin, "ann", Private, true),
            // A name is never a role: a member called "admin" is a member.
            ("admin", Role::Member, "bob", Public, false),
        ];
        for (user, role, creator, visibility, expected) in cases {
            assert_eq!(may_change_job(user, role, creator, visibility), expected, "{user} {role:?} on {creator}'s");
        }
    }
}
