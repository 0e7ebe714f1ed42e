//! Where a problem shows: the input of a field path (`target_of`), the
//! problems placed on inputs (`Placed`), and the order the form goes
//! through its inputs.

use jobdeck_api::FieldErrors;

use super::*;

/// The input a problem of a field path is shown at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A field of `FIELDS`.
    Field(FieldId),
    /// A cell: list, row, column.
    Cell(ListId, usize, usize),
    /// A list as a whole.
    List(ListId),
}

impl Target {
    /// The id of the input (or, for a list, its add button).
    pub fn input_id(self) -> String {
        match self {
            Target::Field(i) => i.def().id.to_string(),
            Target::Cell(l, r, c) => crate::pages::new_job::list_editor::cell_id(l.def().id, r, c),
            Target::List(l) => format!("{}-add", l.def().id),
        }
    }
}

/// Whether `path` is `prefix` or continues it with `.` or `[`.
fn continues(path: &str, prefix: &str) -> Option<usize> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with(['.', '['])).then_some(prefix.len())
}

/// The input that shows the problems of `path`, if the form has one.
pub fn target_of(path: &str, state: &FormState) -> Option<Target> {
    for l in ListId::all() {
        let list = l.def();
        let Some(at) = continues(path, list.path) else { continue };
        // Read without slicing by position or searching for a string: their
        // panic and search code was 1.5 KB (brotli) of the form's download.
        let Some(inner) = path.get(at..).and_then(|rest| rest.strip_prefix('[')) else {
            return Some(Target::List(l));
        };
        let bytes = inner.as_bytes();
        let end = if inner.starts_with('"') {
            bytes.windows(2).position(|pair| pair == b"\"]").map(|e| e + 1)
        } else {
            bytes.iter().position(|&b| b == b']')
        };
        let Some((index, suffix)) = end.and_then(|end| Some((inner.get(..end)?, inner.get(end + 1..)?))) else {
            return Some(Target::List(l));
        };
        let row = match index.parse::<usize>() {
            Ok(row) => Some(row),
            // A map entry: `["key"]`, the key as a JSON string.
            Err(_) => crate::api::parse_json::<String>(index)
                .ok()
                .and_then(|key| state.lists[l].iter().position(|r| r[0].trim() == key)),
        };
        let col =
            list.column_paths.iter().position(|suffixes| suffixes.iter().any(|s| suffix.starts_with(s))).unwrap_or(0);
        return Some(match row {
            Some(row) if row < state.lists[l].len() => Target::Cell(l, row, col),
            _ => Target::List(l),
        });
    }
    FieldId::all()
        .filter_map(|i| i.def().paths.iter().filter_map(|p| continues(path, p)).max().map(|len| (len, i)))
        .max()
        .map(|(_, i)| Target::Field(i))
}

/// Problems placed on the form: the first message per input id, and those
/// about parts of the job the form has no input for, as `path: message`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placed {
    pub by_input: ByInput,
    pub other: Vec<String>,
}

/// A message per input id, in the order they were placed. A form has a few
/// dozen problems at most, so a list does; a map's removal and rebalancing
/// code was a kilobyte of the form's download.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ByInput(Vec<(String, String)>);

impl ByInput {
    pub fn get(&self, id: &str) -> Option<&String> {
        self.0.iter().find(|(input, _)| input == id).map(|(_, message)| message)
    }

    pub fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// Keeps the first message of each input.
    pub fn add(&mut self, id: String, message: &str) {
        if !self.contains_key(&id) {
            self.0.push((id, message.to_string()));
        }
    }

    pub fn remove(&mut self, id: &str) {
        self.0.retain(|(input, _)| input != id);
    }

    /// Drops the messages of the inputs whose id starts with `prefix`.
    pub fn remove_under(&mut self, prefix: &str) {
        self.0.retain(|(input, _)| !input.starts_with(prefix));
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(input, _)| input)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Index<&str> for ByInput {
    type Output = String;

    fn index(&self, id: &str) -> &String {
        self.get(id).expect("a message for the input")
    }
}

impl Placed {
    /// Places each problem on its input.
    pub fn place(errors: &FieldErrors, state: &FormState) -> Placed {
        let mut placed = Placed::default();
        for (path, messages) in errors {
            let Some(message) = messages.first() else { continue };
            match target_of(path, state) {
                Some(target) => {
                    placed.by_input.add(target.input_id(), message);
                }
                None => placed.other.push(format!("{path}: {message}")),
            }
        }
        placed
    }

    /// How many problems remain.
    pub fn count(&self) -> usize {
        self.by_input.len() + self.other.len()
    }
}

/// Every input id in the order the form shows them, to find the first
/// problem.
pub fn input_order(state: &FormState) -> Vec<String> {
    let mut ids = Vec::new();
    for item in LAYOUT.iter().flat_map(|s| s.items) {
        match *item {
            Item::Field(i) => ids.push(i.def().id.to_string()),
            Item::List(l) => {
                for row in 0..state.lists[l].len() {
                    for col in 0..l.def().columns.len() {
                        ids.push(Target::Cell(l, row, col).input_id());
                    }
                }
                ids.push(Target::List(l).input_id());
            }
        }
    }
    ids
}
