//! Quotas and usage on the people page: what each user holds now against
//! the limits in force for them, the quotas (where each is set, and a way
//! to remove the console's), a form that sets a role's or a user's quota,
//! and the last 30 days' usage as a CSV file (docs/teams.md, "Quotas").

use jobdeck_api::{
    format_bytes, parse_bytes, Quota, QuotaLimits, QuotaScope, QuotaSource, Role, UsageGrouping, UserUsage,
};
use leptos::prelude::*;

use crate::api::people::{delete_quota, download_usage, quotas, set_quota, usage_now};

/// "3 of 8", or "3" without a limit.
fn of_limit(used: i64, limit: Option<i64>, show: fn(i64) -> String) -> String {
    match limit {
        Some(limit) => format!("{} of {}", show(used), show(limit)),
        None => show(used),
    }
}

fn count(n: i64) -> String {
    n.to_string()
}

/// A limit as its cell shows it.
fn limit_text(limit: Option<i64>, show: fn(i64) -> String) -> String {
    limit.map_or_else(|| "—".to_string(), show)
}

#[component]
pub fn QuotasAndUsage() -> impl IntoView {
    let usage = RwSignal::new(Vec::<UserUsage>::new());
    let list = RwSignal::new(Vec::<Quota>::new());
    let error = RwSignal::new(None::<String>);
    let reload = move || {
        leptos::task::spawn_local(async move {
            match (usage_now().await, quotas().await) {
                (Ok(now), Ok(set)) => {
                    usage.set(now.items);
                    list.set(set.items);
                }
                (Err(failure), _) | (_, Err(failure)) => error.set(Some(failure.to_string())),
            }
        });
    };
    reload();
    let download = move |by: UsageGrouping| {
        leptos::task::spawn_local(async move {
            if let Err(failure) = download_usage(by).await {
                error.set(Some(failure.to_string()));
            }
        });
    };
    let usage_rows = move || {
        usage
            .get()
            .into_iter()
            .map(|u| {
                view! {
                    <tr>
                        <th scope="row">{u.user.clone()}</th>
                        <td>{u.role.as_str()}</td>
                        <td>{of_limit(u.running_gpus, u.limits.running_gpus, count)}</td>
                        <td>{of_limit(u.running_replicas, u.limits.running_replicas, count)}</td>
                        <td>{of_limit(u.queued_jobs, u.limits.queued_jobs, count)}</td>
                        <td>{of_limit(u.log_bytes, u.limits.log_bytes, format_bytes)}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    let quota_rows =
        move || list.get().into_iter().map(|quota| view! { <QuotaRow quota error on_change=reload/> }).collect_view();
    view! {
        <h2>"Quotas and usage"</h2>
        <table class="usage">
            <caption>"In use now"</caption>
            <thead>
                <tr>
                    <th>"User"</th><th>"Role"</th><th>"GPUs"</th><th>"Replicas"</th><th>"Queued jobs"</th>
                    <th>"Logs kept"</th>
                </tr>
            </thead>
            <tbody>{usage_rows}</tbody>
        </table>
        <p class="filters">
            "Usage of the last 30 days (GPU-hours, CPU-hours, log bytes per day): "
            <button type="button" on:click=move |_| download(UsageGrouping::User)>"CSV by user"</button>
            <button type="button" on:click=move |_| download(UsageGrouping::Role)>"CSV by role"</button>
        </p>
        <table class="quotas" hidden=move || list.with(Vec::is_empty)>
            <caption>"Quotas"</caption>
            <thead>
                <tr>
                    <th>"For"</th><th>"GPUs"</th><th>"Replicas"</th><th>"Queued jobs"</th><th>"Logs kept"</th>
                    <th>"Set in"</th><th><span class="sr-only">"Actions"</span></th>
                </tr>
            </thead>
            <tbody>{quota_rows}</tbody>
        </table>
        <QuotaForm usage list on_set=reload/>
        <p class="field-error" role="alert">{move || error.get()}</p>
    }
}

/// One quota, with a way to remove it when the console set it.
#[component]
fn QuotaRow(quota: Quota, error: RwSignal<Option<String>>, on_change: impl Fn() + Copy + 'static) -> impl IntoView {
    let (scope, name) = (quota.scope, StoredValue::new(quota.name.clone()));
    let remove = move |_| {
        leptos::task::spawn_local(async move {
            match delete_quota(scope, &name.get_value()).await {
                Ok(()) => on_change(),
                Err(failure) => error.set(Some(failure.to_string())),
            }
        });
    };
    let l = quota.limits;
    let source = match (quota.source, quota.updated_by.as_deref()) {
        (QuotaSource::Config, _) => "the config file".to_string(),
        (QuotaSource::Console, Some(by)) => format!("the console, by {by}"),
        (QuotaSource::Console, None) => "the console".to_string(),
    };
    let console = quota.source == QuotaSource::Console;
    let label = format!("Remove the quota of {} {}", scope.as_str(), quota.name);
    view! {
        <tr>
            <th scope="row">{format!("{} {}", scope.as_str(), quota.name)}</th>
            <td>{limit_text(l.running_gpus, count)}</td>
            <td>{limit_text(l.running_replicas, count)}</td>
            <td>{limit_text(l.queued_jobs, count)}</td>
            <td>{limit_text(l.log_bytes, format_bytes)}</td>
            <td>{source}</td>
            <td>
                {console.then(|| view! {
                    <button type="button" class="danger" aria-label=label on:click=remove>"Remove"</button>
                })}
            </td>
        </tr>
    }
}

/// Reads one limit of the form: empty is no limit.
fn read_limit(field: &str, text: &str, parse: fn(&str) -> Option<i64>) -> Result<Option<i64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    parse(text).map(Some).ok_or_else(|| format!("{field}: '{text}' is not a number of the kind asked"))
}

fn whole_number(text: &str) -> Option<i64> {
    text.parse().ok()
}

/// The form that sets a role's or a user's quota; choosing whom fills in
/// what is in force for them now.
#[component]
fn QuotaForm(
    usage: RwSignal<Vec<UserUsage>>,
    list: RwSignal<Vec<Quota>>,
    on_set: impl Fn() + Copy + 'static,
) -> impl IntoView {
    let target = RwSignal::new(format!("role:{}", Role::Member.as_str()));
    let fields: [RwSignal<String>; 4] = std::array::from_fn(|_| RwSignal::new(String::new()));
    let said = RwSignal::new(None::<String>);
    let parse_target = move |value: &str| -> Option<(QuotaScope, String)> {
        let (scope, name) = value.split_once(':')?;
        Some((QuotaScope::parse(scope)?, name.to_string()))
    };
    // Fill the fields with the chosen quota's limits, or empty them.
    Effect::new(move |_| {
        let chosen = parse_target(&target.get());
        let limits = list.with(|quotas| {
            quotas
                .iter()
                .find(|q| chosen.as_ref().is_some_and(|(s, n)| q.scope == *s && &q.name == n))
                .map(|q| q.limits)
                .unwrap_or_default()
        });
        for (i, (field, (_, value))) in fields.iter().zip(limits.fields()).enumerate() {
            let shown = match value {
                // Bytes read as "50GB" where that is exact, else as a count.
                Some(v) if i == 3 => {
                    let short = format_bytes(v).replace(' ', "");
                    if parse_bytes(&short) == Some(v) {
                        short
                    } else {
                        v.to_string()
                    }
                }
                Some(v) => v.to_string(),
                None => String::new(),
            };
            field.set(shown);
        }
    });
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some((scope, name)) = parse_target(&target.get_untracked()) else { return };
        let read = |i: usize, field: &str, parse| read_limit(field, &fields[i].get_untracked(), parse);
        let limits = (|| {
            Ok::<_, String>(QuotaLimits {
                running_gpus: read(0, "GPUs", whole_number)?,
                running_replicas: read(1, "Replicas", whole_number)?,
                queued_jobs: read(2, "Queued jobs", whole_number)?,
                log_bytes: read(3, "Logs kept", parse_bytes)?,
            })
        })();
        let limits = match limits {
            Ok(limits) => limits,
            Err(problem) => return said.set(Some(problem)),
        };
        if let Some((field, problems)) = limits.problems().into_iter().next() {
            return said.set(Some(format!("{field}: {}", problems.join("; "))));
        }
        leptos::task::spawn_local(async move {
            match set_quota(scope, &name, &limits).await {
                Ok(_) => {
                    said.set(Some(format!("Saved the quota of {} {name}.", scope.as_str())));
                    on_set();
                }
                Err(failure) => said.set(Some(failure.to_string())),
            }
        });
    };
    let choices = move || {
        let roles = Role::ALL.map(|r| format!("role:{}", r.as_str()));
        let users = usage.with(|u| u.iter().map(|u| format!("user:{}", u.user)).collect::<Vec<_>>());
        roles
            .into_iter()
            .chain(users)
            .map(|value| {
                let text = value.replacen(':', " ", 1);
                view! { <option value=value>{text}</option> }
            })
            .collect_view()
    };
    let input = |label: &'static str, field: RwSignal<String>, hint: &'static str| {
        view! { <label class="filter">{label} <input size="8" placeholder=hint bind:value=field/></label> }
    };
    view! {
        <form class="filters quota-form" on:submit=on_submit>
            <label class="filter">"Set the quota of" <select bind:value=target>{choices}</select></label>
            {input("GPUs", fields[0], "no limit")}
            {input("Replicas", fields[1], "no limit")}
            {input("Queued jobs", fields[2], "no limit")}
            {input("Logs kept", fields[3], "e.g. 50GB")}
            <button type="submit" class="primary">"Save quota"</button>
            <p class="field-error" role="status">{move || said.get()}</p>
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn usage_reads_against_its_limit_and_empty_fields_set_no_limit() {
        assert_eq!(of_limit(3, Some(8), count), "3 of 8");
        assert_eq!(of_limit(3, None, count), "3");
        assert_eq!(of_limit(1_500_000, Some(50_000_000_000), format_bytes), "1.5 MB of 50 GB");
        assert_eq!(read_limit("GPUs", "  ", whole_number), Ok(None));
        assert_eq!(read_limit("GPUs", "8", whole_number), Ok(Some(8)));
        assert_eq!(read_limit("Logs kept", "50GB", parse_bytes), Ok(Some(50_000_000_000)));
        assert!(read_limit("GPUs", "eight", whole_number).unwrap_err().starts_with("GPUs: 'eight'"));
    }
}
