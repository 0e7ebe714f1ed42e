//! The job's metadata: its name, labels and annotations.

use super::*;

/// Checks a job name: starts with a lowercase letter; lowercase letters,
/// digits and hyphens only; ends with a letter or digit; at most `max_len`
/// characters. Returns the first broken rule as a sentence.
pub fn check_job_name(name: &str, max_len: usize) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("must not be empty".into());
    };
    if !first.is_ascii_lowercase() {
        return Err("must start with a lowercase letter".into());
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')) {
        return Err(format!("may contain only lowercase letters, digits and hyphens, not {}", quoted(bad)));
    }
    if name.ends_with('-') {
        return Err("must end with a lowercase letter or a digit".into());
    }
    let len = name.chars().count();
    if len > max_len {
        return Err(format!("must be at most {max_len} characters (it has {len})"));
    }
    Ok(())
}

/// Checks a label or annotation key: a Kubernetes qualified name, an
/// optional DNS-subdomain prefix and `/`, then a name of at most 63 letters,
/// digits, `-`, `_` and `.` that starts and ends with a letter or digit.
pub fn check_qualified_name(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("the key must not be empty".into());
    }
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        check_dns_subdomain(prefix).map_err(|m| format!("the key's prefix {m}"))?;
        // A reserved domain covers its subdomains too (`app.kubernetes.io`),
        // as Kubernetes' own rule does.
        let under = |domain: &str| prefix == domain || prefix.strip_suffix(domain).is_some_and(|p| p.ends_with('.'));
        if RESERVED_LABEL_PREFIXES.iter().any(|r| under(r)) {
            return Err(format!("the key's prefix '{prefix}/' is reserved for Kubernetes"));
        }
        if under(JOBDECK_LABEL_PREFIX) {
            return Err(format!("the key's prefix '{prefix}/' is reserved for Jobdeck"));
        }
    }
    check_label_token(name, LABEL_NAME_MAX_LEN).map_err(|m| format!("the key's name {m}"))
}

/// Checks a label value: empty, or at most 63 letters, digits, `-`, `_` and
/// `.` that start and end with a letter or digit.
pub fn check_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    check_label_token(value, LABEL_VALUE_MAX_LEN).map_err(|m| format!("the value {m}"))
}

pub(super) fn check_label_token(token: &str, max: usize) -> Result<(), String> {
    if token.is_empty() {
        return Err("must not be empty".into());
    }
    let len = token.chars().count();
    if len > max {
        return Err(format!("must be at most {max} characters (it has {len})"));
    }
    if let Some(bad) = token.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        return Err(format!("may contain only letters, digits, '-', '_' and '.', not {}", quoted(bad)));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(token.chars().next()) || !alnum(token.chars().last()) {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A DNS subdomain (RFC 1123): dot-separated labels of lowercase letters,
/// digits and `-`, each starting and ending with a letter or digit; at most
/// 253 characters.
pub(super) fn check_dns_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > LABEL_PREFIX_MAX_LEN {
        return Err(format!("must be at most {LABEL_PREFIX_MAX_LEN} characters (it has {})", name.len()));
    }
    for label in name.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err(format!(
                "'{name}' must be a DNS name: dot-separated parts of lowercase letters, digits and '-', each starting and ending with a letter or digit"
            ));
        }
    }
    Ok(())
}

pub(super) fn check_metadata(metadata: &Metadata, name_max_len: usize, problems: &mut Problems) {
    // Lepton clients (`lep job create`) send the name as the id. The name's
    // problems are reported at `metadata.name` either way, as the server,
    // which copies such an id into the name, reports them.
    // A job given neither is named by the server (`POST /jobs`), so the
    // form may leave the name empty; an empty text is still refused.
    let name = metadata.name.as_deref().or(metadata.id.as_deref());
    if let Some(Err(message)) = name.map(|name| check_job_name(name, name_max_len)) {
        problems.add("metadata.name", message);
    }
    for (key, value) in metadata.labels.iter().flatten() {
        let path = entry_path("metadata.labels", key);
        if let Err(message) = check_qualified_name(key).and_then(|_| check_label_value(value)) {
            problems.add(path, message);
        }
    }
    let mut annotation_bytes = 0;
    for (key, value) in metadata.annotations.iter().flatten() {
        annotation_bytes += key.len() + value.len();
        if let Err(message) = check_qualified_name(key) {
            problems.add(entry_path("metadata.annotations", key), message);
        }
    }
    if annotation_bytes > ANNOTATIONS_MAX_BYTES {
        problems.add(
            "metadata.annotations",
            format!(
                "must take at most {ANNOTATIONS_MAX_BYTES} bytes in total, keys and values (they take {annotation_bytes})"
            ),
        );
    }
}
