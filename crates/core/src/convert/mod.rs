//! Converting a job file of another tool into a Jobdeck job (`POST
//! /jobs/convert?from=…`): a dstack task, an NVCF container task, a
//! Kubernetes `batch/v1` Job or a Lepton job. A conversion creates nothing:
//! it answers the job and, field by field, what each became or why it could
//! not be carried over, with the line of the file it is on; the job then
//! goes through `POST /jobs` like any other.
//!
//! docs/api.md, "Converting a job file", says what each format becomes.

pub mod dstack;
pub mod kubernetes;
pub mod lepton;
pub mod nvcf;
pub mod shapes;
pub mod source;
mod volumes;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::config::ShapeConfig;

pub use source::{Document, SourceError};

/// The formats a file may be converted from (`?from=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Dstack,
    Nvcf,
    Kubernetes,
    Lepton,
}

impl Format {
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "dstack" => Some(Format::Dstack),
            "nvcf" => Some(Format::Nvcf),
            "kubernetes" => Some(Format::Kubernetes),
            "lepton" => Some(Format::Lepton),
            _ => None,
        }
    }
}

/// The job `text` (a file of `format`) becomes, with its notes, on a
/// workspace of `shapes` and of the volumes `volumes` names.
pub fn convert(
    format: Format,
    text: &str,
    shapes: &[ShapeConfig],
    volumes: &BTreeMap<String, PathBuf>,
) -> Result<Converted, ConvertError> {
    let documents = source::read(text)?;
    if format == Format::Kubernetes {
        return kubernetes::convert(&documents, shapes, volumes);
    }
    let document = match documents.as_slice() {
        [one] => one,
        [] => return Err(ConvertError { field: "body".into(), line: 1, message: "the file is empty".into() }),
        _ => {
            return Err(ConvertError {
                field: "body".into(),
                line: 1,
                message: "the file holds several documents; give one".into(),
            })
        }
    };
    match format {
        Format::Dstack => dstack::convert(document, shapes, volumes),
        Format::Nvcf => nvcf::convert(document, shapes),
        Format::Lepton => lepton::convert(document),
        Format::Kubernetes => unreachable!("read above"),
    }
}

/// What became of one field of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The line of the file (from 1), when the field is in it.
    pub line: Option<usize>,
    /// The field of the file, as a path (`gpuSpecification.gpu`).
    pub field: String,
    /// The field of the job it became; `None`: not carried over.
    pub became: Option<String>,
    pub message: String,
}

/// A conversion's job (as JSON, read as a `LeptonJob` by the caller) and
/// its notes, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub job: Value,
    pub notes: Vec<Note>,
}

/// Why a file cannot be converted: the field (the file's path, `body` for
/// the whole) and what is wrong, with its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: line {line}: {message}")]
pub struct ConvertError {
    pub field: String,
    pub line: usize,
    pub message: String,
}

impl From<SourceError> for ConvertError {
    fn from(error: SourceError) -> Self {
        ConvertError { field: "body".into(), line: error.line, message: error.message }
    }
}

/// The notes of one conversion, each with its line read from the document.
pub(crate) struct Notes<'a> {
    document: &'a Document,
    notes: Vec<Note>,
}

impl<'a> Notes<'a> {
    pub(crate) fn new(document: &'a Document) -> Self {
        Notes { document, notes: Vec::new() }
    }

    /// `field` became `became`.
    pub(crate) fn carried(&mut self, field: &str, became: &str, message: impl Into<String>) {
        self.push(field, Some(became), message.into());
    }

    /// `field` could not be carried over.
    pub(crate) fn dropped(&mut self, field: &str, message: impl Into<String>) {
        self.push(field, None, message.into());
    }

    fn push(&mut self, field: &str, became: Option<&str>, message: String) {
        self.notes.push(Note {
            line: self.document.line(field),
            field: field.to_string(),
            became: became.map(String::from),
            message,
        });
    }

    /// A refusal of `field`.
    pub(crate) fn refuse(&self, field: &str, message: impl Into<String>) -> ConvertError {
        ConvertError { field: field.to_string(), line: self.document.line(field).unwrap_or(1), message: message.into() }
    }

    pub(crate) fn into_notes(mut self) -> Vec<Note> {
        self.notes.sort_by_key(|note| note.line.unwrap_or(usize::MAX));
        self.notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_one_document_except_for_kubernetes() {
        assert_eq!(convert(Format::Nvcf, "", &[], &BTreeMap::new()).unwrap_err().message, "the file is empty");
        let two = "type: task\n---\ntype: task\n";
        assert!(convert(Format::Dstack, two, &[], &BTreeMap::new()).unwrap_err().message.contains("several documents"));
        assert_eq!(Format::parse("kubernetes"), Some(Format::Kubernetes));
        assert_eq!(Format::parse("helm"), None);
        let error = convert(Format::Dstack, "type: task\nname: [unclosed\n", &[], &BTreeMap::new()).unwrap_err();
        assert_eq!((error.field.as_str(), error.line > 1), ("body", true), "{error}");
    }
}
