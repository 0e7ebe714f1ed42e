//! The admins' page of people (`/people`): every user with their role
//! (changed here, from the user's next request on), when they were last
//! seen and how many of their tokens still sign in; invitations
//! (`invitations.rs`); and quotas and usage (`quotas.rs`). The server lets only admins read or change any of
//! it; anyone else opening the page is told so.

mod invitations;
mod quotas;
mod removal;

use jobdeck_api::{Role, UserInfo};
use leptos::prelude::*;

use crate::api::people::{set_role, users};
use crate::api::ApiFailure;
use crate::components::api_error::use_sign_in_again;
use crate::components::time::format_time_short;
use crate::session::{require_sign_in, use_session};

#[component]
pub fn PeoplePage() -> impl IntoView {
    let signed_in = require_sign_in();
    let sign_in_again = use_sign_in_again();
    let list = RwSignal::new(None::<Vec<UserInfo>>);
    let problem = RwSignal::new(None::<String>);
    let reload = move || {
        let sign_in_again = sign_in_again.clone();
        leptos::task::spawn_local(async move {
            match users().await {
                Ok(answer) => list.set(Some(answer.users)),
                Err(ApiFailure::Unauthorized) => sign_in_again(),
                Err(failure) => problem.set(Some(failure.to_string())),
            }
        });
    };
    if signed_in {
        reload();
    }
    let table = move || {
        list.get().map(|users| {
            let rows = users.into_iter().map(|user| view! { <UserRow user problem list/> }).collect_view();
            view! {
                <table class="people">
                    <thead>
                        <tr>
                            <th>"Name"</th><th>"Role"</th><th>"Last seen"</th><th>"Tokens"</th><th>"Joined"</th>
                            <th><span class="sr-only">"Actions"</span></th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            }
        })
    };
    view! {
        <section class="page people">
            <h1>"People"</h1>
            <p><a href=crate::routes::AUDIT>"Audit log →"</a></p>
            <p class="banner error" role="alert" hidden=move || problem.with(Option::is_none)>{move || problem.get()}</p>
            {table}
            <invitations::Invitations/>
            <quotas::QuotasAndUsage/>
        </section>
    }
}

/// One user, with their role to change.
#[component]
fn UserRow(user: UserInfo, problem: RwSignal<Option<String>>, list: RwSignal<Option<Vec<UserInfo>>>) -> impl IntoView {
    let session = use_session();
    let role = RwSignal::new(user.role);
    let name = StoredValue::new(user.name.clone());
    let change = move |ev: leptos::ev::Event| {
        let Some(wanted) = Role::parse(&event_target_value(&ev)) else { return };
        let before = role.get_untracked();
        role.set(wanted);
        leptos::task::spawn_local(async move {
            match set_role(&name.get_value(), wanted).await {
                Ok(changed) => {
                    role.set(changed.role);
                    problem.set(None);
                }
                Err(failure) => {
                    role.set(before);
                    problem.set(Some(failure.to_string()));
                }
            }
        });
    };
    let you = session.user.get_untracked().as_deref() == Some(user.name.as_str());
    let label = format!("{}'s role", user.name);
    view! {
        <tr>
            <th scope="row">{user.name.clone()}{you.then_some(" (you)")}</th>
            <td>
                <select aria-label=label on:change=change prop:value=move || role.get().as_str()>
                    {Role::ALL.map(|r| view! { <option value=r.as_str()>{r.as_str()}</option> }).collect_view()}
                </select>
            </td>
            <td>{user.last_seen_at.map(format_time_short).unwrap_or_else(|| "never".into())}</td>
            <td>{user.live_tokens}</td>
            <td>{format_time_short(user.created_at)}</td>
            <td>{(!you).then(|| view! { <removal::RemoveUser name=user.name.clone() problem list/> })}</td>
        </tr>
    }
}
