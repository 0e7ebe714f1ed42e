//! A Lepton job (`{"metadata", "spec"}` as the API takes it, or a bare spec
//! as `lep job create -f` takes it): Jobdeck's own format, read by the
//! contract, so what it refuses is refused here with the field's line.

use serde_json::{json, Value};

use super::{ConvertError, Converted, Document, Notes};

/// The job in `document`.
pub fn convert(document: &Document) -> Result<Converted, ConvertError> {
    let mut notes = Notes::new(document);
    let object = document.value.as_object().ok_or_else(|| notes.refuse("body", "a Lepton job is a JSON object"))?;
    let whole = object.contains_key("spec") || object.contains_key("metadata");
    let (job, prefix) = if whole {
        let mut job = document.value.clone();
        if let Some(fields) = job.as_object_mut() {
            if fields.remove("status").is_some() {
                notes.dropped("status", "the server keeps a job's status itself");
            }
            fields.entry("metadata").or_insert_with(|| json!({}));
        }
        (job, "")
    } else {
        (json!({"metadata": {}, "spec": document.value}), "spec.")
    };
    match jobdeck_api::from_json::<jobdeck_api::LeptonJob>(job.to_string().as_bytes()) {
        Ok(_) => {}
        Err(jobdeck_api::JsonError::Fields(fields)) => {
            let (path, messages) = fields.into_iter().next().unwrap_or_default();
            let field = path.strip_prefix(prefix).unwrap_or(&path).to_string();
            return Err(notes.refuse(&field, messages.join("; ")));
        }
        Err(jobdeck_api::JsonError::Syntax(message)) => return Err(notes.refuse("body", message)),
    }
    let top: Vec<String> = match &document.value {
        Value::Object(fields) => fields.keys().filter(|k| *k != "status").cloned().collect(),
        _ => Vec::new(),
    };
    for field in top {
        let became = format!("{prefix}{field}");
        notes.carried(&field, &became, "as it is");
    }
    Ok(Converted { job, notes: notes.into_notes() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::source::read;

    #[test]
    fn a_job_or_a_bare_spec_reads_as_the_api_reads_it() {
        let whole = &read(
            r#"{"metadata": {"name": "a"}, "spec": {"resource_shape": "cpu.small"}, "status": {"state": "Running"}}"#,
        )
        .unwrap()[0];
        let converted = convert(whole).unwrap();
        assert_eq!(converted.job, json!({"metadata": {"name": "a"}, "spec": {"resource_shape": "cpu.small"}}));
        let spec_only = &read(r#"{"spec": {}}"#).unwrap()[0];
        assert_eq!(convert(spec_only).unwrap().job, json!({"metadata": {}, "spec": {}}));
        assert!(converted.notes.iter().any(|n| n.field == "status" && n.became.is_none()));
        let bare = &read("{\n\"resource_shape\": \"cpu.small\",\n\"completions\": 2\n}").unwrap()[0];
        let converted = convert(bare).unwrap();
        assert_eq!(converted.job["spec"]["completions"], 2);
        let note = converted.notes.iter().find(|n| n.field == "completions").unwrap();
        assert_eq!((note.line, note.became.as_deref()), (Some(3), Some("spec.completions")));
    }

    #[test]
    fn what_the_contract_refuses_is_refused_at_its_line() {
        let bad = &read("{\n\"resource_shape\": \"cpu.small\",\n\"completions\": \"two\"\n}").unwrap()[0];
        let error = convert(bad).unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("completions", 3), "{error}");
    }
}
