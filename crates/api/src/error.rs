//! The error body every failing API call returns.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

/// Messages per field path, such as `spec.envs[2].name`.
pub type FieldErrors = BTreeMap<String, Vec<String>>;

/// The JSON body of every non-2xx response: `{code, message, fields?}`.
///
/// `code` is a stable machine-readable identifier (`validation_failed`,
/// `unauthorized`, `not_found`, …); `message` is a sentence for people;
/// `fields` is present on validation failures and maps each offending field
/// path to one message per broken rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiError {
    pub code: String,
    pub message: String,
    /// Messages by field path, such as `spec.envs[2].name`. Written as the
    /// map it is rather than as `FieldErrors`, so the OpenAPI schema shows
    /// the map instead of naming the alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<BTreeMap<String, Vec<String>>>,
}

impl ApiError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { code: code.into(), message: message.into(), fields: None }
    }

    /// A validation failure carrying one message per broken rule and field.
    pub fn validation(fields: FieldErrors) -> Self {
        let count: usize = fields.values().map(Vec::len).sum();
        let message = match count {
            1 => "the request has 1 invalid field".to_string(),
            n => format!("the request has {n} invalid fields"),
        };
        Self { code: "validation_failed".into(), message, fields: Some(fields) }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_error_counts_every_message() {
        let mut fields = FieldErrors::new();
        fields.insert("metadata.name".into(), vec!["must not be empty".into()]);
        fields.insert("spec.completions".into(), vec!["must be at least 1".into(), "other".into()]);
        let err = ApiError::validation(fields);
        assert_eq!(err.code, "validation_failed");
        assert_eq!(err.message, "the request has 3 invalid fields");
    }

    #[test]
    fn fields_are_omitted_when_absent() {
        let json = serde_json::to_string(&ApiError::new("not_found", "no such job")).unwrap();
        assert_eq!(json, r#"{"code":"not_found","message":"no such job"}"#);
    }
}
