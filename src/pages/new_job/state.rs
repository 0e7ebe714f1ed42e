//! Everything the form knows (`Core`): what was typed, what was left, the
//! problems, what the page shows around the fields; and how it draws
//! itself after each change.

use super::*;

/// The shape option of a job with requirements, and what the shape field
/// says of it until the rules are in.
const BY_REQUIREMENTS: &str = "Smallest that meets the job's requirements";

/// Everything the form knows, outside the reactive graph.
#[derive(Default)]
pub struct Core {
    pub state: FormState,
    /// The server's shapes, node groups and secret names, once loaded.
    pub(super) context: Option<ValidationContext>,
    /// The contract's rules and the form's conversion, once fetched
    /// (`job_rules`); until then no problem is found.
    pub(super) rules: Option<Rules>,
    /// The rules have been asked for (and their download has not failed).
    pub(super) rules_asked: bool,
    /// The workspace's log collection setting, once loaded.
    pub(super) log_default: Option<bool>,
    /// The secrets a variable may reference, each with who may see it.
    pub(super) secret_labels: Vec<(String, String)>,
    /// Inputs the user has left: their problems show.
    pub(super) touched: Vec<String>,
    /// Every problem shows: after a submit attempt, an import or a draft.
    pub(super) show_all: bool,
    /// The server's last 422, placed on inputs; an entry goes when its input
    /// is edited.
    pub(super) server: Placed,
    /// The contract's and the conversion's problems, placed on inputs: made
    /// again after every change of the state or the context.
    pub(super) problems: Placed,
    /// An error that is about no field (the server is down, …).
    pub(super) banner: Option<String>,
    /// Where the form's content came from ("Cloned from …").
    pub(super) notice: Option<String>,
    /// The job a clone came from and the form as it was filled from it
    /// (before a start suggestion's change): what the form now differs in
    /// shows above Create (`clone_diff.rs`).
    pub(super) cloned_from: Option<ClonedFrom>,
    /// The job is being created.
    pub(super) busy: bool,
    /// A copied command, spec or link, shown as well as copied.
    pub(super) output: Option<(&'static str, String)>,
    /// Why the last import failed.
    pub(super) import_error: Option<String>,
    /// The drawn page, once mounted.
    pub(super) parts: Option<Parts>,
    /// Opens a created job's page.
    pub(super) navigate: Option<Rc<dyn Fn(&str)>>,
    /// Signs the user out and sends them through sign-in back here
    /// (`api_error::use_sign_in_again`). Taken where the page is made:
    /// requests answer in tasks outside the page's reactive owner, where the
    /// session and the router cannot be looked up.
    pub(super) sign_in_again: Option<Rc<dyn Fn()>>,
}

impl Core {
    /// The problem to show at input `id` now, if any.
    pub fn error_for(&self, id: &str) -> Option<String> {
        if let Some(message) = self.server.by_input.get(id) {
            return Some(message.clone());
        }
        let shown = self.show_all || self.touched.iter().any(|t| t == id);
        if !shown {
            return None;
        }
        self.problems.by_input.get(id).cloned()
    }

    /// Every problem, the server's and the form's, once per input.
    pub fn problem_count(&self) -> usize {
        let (problems, server) = (&self.problems, &self.server);
        let only_server = server.by_input.keys().filter(|id| !problems.by_input.contains_key(id)).count();
        problems.by_input.len() + only_server + problems.other.len() + server.other.len()
    }

    /// Checks the state with the conversion and the contract's rules (and
    /// the workspace's, once known), once the rules are in.
    pub(super) fn check(&mut self) {
        let Some(rules) = self.rules else { return };
        let (job, mut found) = (rules.to_job)(&self.state);
        for (path, messages) in (rules.check)(&job, self.context.as_ref()) {
            found.entry(path).or_insert(messages);
        }
        self.problems = Placed::place(&found, &self.state);
    }

    /// The job the form describes, once the rules (which carry the
    /// conversion) are in; `shareable` leaves out the registry password, as
    /// a teammate may see the job (a draft link, a template, a copy).
    pub(super) fn job(&self, shareable: bool) -> Option<LeptonJob> {
        let mut job = (self.rules?.to_job)(&self.state).0;
        if shareable {
            job.spec.container.registry_password = None;
        }
        Some(job)
    }

    /// Changes the form as the user did at input `id`.
    pub(super) fn edit(&mut self, id: &str, change: impl FnOnce(&mut FormState)) {
        change(&mut self.state);
        self.server.by_input.remove(id);
        self.check();
    }

    pub(super) fn touch(&mut self, id: &str) {
        if !self.touched.iter().any(|t| t == id) {
            self.touched.push(id.to_string());
        }
    }

    /// Replaces what the form holds (a clone, an import, a draft).
    pub(super) fn load(&mut self, state: FormState) {
        self.state = state;
        self.cloned_from = None;
        self.server = Placed::default();
        self.fill_default_shape();
        self.check();
    }

    /// The job's requirements (`spec.resources`), which come with a clone, an
    /// import or a template (the form has no inputs for them): with them, an
    /// empty shape means the smallest shape that meets them.
    fn requirements(&self) -> Option<&ResourceRequirements> {
        self.state.base.spec.resources.as_ref()
    }

    /// An empty shape becomes the workspace's first, which is what the server
    /// would run the job with (unless requirements choose it).
    pub(super) fn fill_default_shape(&mut self) {
        if self.requirements().is_some() {
            return;
        }
        let first = self.first_shape();
        if let Some(first) = first {
            if self.state.v[SHAPE].is_empty() {
                self.state.v[SHAPE] = first;
            }
        }
    }

    pub(super) fn first_shape(&self) -> Option<String> {
        self.context.as_ref().and_then(|c| c.shapes.first()).and_then(|s| s.id.clone())
    }

    /// The shape the form has chosen, with its memory in MiB: the one
    /// selected, or, once the rules are in, the one the requirements choose.
    pub(super) fn chosen_shape(&self) -> Option<(String, i64)> {
        let shape = match self.state.v[SHAPE].as_str() {
            "" => self.shape_choice()?.0?,
            named => named.to_string(),
        };
        let c = self.context.as_ref()?;
        let found = c.shapes.iter().find(|s| s.id.as_deref() == Some(shape.as_str()))?;
        Some((shape, found.memory_in_mb?))
    }

    /// What the job's requirements choose, once the rules and the server's
    /// data are in: the shape, and the words that say which and why.
    fn shape_choice(&self) -> Option<(Option<String>, String)> {
        self.requirements()?;
        let (rules, context) = (self.rules?, self.context.as_ref()?);
        Some((rules.shape_choice)(&(rules.to_job)(&self.state).0.spec, context))
    }

    /// Whether more than one worker is asked for: completions and
    /// parallelism then follow the workers.
    pub(super) fn many_workers(&self) -> bool {
        self.state.v[WORKERS].trim().parse::<i64>().is_ok_and(|w| w > 1)
    }

    /// What field `index` shows now.
    pub(super) fn field_view(&self, index: FieldId) -> FieldView {
        let def = index.def();
        let many_workers = self.many_workers();
        let value = match index {
            SHARED_MEMORY if !self.state.shared_memory_typed => {
                self.chosen_shape().map(|(_, memory)| shared_memory_default_mib(memory).to_string()).unwrap_or_default()
            }
            COMPLETIONS | PARALLELISM if many_workers => self.state.v[WORKERS].trim().to_string(),
            _ => self.state.v[index].clone(),
        };
        let image_ignored = self.context.as_ref().is_some_and(|c| c.requirements.image_ignored);
        let default = match index {
            SHAPE => match self.requirements() {
                Some(_) => self.shape_choice().map(|(_, words)| words).unwrap_or_else(|| BY_REQUIREMENTS.into()),
                None => self
                    .first_shape()
                    .map(|first| format!("{first}, the workspace's first shape"))
                    .unwrap_or_else(|| "the workspace's first shape".into()),
            },
            SHARED_MEMORY => match self.chosen_shape() {
                Some((shape, memory)) => format!(
                    "{} for {shape} ({} of memory); an emptied field uses the default",
                    mib_text(shared_memory_default_mib(memory)),
                    gib_text(memory)
                ),
                None => "from the memory of the resource shape".into(),
            },
            LOG_COLLECTION => self.log_default_text().into(),
            // In process mode the server runs the command on its own
            // machine: say so where the image is typed, not after the job
            // failed to use it.
            IMAGE if image_ignored => "not used on this server: it runs the command as a process on its own \
                                       machine, without the image, its ports or its storage mounts"
                .into(),
            COMPLETIONS | PARALLELISM if many_workers => "the number of workers".into(),
            // A duration typed is read back in words, so `90` (seconds) is
            // not taken for minutes.
            DEADLINE | QUEUE_LIMIT | GRACE_PERIOD | ARCHIVE_TIME => match jobdeck_api::parse_duration(&value) {
                Ok(Some(seconds)) => {
                    format!("{}; {} is {}", def.default, value.trim(), jobdeck_api::duration_in_words(seconds))
                }
                _ => def.default.to_string(),
            },
            _ => def.default.to_string(),
        };
        FieldView {
            value,
            default,
            options: self.options_for(index),
            disabled: matches!(index, COMPLETIONS | PARALLELISM) && many_workers,
            error: self.error_for(def.id),
        }
    }

    /// What list `l`'s rows show now.
    pub(super) fn rows_view(&self, l: ListId) -> Vec<Vec<CellView>> {
        let columns = l.def().columns.len();
        self.state.lists[l]
            .iter()
            .enumerate()
            .map(|(row, cells)| {
                // An environment variable's value names a secret when its
                // source says so.
                let secret = l == ENVS && cells[1] == "secret";
                (0..columns)
                    .map(|col| CellView {
                        value: cells[col].clone(),
                        label: (secret && col == 2).then_some("Secret"),
                        list: (secret && col == 2).then_some(SECRET_LIST_ID),
                        error: self.error_for(&Target::Cell(l, row, col).input_id()),
                    })
                    .collect()
            })
            .collect()
    }

    /// Shows the state: every part writes only what changed.
    pub(super) fn draw(&mut self) {
        let Some(mut parts) = self.parts.take() else { return };
        for (index, field) in parts.fields.iter_mut() {
            field.show(self.field_view(*index));
        }
        for (l, list) in parts.lists.iter_mut() {
            let l = *l;
            list.show(self.rows_view(l), self.error_for(&Target::List(l).input_id()).as_deref());
        }
        let count = self.problem_count();
        let summary = self.show_all && count > 0;
        let mut other = self.problems.other.clone();
        other.extend(self.server.other.iter().cloned());
        let status = match (self.show_all, count) {
            (_, 0) => String::new(),
            (false, n) => format!("{n} required or invalid {}", if n == 1 { "field" } else { "fields" }),
            (true, 1) => "1 problem remains".to_string(),
            (true, n) => format!("{n} problems remain"),
        };
        let shown = Shown {
            notice: self.notice.clone(),
            banner: self.banner.clone(),
            summary: summary
                .then(|| (format!("{count} {} to fix before the job can be created.", plural(count)), other)),
            busy: self.busy,
            status,
            output: self.output.clone(),
            import_error: self.import_error.clone(),
            secrets: self.secret_labels.clone(),
        };
        parts.show(shown);
        match &self.cloned_from {
            Some(from) => (from.show)(&parts.changes, from, &self.state),
            None => dom::show(&parts.changes, false),
        }
        self.parts = Some(parts);
    }

    /// Where a created job's page is opened, while the form is on screen.
    pub(super) fn navigate_here(&self) -> Option<Rc<dyn Fn(&str)>> {
        self.parts.as_ref().filter(|p| p.host.is_connected())?;
        self.navigate.clone()
    }

    pub(super) fn log_default_text(&self) -> &'static str {
        match self.log_default {
            Some(true) => "the workspace setting (on)",
            Some(false) => "the workspace setting (off)",
            None => "the workspace setting",
        }
    }

    /// The choices of a select or check-box field; a value the form holds
    /// that is not among them (from a clone or an import) is kept, so its
    /// problem can show.
    pub(super) fn options_for(&self, index: FieldId) -> Options {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let shapes = self.context.iter().flat_map(|c| &c.shapes);
        let groups = self.context.iter().flat_map(|c| &c.node_groups);
        let mut options: Options = match index {
            PRIORITY => priority_options(),
            LOG_COLLECTION => vec![
                (String::new(), format!("Follow {}", self.log_default_text())),
                pair("on", "On"),
                pair("off", "Off"),
            ],
            VISIBILITY => vec![pair("public", "Public"), pair("private", "Private")],
            SHAPE => {
                let mut options: Options = shapes
                    .filter_map(|s| {
                        let id = s.id.clone()?;
                        let text = match &s.description {
                            Some(d) => format!("{id} — {d}"),
                            None => id.clone(),
                        };
                        Some((id, text))
                    })
                    .collect();
                if self.requirements().is_some() {
                    options.insert(0, pair("", BY_REQUIREMENTS));
                }
                options
            }
            NODE_GROUPS => groups
                .filter_map(|g| {
                    let id = g.id.clone()?;
                    let cap = &g.capacity;
                    let text = format!(
                        "{id} — {} CPU, {} memory, {} GPU; {} queued",
                        cpu_text(cap.cpu),
                        gib_text(cap.memory_in_mb),
                        cap.gpu,
                        g.queued_jobs
                    );
                    Some((id, text))
                })
                .collect(),
            NODES => {
                let chosen = split_names(&self.state.v[NODE_GROUPS]);
                groups
                    .filter(|g| chosen.is_empty() || g.id.as_ref().is_some_and(|id| chosen.contains(id)))
                    .flat_map(|g| &g.nodes)
                    .map(|n| (n.name.clone(), n.name.clone()))
                    .collect()
            }
            _ => Vec::new(),
        };
        let held = &self.state.v[index];
        let held: Vec<String> =
            if index.def().control == Control::Choices { split_names(held) } else { vec![held.clone()] };
        for value in held {
            if !value.is_empty() && !options.iter().any(|(k, _)| *k == value) {
                options.push((value.clone(), format!("{value} (not in this workspace)")));
            }
        }
        options
    }
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        "problem"
    } else {
        "problems"
    }
}

/// A CPU count with at most one decimal, without the cost of float
/// formatting in the console.
pub(super) fn cpu_text(cpu: f64) -> String {
    let tenths = (cpu * 10.0).round() as i64;
    if tenths % 10 == 0 {
        (tenths / 10).to_string()
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

/// MiB in GiB with at most one decimal: `23.5 GiB`.
pub(super) fn gib_text(mib: i64) -> String {
    let tenths = (mib * 10 + 512) / 1024;
    if tenths % 10 == 0 {
        format!("{} GiB", tenths / 10)
    } else {
        format!("{}.{} GiB", tenths / 10, tenths % 10)
    }
}

/// MiB as people read them: `2048 MiB (2 GiB)`.
pub(super) fn mib_text(mib: i64) -> String {
    if mib >= 1024 && mib % 1024 == 0 {
        format!("{mib} MiB ({} GiB)", mib / 1024)
    } else {
        format!("{mib} MiB")
    }
}
