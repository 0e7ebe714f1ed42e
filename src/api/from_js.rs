//! Reads the contract's types out of a value the browser parsed
//! (`JSON.parse`, `Response.json()`) with the contract's own reader,
//! `jobdeck_api::Decode`: this module only says what a browser value is.
//!
//! Why not `serde_json::from_str`: serde_json's parser is generic over the
//! visitor, so every decoded type got its own copy of the JSON reading
//! code, in every page that decodes it; and serde's derived readers return
//! early after every field, dropping what was read so far. Here the browser
//! reads the text, and a struct's reader is one call per field
//! (docs/measurements.md, "JSON read by the browser" and "A decoder from
//! the contract's attributes").
//!
//! JSON has one number type; the browser gives `f64`. `Decode` reads an
//! integral number that `f64` holds exactly as an integer and refuses any
//! other where an integer is asked for. The contract's integers (timestamps
//! in milliseconds, byte counts, line numbers) stay well within the 2^53
//! that `f64` holds exactly.

use jobdeck_api::{Decode, DecodeError, JsonValue};
use js_sys::{Array, Object};
use wasm_bindgen::{JsCast, JsValue};

/// One value the browser parsed.
struct Parsed(JsValue);

impl JsonValue for Parsed {
    fn property(&self, key: &str) -> Option<Parsed> {
        // Only asked of objects (see `JsonValue::property`); `Reflect.get`
        // fails on anything that is not one, which reads as absent.
        // `Reflect.get` also finds inherited properties; the names asked for
        // are the structs' own field names (none is a property of
        // `Object.prototype`) or the object's own keys, never other input.
        let value = js_sys::Reflect::get(&self.0, &JsValue::from_str(key)).ok()?;
        (!value.is_undefined()).then_some(Parsed(value))
    }

    fn is_null(&self) -> bool {
        self.0.is_null() || self.0.is_undefined()
    }

    fn is_object(&self) -> bool {
        self.0.is_object() && !Array::is_array(&self.0)
    }

    fn as_bool(&self) -> Option<bool> {
        self.0.as_bool()
    }

    fn as_f64(&self) -> Option<f64> {
        self.0.as_f64()
    }

    fn as_string(&self) -> Option<String> {
        self.0.as_string()
    }

    fn items(&self) -> Option<Vec<Parsed>> {
        let items: &Array = self.0.dyn_ref()?;
        Some(items.iter().map(Parsed).collect())
    }

    fn keys(&self) -> Option<Vec<String>> {
        if !self.is_object() {
            return None;
        }
        let keys = Object::keys(self.0.unchecked_ref::<Object>());
        Some(keys.iter().filter_map(|key| key.as_string()).collect())
    }
}

/// Reads `T` out of a parsed JSON value: an answer of the server, whose
/// keys a type does not name are passed over (the list's partial view reads
/// a few fields of each job).
pub fn from_js<T: Decode>(value: JsValue) -> Result<T, DecodeError> {
    T::decode(&Parsed(value), false)
}

/// Like `from_js`, for JSON a person gave (an imported job): a key a
/// `deny_unknown_fields` struct does not name is refused, as the server
/// refuses it.
pub fn from_js_checked<T: Decode>(value: JsValue) -> Result<T, DecodeError> {
    T::decode(&Parsed(value), true)
}

#[cfg(test)]
mod tests {
    use jobdeck_api::{EnvVar, FailureAnalysis, JobSpec, JobState, LeptonJob, LogRange, ReplicaPhase};
    use serde::de::DeserializeOwned;
    use std::fmt;
    use wasm_bindgen_test::wasm_bindgen_test;

    use super::*;
    use crate::fixtures;

    fn parsed(text: &str) -> JsValue {
        js_sys::JSON::parse(text).expect("test JSON parses")
    }

    /// Reads `text` both ways: through the browser and `Decode`, and with
    /// serde_json (the server's reader). They must agree.
    fn both<T: Decode + DeserializeOwned + PartialEq + fmt::Debug>(text: &str) -> T {
        let ours: T = from_js(parsed(text)).unwrap_or_else(|e| panic!("{text}: {e}"));
        let reference: T = serde_json::from_str(text).unwrap_or_else(|e| panic!("serde_json: {text}: {e}"));
        assert_eq!(ours, reference, "{text}");
        ours
    }

    /// The contract's values, written by serde_json as the server writes
    /// them, read back equal.
    fn round_trip<T: serde::Serialize + Decode + DeserializeOwned + PartialEq + fmt::Debug>(value: T) {
        both::<T>(&serde_json::to_string(&value).unwrap());
    }

    #[wasm_bindgen_test]
    fn contract_types_read_as_serde_json_reads_them() {
        let mut job = fixtures::job("j-1", "train", "alice", JobState::Running);
        job.spec.container.command = Some(vec!["sh".into(), "-c".into(), "echo hi".into()]);
        job.spec.completions = Some(2);
        job.spec.envs = Some(vec![EnvVar { name: "A".into(), value: Some("1".into()), ..Default::default() }]);
        job.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
        round_trip(job);
        round_trip(vec![
            fixtures::replica(0, 1, ReplicaPhase::Pending, None, None),
            fixtures::replica(1, 2, ReplicaPhase::Failed, Some(1_700_000_000_000), Some(1_700_000_060_000)),
        ]);
        both::<LogRange>(r#"{"total_lines":2,"ended":true,"lines":[]}"#);
        both::<FailureAnalysis>(
            r#"{"err_class":"ERR_CUDA_OOM","suggestion":"less memory","job_failure_by_node_event":[],"log_streams":[],"failed_replicas":[],"program_error":true,"summary":"out of memory"}"#,
        );
        // An integral number is a float where a float is asked for.
        assert_eq!(both::<Vec<(i64, f64, f64)>>("[[1,2,0.5]]"), [(1, 2.0, 0.5)]);
    }

    /// Inputs serde_json refuses are refused here too, with a message that
    /// says what was wrong and where.
    const REFUSED: &[(&str, &str)] = &[
        (r#"{"completions":1.5}"#, "completions: invalid type: a number that is not a whole number"),
        (r#"{"completions":"1"}"#, "completions: invalid type: string \"1\", expected i64"),
        (r#"{"envs":[{"value":"1"}]}"#, "envs[0]: missing field `name`"),
        (r#"{"envs":{"name":"A"}}"#, "envs: invalid type: an object, expected an array"),
        (r#"{"visibility":"secret"}"#, "unknown field `visibility`"),
        (r#"[1,2]"#, "expected struct JobSpec"),
    ];

    #[wasm_bindgen_test]
    fn wrong_values_are_refused_with_what_was_wrong_and_where() {
        for (text, says) in REFUSED {
            let error = from_js_checked::<JobSpec>(parsed(text)).expect_err(text).to_string();
            assert!(error.contains(says), "{text}: {error}");
            assert!(serde_json::from_str::<JobSpec>(text).is_err(), "serde_json takes {text}");
        }
        // An integer beyond 2^53 reaches the browser rounded: it is refused
        // rather than read as a different number (serde_json would read it).
        let error = from_js::<JobSpec>(parsed(r#"{"completions":9007199254740993}"#)).unwrap_err().to_string();
        assert!(error.contains("not a whole number below 2^53"), "{error}");
        let error = from_js::<(i64, f64)>(parsed("[1]")).unwrap_err().to_string();
        assert!(error.contains("invalid length 1"), "{error}");
    }

    #[wasm_bindgen_test]
    fn missing_fields_read_as_serde_json_reads_them() {
        let spec = both::<JobSpec>(r#"{"completions":2}"#);
        assert_eq!(spec.container, jobdeck_api::Container::default(), "a missing field with a default");
        let error = from_js::<EnvVar>(parsed(r#"{"value":"1"}"#)).unwrap_err().to_string();
        assert_eq!(error, "missing field `name`");
        assert!(serde_json::from_str::<EnvVar>(r#"{"value":"1"}"#).is_err());
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
        let error = from_js_checked::<LeptonJob>(parsed(nested)).unwrap_err().to_string();
        assert_eq!(error, "spec.container: unknown field `tag`, expected one of `image`, `ports`, `command`, `args`, `working_dir`, `user`, `image_tag`, `registry_username`, `registry_password`");
        let status = r#"{"metadata":{"name":"a"},"status":{"state":"Running","job_history":[]}}"#;
        let job = from_js_checked::<LeptonJob>(parsed(status)).unwrap();
        assert_eq!(job, serde_json::from_str(status).unwrap());
    }
}
