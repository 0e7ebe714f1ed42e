//! Every path the console links to, in one place, so a link a teammate
//! receives always matches a route.

/// The sign-in page.
pub const LOGIN: &str = "/login";
/// The deployments list.
pub const JOBS: &str = "/jobs";
/// The create-job form.
pub const NEW_JOB: &str = "/jobs/new";

/// The tabs of the job page; each is its own route (`/jobs/<id>/<tab>`).
pub const JOB_TABS: [(&str, &str); 5] = [
    ("overview", "Overview"),
    ("replicas", "Replicas"),
    ("events", "Events"),
    ("logs", "Logs"),
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
    Job { id: String, tab: String },
    NotFound,
}

impl Route {
    pub fn parse(path: &str) -> Route {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            [] | ["jobs"] => Route::Jobs,
            ["login"] => Route::Login,
            ["jobs", "new"] => Route::NewJob,
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

/// One tab of the job page.
pub fn job_tab(id: &str, tab: &str) -> String {
    format!("/jobs/{}/{}", encode_component(id), tab)
}

/// The create-job form filled from an existing job.
pub fn clone_job(id: &str) -> String {
    format!("{NEW_JOB}?clone={}", encode_component(id))
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
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.starts_with("/\\") => {
            n.to_string()
        }
        _ => JOBS.to_string(),
    }
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
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
