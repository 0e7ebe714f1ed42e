//! Reading the contract's types out of JSON that something else parsed
//! (the browser's `JSON.parse` in the console): `Decode`, derived from each
//! type's own `#[serde(...)]` attributes by `jobdeck-api-derive`.
//!
//! serde's `Deserialize` stays the contract's reader everywhere else (the
//! server, the CLI tests); `Decode` exists because the console downloads
//! its code. A struct's reader is one call per field into `Object::field`,
//! shared by every field of the same type, and a field that fails records
//! the first error and the rest are skipped, so no early return has to drop
//! what was read so far (docs/measurements.md, "A decoder from the
//! contract's attributes").
//!
//! It reads as serde reads the same JSON into the same type (the tests hold
//! the two side by side), with these choices of its own:
//! - keys a struct does not name are refused only when `checked` (JSON a
//!   person gave) and the struct is `deny_unknown_fields`; answers pass
//!   them over, so the console's partial views read what they need;
//! - an error names where it happened (`spec.envs[1].name: ...`).

use std::collections::BTreeMap;
use std::fmt;

pub use jobdeck_api_derive::Decode;

/// A parsed JSON value: the browser's in the console, serde_json's in tests.
pub trait JsonValue: Sized {
    /// The object's property `key`; `None` when it has none. Asked only of
    /// a value already known to be an object (`Object::open`, a map's
    /// `keys`), so an implementation need not check again for every field.
    fn property(&self, key: &str) -> Option<Self>;
    fn is_null(&self) -> bool;
    /// An object, not an array.
    fn is_object(&self) -> bool;
    fn as_bool(&self) -> Option<bool>;
    fn as_f64(&self) -> Option<f64>;
    fn as_string(&self) -> Option<String>;
    /// An array's items, in order.
    fn items(&self) -> Option<Vec<Self>>;
    /// An object's keys, in order.
    fn keys(&self) -> Option<Vec<String>>;
}

/// A type read out of a `JsonValue`.
pub trait Decode: Sized {
    /// Reads the value. `checked`: the JSON is a person's, so a
    /// `deny_unknown_fields` struct refuses keys it does not name.
    fn decode<V: JsonValue>(value: &V, checked: bool) -> Result<Self, DecodeError>;

    /// What a struct's field of this type is when the object does not have
    /// it and the field has no `default`: `None` means it is missing.
    fn absent() -> Option<Self> {
        None
    }
}

/// Why a value cannot be read, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// From the outermost value in: `spec.envs[1].name`; empty at the top.
    path: String,
    message: String,
}

impl DecodeError {
    pub fn new(message: impl Into<String>) -> DecodeError {
        DecodeError { path: String::new(), message: message.into() }
    }

    /// The same error, inside field or key `name`.
    fn at(mut self, name: &str) -> DecodeError {
        self.path = match self.path.as_str() {
            "" => name.to_string(),
            path if path.starts_with('[') => format!("{name}{path}"),
            path => format!("{name}.{path}"),
        };
        self
    }

    /// The same error, inside item `index` of an array.
    fn at_item(mut self, index: usize) -> DecodeError {
        self.path = match self.path.as_str() {
            "" => format!("[{index}]"),
            path if path.starts_with('[') => format!("[{index}]{path}"),
            path => format!("[{index}].{path}"),
        };
        self
    }

    /// A value that is not what `expected` reads, said as serde says it.
    pub fn invalid_type<V: JsonValue>(value: &V, expected: &str) -> DecodeError {
        DecodeError::new(format!("invalid type: {}, expected {expected}", describe(value)))
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_str() {
            "" => f.write_str(&self.message),
            path => write!(f, "{path}: {}", self.message),
        }
    }
}

impl std::error::Error for DecodeError {}

/// What a value is, in words. A float is not printed: the float printer
/// would be about 12 KB of the console's code for an error message.
fn describe<V: JsonValue>(value: &V) -> String {
    if value.is_null() {
        "null".to_string()
    } else if let Some(flag) = value.as_bool() {
        format!("boolean `{flag}`")
    } else if let Some(number) = value.as_f64() {
        match whole(number) {
            Some(integer) => format!("integer `{integer}`"),
            None => "a number that is not a whole number below 2^53".to_string(),
        }
    } else if let Some(text) = value.as_string() {
        format!("string \"{text}\"")
    } else if value.is_object() {
        "an object".to_string()
    } else {
        "an array".to_string()
    }
}

/// The largest integer `f64` holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// A number JSON gave as an integer: whole, and within what `f64` holds
/// exactly. The contract's integers (timestamps in milliseconds, byte
/// counts, line numbers) stay well within 2^53.
fn whole(number: f64) -> Option<i64> {
    (number.fract() == 0.0 && number.abs() <= MAX_SAFE_INTEGER).then_some(number as i64)
}

/// A struct being read, field by field (the derive's code calls this).
pub struct Object<'v, V> {
    value: &'v V,
    checked: bool,
    /// The first field that could not be read; the fields after it are not.
    error: Option<DecodeError>,
}

impl<'v, V: JsonValue> Object<'v, V> {
    /// Starts reading struct `what` (its wire `fields`) from `value`.
    pub fn open(
        value: &'v V,
        what: &str,
        fields: &[&str],
        deny_unknown_fields: bool,
        checked: bool,
    ) -> Result<Object<'v, V>, DecodeError> {
        if !value.is_object() {
            return Err(DecodeError::invalid_type(value, what));
        }
        if checked && deny_unknown_fields {
            let keys = value.keys().unwrap_or_default();
            if let Some(key) = keys.iter().find(|key| !fields.contains(&key.as_str())) {
                return Err(DecodeError::new(unknown_field(key, fields)));
            }
        }
        Ok(Object { value, checked, error: None })
    }

    /// Field `name`: its value read, or its default when the object lacks
    /// it and it may be absent. After an error, the type's default (the
    /// struct is not returned). Never inlined: one copy per field type,
    /// called once per field.
    #[inline(never)]
    pub fn field<T: Decode + Default>(&mut self, name: &str, has_default: bool) -> T {
        if self.error.is_some() {
            return T::default();
        }
        let read = match self.value.property(name) {
            Some(value) => T::decode(&value, self.checked).map_err(|error| error.at(name)),
            None => match T::absent() {
                Some(absent) => Ok(absent),
                None if has_default => Ok(T::default()),
                None => Err(DecodeError::new(format!("missing field `{name}`"))),
            },
        };
        read.unwrap_or_else(|error| {
            self.error = Some(error);
            T::default()
        })
    }

    /// The struct read, or the first error.
    pub fn close<T>(self, read: T) -> Result<T, DecodeError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(read),
        }
    }
}

/// serde's words for a key a struct does not name.
fn unknown_field(key: &str, fields: &[&str]) -> String {
    match fields {
        [] => format!("unknown field `{key}`, there are no fields"),
        [one] => format!("unknown field `{key}`, expected `{one}`"),
        many => format!("unknown field `{key}`, expected one of {}", quoted(many)),
    }
}

/// `` `a`, `b`, `c` ``.
fn quoted(names: &[&str]) -> String {
    let mut list = String::new();
    for name in names {
        if !list.is_empty() {
            list.push_str(", ");
        }
        list.push('`');
        list.push_str(name);
        list.push('`');
    }
    list
}

/// The index of the variant enum `what` names `value` (a string) among
/// `variants`, or `other`'s when it names none (the derive's code calls
/// this).
pub fn variant<V: JsonValue>(
    value: &V,
    what: &str,
    variants: &[&str],
    other: Option<usize>,
) -> Result<usize, DecodeError> {
    let Some(name) = value.as_string() else {
        return Err(DecodeError::invalid_type(value, what));
    };
    match variants.iter().position(|variant| *variant == name).or(other) {
        Some(index) => Ok(index),
        None => Err(DecodeError::new(format!("unknown variant `{name}`, expected one of {}", quoted(variants)))),
    }
}

impl Decode for String {
    fn decode<V: JsonValue>(value: &V, _checked: bool) -> Result<Self, DecodeError> {
        value.as_string().ok_or_else(|| DecodeError::invalid_type(value, "a string"))
    }
}

impl Decode for bool {
    fn decode<V: JsonValue>(value: &V, _checked: bool) -> Result<Self, DecodeError> {
        value.as_bool().ok_or_else(|| DecodeError::invalid_type(value, "a boolean"))
    }
}

impl Decode for f64 {
    fn decode<V: JsonValue>(value: &V, _checked: bool) -> Result<Self, DecodeError> {
        value.as_f64().ok_or_else(|| DecodeError::invalid_type(value, "f64"))
    }
}

/// A whole number within `T`'s range, or an error naming `T`.
fn integer<V: JsonValue, T: TryFrom<i64>>(value: &V, expected: &str) -> Result<T, DecodeError> {
    value
        .as_f64()
        .and_then(whole)
        .and_then(|integer| T::try_from(integer).ok())
        .ok_or_else(|| DecodeError::invalid_type(value, expected))
}

macro_rules! integers {
    ($($integer:ty)*) => {$(
        impl Decode for $integer {
            fn decode<V: JsonValue>(value: &V, _checked: bool) -> Result<Self, DecodeError> {
                integer(value, stringify!($integer))
            }
        }
    )*};
}

integers! { i64 i32 u64 u32 usize }

impl<T: Decode> Decode for Option<T> {
    fn decode<V: JsonValue>(value: &V, checked: bool) -> Result<Self, DecodeError> {
        if value.is_null() {
            Ok(None)
        } else {
            T::decode(value, checked).map(Some)
        }
    }

    fn absent() -> Option<Self> {
        Some(None)
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode<V: JsonValue>(value: &V, checked: bool) -> Result<Self, DecodeError> {
        let items = value.items().ok_or_else(|| DecodeError::invalid_type(value, "an array"))?;
        // A loop, not `collect` into a `Result`: that adapter was up to
        // 1.7 KB of code per item type.
        let mut read = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            read.push(T::decode(item, checked).map_err(|error| error.at_item(index))?);
        }
        Ok(read)
    }
}

impl<T: Decode> Decode for BTreeMap<String, T> {
    fn decode<V: JsonValue>(value: &V, checked: bool) -> Result<Self, DecodeError> {
        let keys = value.keys().ok_or_else(|| DecodeError::invalid_type(value, "an object"))?;
        // Inserted one by one: collecting would sort the entries first,
        // and the sort is about 4 KB of the console's code.
        let mut read = BTreeMap::new();
        for key in keys {
            let Some(item) = value.property(&key) else { continue };
            let item = T::decode(&item, checked).map_err(|error| error.at(&key))?;
            read.insert(key, item);
        }
        Ok(read)
    }
}

/// A tuple is an array of exactly its length.
fn tuple_items<V: JsonValue>(value: &V, length: usize) -> Result<Vec<V>, DecodeError> {
    let items = value.items().ok_or_else(|| DecodeError::invalid_type(value, "an array"))?;
    if items.len() != length {
        return Err(DecodeError::new(format!("invalid length {}, expected a tuple of size {length}", items.len())));
    }
    Ok(items)
}

impl<A: Decode, B: Decode> Decode for (A, B) {
    fn decode<V: JsonValue>(value: &V, checked: bool) -> Result<Self, DecodeError> {
        let items = tuple_items(value, 2)?;
        let first = A::decode(&items[0], checked).map_err(|error| error.at_item(0))?;
        Ok((first, B::decode(&items[1], checked).map_err(|error| error.at_item(1))?))
    }
}

impl<A: Decode, B: Decode, C: Decode> Decode for (A, B, C) {
    fn decode<V: JsonValue>(value: &V, checked: bool) -> Result<Self, DecodeError> {
        let items = tuple_items(value, 3)?;
        let first = A::decode(&items[0], checked).map_err(|error| error.at_item(0))?;
        let second = B::decode(&items[1], checked).map_err(|error| error.at_item(1))?;
        Ok((first, second, C::decode(&items[2], checked).map_err(|error| error.at_item(2))?))
    }
}

/// serde_json's parsed value: what the tests hold `Decode` to serde with.
impl JsonValue for serde_json::Value {
    fn property(&self, key: &str) -> Option<Self> {
        self.as_object()?.get(key).cloned()
    }

    fn is_null(&self) -> bool {
        self.is_null()
    }

    fn is_object(&self) -> bool {
        self.is_object()
    }

    fn as_bool(&self) -> Option<bool> {
        self.as_bool()
    }

    fn as_f64(&self) -> Option<f64> {
        self.as_f64()
    }

    fn as_string(&self) -> Option<String> {
        self.as_str().map(str::to_string)
    }

    fn items(&self) -> Option<Vec<Self>> {
        self.as_array().cloned()
    }

    fn keys(&self) -> Option<Vec<String>> {
        Some(self.as_object()?.keys().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeOwned;

    use super::*;
    use crate::{EnvVar, JobEvent, JobSpec, JobState, JobStatus, LeptonJob, Mount, Replica, Visibility};

    /// `text` read by `Decode` (as a person's JSON when `checked`) and by
    /// serde: both read it, to the same value, or both refuse it.
    fn both<T: Decode + DeserializeOwned + PartialEq + fmt::Debug>(text: &str, checked: bool) -> Result<T, String> {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let ours = T::decode(&value, checked).map_err(|error| error.to_string());
        let serdes = serde_json::from_str::<T>(text).map_err(|error| error.to_string());
        match (&ours, &serdes) {
            (Ok(ours), Ok(serdes)) => assert_eq!(ours, serdes, "{text}"),
            (Err(_), Err(_)) => {}
            _ if !checked => {}
            _ => panic!("{text}: Decode {ours:?}, serde {serdes:?}"),
        }
        ours
    }

    #[test]
    fn the_lep_fixtures_read_as_serde_reads_them() {
        for fixture in ["hello", "rich", "from-file", "lepton-only"] {
            let path = format!("{}/fixtures/lep/{fixture}.json", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap();
            both::<LeptonJob>(&text, true).unwrap_or_else(|error| panic!("{fixture}: {error}"));
        }
        let text = std::fs::read_to_string(format!("{}/fixtures/lep/from-file.spec.json", env!("CARGO_MANIFEST_DIR")));
        both::<JobSpec>(&text.unwrap(), true).unwrap();
    }

    /// Each row: JSON for one type, and what `Decode` says of it (`Ok`, or
    /// words its error contains). serde agrees on whether it reads.
    #[test]
    fn values_read_or_are_refused_as_serde_does() {
        let env: &[(&str, Result<EnvVar, &str>)] = &[
            (r#"{"name":"A","value":"1"}"#, Ok(EnvVar { name: "A".into(), value: Some("1".into()), value_from: None })),
            (r#"{"name":"A","value":null}"#, Ok(EnvVar { name: "A".into(), ..EnvVar::default() })),
            (r#"{"value":"1"}"#, Err("missing field `name`")),
            (r#"{"name":3}"#, Err("name: invalid type: integer `3`, expected a string")),
            (r#"{"name":"A","extra":1}"#, Err("unknown field `extra`, expected one of `name`, `value`, `value_from`")),
            (
                r#"{"name":"A","value_from":{"secret_name_ref":true}}"#,
                Err("value_from.secret_name_ref: invalid type: boolean `true`"),
            ),
            ("null", Err("invalid type: null, expected struct EnvVar")),
        ];
        for (text, expected) in env {
            match (both::<EnvVar>(text, true), expected) {
                (Ok(read), Ok(expected)) => assert_eq!(&read, expected, "{text}"),
                (Err(error), Err(words)) => assert!(error.contains(words), "{text}: {error}"),
                (read, expected) => panic!("{text}: {read:?}, expected {expected:?}"),
            }
        }
        // serde_json also reads a struct from an array of its fields in
        // order; no client sends that, and the console refuses it.
        let array = serde_json::json!(["A"]);
        assert_eq!(
            EnvVar::decode(&array, true).unwrap_err().to_string(),
            "invalid type: an array, expected struct EnvVar"
        );
        let spec: &[(&str, Result<(), &str>)] = &[
            (r#"{}"#, Ok(())),
            (
                r#"{"completions":2.5}"#,
                Err("completions: invalid type: a number that is not a whole number below 2^53, expected i64"),
            ),
            (r#"{"completions":1e300}"#, Err("completions: invalid type")),
            (
                r#"{"envs":[{"name":"A"},{"name":"B","value":[]}]}"#,
                Err("envs[1].value: invalid type: an array, expected a string"),
            ),
            (r#"{"mounts":[{"from":"f"}]}"#, Err("mounts[0]: missing field `mount_path`")),
            (r#"{"container":{"image":"busybox"},"max_job_failure_retry":-1}"#, Ok(())),
            (
                r#"{"intra_job_communication":"yes"}"#,
                Err("intra_job_communication: invalid type: string \"yes\", expected a boolean"),
            ),
            (
                r#"{"affinity":{"allowed_dedicated_node_groups":["a",1]}}"#,
                Err("affinity.allowed_dedicated_node_groups[1]: invalid type"),
            ),
        ];
        for (text, expected) in spec {
            match (both::<JobSpec>(text, true), expected) {
                (Ok(_), Ok(())) => {}
                (Err(error), Err(words)) => assert!(error.contains(words), "{text}: {error}"),
                (read, expected) => panic!("{text}: {read:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn enums_read_their_wire_names_and_the_other_variant_takes_the_rest() {
        for (text, expected) in [(r#""Running""#, JobState::Running), (r#""UNK""#, JobState::Unknown)] {
            assert_eq!(both::<JobState>(text, true), Ok(expected));
        }
        assert_eq!(both::<JobState>(r#""Launching""#, true), Ok(JobState::Unknown), "serde's `other`");
        assert_eq!(both::<Visibility>(r#""private""#, true), Ok(Visibility::Private));
        let error = both::<Visibility>(r#""Private""#, true).unwrap_err();
        assert_eq!(error, "unknown variant `Private`, expected one of `public`, `private`");
        let error = both::<Visibility>("1", true).unwrap_err();
        assert_eq!(error, "invalid type: integer `1`, expected enum Visibility");
    }

    #[test]
    fn answers_pass_over_keys_a_person_may_not_send() {
        let text = r#"{"name":"A","extra":1}"#;
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(EnvVar::decode(&value, false).unwrap().name, "A", "an answer's unknown key is passed over");
        assert!(EnvVar::decode(&value, true).is_err(), "a person's is refused");
        // A struct serde itself lets unknown keys through does here too.
        let status = r#"{"state":"Running","newer_lepton_field":{"x":1}}"#;
        assert_eq!(both::<JobStatus>(status, true).unwrap().state, Some(JobState::Running));
    }

    #[test]
    fn answers_of_every_kind_read_as_serde_reads_them() {
        let replica = Replica {
            metadata: crate::Metadata { id: Some("r-0".into()), ..Default::default() },
            id: "r-0".into(),
            status: crate::ReplicaStatus {
                phase: crate::ReplicaPhase::Running,
                attempt: 2,
                node: Some(crate::ReplicaNode { name: "n1".into(), id: "n1".into(), node_group_id: None }),
                ..Default::default()
            },
        };
        let text = serde_json::to_string(&vec![replica.clone()]).unwrap();
        assert_eq!(both::<Vec<Replica>>(&text, false).unwrap(), [replica]);
        let event = r#"{"type":"Warning","reason":"BackOff","message":"m","count":3,"last_observed_time":"2026-11-26T05:00:00Z","regarding":{"kind":"Job","name":"j"}}"#;
        both::<JobEvent>(event, false).unwrap();
        let mount = r#"{"from":"node-nfs:data","mount_path":"/data","path":"/"}"#;
        assert_eq!(both::<Mount>(mount, true).unwrap().from, "node-nfs:data", "a renamed field");
    }

    /// A queued job's suggestions and estimate read as serde reads them; a
    /// change names only what a suggestion may change.
    #[test]
    fn a_queued_jobs_suggestions_read_as_serde_reads_them() {
        let text = r#"{"state":"Queueing","queue_position":2,"start_suggestions":[
            {"kind":"smaller_shape","change":{"resource_shape":"gpu.4"},"reason":"fits now"},
            {"kind":"priority_ahead","reason":"1 job of higher priority waits ahead"}],
            "start_estimate":{"at":1700000000,"basis":"deadlines","reason":"at the latest"}}"#;
        let status = both::<JobStatus>(text, true).unwrap();
        assert_eq!(status.start_suggestions.len(), 2);
        assert_eq!(status.start_estimate.map(|e| e.at), Some(1_700_000_000));
        let hostile = r#"[{"kind":"smaller_shape","change":{"container":{"image":"evil"}},"reason":"x"}]"#;
        let refused = both::<Vec<crate::StartSuggestion>>(hostile, true).unwrap_err();
        assert!(refused.contains("unknown field `container`"), "{refused}");
    }
}
