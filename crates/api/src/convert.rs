//! `POST /jobs/convert?from=dstack|nvcf|kubernetes|lepton`: a job file of
//! another tool as a Jobdeck job, and what became of each of its fields.
//! Converting creates nothing; the job goes through `POST /jobs`.

use serde::{Deserialize, Serialize};

use crate::job::LeptonJob;

/// The answer: the job, and a note per field of the file, in its order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConvertedJob {
    pub job: LeptonJob,
    #[serde(default)]
    pub notes: Vec<ConversionNote>,
}

/// What became of one field of the file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConversionNote {
    /// The file's line the field is on (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The field of the file, as a path (`gpuSpecification.gpu`).
    pub field: String,
    /// The job's field it became; absent when it was not carried over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub became: Option<String>,
    pub message: String,
}
