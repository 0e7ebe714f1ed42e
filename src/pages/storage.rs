//! The admins' storage page (`/storage`): what the jobs' logs take against
//! the workspace's disk budget, the jobs whose logs take the most and when
//! each one's go, and the minimum log retention, which an admin sets here
//! over the config file's (docs/config.md, "Logs"). The server lets only
//! admins read the usage; anyone else opening the page is told so.

use jobdeck_api::{
    duration_in_words, format_bytes, parse_duration, short_duration, JobLogUsage, LogRetention, LogRetentionSetting,
    LogUsage, QuotaSource, WorkspaceLogRetention, LOG_USAGE_DEFAULT_JOBS,
};
use leptos::prelude::*;

use crate::api::people::{log_usage, set_minimum_retention, withdraw_minimum_retention, workspace_storage};
use crate::api::ApiFailure;
use crate::components::api_error::use_sign_in_again;
use crate::components::time::format_time_short;
use crate::routes;
use crate::session::require_sign_in;

/// The label the minimum's field has, which its error messages name.
const MINIMUM_FIELD: &str = "Minimum log retention";

#[component]
pub fn StoragePage() -> impl IntoView {
    let signed_in = require_sign_in();
    let sign_in_again = use_sign_in_again();
    let usage = RwSignal::new(None::<LogUsage>);
    let rules = RwSignal::new(None::<WorkspaceLogRetention>);
    let problem = RwSignal::new(None::<String>);
    let reload = move || {
        let sign_in_again = sign_in_again.clone();
        leptos::task::spawn_local(async move {
            match (log_usage(LOG_USAGE_DEFAULT_JOBS).await, workspace_storage().await) {
                (Ok(jobs), Ok(workspace)) => {
                    usage.set(Some(jobs));
                    rules.set(workspace.log_retention);
                    problem.set(None);
                }
                (Err(ApiFailure::Unauthorized), _) | (_, Err(ApiFailure::Unauthorized)) => sign_in_again(),
                (Err(failure), _) | (_, Err(failure)) => problem.set(Some(failure.to_string())),
            }
        });
    };
    let on_change = reload.clone();
    if signed_in {
        reload();
    }
    // The form is made once, outside what each reload redraws, so that
    // what it said of a change stays after the reload the change asks for.
    let budget = move || usage.with(|u| u.as_ref().map(|u| budget_in_words(u.used_bytes, u.disk_budget_bytes)));
    let jobs = move || usage.get().map(|u| view! { <JobsByLogSize items=u.items/> });
    view! {
        <section class="page storage">
            <h1>"Storage"</h1>
            <p class="banner error" role="alert" hidden=move || problem.with(Option::is_none)>{move || problem.get()}</p>
            <div hidden=move || usage.with(Option::is_none)>
                <p class="budget">{budget}</p>
                <p class="help">
                    "Container storage and volumes are outside this budget; the people page shows the logs each user keeps."
                </p>
                <h2>"Log retention"</h2>
                <p class="rules">{move || rules.with(|r| r.as_ref().map(rules_in_words))}</p>
                <MinimumForm rules on_change/>
                {jobs}
            </div>
        </section>
    }
}

/// The sentence over the page: what the logs take, and of what budget.
fn budget_in_words(used: i64, budget: Option<i64>) -> String {
    match budget.filter(|b| *b > 0) {
        Some(budget) => format!(
            "Jobs' logs take {} of the {} disk budget ({} %).",
            format_bytes(used),
            format_bytes(budget),
            used.saturating_mul(100) / budget
        ),
        None => format!(
            "Jobs' logs take {}; no disk budget is set ([logs] disk_budget in the config file).",
            format_bytes(used)
        ),
    }
}

/// The workspace's retention rules in one paragraph.
fn rules_in_words(rules: &WorkspaceLogRetention) -> String {
    let source = match rules.minimum_source {
        QuotaSource::Console => "set in the console",
        QuotaSource::Config => "the config file's",
    };
    let most = match rules.maximum_seconds {
        Some(maximum) => format!("at most {}", duration_in_words(maximum)),
        None => "longer when its archive time says so".to_string(),
    };
    let mut words = format!(
        "A finished job's logs, metrics and run directory are kept for its archive time, but at least {} ({source}) \
         and {most}; its record, events and failure analysis stay.",
        duration_in_words(rules.minimum_seconds)
    );
    if let Some(until) = rules.paused_until {
        words.push_str(&format!(
            " Nothing is removed before {}, the end of the grace period after the server's upgrade.",
            format_time_short(until * 1000)
        ));
    }
    words
}

/// When one job's logs go, or went, and by which rule, as its cell says.
fn removal_in_words(finished: bool, retention: Option<&LogRetention>, show_time: fn(i64) -> String) -> String {
    match retention {
        Some(LogRetention { removed_at: Some(at), policy, .. }) => {
            format!("removed {} by {}", show_time(at * 1000), policy.in_words())
        }
        Some(LogRetention { remove_at: Some(at), policy, .. }) => {
            format!("{} by {}", show_time(at * 1000), policy.in_words())
        }
        _ if finished => "kept".to_string(),
        _ => "when it has finished".to_string(),
    }
}

/// The minimum's field as typed, read as the setting the server takes;
/// the error names the field.
fn read_minimum(text: &str, maximum_seconds: Option<i64>) -> Result<LogRetentionSetting, String> {
    let seconds = parse_duration(text).map_err(|problem| format!("{MINIMUM_FIELD}: {problem}"))?;
    let Some(minimum_seconds) = seconds else {
        return Err(format!("{MINIMUM_FIELD}: a duration is needed (0s keeps logs only for each job's archive time)"));
    };
    let setting = LogRetentionSetting { minimum_seconds };
    match setting.problems(maximum_seconds).into_values().next() {
        Some(problems) => Err(format!("{MINIMUM_FIELD}: {}", problems.join("; "))),
        None => Ok(setting),
    }
}

/// The form that sets the console's minimum log retention, and withdraws
/// it so that the config file's applies again.
#[component]
fn MinimumForm(
    rules: RwSignal<Option<WorkspaceLogRetention>>,
    on_change: impl Fn() + Clone + 'static,
) -> impl IntoView {
    let field = RwSignal::new(String::new());
    // What the form said last: a saved change (`Ok`), or what was wrong.
    let said = RwSignal::new(None::<Result<String, String>>);
    // The field shows the minimum in force whenever the rules are read.
    Effect::new(move |_| {
        if let Some(r) = rules.get() {
            field.set(short_duration(r.minimum_seconds));
        }
    });
    let saved = move |answer: Result<WorkspaceLogRetention, ApiFailure>, done: &str, on_change: &dyn Fn()| match answer
    {
        Ok(rule) => {
            said.set(Some(Ok(format!(
                "{done} Finished jobs' logs are kept at least {}.",
                duration_in_words(rule.minimum_seconds)
            ))));
            rules.set(Some(rule));
            on_change();
        }
        Err(failure) => said.set(Some(Err(failure.to_string()))),
    };
    let on_submit = {
        let on_change = on_change.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let maximum = rules.with_untracked(|r| r.as_ref().and_then(|r| r.maximum_seconds));
            let setting = match read_minimum(&field.get_untracked(), maximum) {
                Ok(setting) => setting,
                Err(problem) => return said.set(Some(Err(problem))),
            };
            let on_change = on_change.clone();
            leptos::task::spawn_local(async move {
                saved(set_minimum_retention(&setting).await, "Saved.", &on_change);
            });
        }
    };
    let withdraw = move |_| {
        let on_change = on_change.clone();
        leptos::task::spawn_local(async move {
            saved(withdraw_minimum_retention().await, "The config file's minimum is in force again.", &on_change);
        });
    };
    let set_here = move || rules.with(|r| r.as_ref().is_some_and(|r| r.minimum_source == QuotaSource::Console));
    view! {
        <form class="filters minimum-retention" on:submit=on_submit>
            <label class="filter">
                {MINIMUM_FIELD} <input size="8" placeholder="7d" bind:value=field/>
            </label>
            <button type="submit" class="primary">"Save"</button>
            <button type="button" hidden=move || !set_here() on:click=withdraw>"Use the config file's"</button>
            <p
                class=move || if matches!(said.get(), Some(Err(_))) { "field-error" } else { "help" }
                role="status"
            >
                {move || said.get().map(|said| said.unwrap_or_else(|problem| problem))}
            </p>
        </form>
        <p class="help">
            "Lowering it removes the logs it no longer keeps at once; lep asks for an archive time of 10 minutes on every job, so this is how long a lep job's logs stay."
        </p>
    }
}

/// The jobs whose logs take the most, largest first, and when each one's go.
#[component]
fn JobsByLogSize(items: Vec<JobLogUsage>) -> impl IntoView {
    if items.is_empty() {
        return view! { <p class="empty">"No job has logs yet."</p> }.into_any();
    }
    let row = |job: JobLogUsage| {
        let name = match &job.job_id {
            Some(id) => view! { <a href=routes::job(id)>{id.clone()}</a> }.into_any(),
            // Another user's private job: its owner and size only.
            None => view! { <em>"a private job"</em> }.into_any(),
        };
        let goes = removal_in_words(job.state.is_terminal(), job.log_retention.as_ref(), format_time_short);
        view! {
            <tr>
                <th scope="row">{name}</th>
                <td>{job.created_by}</td>
                <td>{job.state.as_str()}</td>
                <td>{format_bytes(job.log_bytes)}</td>
                <td>{goes}</td>
            </tr>
        }
    };
    view! {
        <h2>{format!("The {LOG_USAGE_DEFAULT_JOBS} jobs whose logs take the most")}</h2>
        <table class="log-usage">
            <thead>
                <tr><th>"Job"</th><th>"Owner"</th><th>"State"</th><th>"Logs"</th><th>"Logs go"</th></tr>
            </thead>
            <tbody>{items.into_iter().map(row).collect_view()}</tbody>
        </table>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use jobdeck_api::LogRemovalPolicy;

    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_budget_and_the_rules_read_as_sentences() {
        assert_eq!(
            budget_in_words(1_500_000_000, Some(2_000_000_000)),
            "Jobs' logs take 1.5 GB of the 2 GB disk budget (75 %)."
        );
        assert!(
            budget_in_words(1_500, None).ends_with("no disk budget is set ([logs] disk_budget in the config file).")
        );
        let rules = WorkspaceLogRetention {
            minimum_seconds: 86_400,
            maximum_seconds: Some(30 * 86_400),
            minimum_source: QuotaSource::Console,
            ..Default::default()
        };
        let words = rules_in_words(&rules);
        assert!(words.contains("at least 1 day (set in the console) and at most 30 days"), "{words}");
        assert!(!words.contains("grace period"), "{words}");
        let paused = WorkspaceLogRetention { paused_until: Some(1_000), ..rules };
        assert!(rules_in_words(&paused).contains("grace period"));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_jobs_removal_names_its_time_and_rule() {
        let time = |ms: i64| format!("t{ms}");
        let kept = LogRetention { policy: LogRemovalPolicy::MinimumRetention, remove_at: Some(5), removed_at: None };
        assert_eq!(removal_in_words(true, Some(&kept), time), "t5000 by the workspace's minimum log retention");
        let gone = LogRetention { policy: LogRemovalPolicy::DiskBudget, remove_at: None, removed_at: Some(7) };
        assert_eq!(removal_in_words(true, Some(&gone), time), "removed t7000 by the workspace's disk budget for logs");
        assert_eq!(removal_in_words(false, None, time), "when it has finished");
        assert_eq!(removal_in_words(true, None, time), "kept");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_minimum_is_read_as_a_duration_within_the_maximum_and_errors_name_the_field() {
        assert_eq!(read_minimum("1d", None), Ok(LogRetentionSetting { minimum_seconds: 86_400 }));
        assert_eq!(read_minimum("0s", Some(60)), Ok(LogRetentionSetting { minimum_seconds: 0 }));
        for (text, maximum) in [("a week", None), ("", None), ("off", None), ("2d", Some(86_400))] {
            let problem = read_minimum(text, maximum).unwrap_err();
            assert!(problem.starts_with("Minimum log retention: "), "{text}: {problem}");
        }
    }
}
