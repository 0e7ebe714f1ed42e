//! One's notifications (`/notifications`): the endpoints that hear about
//! one's jobs (a JSON receiver, whose signing secret is shown once; a Slack
//! incoming webhook; one's own email address), each with its delivery
//! history and, when the server gave up on it, a way to enable it again;
//! and the rules that say which jobs' transitions and conditions go to
//! which endpoint (docs/api.md, "Notifications"). Settings are personal:
//! every role has them.
//!
//! The page is a download of its own, linked from the account page: in the
//! account page's module it put that page over its budget
//! (docs/measurements.md, "Notifications in the console"). Every click and
//! submit is an [`Action`] run by one function, [`Section::perform`], which
//! then reads both lists again: one future for the page rather than one
//! per button keeps it small. The server checks each body and names the
//! field it refuses.

use jobdeck_api::{
    NotificationCreate, NotificationInfo, NotifyOn, WebhookCreate, WebhookDelivery, WebhookInfo, WebhookKind,
};
use leptos::prelude::*;

use crate::api::notifications::{
    create_notification, create_webhook, delete_notification, delete_webhook, deliveries, enable_webhook,
    notifications, webhooks,
};
use crate::api::ApiResult;
use crate::components::time::format_time_short;

/// The idle waits and memory marks the rule form offers.
const IDLE_MINUTES: [u32; 5] = [15, 30, 60, 120, 240];
const MEMORY_PERCENTS: [u32; 4] = [80, 90, 95, 99];

/// What each kind of event is called on the page.
fn label_of(on: NotifyOn) -> &'static str {
    match on {
        NotifyOn::Started => "started",
        NotifyOn::Completed => "completed",
        NotifyOn::Failed => "failed",
        NotifyOn::Stopped => "stopped",
        NotifyOn::Preempted => "preempted",
        NotifyOn::GpuIdle => "GPUs idle",
        NotifyOn::MemoryNearLimit => "memory near its limit",
        NotifyOn::LogMatch => "a log line matches",
    }
}

fn kind_label(kind: WebhookKind) -> &'static str {
    match kind {
        WebhookKind::Json => "JSON",
        WebhookKind::Slack => "Slack",
        WebhookKind::Email => "email",
    }
}

/// What a person asked the section to do.
enum Action {
    AddEndpoint(WebhookCreate),
    Enable(i64),
    DeleteEndpoint(i64),
    /// An endpoint's deliveries, shown under the table with its name.
    History(i64, String),
    AddRule(NotificationCreate),
    DeleteRule(i64),
}

/// The section's state, shared by its parts.
#[derive(Clone, Copy)]
struct Section {
    hooks: RwSignal<Vec<WebhookInfo>>,
    rules: RwSignal<Vec<NotificationInfo>>,
    problem: RwSignal<Option<String>>,
    secret: RwSignal<Option<String>>,
    history: RwSignal<Option<(String, Vec<WebhookDelivery>)>>,
    /// Counts the actions that succeeded: a form clears itself when it
    /// moves.
    done: RwSignal<u32>,
    /// Whether both lists have been read once: until then an empty list
    /// is not yet known to be empty.
    loaded: RwSignal<bool>,
}

impl Section {
    /// Runs `action` (none: only reads the lists) in the background.
    fn run(self, action: Option<Action>) {
        leptos::task::spawn_local(self.perform(action));
    }

    async fn perform(self, action: Option<Action>) {
        let outcome: ApiResult<()> = match action {
            None => Ok(()),
            Some(Action::AddEndpoint(body)) => create_webhook(&body).await.map(|made| self.secret.set(made.secret)),
            Some(Action::Enable(id)) => enable_webhook(id).await.map(|_| ()),
            Some(Action::DeleteEndpoint(id)) => delete_webhook(id).await,
            Some(Action::History(id, name)) => deliveries(id).await.map(|list| self.history.set(Some((name, list)))),
            Some(Action::AddRule(body)) => create_notification(&body).await.map(|_| ()),
            Some(Action::DeleteRule(id)) => delete_notification(id).await,
        };
        if let Err(failure) = outcome {
            self.problem.set(Some(failure.naming_the_field()));
            return;
        }
        self.done.update(|n| *n += 1);
        match (webhooks().await, notifications().await) {
            (Ok(hooks), Ok(rules)) => {
                self.hooks.set(hooks);
                self.rules.set(rules);
                self.loaded.set(true);
                self.problem.set(None);
            }
            (Err(failure), _) | (_, Err(failure)) => self.problem.set(Some(failure.to_string())),
        }
    }
}

/// The page: endpoints, then rules.
#[component]
pub fn NotificationsPage() -> impl IntoView {
    let signed_in = crate::session::require_sign_in();
    let section = Section {
        hooks: RwSignal::new(Vec::new()),
        rules: RwSignal::new(Vec::new()),
        problem: RwSignal::new(None),
        secret: RwSignal::new(None),
        history: RwSignal::new(None),
        done: RwSignal::new(0),
        loaded: RwSignal::new(false),
    };
    if signed_in {
        section.run(None);
    }
    view! {
        <section class="page narrow notifications">
            <h1>"Notifications"</h1>
            <p class="help">
                "Hear about your jobs without keeping a tab open: when they start, end or are preempted, "
                "when their GPUs sit idle, their memory nears its limit, or a log line matches a pattern."
            </p>
            <p class="field-error" role="alert">{move || section.problem.get()}</p>
            <h2>"Endpoints"</h2>
            <NewEndpointForm section/>
            <EndpointTable section/>
            <h2>"Rules"</h2>
            <NewRuleForm section/>
            <RuleList section/>
        </section>
    }
}

/// Registers an endpoint; a JSON one's signing secret is shown this once.
#[component]
fn NewEndpointForm(section: Section) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let kind = RwSignal::new("json".to_string());
    let address = RwSignal::new(String::new());
    Effect::new(move |_| {
        section.done.track();
        name.set(String::new());
        address.set(String::new());
    });
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let kind = match kind.get_untracked().as_str() {
            "slack" => WebhookKind::Slack,
            "email" => WebhookKind::Email,
            _ => WebhookKind::Json,
        };
        let url = if kind == WebhookKind::Email { String::new() } else { address.get_untracked().trim().to_string() };
        let body = WebhookCreate { name: name.get_untracked().trim().to_string(), url, kind };
        section.run(Some(Action::AddEndpoint(body)));
    };
    view! {
        <form class="filters new-endpoint" on:submit=on_submit>
            <label class="filter">"Name" <input placeholder="ci, team channel" maxlength="64" bind:value=name/></label>
            <label class="filter">
                "Kind"
                <select bind:value=kind>
                    <option value="json">"JSON (signed)"</option>
                    <option value="slack">"Slack"</option>
                    <option value="email">"Email to me"</option>
                </select>
            </label>
            <label class="filter" hidden=move || kind.get() == "email">
                "URL" <input type="url" placeholder="https://…" maxlength="2048" bind:value=address/>
            </label>
            <button type="submit" class="primary">"Add endpoint"</button>
        </form>
        {move || {
            section.secret.get().map(|secret| {
                view! {
                    <p class="new-secret">
                        "Signing secret, shown this once (the X-Jobdeck-Signature header is its HMAC): "
                        <input readonly size="48" prop:value=secret/>
                    </p>
                }
            })
        }}
    }
}

/// The endpoints, each with its history, enabling and deleting.
#[component]
fn EndpointTable(section: Section) -> impl IntoView {
    let row = move |hook: WebhookInfo| {
        let (id, name) = (hook.id, hook.name.clone());
        let state = match (&hook.disabled_reason, hook.enabled) {
            (_, true) => "enabled".to_string(),
            (Some(why), false) => format!("disabled: {why}"),
            (None, false) => "disabled".to_string(),
        };
        view! {
            <tr>
                <th scope="row">{hook.name.clone()}</th>
                <td>{kind_label(hook.kind)}</td>
                <td>{hook.destination.clone()}</td>
                <td>{state}</td>
                <td>
                    <button type="button" class="history" on:click=move |_| section.run(Some(Action::History(id, name.clone())))>
                        "History"
                    </button>
                    {(!hook.enabled).then(|| view! {
                        <button type="button" class="enable" on:click=move |_| section.run(Some(Action::Enable(id)))>"Enable"</button>
                    })}
                    <button type="button" class="danger" on:click=move |_| section.run(Some(Action::DeleteEndpoint(id)))>
                        "Delete"
                    </button>
                </td>
            </tr>
        }
    };
    view! {
        {move || {
            let list = section.hooks.get();
            if list.is_empty() && !section.loaded.get() {
                return ().into_any();
            }
            if list.is_empty() {
                return view! { <p class="empty">"No endpoints yet."</p> }.into_any();
            }
            view! {
                <table class="endpoints">
                    <thead>
                        <tr><th>"Name"</th><th>"Kind"</th><th>"Sends to"</th><th>"State"</th><th><span class="sr-only">"Actions"</span></th></tr>
                    </thead>
                    <tbody>{list.into_iter().map(row).collect_view()}</tbody>
                </table>
            }
            .into_any()
        }}
        {move || section.history.get().map(|(name, list)| view! { <DeliveryHistory name list/> })}
    }
}

/// One endpoint's newest deliveries.
#[component]
fn DeliveryHistory(name: String, list: Vec<WebhookDelivery>) -> impl IntoView {
    let item = |d: WebhookDelivery| {
        let mut outcome = d.state.as_str().to_string();
        if let Some(status) = d.last_status {
            outcome.push_str(&format!(", answered {status}"));
        }
        if let Some(error) = &d.last_error {
            outcome.push_str(&format!(": {error}"));
        }
        let line = d.line.map(|n| format!(" line {n}")).unwrap_or_default();
        let attempts = format!("{} attempt{}", d.attempts, if d.attempts == 1 { "" } else { "s" });
        let when = format_time_short(d.created_at);
        view! { <li>{format!("{when} {} of {}{line}: {outcome} ({attempts})", d.event, d.job_id)}</li> }
    };
    let empty = list.is_empty().then(|| view! { <li>"Nothing sent yet."</li> });
    view! {
        <div class="deliveries">
            <h4>{format!("Deliveries to {name}, newest first")}</h4>
            <ul>{empty}{list.into_iter().map(item).collect_view()}</ul>
        </div>
    }
}

/// Makes a rule: which events of which jobs go to an endpoint.
#[component]
fn NewRuleForm(section: Section) -> impl IntoView {
    let webhook = RwSignal::new(String::new());
    // The job page's "Notify me" opens this page for its job
    // (`/notifications?job=<id>`).
    let job = RwSignal::new(crate::router::use_url().with_untracked(|url| url.param("job")).unwrap_or_default());
    let chosen = NotifyOn::ALL.map(|on| (on, RwSignal::new(false)));
    let minutes = RwSignal::new("60".to_string());
    let percent = RwSignal::new("90".to_string());
    let pattern = RwSignal::new(String::new());
    Effect::new(move |_| {
        section.done.track();
        chosen.iter().for_each(|(_, picked)| picked.set(false));
    });
    let wants = move |on: NotifyOn| chosen.iter().any(|(o, picked)| *o == on && picked.get());
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let on: Vec<NotifyOn> = chosen.iter().filter(|(_, p)| p.get_untracked()).map(|(on, _)| *on).collect();
        let has = |wanted: NotifyOn| on.contains(&wanted);
        // The selects' values are the numbers offered, as text: found
        // again among them rather than parsed.
        let text = |n: &u32| format!("{n}");
        let endpoint = webhook.get_untracked();
        let endpoint = section.hooks.with_untracked(|hooks| {
            hooks.iter().find(|h| format!("{}", h.id) == endpoint).or(hooks.first()).map(|h| h.id)
        });
        let job = job.get_untracked().trim().to_string();
        let body = NotificationCreate {
            job: (!job.is_empty()).then_some(job),
            gpu_idle_minutes: has(NotifyOn::GpuIdle)
                .then(|| IDLE_MINUTES.into_iter().find(|m| text(m) == minutes.get_untracked()))
                .flatten(),
            memory_percent: has(NotifyOn::MemoryNearLimit)
                .then(|| MEMORY_PERCENTS.into_iter().find(|p| text(p) == percent.get_untracked()))
                .flatten(),
            log_pattern: has(NotifyOn::LogMatch).then(|| pattern.get_untracked()),
            on,
            webhook: endpoint.unwrap_or_default(),
        };
        section.run(Some(Action::AddRule(body)));
    };
    let options = move || {
        let hooks = section.hooks.get();
        hooks.into_iter().map(|h| view! { <option value=format!("{}", h.id)>{h.name}</option> }).collect_view()
    };
    let boxes = chosen
        .iter()
        .map(|(on, picked)| {
            let picked = *picked;
            view! {
                <label class="choice"><input type="checkbox" value=on.as_str() bind:checked=picked/>{label_of(*on)}</label>
            }
        })
        .collect_view();
    view! {
        <form class="new-rule" on:submit=on_submit>
            <fieldset>
                <legend>"When"</legend>
                {boxes}
            </fieldset>
            <label class="filter" hidden=move || !wants(NotifyOn::GpuIdle)>
                "GPUs idle for"
                <select class="gpu-idle-minutes" bind:value=minutes>
                    {IDLE_MINUTES.map(|m| view! { <option value=format!("{m}")>{format!("{m} minutes")}</option> }).collect_view()}
                </select>
            </label>
            <label class="filter" hidden=move || !wants(NotifyOn::MemoryNearLimit)>
                "Memory at"
                <select class="memory-percent" bind:value=percent>
                    {MEMORY_PERCENTS.map(|p| view! { <option value=format!("{p}")>{format!("{p} % of its limit")}</option> }).collect_view()}
                </select>
            </label>
            <label class="filter" hidden=move || !wants(NotifyOn::LogMatch)>
                "Log line matches (regular expression)"
                <input class="log-pattern" placeholder="loss: (nan|inf)" maxlength="256" bind:value=pattern/>
            </label>
            <label class="filter">
                "Job" <input class="rule-job" placeholder="id or name; empty: all your jobs" bind:value=job/>
            </label>
            <label class="filter">"Send to" <select class="rule-endpoint" bind:value=webhook>{options}</select></label>
            <button type="submit" class="primary">"Add rule"</button>
        </form>
    }
}

/// The rules, in words, each with a way to delete it.
#[component]
fn RuleList(section: Section) -> impl IntoView {
    let item = move |rule: NotificationInfo| {
        let endpoint = section.hooks.with(|h| h.iter().find(|h| h.id == rule.webhook).map(|h| h.name.clone()));
        let mut what: Vec<String> = rule.on.iter().map(|on| label_of(*on).to_string()).collect();
        if let Some(minutes) = rule.gpu_idle_minutes {
            what.push(format!("idle for {minutes} min"));
        }
        if let Some(percent) = rule.memory_percent {
            what.push(format!("memory at {percent} %"));
        }
        if let Some(pattern) = &rule.log_pattern {
            what.push(format!("pattern {pattern}"));
        }
        let jobs = rule.job.clone().unwrap_or_else(|| "all your jobs".into());
        let to = endpoint.unwrap_or_else(|| format!("endpoint {}", rule.webhook));
        let id = rule.id;
        view! {
            <li>
                {format!("{jobs}: {} → {to} ", what.join(", "))}
                <button type="button" class="danger" on:click=move |_| section.run(Some(Action::DeleteRule(id)))>"Delete"</button>
            </li>
        }
    };
    view! {
        <ul class="rules">
            {move || {
                let list = section.rules.get();
                let empty =
                    (list.is_empty() && section.loaded.get()).then(|| view! { <li class="empty">"No rules yet."</li> });
                (empty, list.into_iter().map(item).collect_view())
            }}
        </ul>
    }
}
