//! The rules a job must follow, run identically by the console before it
//! submits and by the server on every write.

use crate::{FieldErrors, LeptonJob};

/// The longest job name the managed-cluster page allows.
pub const JOB_NAME_MAX_LEN: usize = 20;

/// Checks a job name: starts with a lowercase letter; lowercase letters,
/// digits and hyphens only; ends with a letter or digit; at most 20
/// characters. Returns the first broken rule as a sentence.
pub fn check_job_name(name: &str) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("must not be empty".into());
    };
    if !first.is_ascii_lowercase() {
        return Err("must start with a lowercase letter".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "may contain only lowercase letters, digits and hyphens, not '{bad}'"
        ));
    }
    if name.ends_with('-') {
        return Err("must end with a lowercase letter or a digit".into());
    }
    let len = name.chars().count();
    if len > JOB_NAME_MAX_LEN {
        return Err(format!(
            "must be at most {JOB_NAME_MAX_LEN} characters (it has {len})"
        ));
    }
    Ok(())
}

/// Every problem with `job`, as messages per field path. Empty means valid.
pub fn validate_job(job: &LeptonJob) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let name = job.metadata.name.as_deref().unwrap_or("");
    if let Err(message) = check_job_name(name) {
        errors.entry("metadata.name".into()).or_default().push(message);
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_name_rules() {
        let cases: &[(&str, Result<(), &str>)] = &[
            ("a", Ok(())),
            ("train-01", Ok(())),
            ("abcdefghijklmnopqrst", Ok(())),
            ("", Err("must not be empty")),
            ("1abc", Err("must start with a lowercase letter")),
            ("-abc", Err("must start with a lowercase letter")),
            ("Abc", Err("must start with a lowercase letter")),
            ("aBc", Err("may contain only lowercase letters, digits and hyphens, not 'B'")),
            ("a_b", Err("may contain only lowercase letters, digits and hyphens, not '_'")),
            ("abc-", Err("must end with a lowercase letter or a digit")),
            ("abcdefghijklmnopqrstu", Err("must be at most 20 characters (it has 21)")),
        ];
        for (name, expected) in cases {
            assert_eq!(
                check_job_name(name),
                expected.map_err(String::from),
                "name {name:?}"
            );
        }
    }
}
