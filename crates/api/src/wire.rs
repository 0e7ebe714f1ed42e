//! Reading a JSON body into the contract's types so that a body that does
//! not fit comes back the way a rule violation does: a field path and a
//! sentence (`spec.completions`: "must be a whole number"), not a parser
//! message with a line and column.
//!
//! This is what makes unknown fields visible: the job types are
//! `deny_unknown_fields`, and an unknown field is reported at its own path
//! ("is not a field of this object"). The server reads every JSON body
//! through [`from_json`]; the console never needs to, as it builds its
//! values from the types themselves.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::FieldErrors;

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not JSON at all (or cut short): a sentence without a field.
    Syntax(String),
    /// JSON whose fields do not fit: one message per field path.
    Fields(FieldErrors),
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::Syntax(message) => f.write_str(message),
            JsonError::Fields(fields) => {
                let parts: Vec<String> =
                    fields.iter().map(|(path, messages)| format!("{path}: {}", messages.join("; "))).collect();
                f.write_str(&parts.join(", "))
            }
        }
    }
}

impl std::error::Error for JsonError {}

/// Reads `bytes` as a `T`, naming the field that does not fit.
pub fn from_json<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<T, JsonError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
        Ok(value) => value,
        Err(error) => {
            let path = error.path().to_string();
            let inner = error.into_inner();
            return Err(match inner.classify() {
                serde_json::error::Category::Data => {
                    let (path, message) = field_message(&path, &without_position(&inner));
                    JsonError::Fields([(path, vec![message])].into())
                }
                _ => JsonError::Syntax(inner.to_string()),
            });
        }
    };
    deserializer.end().map_err(|e| JsonError::Syntax(e.to_string()))?;
    if let Some(path) = array_read_as_object(bytes, &value) {
        return Err(JsonError::Fields([(path, vec!["must be a JSON object, not an array".to_string()])].into()));
    }
    Ok(value)
}

/// Where `bytes` has an array that serde read as a struct, if anywhere.
/// serde's derived structs accept a sequence of their fields in order
/// (`"status": [null, null]`), which no client means and the schema
/// forbids; the reader cannot be told not to, so the value read is written
/// out again and compared with the text: an array in the text where the
/// value has an object is such a place. Fields the value leaves out (an
/// empty option, a renamed key) are not compared, as they cannot hold one.
fn array_read_as_object<T: Serialize>(bytes: &[u8], value: &T) -> Option<String> {
    fn walk(given: &Value, read: &Value, path: &str) -> Option<String> {
        let inside = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
        match (given, read) {
            (Value::Array(_), Value::Object(_)) => {
                Some(if path.is_empty() { "body".to_string() } else { path.to_string() })
            }
            (Value::Array(given), Value::Array(read)) => given
                .iter()
                .zip(read)
                .enumerate()
                .find_map(|(index, (given, read))| walk(given, read, &format!("{path}[{index}]"))),
            (Value::Object(given), Value::Object(read)) => {
                given.iter().find_map(|(key, given)| read.get(key).and_then(|read| walk(given, read, &inside(key))))
            }
            _ => None,
        }
    }
    // Both succeed for a value just read from these bytes; were either to
    // fail, there would be nothing to compare.
    let given: Value = serde_json::from_slice(bytes).ok()?;
    let read = serde_json::to_value(value).ok()?;
    walk(&given, &read, "")
}

/// [`from_json`] for a body that must be one JSON object: serde reads a
/// struct from an array too (`["x"]` as its first field), which no client
/// means, so anything but an object at the top is a 422 on `body`.
pub fn from_json_object<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<T, JsonError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        // Text that is no JSON at all is a syntax error, as from_json says.
        serde_json::from_slice::<serde::de::IgnoredAny>(bytes).map_err(|e| JsonError::Syntax(e.to_string()))?;
        return Err(JsonError::Fields([("body".to_string(), vec!["must be a JSON object".to_string()])].into()));
    }
    from_json(bytes)
}

/// serde_json's message without its " at line 1 column 40" suffix.
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The path and sentence for one serde data error at `path` (`.` is the
/// root).
fn field_message(path: &str, message: &str) -> (String, String) {
    let join = |field: &str| {
        if path == "." || path.is_empty() {
            field.to_string()
        } else {
            format!("{path}.{field}")
        }
    };
    let path_or_root = || {
        if path == "." || path.is_empty() {
            "body".to_string()
        } else {
            path.to_string()
        }
    };
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or("");
        let known: Vec<&str> = rest.split('`').skip(2).step_by(2).collect();
        let hint = if known.is_empty() { String::new() } else { format!("; the fields here are {}", known.join(", ")) };
        // serde_path_to_error already ends the path with the unknown field.
        let path = if path.ends_with(field) { path.to_string() } else { join(field) };
        return (path, format!("is not a field Jobdeck knows{hint}"));
    }
    if let Some(rest) = message.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or("");
        return (join(field), "is required".into());
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let mut parts = rest.split('`');
        let got = parts.next().unwrap_or("");
        let allowed: Vec<&str> = parts.skip(1).step_by(2).collect();
        return (path_or_root(), format!("must be one of {}, not '{got}'", allowed.join(", ")));
    }
    for prefix in ["invalid type: ", "invalid value: ", "invalid length "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            if let Some((got, expected)) = rest.split_once(", expected ") {
                return (path_or_root(), format!("must be {}, not {got}", describe_expected(expected)));
            }
        }
    }
    (path_or_root(), message.to_string())
}

/// serde's name for an expected type, in words.
fn describe_expected(expected: &str) -> String {
    let integer = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "usize", "isize"];
    if integer.contains(&expected) {
        return "a whole number".into();
    }
    match expected {
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a string" => "a string".into(),
        "a sequence" => "a list".into(),
        "a map" => "an object".into(),
        other if other.starts_with("struct ") => "an object".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LeptonJob;

    /// serde reads a struct from an array (`["x"]` fills the first field);
    /// a body that must be an object is refused anything else, on `body`.
    #[test]
    fn an_object_body_is_an_object_and_nothing_else() {
        let role = |json: &str| from_json_object::<crate::RoleChange>(json.as_bytes());
        assert!(serde_json::from_slice::<crate::RoleChange>(br#"["admin"]"#).is_ok(), "what serde alone lets through");
        for not_object in [r#"["admin"]"#, "[]", "7", r#""admin""#, " null "] {
            match role(not_object) {
                Err(JsonError::Fields(fields)) => assert_eq!(fields["body"], ["must be a JSON object"], "{not_object}"),
                other => panic!("{not_object}: {other:?}"),
            }
        }
        assert!(matches!(role("[1,"), Err(JsonError::Syntax(_))));
        assert_eq!(role(r#" {"role": "viewer"}"#).unwrap().role, crate::Role::Viewer);
    }

    /// The same holds inside: an array where the type has an object is
    /// refused at its path, however deep (serde alone reads `[null, null]`
    /// as a status whose first two fields are empty).
    #[test]
    fn an_array_is_never_read_as_an_object_inside_either() {
        let cases = [
            (r#"{"metadata": {"name": "a"}, "spec": {}, "status": [null, null]}"#, "status"),
            (r#"{"metadata": [], "spec": {}}"#, "metadata"),
            (r#"{"metadata": {"name": "a"}, "spec": {"container": [null]}}"#, "spec.container"),
            (
                r#"{"metadata": {"name": "a"}, "spec": {"envs": [{"name": "A", "value": "1"}, ["B", "2"]]}}"#,
                "spec.envs[1]",
            ),
        ];
        for (json, path) in cases {
            assert!(serde_json::from_str::<LeptonJob>(json).is_ok(), "serde alone reads {json}");
            assert_eq!(fields(json)[path], ["must be a JSON object, not an array"], "{json}");
        }
        let job: LeptonJob = from_json(br#"{"metadata": {"name": "a", "labels": {}}, "spec": {"envs": []}}"#).unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("a"));
    }

    fn fields(json: &str) -> FieldErrors {
        match from_json::<LeptonJob>(json.as_bytes()) {
            Err(JsonError::Fields(fields)) => fields,
            other => panic!("expected field errors for {json}, got {other:?}"),
        }
    }

    #[test]
    fn data_errors_name_their_field() {
        let cases = [
            (
                r#"{"metadata":{"name":"a"},"spec":{"completions":"two"}}"#,
                "spec.completions",
                "must be a whole number, not string \"two\"",
            ),
            (
                r#"{"metadata":{"name":"a"},"spec":{"completions":1.5}}"#,
                "spec.completions",
                "must be a whole number, not floating point `1.5`",
            ),
            (
                r#"{"metadata":{"name":"a"},"spec":{"envs":[{"name":"A"},{"value":"x"}]}}"#,
                "spec.envs[1].name",
                "is required",
            ),
            (
                r#"{"metadata":{"name":"a"},"spec":{"stopped":"yes"}}"#,
                "spec.stopped",
                "must be true or false, not string \"yes\"",
            ),
            (
                r#"{"metadata":{"name":"a","visibility":"secret"}}"#,
                "metadata.visibility",
                "must be one of public, private, not 'secret'",
            ),
            (r#"{"metadata":{"name":"a"},"spec":{"mounts":{"a":1}}}"#, "spec.mounts", "must be a list, not map"),
            (r#"{"spec":{}}"#, "metadata", "is required"),
        ];
        for (json, path, message) in cases {
            let expected: FieldErrors = [(path.to_string(), vec![message.to_string()])].into();
            assert_eq!(fields(json), expected, "{json}");
        }
    }

    #[test]
    fn unknown_fields_are_reported_at_their_own_path() {
        let got = fields(r#"{"metadata":{"name":"a"},"spec":{"container":{"imagee":"busybox"}}}"#);
        let (path, messages) = got.iter().next().unwrap();
        assert_eq!(path, "spec.container.imagee");
        assert!(
            messages[0].starts_with("is not a field Jobdeck knows; the fields here are image, ports, command"),
            "{messages:?}"
        );
        let got = fields(r#"{"metadata":{"name":"a"},"extra":1}"#);
        assert!(got.contains_key("extra"), "{got:?}");
        let got = fields(r#"{"metadata":{"name":"a"},"spec":{"envs":[{"name":"A","secret":"x"}]}}"#);
        assert!(got.contains_key("spec.envs[0].secret"), "{got:?}");
    }

    #[test]
    fn syntax_errors_have_no_field() {
        for json in [r#"{"metadata": "#, r#"{"metadata": {"name": "a""#, r#"{"metadata":{"name":"a"}} trailing"#, ""] {
            assert!(matches!(from_json::<LeptonJob>(json.as_bytes()), Err(JsonError::Syntax(_))), "{json}");
        }
    }

    #[test]
    fn fitting_json_reads() {
        let job: LeptonJob = from_json(br#"{"metadata":{"id":"hello"},"spec":{"envs":[]}}"#).unwrap();
        assert_eq!(job.name(), "hello");
    }
}
