//! Kubernetes' rules for names and Secret keys, so a job that would be
//! rejected by the API server is rejected by Jobdeck first, with the field
//! named. Label and annotation keys and values are the contract's rule
//! (`jobdeck_api::check_qualified_name`, `check_label_value`), which the
//! console and the API apply too.

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

#[cfg(test)]
mod tests {
    use super::*;

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
