//! Kubernetes' rules for names, label keys and values, so a job that would be
//! rejected by the API server is rejected by Jobdeck first, with the field
//! named.

/// An RFC 1123 label: namespaces, service names, job names.
pub fn check_dns_label(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 63 {
        return Err("must be 1 to 63 characters".into());
    }
    if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return Err("may contain only lowercase letters, digits and '-'".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// An RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub fn check_dns_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 253 {
        return Err("must be 1 to 253 characters".into());
    }
    for part in name.split('.') {
        check_dns_label(part).map_err(|e| format!("has a part '{part}' that {e}"))?;
    }
    Ok(())
}

/// The name part of a label key, and a label value when not empty: at most
/// 63 characters, alphanumerics with '-', '_' and '.' inside.
fn check_label_name(name: &str) -> Result<(), String> {
    if name.len() > 63 {
        return Err(format!("must be at most 63 characters (it has {})", name.len()));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
        return Err("may contain only letters, digits, '-', '_' and '.'".into());
    }
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge_ok(name.chars().next()) || !edge_ok(name.chars().last()) {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A label or annotation key: an optional DNS-subdomain prefix and '/', then
/// a name.
pub fn check_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        check_dns_subdomain(prefix).map_err(|e| format!("has a prefix that {e}"))?;
    }
    if name.is_empty() {
        return Err("must have a name".into());
    }
    check_label_name(name)
}

/// A label value: empty, or a label name.
pub fn check_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    check_label_name(value)
}

/// A key in a Secret's data.
pub fn check_secret_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > 253 {
        return Err("must be 1 to 253 characters".into());
    }
    if !key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
        return Err("may contain only letters, digits, '-', '_' and '.'".into());
    }
    Ok(())
}

/// Label and annotation key prefixes that belong to Kubernetes or Jobdeck;
/// a user's key under them could confuse the controllers or Jobdeck itself.
pub const RESERVED_KEY_PREFIXES: &[&str] = &["jobdeck.dev/", "kubernetes.io/", "k8s.io/", "batch.kubernetes.io/"];

/// Whether a user-supplied label or annotation key is reserved.
pub fn is_reserved_key(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    let prefix = format!("{prefix}/");
    RESERVED_KEY_PREFIXES
        .iter()
        .any(|r| prefix == *r || prefix.ends_with(&format!(".{r}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys() {
        let cases: &[(&str, bool)] = &[
            ("team", true),
            ("example.com/team", true),
            ("app.kubernetes.io/name", true),
            ("a_b.c-d", true),
            ("", false),
            ("example.com/", false),
            ("Example.com/team", false),
            ("-team", false),
            ("team-", false),
            ("has space", false),
            (&"x".repeat(64), false),
        ];
        for (key, ok) in cases {
            assert_eq!(check_label_key(key).is_ok(), *ok, "{key:?}: {:?}", check_label_key(key));
        }
    }

    #[test]
    fn label_values() {
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("v1.2_3-x", true),
            ("a/b", false),
            ("-a", false),
            ("a b", false),
            (&"x".repeat(63), true),
            (&"x".repeat(64), false),
        ];
        for (value, ok) in cases {
            assert_eq!(check_label_value(value).is_ok(), *ok, "{value:?}");
        }
    }

    #[test]
    fn reserved_keys() {
        let cases: &[(&str, bool)] = &[
            ("team", false),
            ("example.com/team", false),
            ("jobdeck.dev/job-id", true),
            ("kubernetes.io/hostname", true),
            ("node.kubernetes.io/x", true),
            ("batch.kubernetes.io/job-name", true),
            ("k8s.io/x", true),
            ("notkubernetes.io/x", false),
        ];
        for (key, reserved) in cases {
            assert_eq!(is_reserved_key(key), *reserved, "{key}");
        }
    }

    #[test]
    fn dns_labels_and_secret_keys() {
        assert!(check_dns_label("train-01").is_ok());
        assert!(check_dns_label("Train").is_err());
        assert!(check_dns_label("-a").is_err());
        assert!(check_secret_key("HF_TOKEN").is_ok());
        assert!(check_secret_key("a.b-c").is_ok());
        assert!(check_secret_key("a/b").is_err());
        assert!(check_secret_key("").is_err());
    }
}
