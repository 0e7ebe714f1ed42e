//! Reads the contract's types out of a value the browser parsed
//! (`JSON.parse`, `Response.json()`): a serde `Deserializer` over `JsValue`.
//!
//! Why not `serde_json::from_str`: serde_json's parser is generic over the
//! visitor, so every decoded type (and every `Option<T>`, `Vec<T>` in it)
//! got its own copy of the JSON reading code, in every page that decodes
//! it. Here the browser reads the text and this deserializer only walks the
//! parsed value, so the per-type code is small and the parsing costs no
//! wasm at all (docs/measurements.md, "JSON read by the browser").
//!
//! A struct is read by asking the parsed object for each field the struct
//! declares, in order (`FieldsInOrder`), so serde's smaller sequence reader
//! is the only one compiled; keys a struct does not name are refused only
//! in JSON a person gave (`from_js_checked`).
//!
//! JSON has one number type; the browser gives `f64`. An integral number
//! that `f64` holds exactly is handed to serde as an integer (serde's integer
//! types refuse floats), any other as a float. The contract's integers
//! (timestamps in milliseconds, byte counts, line numbers) stay well within
//! the 2^53 that `f64` holds exactly.

use std::fmt;

use js_sys::{Array, Object};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, Expected, IntoDeserializer, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use wasm_bindgen::{JsCast, JsValue};

/// The largest integer `f64` holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Why a value cannot be read from JSON or written as JSON (`to_js` uses
/// it too).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonError {
    message: String,
    /// The value is a struct's field the object does not have (see
    /// `FieldsInOrder`); never shown, serde turns it into a default or a
    /// "missing field" message.
    missing: bool,
}

impl JsonError {
    pub fn new(message: &str) -> JsonError {
        JsonError { message: message.to_string(), missing: false }
    }

    fn missing() -> JsonError {
        JsonError { message: "missing field".to_string(), missing: true }
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JsonError {}

impl serde::ser::Error for JsonError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        JsonError::new(&message.to_string())
    }
}

thread_local! {
    /// Whether the value read now is text a person gave (`from_js_checked`).
    static CHECKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The struct field `FieldsInOrder` is reading while the object does not
    /// have it (empty otherwise): reading it fails as "missing" unless it
    /// is an `Option`, and serde's message names it.
    static MISSING_FIELD: std::cell::Cell<&'static str> = const { std::cell::Cell::new("") };
}

impl de::Error for JsonError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        JsonError::new(&message.to_string())
    }

    // A struct's visitor reports a required field that `FieldsInOrder` found
    // missing as a sequence too short; it is said the way serde says it
    // for an object.
    fn invalid_length(length: usize, expected: &dyn Expected) -> Self {
        match MISSING_FIELD.get() {
            "" => Self::custom(format_args!("invalid length {length}, expected {expected}")),
            field => Self::custom(format_args!("missing field `{field}`")),
        }
    }

    // serde's own messages print the unexpected value with `Unexpected`'s
    // `Display`, which prints floats: that would put the float printer
    // (about 12 KB of code) into the console's core for an error message.
    fn invalid_type(unexpected: Unexpected, expected: &dyn Expected) -> Self {
        Self::custom(format_args!("invalid type: {}, expected {expected}", describe(&unexpected)))
    }

    fn invalid_value(unexpected: Unexpected, expected: &dyn Expected) -> Self {
        Self::custom(format_args!("invalid value: {}, expected {expected}", describe(&unexpected)))
    }
}

/// What a value was, in words, without printing a float.
fn describe(unexpected: &Unexpected) -> String {
    match *unexpected {
        Unexpected::Bool(value) => format!("boolean `{value}`"),
        Unexpected::Unsigned(value) => format!("integer `{value}`"),
        Unexpected::Signed(value) => format!("integer `{value}`"),
        Unexpected::Float(_) => "a number that is not a whole number below 2^53".to_string(),
        Unexpected::Char(value) => format!("character `{value}`"),
        Unexpected::Str(value) => format!("string \"{value}\""),
        Unexpected::Bytes(_) => "bytes".to_string(),
        Unexpected::Unit => "null".to_string(),
        Unexpected::Option => "an optional value".to_string(),
        Unexpected::NewtypeStruct | Unexpected::NewtypeVariant => "a value".to_string(),
        Unexpected::Seq | Unexpected::TupleVariant => "an array".to_string(),
        Unexpected::Map | Unexpected::StructVariant => "an object".to_string(),
        Unexpected::Enum | Unexpected::UnitVariant => "an enum variant".to_string(),
        Unexpected::Other(what) => what.to_string(),
    }
}

/// Reads `T` out of a parsed JSON value. A struct's fields are read by
/// name; keys it does not name are passed over, as in the server's answers
/// (whose types match the console's, and whose partial views here, such as
/// the list's, must pass over the rest).
pub fn from_js<T: DeserializeOwned>(value: JsValue) -> Result<T, JsonError> {
    T::deserialize(Value(value))
}

/// Like `from_js`, for JSON a person gave (an imported job): a key a
/// struct does not name is refused, as serde refuses it for the contract's
/// `deny_unknown_fields` structs, except in the structs the contract lists
/// as tolerating them (`JOB_STRUCTS_TOLERATING_UNKNOWN_FIELDS`).
pub fn from_js_checked<T: DeserializeOwned>(value: JsValue) -> Result<T, JsonError> {
    CHECKED.set(true);
    let read = T::deserialize(Value(value));
    CHECKED.set(false);
    read
}

/// The first key of `object` that struct `name` does not have among
/// `fields`, as serde words it, when the keys are being checked.
fn unknown_key(object: &Object, name: &str, fields: &'static [&'static str]) -> Option<JsonError> {
    if !CHECKED.get() || jobdeck_api::JOB_STRUCTS_TOLERATING_UNKNOWN_FIELDS.contains(&name) {
        return None;
    }
    let keys = Object::keys(object);
    (0..keys.length())
        .filter_map(|i| keys.get(i).as_string())
        .find(|key| !fields.contains(&key.as_str()))
        .map(|key| de::Error::unknown_field(&key, fields))
}

/// One parsed value, about to be read.
struct Value(JsValue);

impl Value {
    fn is_nullish(&self) -> bool {
        self.0.is_null() || self.0.is_undefined()
    }

    /// What the value is, for a message saying it is not what was asked.
    /// Not generic, so the visitors' own methods stay small.
    fn unexpected(&self) -> Unexpected<'static> {
        if self.is_nullish() {
            Unexpected::Unit
        } else if let Some(flag) = self.0.as_bool() {
            Unexpected::Bool(flag)
        } else if let Some(number) = self.0.as_f64() {
            Unexpected::Float(number)
        } else if self.0.is_string() {
            Unexpected::Other("a string")
        } else if Array::is_array(&self.0) {
            Unexpected::Seq
        } else {
            Unexpected::Map
        }
    }

    fn refuse<'de, V: Visitor<'de>>(&self, visitor: &V) -> JsonError {
        if self.0.is_undefined() && !MISSING_FIELD.get().is_empty() {
            return JsonError::missing();
        }
        de::Error::invalid_type(self.unexpected(), visitor)
    }

    fn items(&self) -> Option<Items> {
        Array::is_array(&self.0).then(|| {
            let items: Array = self.0.clone().unchecked_into();
            Items { length: items.length(), items, next: 0 }
        })
    }

    fn fields(&self) -> Option<Fields> {
        (self.0.is_object() && !Array::is_array(&self.0)).then(|| {
            let object: &Object = self.0.unchecked_ref();
            let (keys, values) = (Object::keys(object), Object::values(object));
            Fields { length: keys.length(), keys, values, next: 0 }
        })
    }

    /// Hands a number to the visitor: an integer if `f64` holds it exactly
    /// (serde's integer types refuse floats), else a float.
    fn visit_number<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        let Some(number) = self.0.as_f64() else { return Err(self.refuse(&visitor)) };
        if number.fract() != 0.0 || number.abs() > MAX_SAFE_INTEGER {
            visitor.visit_f64(number)
        } else if number < 0.0 {
            visitor.visit_i64(number as i64)
        } else {
            visitor.visit_u64(number as u64)
        }
    }
}

/// Every number type reads a number the same way.
macro_rules! numbers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
            self.visit_number(visitor)
        }
    )*};
}

/// Each `deserialize_*` hands the visitor only the kind of value it asked
/// for, so that a visitor's other methods (a struct read from an array, say)
/// are not compiled in for nothing; `deserialize_any` is for the rest.
impl<'de> de::Deserializer<'de> for Value {
    type Error = JsonError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        if self.is_nullish() {
            visitor.visit_unit()
        } else if let Some(flag) = self.0.as_bool() {
            visitor.visit_bool(flag)
        } else if self.0.as_f64().is_some() {
            self.visit_number(visitor)
        } else if let Some(text) = self.0.as_string() {
            visitor.visit_string(text)
        } else if let Some(items) = self.items() {
            visitor.visit_seq(items)
        } else if let Some(fields) = self.fields() {
            visitor.visit_map(fields)
        } else {
            Err(self.refuse(&visitor))
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.0.as_bool() {
            Some(flag) => visitor.visit_bool(flag),
            None => Err(self.refuse(&visitor)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.0.as_string() {
            Some(text) => visitor.visit_string(text),
            None => Err(self.refuse(&visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        if self.is_nullish() {
            visitor.visit_unit()
        } else {
            Err(self.refuse(&visitor))
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, JsonError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.items() {
            Some(items) => visitor.visit_seq(items),
            None => Err(self.refuse(&visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, JsonError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        match self.fields() {
            Some(fields) => visitor.visit_map(fields),
            None => Err(self.refuse(&visitor)),
        }
    }

    /// A struct is read field by field in the order it declares them
    /// (`FieldsInOrder`): a visitor's `visit_seq` is smaller than its
    /// `visit_map`, which matches every key against every name and checks
    /// for duplicates (docs/measurements.md, "Structs read field by field").
    /// Never inlined: a struct's reader then exists once, not once more
    /// inside each `Option` or list of it (0.2 to 0.9 KB a page).
    #[inline(never)]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        if !self.0.is_object() || Array::is_array(&self.0) {
            return Err(self.refuse(&visitor));
        }
        let object: Object = self.0.unchecked_into();
        if let Some(unknown) = unknown_key(&object, name, fields) {
            return Err(unknown);
        }
        visitor.visit_seq(FieldsInOrder { object, fields: fields.iter() })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        if self.is_nullish() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        visitor.visit_newtype_struct(self)
    }

    /// A unit variant is its name (`"Running"`); a variant with content is
    /// an object with one key, serde's default (`{"Variant": content}`).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        if self.0.is_undefined() && !MISSING_FIELD.get().is_empty() {
            return Err(JsonError::missing());
        }
        if let Some(name) = self.0.as_string() {
            return visitor.visit_enum(IntoDeserializer::<JsonError>::into_deserializer(name));
        }
        if let Some(Fields { keys, values, length: 1, .. }) = self.fields() {
            if let Some(name) = keys.get(0).as_string() {
                return visitor.visit_enum(Variant { name, content: values.get(0) });
            }
        }
        Err(de::Error::invalid_type(Unexpected::Other("neither a string nor an object with one key"), &visitor))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JsonError> {
        visitor.visit_unit()
    }

    numbers! { deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8 deserialize_u16
    deserialize_u32 deserialize_u64 deserialize_f32 deserialize_f64 }

    serde::forward_to_deserialize_any! { i128 u128 bytes byte_buf }
}

/// An array's items, in order.
struct Items {
    items: Array,
    length: u32,
    next: u32,
}

impl<'de> SeqAccess<'de> for Items {
    type Error = JsonError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, JsonError> {
        if self.next >= self.length {
            MISSING_FIELD.set("");
            return Ok(None);
        }
        let item = self.items.get(self.next);
        self.next += 1;
        seed.deserialize(Value(item)).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some((self.length - self.next) as usize)
    }
}

/// A struct's fields as a sequence, in the order the struct declares them,
/// each looked up by name; keys the struct does not name are not read. A
/// field the object does not have is `None` when it is an `Option`, and
/// else no element, which serde's visitor turns into the field's default or
/// into "missing field" (`JsonError::invalid_length`).
struct FieldsInOrder {
    object: Object,
    fields: std::slice::Iter<'static, &'static str>,
}

impl<'de> SeqAccess<'de> for FieldsInOrder {
    type Error = JsonError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, JsonError> {
        let Some(&name) = self.fields.next() else {
            MISSING_FIELD.set("");
            return Ok(None);
        };
        // `Reflect.get` also finds inherited properties; the names asked for
        // are the structs' own field names (none is a property of
        // `Object.prototype`), never the input's keys.
        let value = js_sys::Reflect::get(&self.object, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
        if !value.is_undefined() {
            MISSING_FIELD.set("");
            return seed.deserialize(Value(value)).map(Some);
        }
        MISSING_FIELD.set(name);
        match seed.deserialize(Value(value)) {
            Ok(read) => {
                MISSING_FIELD.set("");
                Ok(Some(read))
            }
            // The field's name stays set for serde's "missing field" message.
            Err(error) if error.missing => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}

/// An object's fields, in the order the answer had them.
struct Fields {
    keys: Array,
    values: Array,
    length: u32,
    next: u32,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = JsonError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, JsonError> {
        if self.next >= self.length {
            return Ok(None);
        }
        seed.deserialize(Value(self.keys.get(self.next))).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, JsonError> {
        let value = self.values.get(self.next);
        self.next += 1;
        seed.deserialize(Value(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some((self.length - self.next) as usize)
    }
}

/// A variant with content: its name and what it holds.
struct Variant {
    name: String,
    content: JsValue,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = JsonError;
    type Variant = Value;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Value), JsonError> {
        let name = seed.deserialize(IntoDeserializer::<JsonError>::into_deserializer(self.name))?;
        Ok((name, Value(self.content)))
    }
}

impl<'de> VariantAccess<'de> for Value {
    type Error = JsonError;

    fn unit_variant(self) -> Result<(), JsonError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, JsonError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, JsonError> {
        de::Deserializer::deserialize_any(self, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JsonError> {
        de::Deserializer::deserialize_any(self, visitor)
    }
}

#[cfg(test)]
mod tests {
    use jobdeck_api::{EnvVar, FailureAnalysis, JobState, LogRange, ReplicaPhase};
    use serde::Deserialize;
    use wasm_bindgen_test::wasm_bindgen_test;

    use super::*;
    use crate::fixtures;

    fn parsed(text: &str) -> JsValue {
        js_sys::JSON::parse(text).expect("test JSON parses")
    }

    /// Reads `text` both ways: through the browser and this deserializer,
    /// and with serde_json (the server's reader). They must agree.
    fn both<T: DeserializeOwned + PartialEq + fmt::Debug>(text: &str) -> T {
        let ours: T = from_js(parsed(text)).unwrap_or_else(|e| panic!("{text}: {e}"));
        let reference: T = serde_json::from_str(text).unwrap_or_else(|e| panic!("serde_json: {text}: {e}"));
        assert_eq!(ours, reference, "{text}");
        ours
    }

    /// The contract's values, written by serde_json as the server writes
    /// them, read back equal.
    fn round_trip<T: serde::Serialize + DeserializeOwned + PartialEq + fmt::Debug>(value: T) {
        both::<T>(&serde_json::to_string(&value).unwrap());
    }

    #[wasm_bindgen_test]
    fn contract_types_read_as_serde_json_reads_them() {
        let mut job = fixtures::job("j-1", "train", "alice", JobState::Running);
        job.spec.container.command = Some(vec!["sh".into(), "-c".into(), "echo hi".into()]);
        job.spec.completions = Some(2);
        job.spec.envs = Some(vec![EnvVar { name: "A".into(), value: Some("1".into()), ..Default::default() }]);
        round_trip(job);
        round_trip(vec![
            fixtures::replica(0, 1, ReplicaPhase::Pending, None, None),
            fixtures::replica(1, 2, ReplicaPhase::Failed, Some(1_700_000_000_000), Some(1_700_000_060_000)),
        ]);
        both::<LogRange>(r#"{"total_lines":2,"ended":true,"lines":[]}"#);
        both::<FailureAnalysis>(
            r#"{"err_class":"ERR_CUDA_OOM","suggestion":"less memory","job_failure_by_node_event":[],"log_streams":[],"failed_replicas":[],"program_error":true,"summary":"out of memory"}"#,
        );
    }

    #[derive(Debug, PartialEq, Deserialize)]
    enum Shape {
        Dot,
        Circle { radius: u32 },
        Pair(i32, i32),
        Named(String),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Numbers {
        count: u64,
        offset: i64,
        ratio: f64,
        small: u8,
        maybe: Option<i32>,
        #[serde(default)]
        absent: Option<String>,
    }

    #[wasm_bindgen_test]
    fn numbers_enums_and_options_read_as_serde_json_reads_them() {
        both::<Numbers>(r#"{"count":1767225600000,"offset":-3,"ratio":0.5,"small":7,"maybe":null}"#);
        // An integral number is a float where a float is asked for.
        assert_eq!(both::<Numbers>(r#"{"count":0,"offset":0,"ratio":2,"small":0,"maybe":4}"#).ratio, 2.0);
        assert_eq!(
            both::<Vec<Shape>>(r#"["Dot",{"Circle":{"radius":2}},{"Pair":[1,-2]},{"Named":"x"}]"#),
            vec![Shape::Dot, Shape::Circle { radius: 2 }, Shape::Pair(1, -2), Shape::Named("x".into())]
        );
    }

    /// Inputs serde_json refuses are refused here too, with a message that
    /// says what was wrong.
    const REFUSED: &[(&str, &str)] = &[
        (r#"{"count":1.5,"offset":0,"ratio":0,"small":0,"maybe":null}"#, "not a whole number"),
        (r#"{"count":-1,"offset":0,"ratio":0,"small":0,"maybe":null}"#, "integer `-1`"),
        (r#"{"count":0,"offset":0,"ratio":0,"small":300,"maybe":null}"#, "integer `300`"),
        (r#"{"count":"1","offset":0,"ratio":0,"small":0,"maybe":null}"#, "invalid type: a string"),
        (r#"{"offset":0,"ratio":0,"small":0,"maybe":null}"#, "missing field `count`"),
        (r#"[1,2]"#, "expected struct Numbers"),
    ];

    #[wasm_bindgen_test]
    fn wrong_values_are_refused_with_what_was_wrong() {
        for (text, says) in REFUSED {
            let error = from_js::<Numbers>(parsed(text)).expect_err(text).to_string();
            assert!(error.contains(says), "{text}: {error}");
            assert!(serde_json::from_str::<Numbers>(text).is_err(), "serde_json takes {text}");
        }
        let error = from_js::<Shape>(parsed(r#"{"Circle":{"radius":1},"Dot":null}"#)).unwrap_err().to_string();
        assert!(error.contains("object with one key"), "{error}");
        // An integer beyond 2^53 reaches the browser rounded: it is refused
        // rather than read as a different number (serde_json would read it).
        let text = r#"{"count":9007199254740993,"offset":0,"ratio":0,"small":0,"maybe":null}"#;
        let error = from_js::<Numbers>(parsed(text)).unwrap_err().to_string();
        assert!(error.contains("not a whole number below 2^53"), "{error}");
    }

    /// Structs are read field by field: a missing field is its default or
    /// "missing field", as serde_json says it, and a short array still says
    /// its length, whatever a struct read before it left behind.
    #[wasm_bindgen_test]
    fn missing_fields_read_as_serde_json_reads_them() {
        let spec = both::<jobdeck_api::JobSpec>(r#"{"completions":2}"#);
        assert_eq!(spec.container, jobdeck_api::Container::default(), "a missing field with a default");
        let error = from_js::<EnvVar>(parsed(r#"{"value":"1"}"#)).unwrap_err().to_string();
        assert!(error.contains("missing field `name`"), "{error}");
        assert!(serde_json::from_str::<EnvVar>(r#"{"value":"1"}"#).is_err());
        let error = from_js::<(i32, i32)>(parsed("[1]")).unwrap_err().to_string();
        assert!(error.contains("invalid length 1"), "{error}");
    }

    /// Answers may carry keys a struct does not name (a partial view reads
    /// a few fields of a large answer); JSON a person gave may not, but in
    /// the structs the contract lets carry them (a job's status).
    #[wasm_bindgen_test]
    fn only_checked_json_refuses_unknown_keys() {
        let with_extra = r#"{"name":"A","value":"1","extra":true}"#;
        assert_eq!(from_js::<EnvVar>(parsed(with_extra)).unwrap().name, "A");
        let error = from_js_checked::<EnvVar>(parsed(with_extra)).unwrap_err().to_string();
        assert!(error.contains("unknown field `extra`"), "{error}");
        assert!(serde_json::from_str::<EnvVar>(with_extra).is_err(), "the contract refuses it too");

        let nested = r#"{"metadata":{"name":"a"},"spec":{"container":{"image":"x","tag":"1"}}}"#;
        let error = from_js_checked::<jobdeck_api::LeptonJob>(parsed(nested)).unwrap_err().to_string();
        assert!(error.contains("unknown field `tag`"), "{error}");
        let status = r#"{"metadata":{"name":"a"},"status":{"state":"Running","job_history":[]}}"#;
        let job = from_js_checked::<jobdeck_api::LeptonJob>(parsed(status)).unwrap();
        assert_eq!(job, serde_json::from_str(status).unwrap());
        // The check ends with the read: the next answer passes over keys.
        assert!(from_js::<EnvVar>(parsed(with_extra)).is_ok());
    }
}
