//! `POST /jobs/convert?from=…`: a job file of another tool (a dstack task,
//! an NVCF task, a Kubernetes Job, a Lepton job) as a Jobdeck job, with a
//! note per field of the file. The conversion is the pure
//! `jobdeck_core::convert`; it creates nothing (docs/api.md, "Converting a
//! job file").

use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use axum::Json;
use jobdeck_api::{ConversionNote, ConvertedJob, LeptonJob};
use jobdeck_core::convert::{self, ConvertError, Format};
use serde::Deserialize;

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiQuery, AppError, AppResult};
use crate::{AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![("/jobs/convert", post(convert_file))]
}

#[derive(Deserialize)]
struct ConvertQuery {
    from: String,
}

impl From<ConvertError> for AppError {
    fn from(error: ConvertError) -> Self {
        AppError::Validation([(error.field, vec![format!("line {}: {}", error.line, error.message)])].into())
    }
}

/// `POST /jobs/convert?from=dstack|nvcf|kubernetes|lepton`, the file's text
/// as the body.
async fn convert_file(
    State(state): State<AppState>,
    _user: CurrentUser,
    ApiQuery(query): ApiQuery<ConvertQuery>,
    body: axum::body::Bytes,
) -> AppResult<Response> {
    // Read here rather than by axum's `String`, whose refusal of other
    // bytes is a plain-text 400, not the API's error.
    let body = std::str::from_utf8(&body)
        .map_err(|_| AppError::Validation([("body".to_string(), vec!["must be UTF-8 text".to_string()])].into()))?;
    let format = Format::parse(&query.from).ok_or_else(|| {
        AppError::Validation([("from".to_string(), vec!["one of dstack, nvcf, kubernetes, lepton".to_string()])].into())
    })?;
    let converted = convert::convert(format, body, &state.config.shapes, &state.config.executor.local.volumes)?;
    // The converters write only what the contract reads; a value of the
    // wrong kind in the file (a number for a name) is refused at the job's
    // field it would have become.
    let job: LeptonJob = match jobdeck_api::from_json(converted.job.to_string().as_bytes()) {
        Ok(job) => job,
        Err(jobdeck_api::JsonError::Fields(fields)) => {
            return Err(AppError::Validation(fields.into_iter().map(|(path, m)| (format!("job.{path}"), m)).collect()))
        }
        Err(jobdeck_api::JsonError::Syntax(message)) => return Err(AppError::BadRequest(message)),
    };
    let notes = converted
        .notes
        .into_iter()
        .map(|note| ConversionNote {
            line: note.line.and_then(|line| u32::try_from(line).ok()),
            field: note.field,
            became: note.became,
            message: note.message,
        })
        .collect();
    Ok(audit::noted(Json(ConvertedJob { job, notes }), query.from, None))
}
