//! "Import a job file": a job as the API or `lep job create -f` takes it,
//! read here in the browser, or a file of another tool (an NVCF task, a
//! Kubernetes Job, a dstack task) that the server converts (`POST
//! /jobs/convert`); then the form is filled and, for a converted file, what
//! became of each of its fields is listed under the import box, with its
//! line: the job's field it became, or why it was not carried over.
//!
//! Part of the form's reading split point (`on_demand::read_job`): the
//! import fills the form through the job's reader anyway, and a form that
//! never imports downloads neither.

use jobdeck_api::ConversionNote;

use super::*;
use crate::api::convert::convert_file;

/// The formats of the import's select, by `?from=` name; the first, empty,
/// asks the form to tell the format from the file.
pub(super) const IMPORT_FORMATS: [(&str, &str); 5] = [
    ("", "Tell from the file"),
    ("lepton", "Jobdeck or Lepton job"),
    ("nvcf", "NVCF task (task.json)"),
    ("kubernetes", "Kubernetes Job"),
    ("dstack", "dstack task (.dstack.yml)"),
];

/// The id of the format's select.
pub(super) const IMPORT_FORMAT_ID: &str = "import-format";
/// The id of the list of what became of a converted file's fields.
const IMPORT_NOTES_ID: &str = "import-notes";

/// A file to import: its text, and its name when it was chosen as a file.
pub struct ImportFile {
    pub text: String,
    pub file_name: Option<String>,
}

/// The format of a job file, told by its name and the fields only that
/// format has; `None` when nothing tells. A JSON object with none of the
/// other formats' fields is a Jobdeck or Lepton job.
pub fn detect_format(text: &str, file_name: Option<&str>) -> Option<&'static str> {
    let name = file_name.unwrap_or_default().to_ascii_lowercase();
    if name.ends_with(".dstack.yml") || name.ends_with(".dstack.yaml") {
        return Some("dstack");
    }
    let has_key = |key: &str| {
        text.lines().any(|line| {
            let line = line.trim_start().trim_start_matches("- ");
            line.starts_with(&format!("{key}:")) || line.starts_with(&format!("\"{key}\""))
        })
    };
    if has_key("apiVersion") && has_key("kind") {
        Some("kubernetes")
    } else if ["containerImage", "containerArgs", "gpuSpecification"].iter().any(|key| has_key(key)) {
        Some("nvcf")
    } else if has_key("commands") || (has_key("type") && text.contains("task")) {
        Some("dstack")
    } else if text.trim_start().starts_with('{') {
        Some("lepton")
    } else {
        None
    }
}

/// What the import's notice calls a format.
fn format_words(format: &str) -> &'static str {
    match format {
        "nvcf" => "NVCF task",
        "kubernetes" => "Kubernetes Job",
        "dstack" => "dstack task",
        _ => "job",
    }
}

/// Imports `file` into the form, in the background.
pub(super) fn import_tool(form: JobForm, file: ImportFile) {
    leptos::task::spawn_local(async move { import(&form, file).await });
}

async fn import(form: &JobForm, file: ImportFile) {
    if let Some(notes) = by_id(IMPORT_NOTES_ID) {
        notes.remove();
    }
    let chosen = by_id(IMPORT_FORMAT_ID)
        .and_then(|select| select.dyn_into::<web_sys::HtmlSelectElement>().ok())
        .map(|select| select.value())
        .filter(|value| !value.is_empty());
    let format = match chosen.as_deref() {
        Some(chosen) => IMPORT_FORMATS.iter().map(|(value, _)| *value).find(|value| *value == chosen),
        None => detect_format(&file.text, file.file_name.as_deref()),
    };
    let say_error = |message: String| {
        form.change(|c| c.import_error = Some(message));
    };
    let Some(format) = format else {
        return say_error(
            "Jobdeck cannot tell what kind of file this is: choose its format above, then import again.".into(),
        );
    };
    // A job in JSON is read here, without a round trip; anything else is
    // the server's to convert (YAML, other tools' fields).
    if format == "lepton" && file.text.trim_start().starts_with('{') {
        return match form.import(&file.text).await {
            Ok(()) => filled(form, "Imported the job: every problem in it is marked below.".into()),
            Err(message) => say_error(message),
        };
    }
    let converted = match convert_file(format, file.text).await {
        Ok(converted) => converted,
        Err(ApiFailure::Unauthorized) => return form.fail(ApiFailure::Unauthorized),
        Err(ApiFailure::Invalid { fields, .. }) if !fields.is_empty() => {
            let said: Vec<String> =
                fields.iter().map(|(field, messages)| format!("{field}: {}", messages.join("; "))).collect();
            return say_error(format!("This {} cannot be imported: {}", format_words(format), said.join(" ")));
        }
        Err(failure) => return say_error(format!("This file could not be converted: {failure}")),
    };
    if let Err(message) = form.fill(JobSource::Converted(converted.job)).await {
        return say_error(message);
    }
    let dropped = converted.notes.iter().filter(|note| note.became.is_none()).count();
    let carried = converted.notes.len() - dropped;
    let name = file.file_name.map(|name| format!(" {name}")).unwrap_or_default();
    draw_notes(form, &format!("What became of each field of the {}{name}", format_words(format)), &converted.notes);
    filled(
        form,
        format!(
            "Imported the {}{name}: {carried} field(s) carried over, {dropped} not (listed under Import a job file). \
             Review every field, then create the job.",
            format_words(format)
        ),
    );
}

/// Says the form was filled, and moves to its first problem.
fn filled(form: &JobForm, notice: String) {
    form.change(|c| {
        c.import_error = None;
        c.notice = Some(notice);
    });
    form.focus_first_problem();
}

/// Lists `notes` at the end of the import box: each field with its line,
/// then the job's field it became or "not carried over", and why.
fn draw_notes(form: &JobForm, title: &str, notes: &[ConversionNote]) {
    let Some(import) = form.0.read(|c| c.parts.as_ref().map(|parts| parts.import.clone())).flatten() else { return };
    let section = dom::child(&import, "section", "import-notes", "");
    dom::set(&section, "id", IMPORT_NOTES_ID);
    dom::set(&section, "aria-label", title);
    dom::child(&section, "h3", "", title);
    // The form's list styles (`rows`, `row`, `badge waiting`): a style
    // of its own would be in every page's download.
    let list = dom::child(&section, "ul", "rows", "");
    for note in notes {
        let item = dom::child(&list, "li", if note.became.is_some() { "row carried" } else { "row dropped" }, "");
        let at = match note.line {
            Some(line) => format!("line {line} · {}", note.field),
            None => note.field.clone(),
        };
        dom::child(&item, "span", "mono", &at);
        match &note.became {
            Some(became) => {
                dom::child(&item, "span", "", " → ");
                dom::child(&item, "span", "mono", became);
            }
            None => {
                dom::child(&item, "span", "badge waiting", "not carried over");
            }
        }
        dom::child(&item, "p", "help", &note.message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn each_tools_file_is_told_by_its_fields_or_its_name() {
        let fixture = |name: &str| match name {
            "task.json" => include_str!("../../../tests/fixtures/convert/task.json"),
            "job.yaml" => include_str!("../../../tests/fixtures/convert/job.yaml"),
            "train.dstack.yml" => include_str!("../../../tests/fixtures/convert/train.dstack.yml"),
            _ => include_str!("../../../tests/fixtures/convert/lepton-spec.json"),
        };
        assert_eq!(detect_format(fixture("task.json"), None), Some("nvcf"));
        assert_eq!(detect_format(fixture("job.yaml"), None), Some("kubernetes"));
        assert_eq!(detect_format(fixture("train.dstack.yml"), None), Some("dstack"));
        assert_eq!(detect_format(fixture("lepton-spec.json"), None), Some("lepton"));
        // A Kubernetes Job in JSON, as `kubectl get job -o json` writes it.
        assert_eq!(
            detect_format("{\n  \"apiVersion\": \"batch/v1\",\n  \"kind\": \"Job\"\n}", None),
            Some("kubernetes")
        );
        // The name tells a dstack file whatever it holds.
        assert_eq!(detect_format("name: x\n", Some("Train.dstack.yml")), Some("dstack"));
        // YAML of nothing known is not guessed at.
        assert_eq!(detect_format("name: x\nimage: busybox\n", Some("job.yaml")), None);
        assert_eq!(detect_format("", None), None);
    }
}
