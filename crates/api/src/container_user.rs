//! Who a container's command runs as (`spec.container.user`): the one
//! reading of `name_or_id[:group_name_or_id]` that the contract's rule and
//! every executor share, so what is accepted is what runs.

/// One side of a container user: a numeric id or a name the image defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserPart<'a> {
    Id(u32),
    Name(&'a str),
}

impl UserPart<'_> {
    /// Whether this names the superuser (id 0 or `root`).
    pub fn is_root(self) -> bool {
        matches!(self, UserPart::Id(0) | UserPart::Name("root"))
    }

    /// The numeric id, when it is one.
    pub fn id(self) -> Option<u32> {
        match self {
            UserPart::Id(id) => Some(id),
            UserPart::Name(_) => None,
        }
    }
}

/// A parsed `spec.container.user`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContainerUser<'a> {
    pub user: UserPart<'a>,
    pub group: Option<UserPart<'a>>,
}

impl ContainerUser<'_> {
    /// Whether the command runs as root: a root user, with no group or the
    /// root group (`root`, `0`, `0:0`).
    pub fn is_root(&self) -> bool {
        self.user.is_root() && self.group.is_none_or(UserPart::is_root)
    }
}

/// The longest user or group name: Linux's `LOGIN_NAME_MAX` less the NUL.
pub const CONTAINER_USER_NAME_MAX: usize = 32;

/// The highest id a user or group may have: `(uid_t) -1` is reserved.
pub const CONTAINER_USER_ID_MAX: u32 = u32::MAX - 1;

/// Reads `name_or_id[:group_name_or_id]`. A name starts with a letter or
/// `_` and holds letters, digits, `_`, `-` and `.`, so no value is ever
/// read as an engine's option; an id is a decimal number.
pub fn parse_container_user(text: &str) -> Result<ContainerUser<'_>, &'static str> {
    let (user, group) = match text.split_once(':') {
        Some((user, group)) => (user, Some(group)),
        None => (text, None),
    };
    Ok(ContainerUser { user: parse_part(user)?, group: group.map(parse_part).transpose()? })
}

fn parse_part(part: &str) -> Result<UserPart<'_>, &'static str> {
    let Some(first) = part.chars().next() else {
        return Err("must be a user name or id, optionally with a group: ubuntu, 1000 or 1000:1000");
    };
    if first.is_ascii_digit() {
        return match part.parse::<u32>() {
            Ok(id) if part.bytes().all(|b| b.is_ascii_digit()) && id <= CONTAINER_USER_ID_MAX => Ok(UserPart::Id(id)),
            _ => Err("an id must be a number from 0 to 4294967294; a name starts with a letter or _"),
        };
    }
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err("a name starts with a letter or _, such as ubuntu");
    }
    if part.len() > CONTAINER_USER_NAME_MAX {
        return Err("a name is at most 32 characters");
    }
    if !part.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) {
        return Err("a name holds only letters, digits, _, - and .");
    }
    Ok(UserPart::Name(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_and_groups_by_name_or_id() {
        let parsed = parse_container_user("1000:1000").unwrap();
        assert_eq!((parsed.user, parsed.group), (UserPart::Id(1000), Some(UserPart::Id(1000))));
        let parsed = parse_container_user("ubuntu").unwrap();
        assert_eq!((parsed.user, parsed.group), (UserPart::Name("ubuntu"), None));
        let parsed = parse_container_user("_svc-1.a:video").unwrap();
        assert_eq!(parsed.group, Some(UserPart::Name("video")));
        for root in ["root", "0", "0:0", "root:root", "0:root"] {
            assert!(parse_container_user(root).unwrap().is_root(), "{root}");
        }
        for other in ["1000", "0:1000", "ubuntu:root", "rooty"] {
            assert!(!parse_container_user(other).unwrap().is_root(), "{other}");
        }
    }

    #[test]
    fn what_could_be_read_as_an_option_or_is_not_a_user_is_refused() {
        for (text, message) in [
            ("", "must be a user name or id"),
            ("1000:", "must be a user name or id"),
            (":1000", "must be a user name or id"),
            ("--privileged", "starts with a letter"),
            ("-1", "starts with a letter"),
            ("4294967295", "from 0 to 4294967294"),
            ("99999999999999999999", "from 0 to 4294967294"),
            ("12ab", "from 0 to 4294967294"),
            ("a b", "only letters"),
            ("a\nb", "only letters"),
            ("a:b:c", "only letters"),
            ("é", "starts with a letter"),
        ] {
            let error = parse_container_user(text).unwrap_err();
            assert!(error.contains(message), "{text:?}: {error}");
        }
        assert!(parse_container_user(&"a".repeat(33)).unwrap_err().contains("at most 32"));
        assert!(parse_container_user(&"a".repeat(32)).is_ok());
    }
}
