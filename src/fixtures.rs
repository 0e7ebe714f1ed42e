//! Test data and helpers for the console's component tests: they mount a
//! component in the test page (inside a router, with a signed-in session) and
//! read the DOM back.

use jobdeck_api::{
    JobSpec, JobState, JobStatus, LeptonJob, Metadata, ReadinessIssue, Replica, ReplicaNode, ReplicaPhase,
    ReplicaStatus,
};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::session::Session;

/// The user the mounted components believe is signed in.
pub const ME: &str = "alice";

/// Mounts `view` in a fresh element at the end of the page, with a router
/// and `ME` signed in, and returns that element.
pub fn mount<V: IntoView + 'static>(view: impl Fn() -> V + Send + Sync + 'static) -> web_sys::HtmlElement {
    let document = web_sys::window().unwrap().document().unwrap();
    let host: web_sys::HtmlElement = document.create_element("div").unwrap().unchecked_into();
    document.body().unwrap().append_child(&host).unwrap();
    let handle = leptos::mount::mount_to(host.clone(), move || {
        provide_context(Session {
            token: RwSignal::new(Some("jd_test".into())),
            user: RwSignal::new(Some(ME.into())),
            role: RwSignal::new(Some(jobdeck_api::Role::Member)),
        });
        crate::router::provide_router();
        view()
    });
    handle.forget();
    host
}

/// The text of an element and everything in it.
pub fn text_of(element: &web_sys::Element) -> String {
    element.text_content().unwrap_or_default()
}

/// Clicks the first element matching `css` under `host`.
pub fn click(host: &web_sys::Element, css: &str) {
    let element: web_sys::HtmlElement =
        host.query_selector(css).unwrap().unwrap_or_else(|| panic!("nothing matches {css}")).unchecked_into();
    element.click();
}

/// Picks `value` in the `<select>` matching `css`, as a user would.
pub fn choose(host: &web_sys::Element, css: &str, value: &str) {
    let element = host.query_selector(css).unwrap().unwrap_or_else(|| panic!("nothing matches {css}"));
    js_sys::Reflect::set(&element, &"value".into(), &value.into()).unwrap();
    element.dispatch_event(&web_sys::Event::new("change").unwrap()).unwrap();
}

/// Puts the test page at `path` (before a router is mounted).
pub fn set_address(path: &str) {
    web_sys::window()
        .unwrap()
        .history()
        .unwrap()
        .replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(path))
        .unwrap();
}

/// The test page's path and query.
pub fn address() -> String {
    let location = web_sys::window().unwrap().location();
    format!("{}{}", location.pathname().unwrap(), location.search().unwrap())
}

/// A job with the given id, name, creator and state.
pub fn job(id: &str, name: &str, created_by: &str, state: JobState) -> LeptonJob {
    LeptonJob {
        metadata: Metadata {
            id: Some(id.into()),
            name: Some(name.into()),
            created_by: Some(created_by.into()),
            created_at: Some(1_700_000_000_000),
            ..Default::default()
        },
        spec: JobSpec::default(),
        status: Some(JobStatus { state: Some(state), ..Default::default() }),
    }
}

/// One attempt of one replica, started at `start` and ended at `end`
/// (Unix milliseconds).
pub fn replica(index: i64, attempt: i64, phase: ReplicaPhase, start: Option<i64>, end: Option<i64>) -> Replica {
    let id = format!("job-1-{index}-{attempt}");
    Replica {
        metadata: Metadata { id: Some(id.clone()), ..Default::default() },
        id,
        status: ReplicaStatus {
            public_ip: None,
            node: Some(ReplicaNode { name: "node-a".into(), id: "node-a".into(), node_group_id: None }),
            completion_index: index,
            attempt,
            phase,
            readiness_issue: (phase == ReplicaPhase::Pending).then(|| ReadinessIssue {
                reason: "NoCapacity".into(),
                message: "waiting for 1 CPU in node group local".into(),
            }),
            exit_code: match phase {
                ReplicaPhase::Succeeded => Some(0),
                ReplicaPhase::Failed => Some(3),
                _ => None,
            },
            signal: None,
            reason: match phase {
                ReplicaPhase::Succeeded => Some("Completed".into()),
                ReplicaPhase::Failed => Some("Error".into()),
                _ => None,
            },
            message: None,
            start_time: start,
            end_time: end,
            cpu: None,
            memory_in_mb: None,
            retry_at: None,
            executor_id: None,
        },
    }
}

/// Waits up to two seconds for `condition`, letting the page update between
/// looks; panics with `what` when it never holds.
pub async fn wait_for(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..200 {
        if condition() {
            return;
        }
        crate::components::live::sleep(10).await;
    }
    panic!("timed out waiting for {what}; the address is {}", address());
}
