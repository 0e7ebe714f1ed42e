//! `POST /jobs/convert?from=…` as the create-job form's import calls it
//! (docs/api.md, "Converting a job file"): a dstack task, an NVCF task or a
//! Kubernetes Job as a Jobdeck job, with what became of each of its fields.
//! Only the form's reading part (`pages/new_job/imports.rs`, in the split
//! point of the job's reader) calls this, so its code is in that part's
//! download alone.

use gloo_net::http::Request;
use jobdeck_api::ConversionNote;

use super::form_context::{field, items, text};
use super::{answer_value, authorized, url, ApiFailure, ApiResult, JobJson};
use crate::routes::encode_component;

/// The server's conversion: the job, read by the form's job reader, and a
/// note per field of the file, in the file's order.
pub struct Converted {
    pub job: JobJson,
    pub notes: Vec<ConversionNote>,
}

/// Sends the file's `text` to be converted from the format `from`
/// (`dstack`, `nvcf`, `kubernetes` or `lepton`).
pub async fn convert_file(from: &str, text_of_file: String) -> ApiResult<Converted> {
    let path = url(&format!("/jobs/convert?from={}", encode_component(from)));
    let request = authorized(Request::post(&path))?
        .header("Content-Type", "text/plain; charset=utf-8")
        .body(text_of_file)
        .map_err(|e| ApiFailure::Network(e.to_string()))?;
    let answer = answer_value(request.send().await.map_err(|e| ApiFailure::Network(e.to_string()))?).await?;
    Ok(converted_of(&answer))
}

/// An answer of `POST /jobs/convert` as the browser parsed it.
pub fn converted_of(answer: &wasm_bindgen::JsValue) -> Converted {
    let notes = items(&field(answer, "notes"))
        .unwrap_or_default()
        .iter()
        .map(|note| ConversionNote {
            line: field(note, "line").as_f64().map(|line| line as u32),
            field: text(note, "field").unwrap_or_default(),
            became: text(note, "became"),
            message: text(note, "message").unwrap_or_default(),
        })
        .collect();
    Converted { job: JobJson(field(answer, "job")), notes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::{ConvertedJob, LeptonJob, Metadata};
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn a_conversion_reads_as_the_server_writes_it() {
        let answer = ConvertedJob {
            job: LeptonJob {
                metadata: Metadata { name: Some("my-training-job".into()), ..Metadata::default() },
                ..LeptonJob::default()
            },
            notes: vec![
                ConversionNote {
                    line: Some(9),
                    field: "containerArgs".into(),
                    became: Some("spec.container.command".into()),
                    message: "split as a shell would".into(),
                },
                ConversionNote {
                    line: None,
                    field: "resultHandlingStrategy".into(),
                    became: None,
                    message: "Jobdeck keeps no results".into(),
                },
            ],
        };
        let parsed = js_sys::JSON::parse(&serde_json::to_string(&answer).unwrap()).unwrap();
        let read = converted_of(&parsed);
        assert_eq!(read.notes, answer.notes);
        assert_eq!(read.job.whole().unwrap().metadata.name.as_deref(), Some("my-training-job"));
    }
}
