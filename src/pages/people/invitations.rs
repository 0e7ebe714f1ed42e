//! Invitations on the people page: the form that makes one (a role, whom
//! it is for, how long it stays open), the link it made, shown once to
//! send, and every invitation with where it stands and a way to withdraw
//! the open ones.

use jobdeck_api::invitations::INVITATION_DEFAULT_DAYS;
use jobdeck_api::{InvitationCreate, InvitationInfo, InvitationState, Role};
use leptos::prelude::*;

use crate::api::people::{invitations, invite, withdraw_invitation};
use crate::components::time::{format_time, format_time_short};

/// How long an invitation may stay open, as the form offers it, in days.
const OPEN_FOR: [u32; 4] = [1, 7, 14, 30];

/// A link as the admin sends it: whole, with this site's address when the
/// server gave a path.
fn whole_link(link: &str) -> String {
    if link.starts_with('/') {
        let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
        format!("{origin}{link}")
    } else {
        link.to_string()
    }
}

#[component]
pub fn Invitations() -> impl IntoView {
    let list = RwSignal::new(Vec::<InvitationInfo>::new());
    let error = RwSignal::new(None::<String>);
    let reload = move || {
        leptos::task::spawn_local(async move {
            match invitations().await {
                Ok(answer) => list.set(answer.invitations),
                Err(failure) => error.set(Some(failure.to_string())),
            }
        });
    };
    reload();
    let rows = move || {
        list.get()
            .into_iter()
            .map(|invitation| view! { <InvitationRow invitation error on_change=reload/> })
            .collect_view()
    };
    view! {
        <h2>"Invite a teammate"</h2>
        <InviteForm on_made=reload/>
        <p class="field-error" role="alert">{move || error.get()}</p>
        <table class="invitations" hidden=move || list.with(Vec::is_empty)>
            <thead>
                <tr><th>"For"</th><th>"Role"</th><th>"State"</th><th>"Made"</th><th>"Until"</th><th><span class="sr-only">"Actions"</span></th></tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// The form, and the link it made.
#[component]
fn InviteForm(on_made: impl Fn() + Copy + 'static) -> impl IntoView {
    let role = RwSignal::new(Role::Member.as_str().to_string());
    let note = RwSignal::new(String::new());
    let days = RwSignal::new(INVITATION_DEFAULT_DAYS.to_string());
    let error = RwSignal::new(None::<String>);
    let made = RwSignal::new(None::<(String, i64)>);
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = InvitationCreate {
            role: Role::parse(&role.get_untracked()).unwrap_or_default(),
            note: note.get_untracked().trim().to_string(),
            expires_in_days: days.get_untracked().parse().ok(),
        };
        if let Some((field, said)) = body.problems().into_iter().next() {
            error.set(Some(format!("{field}: {}", said.join("; "))));
            return;
        }
        error.set(None);
        leptos::task::spawn_local(async move {
            match invite(&body).await {
                Ok(created) => {
                    made.set(Some((whole_link(&created.link), created.info.expires_at)));
                    note.set(String::new());
                    on_made();
                }
                Err(failure) => error.set(Some(failure.to_string())),
            }
        });
    };
    view! {
        <form class="filters invite" on:submit=on_submit>
            <label class="filter">
                "Role"
                <select bind:value=role>
                    {Role::ALL.map(|r| view! { <option value=r.as_str()>{r.as_str()}</option> }).collect_view()}
                </select>
            </label>
            <label class="filter">
                "For" <input placeholder="bob@example.com" maxlength="200" bind:value=note/>
            </label>
            <label class="filter">
                "Open for"
                <select bind:value=days>
                    {OPEN_FOR.map(|d| view! { <option value=d.to_string()>{format!("{d} days")}</option> }).collect_view()}
                </select>
            </label>
            <button type="submit" class="primary">"Make an invitation link"</button>
            <p class="field-error" role="alert">{move || error.get()}</p>
        </form>
        {move || {
            made.get().map(|(link, until)| {
                view! {
                    <div class="card new-invitation" role="status">
                        <p>
                            <strong>"Send this link to your teammate:"</strong>
                            {format!(" it works once, until {}, and is shown only now.", format_time(until))}
                        </p>
                        <input class="mono" style="width:100%" readonly aria-label="The invitation link" prop:value=link/>
                    </div>
                }
            })
        }}
    }
}

/// One invitation, with a way to withdraw it while it is open.
#[component]
fn InvitationRow(
    invitation: InvitationInfo,
    error: RwSignal<Option<String>>,
    on_change: impl Fn() + Copy + 'static,
) -> impl IntoView {
    let id = invitation.id;
    let withdraw = move |_| {
        leptos::task::spawn_local(async move {
            match withdraw_invitation(id).await {
                Ok(_) => on_change(),
                Err(failure) => error.set(Some(failure.to_string())),
            }
        });
    };
    let state = match (invitation.state, invitation.used_by.as_deref()) {
        (InvitationState::Used, Some(who)) => format!("used by {who}"),
        (InvitationState::Used, None) => "used".into(),
        (InvitationState::Open, _) => "open".into(),
        (InvitationState::Expired, _) => "expired".into(),
        (InvitationState::Withdrawn, _) => "withdrawn".into(),
    };
    let open = invitation.state == InvitationState::Open;
    let made = format!(
        "{} by {}",
        format_time_short(invitation.created_at),
        invitation.created_by.as_deref().unwrap_or("a removed user")
    );
    view! {
        <tr>
            <th scope="row">{if invitation.note.is_empty() { "—".to_string() } else { invitation.note.clone() }}</th>
            <td>{invitation.role.as_str()}</td>
            <td>{state}</td>
            <td>{made}</td>
            <td>{format_time_short(invitation.expires_at)}</td>
            <td>
                {open.then(|| view! { <button type="button" class="danger" on:click=withdraw>"Withdraw"</button> })}
            </td>
        </tr>
    }
}
