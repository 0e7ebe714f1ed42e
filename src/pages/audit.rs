//! The admins' audit log (`/audit`): every change to the workspace, every
//! sign-in and every refused attempt, newest first, filtered by who, what
//! and how it ended, a page of 100 at a time (docs/teams.md, "Audit log").
//! It shares its download with the account page (`src/lib.rs`,
//! `team_page`).

use jobdeck_api::{AuditEntry, AuditList, AuditOutcome};
use leptos::prelude::*;

use crate::api::people::audit;
use crate::api::ApiFailure;
use crate::components::api_error::use_sign_in_again;
use crate::components::time::format_time;
use crate::routes::{encode_component, PEOPLE};
use crate::session::require_sign_in;

/// The areas the action filter offers, as (value, label): a value ending
/// in `.` matches every action of its area.
const AREAS: [(&str, &str); 12] = [
    ("", "any"),
    ("job.", "jobs"),
    ("secret.", "secrets"),
    ("pull_secret.", "pull secrets"),
    ("token.", "tokens"),
    ("session.", "sessions"),
    ("sign_in", "sign-ins"),
    ("sign_in.failed", "failed sign-ins"),
    ("user.", "users"),
    ("invitation.", "invitations"),
    ("quota.", "quotas"),
    ("log_retention.", "log retention"),
];

/// The query string of the filters, and of the page before `before`.
fn query(actor: &str, action: &str, outcome: &str, before: Option<i64>) -> String {
    let mut parts = Vec::new();
    for (key, value) in [("actor", actor.trim()), ("action", action), ("outcome", outcome)] {
        if !value.is_empty() {
            parts.push(format!("{key}={}", encode_component(value)));
        }
    }
    if let Some(before) = before {
        parts.push(format!("before={before}"));
    }
    parts.join("&")
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let signed_in = require_sign_in();
    let sign_in_again = use_sign_in_again();
    let (actor, action, outcome) =
        (RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new(String::new()));
    let entries = RwSignal::new(Vec::<AuditEntry>::new());
    let next = RwSignal::new(None::<i64>);
    let problem = RwSignal::new(None::<String>);
    // Reads a page: the first of the filters, or the one after the last.
    let read = move |more: bool| {
        let sign_in_again = sign_in_again.clone();
        let before = if more { next.get_untracked() } else { None };
        let wanted = query(&actor.get_untracked(), &action.get_untracked(), &outcome.get_untracked(), before);
        leptos::task::spawn_local(async move {
            match audit(&wanted).await {
                Ok(AuditList { items, next: after }) => {
                    problem.set(None);
                    next.set(after);
                    if more {
                        entries.update(|e| e.extend(items));
                    } else {
                        entries.set(items);
                    }
                }
                Err(ApiFailure::Unauthorized) => sign_in_again(),
                Err(failure) => problem.set(Some(failure.to_string())),
            }
        });
    };
    if signed_in {
        read(false);
    }
    let on_submit = {
        let read = read.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            read(false);
        }
    };
    let rows = move || {
        entries
            .get()
            .into_iter()
            .map(|e| {
                let refused = e.outcome == AuditOutcome::Refused;
                view! {
                    <tr class:warning=refused>
                        <td>{format_time(e.time)}</td>
                        <td>{if e.actor.is_empty() { "(not signed in)".to_string() } else { e.actor }}</td>
                        <td class="mono">{e.action}</td>
                        <td>{e.target}</td>
                        <td>{e.outcome.as_str()}</td>
                        <td>{e.detail}</td>
                        <td>{e.source}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <section class="page audit">
            <h1>"Audit log"</h1>
            <p><a href=PEOPLE>"← People"</a></p>
            <form class="filters" on:submit=on_submit>
                <label class="filter">"Who" <input placeholder="a user's name" bind:value=actor/></label>
                <label class="filter">
                    "What"
                    <select bind:value=action>
                        {AREAS.map(|(value, label)| view! { <option value=value>{label}</option> }).collect_view()}
                    </select>
                </label>
                <label class="filter">
                    "Outcome"
                    <select bind:value=outcome>
                        <option value="">"any"</option>
                        <option value="ok">"ok"</option>
                        <option value="refused">"refused"</option>
                    </select>
                </label>
                <button type="submit" class="primary">"Show"</button>
            </form>
            <p class="banner error" role="alert" hidden=move || problem.with(Option::is_none)>{move || problem.get()}</p>
            <table class="audit-log">
                <thead>
                    <tr>
                        <th>"When"</th><th>"Who"</th><th>"Action"</th><th>"Target"</th><th>"Outcome"</th>
                        <th>"Detail"</th><th>"From"</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            <p hidden=move || next.with(Option::is_none)>
                <button type="button" on:click=move |_| read(true)>"Older entries"</button>
            </p>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_filters_make_the_query_and_empty_ones_are_left_out() {
        assert_eq!(query("", "", "", None), "");
        assert_eq!(query(" ann ", "job.", "refused", Some(42)), "actor=ann&action=job.&outcome=refused&before=42");
        assert_eq!(query("a&b", "", "", None), "actor=a%26b");
    }
}
