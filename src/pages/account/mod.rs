//! The signed-in user's own page (`/account`): their personal API tokens
//! (make one, shown once with the `lep` lines; revoke one), their console
//! sessions and when each ends, and signing out everywhere. Every role
//! has it: a viewer's tokens are theirs to manage too. It links to one's
//! notifications, and an admin's to the storage page.

use jobdeck_api::tokens::PERSONAL_TOKEN_DEFAULT_DAYS;
use jobdeck_api::{TokenCreate, TokenInfo, TokenKind};
use leptos::prelude::*;

use crate::api::people::{create_token, end_every_session, my_tokens, revoke_token};
use crate::api::ApiFailure;
use crate::components::api_error::use_sign_in_again;
use crate::components::new_token::NewToken;
use crate::components::time::{format_time, format_time_short};
use crate::router::use_navigate;
use crate::routes;
use crate::session::{require_sign_in, use_session};

/// The lifetimes the form offers, in days.
const LIFETIMES: [u32; 4] = [30, 90, 180, 366];

#[component]
pub fn AccountPage() -> impl IntoView {
    let signed_in = require_sign_in();
    let session = use_session();
    let sign_in_again = use_sign_in_again();
    let tokens = RwSignal::new(None::<Vec<TokenInfo>>);
    let problem = RwSignal::new(None::<String>);
    let reload = move || {
        let sign_in_again = sign_in_again.clone();
        leptos::task::spawn_local(async move {
            match my_tokens().await {
                Ok(list) => tokens.set(Some(list)),
                Err(ApiFailure::Unauthorized) => sign_in_again(),
                Err(failure) => problem.set(Some(failure.to_string())),
            }
        });
    };
    if signed_in {
        reload();
    }
    let who = move || {
        let user = session.user.get().unwrap_or_default();
        let role = session.role.get().map(|r| r.as_str()).unwrap_or("user");
        format!("Signed in as {user}, a {role} of this workspace.")
    };
    // The session this browser holds, and the token it came from.
    let current = move || tokens.with(|t| t.as_ref().and_then(|t| t.iter().find(|t| t.current).cloned()));
    let session_ends = move || {
        current().and_then(|c| c.expires_at).map(|at| format!("This browser's session ends at {}.", format_time(at)))
    };
    let personal = Signal::derive(move || {
        tokens.with(|t| t.iter().flatten().filter(|t| t.kind != TokenKind::Session).cloned().collect::<Vec<_>>())
    });
    let sessions = Signal::derive(move || {
        tokens.with(|t| t.iter().flatten().filter(|t| t.kind == TokenKind::Session).cloned().collect::<Vec<_>>())
    });
    let origin = Signal::derive(move || current().and_then(|c| c.origin_id));
    view! {
        <section class="page narrow account">
            <h1>"Your account"</h1>
            <p>{who}" "{session_ends}</p>
            <p class="banner error" role="alert" hidden=move || problem.with(Option::is_none)>{move || problem.get()}</p>
            <h2>"Personal API tokens"</h2>
            <p class="help">
                "A token signs in as you, with your role, for the lep CLI, scripts and the console's sign-in page."
            </p>
            <NewTokenForm on_made=reload.clone()/>
            <TokenTable tokens=personal origin on_revoked=reload.clone()/>
            <h2>"Console sessions"</h2>
            <SessionList sessions/>
            <SignOutEverywhere/>
            <h2>"Notifications"</h2>
            <p>
                <a href=routes::NOTIFICATIONS>"Your notifications →"</a>
                " Hear about your jobs by webhook, Slack or email when they end, fail or need you."
            </p>
            // The storage page's link lives here and in the budget's notice:
            // a link in the top bar would put the people page over its
            // download budget (docs/measurements.md).
            <p class="needs-admin">
                <a href=routes::STORAGE>"The workspace's storage and log retention →"</a>
            </p>
        </section>
    }
}

/// The form that makes a personal token, and the token it made.
#[component]
fn NewTokenForm(on_made: impl Fn() + Clone + 'static) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let days = RwSignal::new(PERSONAL_TOKEN_DEFAULT_DAYS.to_string());
    let error = RwSignal::new(None::<String>);
    let made = RwSignal::new(None::<String>);
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = TokenCreate {
            name: name.get_untracked().trim().to_string(),
            expires_in_days: days.get_untracked().parse().ok(),
        };
        let problems = body.problems();
        if let Some((field, said)) = problems.iter().next() {
            error.set(Some(format!("{field}: {}", said.join("; "))));
            return;
        }
        error.set(None);
        let on_made = on_made.clone();
        leptos::task::spawn_local(async move {
            match create_token(&body).await {
                Ok(created) => {
                    made.set(Some(created.token));
                    name.set(String::new());
                    on_made();
                }
                Err(failure) => error.set(Some(failure.to_string())),
            }
        });
    };
    view! {
        <form class="filters make-token" on:submit=on_submit>
            <label class="filter">
                "Name" <input placeholder="laptop, ci" maxlength="100" bind:value=name/>
            </label>
            <label class="filter">
                "Expires in"
                <select bind:value=days>
                    {LIFETIMES.map(|d| view! { <option value=d.to_string()>{format!("{d} days")}</option> }).collect_view()}
                </select>
            </label>
            <button type="submit" class="primary">"Make a token"</button>
            <p class="field-error" role="alert">{move || error.get()}</p>
        </form>
        {move || made.get().map(|token| view! { <NewToken token/> })}
    }
}

/// The user's tokens, with a way to revoke each.
#[component]
fn TokenTable(
    tokens: Signal<Vec<TokenInfo>>,
    origin: Signal<Option<i64>>,
    on_revoked: impl Fn() + Clone + Send + Sync + 'static,
) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let row = move |token: TokenInfo| {
        let on_revoked = on_revoked.clone();
        let signs_out = origin.get_untracked() == Some(token.id);
        let revoke = move |_| {
            let on_revoked = on_revoked.clone();
            leptos::task::spawn_local(async move {
                match revoke_token(token.id).await {
                    Ok(()) => on_revoked(),
                    Err(failure) => error.set(Some(failure.to_string())),
                }
            });
        };
        let name = if token.name.is_empty() { token.kind.as_str().to_string() } else { token.name.clone() };
        view! {
            <tr>
                <th scope="row">{name}</th>
                <td>{format_time_short(token.created_at)}</td>
                <td>{token.expires_at.map(format_time_short).unwrap_or_else(|| "never".into())}</td>
                <td>{token.last_used_at.map(format_time_short).unwrap_or_else(|| "never".into())}</td>
                <td>
                    <button type="button" class="danger" on:click=revoke>
                        {if signs_out { "Revoke (signs this browser out)" } else { "Revoke" }}
                    </button>
                </td>
            </tr>
        }
    };
    view! {
        <p class="field-error" role="alert">{move || error.get()}</p>
        {move || {
            let list = tokens.get();
            if list.is_empty() {
                return view! { <p class="empty">"No personal tokens yet."</p> }.into_any();
            }
            let row = row.clone();
            view! {
                <table class="tokens">
                    <thead>
                        <tr><th>"Name"</th><th>"Made"</th><th>"Expires"</th><th>"Last used"</th><th><span class="sr-only">"Actions"</span></th></tr>
                    </thead>
                    <tbody>{list.into_iter().map(row).collect_view()}</tbody>
                </table>
            }
            .into_any()
        }}
    }
}

/// The user's console sessions, this browser's marked.
#[component]
fn SessionList(sessions: Signal<Vec<TokenInfo>>) -> impl IntoView {
    let item = |s: TokenInfo| {
        let ends = s.expires_at.map(format_time_short).unwrap_or_else(|| "never".into());
        let used = s.last_used_at.map(format_time_short).unwrap_or_else(|| "never".into());
        let here = if s.current { " (this browser)" } else { "" };
        view! { <li>{format!("Started {}, ends {ends}, last used {used}{here}", format_time_short(s.created_at))}</li> }
    };
    view! { <ul class="sessions">{move || sessions.get().into_iter().map(item).collect_view()}</ul> }
}

/// Ends every console session of the user, this one too; API tokens stay.
#[component]
fn SignOutEverywhere() -> impl IntoView {
    let session = use_session();
    let navigate = use_navigate();
    let error = RwSignal::new(None::<String>);
    let sign_out = move |_| {
        let navigate = navigate.clone();
        leptos::task::spawn_local(async move {
            match end_every_session().await {
                Ok(()) => {
                    session.sign_out();
                    navigate(routes::LOGIN);
                }
                Err(failure) => error.set(Some(failure.to_string())),
            }
        });
    };
    view! {
        <p>
            <button type="button" class="sign-out-everywhere" on:click=sign_out>"Sign out everywhere"</button>
            " Ends every console session of yours, in every browser; your API tokens keep working."
        </p>
        <p class="field-error" role="alert">{move || error.get()}</p>
    }
}
