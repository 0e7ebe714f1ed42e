//! The form's parts downloaded on first use (`wasm_split` points): the
//! job's reader (with the templates), its writer and the contract's rules.

use super::*;

/// Where a job to fill the form from comes from.
pub enum JobSource {
    /// A job as the server answered it, to clone.
    Clone(api::JobJson),
    /// JSON text: an import or a draft.
    Text(String),
    /// A job the server converted from another tool's file (`imports.rs`).
    Converted(api::JobJson),
}

/// What went wrong in a part of the form downloaded on first use (the
/// job's reader and writer, the rules), as the user reads it: the part's own
/// failure, or its download's. The three are declared with `wasm_split`'s
/// `fallible` (Leptos's `#[lazy]` has no such option), so a failed download
/// is this answer rather than a panic that would stop the console; the next
/// call downloads again.
#[derive(Debug)]
pub struct PartFailed(pub String);

impl PartFailed {
    /// A part's download failed.
    pub fn not_downloaded() -> Self {
        PartFailed("a part of the console could not be downloaded; try again".into())
    }
}

impl From<leptos::wasm_split::SplitLoaderError> for PartFailed {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        PartFailed::not_downloaded()
    }
}

impl From<String> for PartFailed {
    fn from(message: String) -> Self {
        PartFailed(message)
    }
}

/// What the form's reading part is asked for: a job read into the form's
/// state, one of the template tools (`templates.rs`), whose use ends in
/// filling the form from the job a template makes, or a file to import
/// (`imports.rs`), which ends the same way.
pub enum Reading {
    Job(JobSource),
    Template(JobForm, TemplateAction),
    Import(JobForm, ImportFile),
    /// A job to clone into the form (`clone.rs`).
    Clone(JobForm, CloneRequest),
}

/// The form filled from a job, and the templates. The job's reader (the
/// contract's `Decode` of a whole job and the form's `from_job`, a fifth of
/// the form's code) is needed only here, so this is a split point of its
/// own: opening the form leaves it out, and a clone, an import, a draft or
/// the templates fetch it the first time (docs/measurements.md, "The
/// create-job form drawn"). The templates are in the same split point rather
/// than one of their own: every split point costs every page of the console
/// about 0.4 KB (its list of modules in the loader; docs/measurements.md,
/// "The form's templates"), and a template's use needs the reader anyway.
#[cfg_attr(
    not(test),
    leptos::wasm_split::wasm_split(read_job, wasm_split_path = ::leptos::wasm_split, fallible)
)]
pub(super) fn read_job(reading: Reading) -> Result<Option<FormState>, PartFailed> {
    let source = match reading {
        Reading::Job(source) => source,
        Reading::Template(form, action) => {
            template_tool(form, action);
            return Ok(None);
        }
        Reading::Import(form, file) => {
            import_tool(form, file);
            return Ok(None);
        }
        Reading::Clone(form, request) => {
            clone_tool(form, request);
            return Ok(None);
        }
    };
    let state = match source {
        JobSource::Clone(json) => json.whole().map(|job| FormState::for_clone(&job)).map_err(|e| e.to_string()),
        JobSource::Text(text) => parse_job(&text).map(|job| FormState::from_job(&job)),
        JobSource::Converted(json) => json.whole().map(|job| FormState::from_job(&job)).map_err(|e| e.to_string()),
    };
    Ok(Some(state?))
}

/// The contract's rules as the form runs them, with the form's conversion
/// to a job, which nothing needs before the form is used.
#[derive(Clone, Copy)]
pub(crate) struct Rules {
    /// The job the form describes, and what the conversion found
    /// (`FormState::to_job`). It comes with the rules rather than with the
    /// page: until the form is used nothing needs the job, and its 5 KB of
    /// code put the move from the list to the form over its 40 KB
    /// (docs/measurements.md, "The console back within its budgets").
    pub to_job: fn(&FormState) -> (LeptonJob, FieldErrors),
    /// The job-only rules, and the server's once its data is loaded.
    pub check: fn(&LeptonJob, Option<&ValidationContext>) -> FieldErrors,
    /// For a job with requirements (`spec.resources`) and no shape: the shape
    /// they choose, if any, and the words that say which and why (the
    /// contract's one chooser, which lives with the rules it shares its
    /// code with).
    pub shape_choice: fn(&JobSpec, &ValidationContext) -> (Option<String>, String),
}

/// The contract's rules (`validate_job`, `validate_job_in`), 14 KB brotli of
/// the form's download, are needed only once the form is used: until then
/// no problem shows and the status says nothing. So they are a split point
/// of their own, fetched at the first focus, value, click or submit in the
/// form or the first fill (`JobForm::rules_in`), while the user reads and
/// types (docs/measurements.md, "The contract's rules on first use").
/// When their download fails the form goes on without them (`PartFailed`).
#[cfg_attr(
    not(test),
    leptos::wasm_split::wasm_split(job_rules, wasm_split_path = ::leptos::wasm_split, fallible)
)]
pub(super) fn job_rules() -> Result<Rules, PartFailed> {
    Ok(Rules {
        to_job: FormState::to_job,
        check: |job, context| match context {
            Some(context) => validate_job_in(job, context),
            None => validate_job(job),
        },
        shape_choice: |spec, context| {
            let Some(requirements) = &spec.resources else { return (None, String::new()) };
            let offers = offers(spec, requirements, &context.shapes, &context.node_groups);
            match chosen_offer(&offers) {
                Some(offer) => (offer.shape.id.clone(), choice_words(requirements, &offers, offer.shape)),
                None => (None, format!("no shape meets {}", requirement_words(requirements))),
            }
        },
    })
}

/// How the form writes its job as text.
pub enum JobText {
    /// JSON, as `POST /jobs` and a draft link take it.
    Json,
    /// JSON for people: the "Copy JSON spec" tool.
    PrettyJson,
    /// The `lep job create` command line.
    LepCommand,
}

/// The form's job as text. The job's writer (the contract's `Serialize` of a
/// whole job as JSON, 10 KB of code) and the lep command are needed only
/// when the job leaves the form (created, copied, shared), so they are a
/// split point of their own, fetched the first time (docs/measurements.md,
/// "The create-job form drawn").
#[cfg_attr(
    not(test),
    leptos::wasm_split::wasm_split(write_job, wasm_split_path = ::leptos::wasm_split, fallible)
)]
pub(super) fn write_job(job: LeptonJob, text: JobText) -> Result<String, PartFailed> {
    let written = match text {
        JobText::Json => api::to_json(&job).map_err(|e| e.to_string()),
        JobText::PrettyJson => api::to_pretty_json(&job).map_err(|e| e.to_string()),
        JobText::LepCommand => Ok(export::lep_command(&job)),
    };
    Ok(written?)
}

/// A job in JSON: `{metadata, spec}` as the API takes it, or a bare spec as
/// `lep job create -f` takes it.
pub fn parse_job(text: &str) -> Result<LeptonJob, String> {
    let whole_job = text.contains("\"spec\"") || text.contains("\"metadata\"");
    if whole_job {
        api::parse_json(text).map_err(|e| format!("This is not a job in JSON: {e}"))
    } else {
        let spec: JobSpec = api::parse_json(text).map_err(|e| format!("This is not a job spec in JSON: {e}"))?;
        Ok(LeptonJob { spec, ..Default::default() })
    }
}
