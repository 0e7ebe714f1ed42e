//! Every path the console links to, in one place, so a link a teammate
//! receives always matches a route.

/// The sign-in page.
pub const LOGIN: &str = "/login";
/// The deployments list.
pub const JOBS: &str = "/jobs";
/// The create-job form.
pub const NEW_JOB: &str = "/jobs/new";
/// The signed-in user's own page: personal tokens, sessions.
pub const ACCOUNT: &str = "/account";
/// The admins' page of users, roles and invitations.
pub const PEOPLE: &str = "/people";
/// The admins' audit log.
pub const AUDIT: &str = "/audit";
/// The admins' page of the logs' storage and retention.
pub const STORAGE: &str = "/storage";
/// One's notification endpoints and rules.
pub const NOTIFICATIONS: &str = "/notifications";
/// The queued jobs in the scheduler's admission order.
pub const QUEUE: &str = "/queue";
/// The page an invitation link opens.
pub const INVITE: &str = jobdeck_api::invitations::INVITATION_PAGE;

/// The tabs of the job page, as (path segment, label); each is its own
/// route (`/jobs/<id>/<tab>`), the overview being `/jobs/<id>` itself. The
/// replica timeline is part of the replicas tab, next to the table it draws.
pub const JOB_TABS: [(&str, &str); 7] = [
    ("overview", "Overview"),
    ("replicas", "Replicas"),
    ("events", "Events"),
    ("logs", "Logs"),
    ("ranks", "All ranks"),
    ("metrics", "Metrics"),
    ("failure", "Failure"),
];

/// A page of the console, parsed from a path. Every route is listed here and
/// only here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Login,
    Jobs,
    NewJob,
    /// The job page; `tab` is one of `JOB_TABS` (`overview` when absent).
    Job {
        id: String,
        tab: String,
    },
    Invite,
    Account,
    /// The admins' storage page, which shares the account page's download.
    Storage,
    People,
    /// The admins' audit log, which shares the account page's download.
    Audit,
    /// One's notifications, a download of its own.
    Notifications,
    /// The queue, which shares the notifications page's download.
    Queue,
    NotFound,
}

impl Route {
    pub fn parse(path: &str) -> Route {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            [] | ["jobs"] => Route::Jobs,
            ["login"] => Route::Login,
            ["jobs", "new"] => Route::NewJob,
            ["invite"] => Route::Invite,
            ["account"] => Route::Account,
            ["storage"] => Route::Storage,
            ["people"] => Route::People,
            ["audit"] => Route::Audit,
            ["notifications"] => Route::Notifications,
            ["queue"] => Route::Queue,
            ["jobs", id] => Route::Job { id: decode_component(id), tab: "overview".into() },
            ["jobs", id, tab] if JOB_TABS.iter().any(|(t, _)| t == tab) => {
                Route::Job { id: decode_component(id), tab: tab.to_string() }
            }
            _ => Route::NotFound,
        }
    }
}

/// The job page's overview.
pub fn job(id: &str) -> String {
    format!("/jobs/{}", encode_component(id))
}

/// The notifications page with its rule form set to job `id` (the job
/// page's "Notify me").
pub fn notify_about(id: &str) -> String {
    format!("{NOTIFICATIONS}?job={}", encode_component(id))
}

/// The queue, of one node group when `node_group` is not empty, with job
/// `marked` (if any) marked.
pub fn queue(node_group: &str, marked: &str) -> String {
    let query = crate::router::query_string([("node_group", node_group.to_string()), ("job", marked.to_string())]);
    if query.is_empty() {
        QUEUE.to_string()
    } else {
        format!("{QUEUE}?{query}")
    }
}

/// One tab of the job page; the overview is the job's own address.
pub fn job_tab(id: &str, tab: &str) -> String {
    if tab == "overview" {
        job(id)
    } else {
        format!("/jobs/{}/{}", encode_component(id), tab)
    }
}

/// The logs tab, showing one replica's log when `replica` is given.
pub fn job_logs(id: &str, replica: Option<&str>) -> String {
    match replica {
        Some(r) => format!("{}?replica={}", job_tab(id, "logs"), encode_component(r)),
        None => job_tab(id, "logs"),
    }
}

/// The "All ranks" tab opened at line `line` of `replica`, among every
/// rank's lines of the same time.
pub fn job_ranks_at(id: &str, replica: &str, line: i64) -> String {
    format!("{}#{replica}:L{line}", job_tab(id, "ranks"))
}

/// The create-job form filled from an existing job.
pub fn clone_job(id: &str) -> String {
    format!("{NEW_JOB}?clone={}", encode_component(id))
}

/// The query parameters of a clone link that change the clone: its shape,
/// its parallelism and its node groups (the form's `clone.rs` reads them
/// in this order). They are the only changes a link can carry, so a link
/// sent by someone else cannot change anything else of the job it clones.
pub const CHANGE_PARAMS: [&str; 3] = ["shape", "parallelism", "node_group"];

/// The form filled from job `id` with one of its start suggestions'
/// changes made (`status.start_suggestions`).
pub fn clone_with_change(id: &str, change: &jobdeck_api::SpecChange) -> String {
    let [shape, parallelism, node_group] = CHANGE_PARAMS;
    let mut link = clone_job(id);
    if let Some(value) = &change.resource_shape {
        link.push_str(&format!("&{shape}={}", encode_component(value)));
    }
    if let Some(value) = change.parallelism {
        link.push_str(&format!("&{parallelism}={value}"));
    }
    let groups = change.affinity.as_ref().and_then(|a| a.allowed_dedicated_node_groups.as_ref());
    for group in groups.into_iter().flatten() {
        link.push_str(&format!("&{node_group}={}", encode_component(group)));
    }
    link
}

/// The form filled from job `id`, open at "Save as a template".
pub fn save_as_template(id: &str) -> String {
    format!("{}&save=template", clone_job(id))
}

/// What starts the fragment of a draft link.
pub const DRAFT_FRAGMENT: &str = "draft=";

/// The create-job form filled from an unsubmitted job, carried in the
/// fragment so it never reaches a server's logs.
pub fn draft(job_json: &str) -> String {
    format!("{NEW_JOB}#{DRAFT_FRAGMENT}{}", encode_component(job_json))
}

/// The sign-in page that returns to `next` afterwards. Already on the sign-in
/// page, the page it returns to stays what it was.
pub fn login_then(next: &str) -> String {
    if next.starts_with(LOGIN) {
        next.to_string()
    } else if next.is_empty() || next == "/" {
        LOGIN.to_string()
    } else {
        format!("{LOGIN}?next={}", encode_component(next))
    }
}

/// Where to go after sign-in: only a path on this site, so a crafted link
/// cannot send a freshly signed-in user to another origin.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if jobdeck_api::tokens::is_same_site_path(n) => n.to_string(),
        _ => JOBS.to_string(),
    }
}

/// How the deployments list is sorted; the server's names.
pub const LIST_SORTS: [&str; 3] = ["created_at", "name", "state"];

/// The deployments list's filters, sort and page. The list's own address
/// carries them with the API's parameter names, so the query string of a
/// shared link is exactly what the list asks the server for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListQuery {
    /// Text the job name must contain (`q`).
    pub text: String,
    /// States to show (`status`, repeatable); empty shows all.
    pub states: Vec<String>,
    /// Node group, exactly (`node_group`); empty shows all.
    pub node_groups: Vec<String>,
    /// Creator, exactly (`creator`); `None` shows everyone's. (Lepton's
    /// `created_by` and `node_groups` match by patterns, for `lep`; the
    /// console's filters are exact.)
    pub created_by: Option<String>,
    /// `alive_only`, `archive_only` or `alive_and_archive` (`job_query_mode`).
    pub mode: Option<String>,
    /// One of `LIST_SORTS`; `None` is the server's default, newest first.
    pub sort: Option<String>,
    /// `Some(true)` ascending, `Some(false)` descending, `None` the default.
    pub ascending: Option<bool>,
    /// 1-based page.
    pub page: u32,
    /// Jobs per page; `None` is the server's default.
    pub page_size: Option<u32>,
}

/// Jobs per page when the address does not say.
pub const DEFAULT_PAGE_SIZE: u32 = 50;

impl ListQuery {
    /// Reads a query string (with or without its leading `?`). Unknown
    /// parameters and malformed values are dropped rather than sent on.
    pub fn parse(search: &str) -> ListQuery {
        let mut query = ListQuery { page: 1, ..Default::default() };
        for pair in search.trim_start_matches('?').split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode_component(value);
            match decode_component(key).as_str() {
                "q" => query.text = value,
                "status" if !value.is_empty() && !query.states.contains(&value) => query.states.push(value),
                "node_group" if !value.is_empty() && !query.node_groups.contains(&value) => {
                    query.node_groups.push(value)
                }
                "creator" if !value.is_empty() => query.created_by = Some(value),
                "job_query_mode" if ["alive_only", "archive_only", "alive_and_archive"].contains(&value.as_str()) => {
                    query.mode = Some(value)
                }
                "sort" if LIST_SORTS.contains(&value.as_str()) => query.sort = Some(value),
                "order" if value == "asc" || value == "desc" => query.ascending = Some(value == "asc"),
                "page" => query.page = value.parse().ok().filter(|p| *p >= 1).unwrap_or(1),
                "page_size" => query.page_size = value.parse().ok().filter(|s| (1..=500).contains(s)),
                _ => {}
            }
        }
        query
    }

    /// The query string without `?`, defaults left out, in a fixed order so
    /// the same view always has the same address.
    pub fn to_query(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut add = |key: &str, value: &str| parts.push(format!("{key}={}", encode_component(value)));
        if !self.text.is_empty() {
            add("q", &self.text);
        }
        for state in &self.states {
            add("status", state);
        }
        for group in &self.node_groups {
            add("node_group", group);
        }
        if let Some(user) = &self.created_by {
            add("creator", user);
        }
        if let Some(mode) = &self.mode {
            add("job_query_mode", mode);
        }
        if let Some(sort) = &self.sort {
            add("sort", sort);
        }
        if let Some(ascending) = self.ascending {
            add("order", if ascending { "asc" } else { "desc" });
        }
        if self.page > 1 {
            add("page", &self.page.to_string());
        }
        if let Some(size) = self.page_size {
            add("page_size", &size.to_string());
        }
        parts.join("&")
    }

    /// The deployments list showing this view.
    pub fn href(&self) -> String {
        let query = self.to_query();
        if query.is_empty() {
            JOBS.to_string()
        } else {
            format!("{JOBS}?{query}")
        }
    }

    /// Whether any filter narrows the list (sort and page do not).
    pub fn is_filtered(&self) -> bool {
        !self.text.is_empty()
            || !self.states.is_empty()
            || !self.node_groups.is_empty()
            || self.created_by.is_some()
            || self.mode.is_some()
    }

    /// The same view on another page.
    pub fn with_page(&self, page: u32) -> ListQuery {
        ListQuery { page: page.max(1), ..self.clone() }
    }

    /// The same filters sorted by `column`: a second click on the sorted
    /// column turns the order around. Back to the first page, since the old
    /// page number means nothing in the new order.
    pub fn sorted_by(&self, column: &str) -> ListQuery {
        let current = self.sort.as_deref().unwrap_or("created_at");
        let ascending = if current == column {
            !self.is_ascending()
        } else {
            // Names read best A to Z; times and states newest/first first.
            column == "name"
        };
        ListQuery {
            sort: Some(column.to_string()).filter(|c| c != "created_at"),
            ascending: Some(ascending).filter(|a| *a || column == "name"),
            page: 1,
            ..self.clone()
        }
    }

    /// Whether the list is in ascending order (the default is descending).
    pub fn is_ascending(&self) -> bool {
        self.ascending.unwrap_or(false)
    }
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Decodes `%XX` escapes and `+` (as a space, as query strings use it).
pub fn decode_component(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn paths_parse_to_routes() {
        let job = |id: &str, tab: &str| Route::Job { id: id.into(), tab: tab.into() };
        let cases = [
            ("/", Route::Jobs),
            ("/jobs", Route::Jobs),
            ("/jobs/", Route::Jobs),
            ("/login", Route::Login),
            ("/jobs/new", Route::NewJob),
            (INVITE, Route::Invite),
            (ACCOUNT, Route::Account),
            (PEOPLE, Route::People),
            (AUDIT, Route::Audit),
            (NOTIFICATIONS, Route::Notifications),
            (STORAGE, Route::Storage),
            (QUEUE, Route::Queue),
            ("/jobs/train-ab12c", job("train-ab12c", "overview")),
            ("/jobs/train-ab12c/replicas", job("train-ab12c", "replicas")),
            ("/jobs/train-ab12c/logs", job("train-ab12c", "logs")),
            ("/jobs/a%20b", job("a b", "overview")),
            ("/jobs/x/unknown-tab", Route::NotFound),
            ("/nope", Route::NotFound),
            ("/jobs/x/logs/extra", Route::NotFound),
        ];
        for (path, route) in cases {
            assert_eq!(Route::parse(path), route, "{path}");
        }
        // Every link this module builds parses back to its route.
        assert_eq!(Route::parse(&job_tab("a-1", "events")), job("a-1", "events"));
        assert_eq!(Route::parse(&self::job("a-1")), job("a-1", "overview"));
        assert_eq!(queue("", ""), "/queue");
        assert_eq!(queue("gpu a", "x&y"), "/queue?node_group=gpu%20a&job=x%26y");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn next_must_stay_on_this_site() {
        assert_eq!(safe_next(Some("/jobs/abc/logs")), "/jobs/abc/logs");
        assert_eq!(safe_next(Some("/jobs?state=Failed")), "/jobs?state=Failed");
        for hostile in ["https://evil.example", "//evil.example", "/\\evil.example", "javascript:alert(1)"] {
            assert_eq!(safe_next(Some(hostile)), JOBS, "{hostile}");
        }
        assert_eq!(safe_next(None), JOBS);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn encoding_round_trips() {
        for s in ["/jobs?state=Failed&q=a b", "ünï", "100%", "a+b"] {
            assert_eq!(decode_component(&encode_component(s)), s);
        }
        assert_eq!(decode_component("a+b%2Fc"), "a b/c");
        assert_eq!(decode_component("bad%zz"), "bad%zz");
        assert_eq!(decode_component("end%4"), "end%4");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn login_link_carries_the_page_to_return_to() {
        assert_eq!(login_then("/jobs/a-1/logs"), "/login?next=%2Fjobs%2Fa-1%2Flogs");
        assert_eq!(login_then("/"), "/login");
        assert_eq!(login_then("/login?next=%2Fjobs"), "/login?next=%2Fjobs");
    }
}
