//! Writes the contract's types as JSON the way the server reads them: a serde
//! `Serializer` that builds the value in the browser (objects, arrays,
//! strings, numbers), which `JSON.stringify` then writes out. The console
//! carries no JSON writer of its own (docs/measurements.md, "JSON read by the
//! browser").
//!
//! The output is what serde_json writes for the same value: fields in
//! declaration order, `None` as `null`, a unit variant as its name, a variant
//! with content as `{"Variant": content}`; like serde_json, `JSON.stringify`
//! writes a number that is not finite as `null`.

use js_sys::{Array, Object, Reflect};
use serde::ser::{self, Serialize};
use wasm_bindgen::JsValue;

/// Why a value cannot be written as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonError(String);

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JsonError {}

impl ser::Error for JsonError {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        JsonError(message.to_string())
    }
}

type Written = Result<JsValue, JsonError>;

/// `value` as compact JSON.
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<String, JsonError> {
    stringify(value, &JsValue::UNDEFINED)
}

/// `value` as JSON indented two spaces a level, for people to read.
pub fn to_pretty_json<T: Serialize + ?Sized>(value: &T) -> Result<String, JsonError> {
    stringify(value, &JsValue::from(2))
}

fn stringify<T: Serialize + ?Sized>(value: &T, indent: &JsValue) -> Result<String, JsonError> {
    let built = value.serialize(Writer)?;
    let text = js_sys::JSON::stringify_with_replacer_and_space(&built, &JsValue::NULL, indent)
        .map_err(|_| JsonError("the browser cannot write this value as JSON".to_string()))?;
    Ok(text.into())
}

/// Builds one value.
struct Writer;

/// Builds an array (a sequence, a tuple, a tuple variant's content).
struct ArrayWriter {
    array: Array,
    /// For a tuple variant: its name, the key of the object around it.
    variant: Option<&'static str>,
}

/// Builds an object (a struct, a map, a struct variant's content).
struct ObjectWriter {
    object: Object,
    variant: Option<&'static str>,
    /// A map's key, until its value comes.
    key: Option<JsValue>,
}

/// `{name: content}`: how serde writes a variant with content.
fn wrap(variant: Option<&'static str>, content: JsValue) -> JsValue {
    let Some(name) = variant else { return content };
    let object = Object::new();
    let _ = Reflect::set(&object, &JsValue::from_str(name), &content);
    object.into()
}

/// Every number type writes a browser number.
macro_rules! numbers {
    ($($method:ident $type:ty),*) => {$(
        fn $method(self, v: $type) -> Written {
            Ok(JsValue::from_f64(v as f64))
        }
    )*};
}

impl ser::Serializer for Writer {
    type Ok = JsValue;
    type Error = JsonError;
    type SerializeSeq = ArrayWriter;
    type SerializeTuple = ArrayWriter;
    type SerializeTupleStruct = ArrayWriter;
    type SerializeTupleVariant = ArrayWriter;
    type SerializeMap = ObjectWriter;
    type SerializeStruct = ObjectWriter;
    type SerializeStructVariant = ObjectWriter;

    fn serialize_bool(self, v: bool) -> Written {
        Ok(JsValue::from_bool(v))
    }

    // Every number is a browser number: exact up to 2^53, as `from_js`
    // reads numbers; the contract's integers stay far below.
    numbers! { serialize_i8 i8, serialize_i16 i16, serialize_i32 i32, serialize_i64 i64, serialize_u8 u8,
    serialize_u16 u16, serialize_u32 u32, serialize_u64 u64, serialize_f32 f32, serialize_f64 f64 }

    fn serialize_char(self, v: char) -> Written {
        Ok(JsValue::from_str(v.encode_utf8(&mut [0; 4])))
    }

    fn serialize_str(self, v: &str) -> Written {
        Ok(JsValue::from_str(v))
    }

    fn serialize_bytes(self, v: &[u8]) -> Written {
        Ok(v.iter().map(|byte| JsValue::from_f64((*byte).into())).collect::<Array>().into())
    }

    fn serialize_none(self) -> Written {
        Ok(JsValue::NULL)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Written {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Written {
        Ok(JsValue::NULL)
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Written {
        Ok(JsValue::NULL)
    }

    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Written {
        Ok(JsValue::from_str(variant))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Written {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Written {
        Ok(wrap(Some(variant), value.serialize(self)?))
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<ArrayWriter, JsonError> {
        Ok(ArrayWriter { array: Array::new(), variant: None })
    }

    fn serialize_tuple(self, len: usize) -> Result<ArrayWriter, JsonError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<ArrayWriter, JsonError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<ArrayWriter, JsonError> {
        Ok(ArrayWriter { array: Array::new(), variant: Some(variant) })
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<ObjectWriter, JsonError> {
        Ok(ObjectWriter { object: Object::new(), variant: None, key: None })
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<ObjectWriter, JsonError> {
        self.serialize_map(None)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<ObjectWriter, JsonError> {
        Ok(ObjectWriter { object: Object::new(), variant: Some(variant), key: None })
    }
}

impl ArrayWriter {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JsonError> {
        self.array.push(&value.serialize(Writer)?);
        Ok(())
    }

    fn finish(self) -> Written {
        Ok(wrap(self.variant, self.array.into()))
    }
}

/// serde has one trait per kind of sequence; each adds to the array.
macro_rules! array_traits {
    ($($kind:ident $add:ident),*) => {$(
        impl ser::$kind for ArrayWriter {
            type Ok = JsValue;
            type Error = JsonError;

            fn $add<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JsonError> {
                self.push(value)
            }

            fn end(self) -> Written {
                self.finish()
            }
        }
    )*};
}

array_traits!(
    SerializeSeq serialize_element,
    SerializeTuple serialize_element,
    SerializeTupleStruct serialize_field,
    SerializeTupleVariant serialize_field
);

impl ObjectWriter {
    fn set<T: Serialize + ?Sized>(&mut self, key: &JsValue, value: &T) -> Result<(), JsonError> {
        let value = value.serialize(Writer)?;
        let _ = Reflect::set(&self.object, key, &value);
        Ok(())
    }

    fn finish(self) -> Written {
        Ok(wrap(self.variant, self.object.into()))
    }
}

impl ser::SerializeMap for ObjectWriter {
    type Ok = JsValue;
    type Error = JsonError;

    /// JSON keys are strings: a number key is written as its digits (the
    /// browser does that when it sets the property), as serde_json does; a
    /// key of any other kind is refused, as serde_json refuses it.
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), JsonError> {
        let key = key.serialize(Writer)?;
        if !key.is_string() && key.as_f64().is_none() {
            return Err(JsonError("a map key that is neither a string nor a number".to_string()));
        }
        self.key = Some(key);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JsonError> {
        let key = self.key.take().ok_or_else(|| JsonError("a map value without its key".to_string()))?;
        self.set(&key, value)
    }

    fn end(self) -> Written {
        self.finish()
    }
}

/// A struct and a struct variant both set named fields.
macro_rules! struct_traits {
    ($($kind:ident),*) => {$(
        impl ser::$kind for ObjectWriter {
            type Ok = JsValue;
            type Error = JsonError;

            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), JsonError> {
                self.set(&JsValue::from_str(key), value)
            }

            fn end(self) -> Written {
                self.finish()
            }
        }
    )*};
}

struct_traits!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use jobdeck_api::{EnvValue, EnvVar, JobState, LeptonJob};
    use serde::Serialize;
    use wasm_bindgen_test::wasm_bindgen_test;

    use super::*;
    use crate::fixtures;

    /// Writes `value` both ways; the texts must be the same.
    fn same_as_serde_json<T: Serialize>(value: &T) -> String {
        let ours = to_json(value).unwrap();
        assert_eq!(ours, serde_json::to_string(value).unwrap());
        ours
    }

    #[wasm_bindgen_test]
    fn a_job_is_written_as_serde_json_writes_it() {
        let mut job: LeptonJob = fixtures::job("j-1", "train", "alice", JobState::Failed);
        job.spec.container.command = Some(vec!["sh".into(), "-c".into(), "echo \"hi\"\n\u{e9}".into()]);
        job.spec.envs = Some(vec![
            EnvVar { name: "A".into(), value: Some("1".into()), ..Default::default() },
            EnvVar {
                name: "S".into(),
                value_from: Some(EnvValue { secret_name_ref: Some("tok".into()), secret_owner: None }),
                ..Default::default()
            },
        ]);
        same_as_serde_json(&job);
    }

    #[derive(Serialize)]
    enum Shape {
        Dot,
        Circle { radius: u32 },
        Pair(i32, i32),
        Named(String),
    }

    #[derive(Serialize)]
    struct Everything {
        small: u8,
        negative: i64,
        ratio: f64,
        not_a_number: f64,
        none: Option<u32>,
        unit: (),
        letter: char,
        shapes: Vec<Shape>,
        labels: BTreeMap<String, String>,
        pair: (bool, &'static str),
    }

    #[wasm_bindgen_test]
    fn every_kind_of_value_is_written_as_serde_json_writes_it() {
        let value = Everything {
            small: 7,
            negative: -1_767_225_600_000,
            ratio: 0.25,
            not_a_number: f64::NAN,
            none: None,
            unit: (),
            letter: 'x',
            shapes: vec![Shape::Dot, Shape::Circle { radius: 2 }, Shape::Pair(1, -2), Shape::Named("n".into())],
            labels: BTreeMap::from([("b".to_string(), "2".to_string()), ("a".to_string(), "1".to_string())]),
            pair: (true, "t"),
        };
        let text = same_as_serde_json(&value);
        assert!(text.contains(r#""not_a_number":null"#), "{text}");
        assert!(text.contains(r#"{"Circle":{"radius":2}}"#), "{text}");
    }

    #[wasm_bindgen_test]
    fn pretty_json_is_indented_two_spaces() {
        let pretty = to_pretty_json(&BTreeMap::from([("a", vec![1, 2])])).unwrap();
        assert_eq!(pretty, "{\n  \"a\": [\n    1,\n    2\n  ]\n}");
    }

    #[wasm_bindgen_test]
    fn map_keys_are_strings() {
        same_as_serde_json(&BTreeMap::from([(1, "one"), (20, "twenty")]));
        let error = to_json(&BTreeMap::from([(vec![1], "one")])).unwrap_err();
        assert!(error.to_string().contains("neither a string nor a number"), "{error}");
        assert!(serde_json::to_string(&BTreeMap::from([(vec![1], "one")])).is_err());
    }
}
