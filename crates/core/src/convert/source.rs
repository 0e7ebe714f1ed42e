//! Reading a file to convert: YAML, or JSON (which is YAML), into JSON
//! values with the line each field starts on, so that a conversion's notes
//! and errors name lines of the file a person has open.
//!
//! The text is hostile until read: it is bounded in size and in nesting,
//! and aliases are refused (a few nested anchors can otherwise make an
//! exponential number of nodes, "billion laughs").

use std::collections::BTreeMap;

use saphyr::{MarkedYaml, Scalar, YamlData, YamlLoader};
use serde_json::{Map, Number, Value};

/// The most bytes a file to convert may have.
pub const SOURCE_BYTES_MAX: usize = 256 * 1024;
/// The deepest nesting read; job files are a few levels deep.
const DEPTH_MAX: usize = 64;
/// The most nodes aliases may add, over the whole file.
const ALIAS_NODES_MAX: usize = 10_000;

/// Why a file could not be read, and on which line (from 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct SourceError {
    pub line: usize,
    pub message: String,
}

/// One document of the file (YAML files may hold several, `---` between).
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub value: Value,
    /// The line each field starts on, by its path (`spec.template.spec.containers[0].image`).
    lines: BTreeMap<String, usize>,
}

impl Document {
    /// The line `path` starts on, if the document has it.
    pub fn line(&self, path: &str) -> Option<usize> {
        self.lines.get(path).copied()
    }
}

/// The documents of `text`.
pub fn read(text: &str) -> Result<Vec<Document>, SourceError> {
    if text.len() > SOURCE_BYTES_MAX {
        return Err(SourceError {
            line: 1,
            message: format!("the file has {} bytes; at most {SOURCE_BYTES_MAX} are read", text.len()),
        });
    }
    refuse_aliases(text)?;
    let mut loader = YamlLoader::<MarkedYaml>::default();
    loader.alias_limit(ALIAS_NODES_MAX);
    let mut parser = saphyr_parser::Parser::new_from_str(text);
    let loaded = parser.load(&mut loader, true);
    if let Some(error) = loader.error().cloned() {
        return Err(scan_error(&error));
    }
    loaded.map_err(|error| scan_error(&error))?;
    loader
        .into_documents()
        .iter()
        .map(|node| {
            let mut lines = BTreeMap::new();
            let value = to_json(node, "", 0, &mut lines)?;
            Ok(Document { value, lines })
        })
        .collect()
}

/// Refuses aliases before anything is built: each is a copy of its
/// anchor's value, so a few of them on a long value, or nested, make a file
/// of 256 KiB into gigabytes (the loader's own limit counts nodes, not
/// bytes). Job files write their values out.
fn refuse_aliases(text: &str) -> Result<(), SourceError> {
    for event in saphyr_parser::Parser::new_from_str(text) {
        match event {
            Ok((saphyr_parser::Event::Alias(_), span)) => {
                return Err(SourceError {
                    line: span.start.line(),
                    message: "anchors and aliases (&name, *name) are not read: write the value out".into(),
                })
            }
            Ok(_) => {}
            Err(error) => return Err(scan_error(&error)),
        }
    }
    Ok(())
}

fn scan_error(error: &saphyr::ScanError) -> SourceError {
    SourceError { line: error.marker().line(), message: error.info().to_string() }
}

/// `node` as JSON; every field's line recorded under its path.
fn to_json(
    node: &MarkedYaml,
    path: &str,
    depth: usize,
    lines: &mut BTreeMap<String, usize>,
) -> Result<Value, SourceError> {
    let line = node.span.start.line();
    let refuse = |message: &str| Err(SourceError { line, message: message.to_string() });
    if depth > DEPTH_MAX {
        return refuse(&format!("nested more than {DEPTH_MAX} levels deep"));
    }
    if !path.is_empty() {
        lines.entry(path.to_string()).or_insert(line);
    }
    match &node.data {
        YamlData::Value(scalar) => scalar_json(scalar).map_or_else(|| refuse("a number JSON cannot hold"), Ok),
        YamlData::Representation(text, _, _) => Ok(Value::String(text.to_string())),
        YamlData::Sequence(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| to_json(item, &format!("{path}[{i}]"), depth + 1, lines))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        YamlData::Mapping(fields) => {
            let mut object = Map::new();
            for (key_node, value) in fields {
                let key = match &key_node.data {
                    YamlData::Value(Scalar::String(text)) => text.to_string(),
                    YamlData::Value(scalar) => match scalar_json(scalar) {
                        Some(Value::String(text)) => text,
                        Some(other) => other.to_string(),
                        None => return refuse("a key JSON cannot hold"),
                    },
                    _ => return refuse("a key must be text, not a list or a mapping"),
                };
                let at = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                // A field is on its key's line (a block mapping or list as
                // the value starts on the next).
                lines.entry(at.clone()).or_insert(key_node.span.start.line());
                let value = to_json(value, &at, depth + 1, lines)?;
                if object.insert(key.clone(), value).is_some() {
                    return refuse(&format!("'{key}' is given twice"));
                }
            }
            Ok(Value::Object(object))
        }
        YamlData::Tagged(_, inner) => to_json(inner, path, depth + 1, lines),
        YamlData::Alias(_) | YamlData::BadValue => refuse("not a value this file can use"),
    }
}

fn scalar_json(scalar: &Scalar) -> Option<Value> {
    Some(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(n) => Value::Number((*n).into()),
        Scalar::FloatingPoint(f) => Value::Number(Number::from_f64(f.into_inner())?),
        Scalar::String(text) => Value::String(text.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_json_read_alike_with_the_line_of_each_field() {
        let yaml =
            read("type: task\nresources:\n  gpu: A100:80GB:2\ncommands:\n  - pip install x\n  - python train.py\n")
                .unwrap();
        let [doc] = yaml.as_slice() else { panic!("one document") };
        assert_eq!(doc.value["resources"]["gpu"], "A100:80GB:2");
        assert_eq!((doc.line("type"), doc.line("resources.gpu"), doc.line("commands[1]")), (Some(1), Some(3), Some(6)));
        let json = read("{\n \"name\": \"t\",\n \"containerArgs\": \"--epochs 10\"\n}").unwrap();
        assert_eq!(json[0].value["containerArgs"], "--epochs 10");
        assert_eq!(json[0].line("containerArgs"), Some(3));
        // YAML 1.2: `on` and `yes` are text, as in JSON.
        assert_eq!(read("on: yes").unwrap()[0].value, serde_json::json!({"on": "yes"}));
    }

    #[test]
    fn hostile_files_are_refused_with_a_line() {
        let laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
                      e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n";
        let refused = read(laughs).unwrap_err();
        assert_eq!((refused.line, refused.message.starts_with("anchors and aliases")), (2, true), "{refused}");
        let long = format!("a: &a {}\nb: [*a]\n", "x".repeat(1000));
        assert_eq!(read(&long).unwrap_err().line, 2, "one alias of a long value is refused too");
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        assert!(read(&deep).unwrap_err().message.contains("nested more than 64"));
        assert_eq!(read("a: 1\na: 2\n").unwrap_err().line, 2);
        assert!(read(&"x".repeat(SOURCE_BYTES_MAX + 1)).unwrap_err().message.contains("at most"));
        assert_eq!(read("a: [1, 2\nb: 3\n").unwrap_err().line, 2);
    }
}
