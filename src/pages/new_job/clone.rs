//! Cloning a job into the form (`/jobs/new?clone=<id>`), and what the clone
//! changes (issue 38, "run it again with a diff"): the form against the job
//! it came from, field by field in the form's own words, shown above
//! Create so the differences are read before the job is submitted. A link
//! from a queued job's start suggestion (`routes::clone_with_change`) also
//! carries the change that would let it start, made before the form is
//! filled.
//!
//! All of it runs in the job reader's split point (`on_demand::read_job`,
//! `Reading::Clone`): the form's first download carries only the host of
//! the differences and one call through `ClonedFrom::show`.

use web_sys::Element;

use super::field::Control;
use super::form::*;
use super::*;
use crate::router::Url;

/// What the form was cloned from, kept while it shows a clone.
pub struct ClonedFrom {
    pub id: String,
    /// The form as the job itself filled it, before a suggested change.
    pub base: FormState,
    /// Draws the differences of a state from `base` into the host above
    /// Create (`show_differences`, in this split point).
    pub show: fn(&Element, &ClonedFrom, &FormState),
}

/// A clone to make: the job, and the page's query, which may carry a
/// suggested change and `save` (then "Save as a template" opens).
pub struct CloneRequest {
    pub id: String,
    pub query: String,
}

/// The fields a clone link may change, by its query parameter
/// (`routes::CHANGE_PARAMS`, in the same order).
const CHANGEABLE: [FieldId; 3] = [SHAPE, PARALLELISM, NODE_GROUPS];

/// Fills the form from the job `request` names, with its change made, and
/// keeps the job as it was to show the differences from.
pub(super) fn clone_tool(form: JobForm, request: CloneRequest) {
    leptos::task::spawn_local(async move {
        let CloneRequest { id, query } = request;
        let url = Url { path: String::new(), query, hash: String::new() };
        form.change(|c| c.notice = Some(format!("Loading job {id} to clone…")));
        form.rules_in().await;
        let filled = api::job_json(&id).await.and_then(|job| job.whole()).map(|job| FormState::for_clone(&job));
        let base = match filled {
            Ok(base) => base,
            Err(failure) => {
                form.change(|c| c.notice = None);
                return form.fail(failure);
            }
        };
        let mut state = base.clone();
        for (param, field) in routes::CHANGE_PARAMS.iter().zip(CHANGEABLE) {
            let values = url.params(param);
            if !values.is_empty() {
                state.v[field] = values.join(",");
                // Nodes are named within a node group: another group's are void.
                if field == NODE_GROUPS {
                    state.v[NODES].clear();
                }
            }
        }
        let changed = state != base;
        form.change(|c| {
            c.load(state);
            c.cloned_from = Some(ClonedFrom { id: id.clone(), base, show: show_differences });
            let suggested = match changed {
                true => format!(" with the change that would let it start now (shown above Create); job {id} stays queued until you stop it"),
                false => String::new(),
            };
            c.notice = Some(format!(
                "Cloned from {id}{suggested}. Secret values and the registry password are never copied: type the password again if the image needs one."
            ));
        });
        if url.param("save").is_some() {
            if let Some(details) = form.0.read(|c| c.parts.as_ref().map(|p| p.save_template.clone())).flatten() {
                dom::set(&details, "open", "");
                details.scroll_into_view_with_bool(true);
                focus(TEMPLATE_NAME_ID);
            }
        }
    });
}

/// One difference: the field's or list's label, and what it held before
/// and holds now. A write-only field's values are never shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub label: &'static str,
    pub before: String,
    pub after: String,
}

/// Every field and list of `now` that differs from `base`, in the form's
/// order.
pub fn differences(base: &FormState, now: &FormState) -> Vec<Difference> {
    let mut found = Vec::new();
    for id in FieldId::all() {
        let (before, after) = (base.v[id].trim(), now.v[id].trim());
        if before == after {
            continue;
        }
        let def = id.def();
        let shown = |value: &str| match def.control {
            Control::Password if value.is_empty() => "none".to_string(),
            Control::Password => "(typed, not shown)".to_string(),
            Control::Check => if value.is_empty() { "off" } else { "on" }.to_string(),
            _ if value.is_empty() => format!("({})", def.default),
            _ => value.to_string(),
        };
        found.push(Difference { label: def.label, before: shown(before), after: shown(after) });
    }
    for id in ListId::all() {
        if base.lists[id] != now.lists[id] {
            let rows = |rows: &[Row]| {
                let text: Vec<String> = rows
                    .iter()
                    .map(|row| row.iter().map(|c| c.trim()).filter(|c| !c.is_empty()).collect::<Vec<_>>().join(" "))
                    .collect();
                if text.is_empty() {
                    "(none)".to_string()
                } else {
                    text.join(", ")
                }
            };
            found.push(Difference {
                label: id.def().label,
                before: rows(&base.lists[id]),
                after: rows(&now.lists[id]),
            });
        }
    }
    found
}

/// Draws `now`'s differences from the clone's source into `host`: a
/// heading that counts them, then each as label, before and after.
fn show_differences(host: &Element, from: &ClonedFrom, now: &FormState) {
    let differences = differences(&from.base, now);
    let heading = match differences.len() {
        0 => format!("No changes from job {}", from.id),
        1 => format!("1 change from job {}", from.id),
        n => format!("{n} changes from job {}", from.id),
    };
    // Drawn again only when they changed, so a screen reader hears a
    // change once (the host is a polite live region).
    let shown = format!("{heading}{differences:?}");
    if host.get_attribute("data-shown").as_deref() == Some(shown.as_str()) {
        return;
    }
    dom::clear(host);
    dom::set(host, "data-shown", &shown);
    dom::child(host, "h2", "", &heading);
    let list = dom::child(host, "dl", "facts", "");
    for difference in &differences {
        dom::child(&list, "dt", "", difference.label);
        let values = dom::child(&list, "dd", "", "");
        dom::child(&values, "del", "", &difference.before);
        dom::child(&values, "span", "", " → ");
        dom::child(&values, "ins", "", &difference.after);
    }
    dom::show(host, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_clone_shows_each_changed_field_and_list_in_the_forms_words_and_never_a_password() {
        let mut base = FormState::default();
        base.v[NAME] = "big".into();
        base.v[SHAPE] = "gpu.8".into();
        base.lists[ENVS] = vec![["MODE".into(), "fast".into(), String::new()]];
        assert_eq!(differences(&base, &base.clone()), Vec::new(), "a plain clone changes nothing");

        let mut now = base.clone();
        now.v[NAME] = "big-smaller".into();
        now.v[SHAPE] = "gpu.4".into();
        now.v[DEADLINE] = "4h".into();
        now.v[CAN_PREEMPT] = "1".into();
        now.v[REGISTRY_PASSWORD] = "hunter2".into();
        now.lists[ENVS].push(["SEED".into(), "1".into(), String::new()]);
        let found = differences(&base, &now);
        let text: Vec<String> = found.iter().map(|d| format!("{}: {} → {}", d.label, d.before, d.after)).collect();
        assert_eq!(
            text,
            [
                "Job name: big → big-smaller",
                "Resource shape: gpu.8 → gpu.4",
                "Can preempt lower priority workload: off → on",
                "Active deadline: (no deadline) → 4h",
                "Registry password: none → (typed, not shown)",
                "Environment variables: MODE fast → MODE fast, SEED 1",
            ]
        );

        let host = dom::element("section");
        let from = ClonedFrom { id: "big-1".into(), base: base.clone(), show: show_differences };
        show_differences(&host, &from, &now);
        let text = host.text_content().unwrap();
        assert!(text.starts_with("6 changes from job big-1"), "{text}");
        assert!(text.contains("Resource shapegpu.8 → gpu.4"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        show_differences(&host, &from, &base);
        assert_eq!(host.text_content().unwrap(), "No changes from job big-1");
    }
}
