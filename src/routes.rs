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
