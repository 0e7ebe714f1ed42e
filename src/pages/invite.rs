//! The page an invitation link opens (`/invite#code=…`): who invited the
//! teammate and as what, then the way in. Through the workspace's identity
//! provider when it has one (the invitation binds to whoever signs in
//! there); otherwise a name to pick, which makes a local account and a
//! personal token, shown once, and signs the console in with it.
//!
//! The code stays in the fragment, which no server sees; it works once.

use jobdeck_api::invitations::code_from_fragment;
use jobdeck_api::{InvitationPreview, RedeemedInvitation};
use leptos::prelude::*;

use crate::api::people::{check_invitation, redeem_invitation};
use crate::api::ApiFailure;
use crate::components::new_token::NewToken;
use crate::components::time::format_time;
use crate::routes;
use crate::session::{start_session_with, use_session};

/// Where the page stands.
#[derive(Clone, PartialEq)]
enum Step {
    Checking,
    /// The invitation lets nobody in, or cannot be read; the sentence says.
    Unusable(String),
    Offered(InvitationPreview),
    Joined(RedeemedInvitation),
}

#[component]
pub fn InvitePage() -> impl IntoView {
    let fragment = web_sys::window().and_then(|w| w.location().hash().ok()).unwrap_or_default();
    let code = code_from_fragment(&fragment).map(str::to_string);
    let step = RwSignal::new(Step::Checking);
    match code.clone() {
        None => {
            step.set(Step::Unusable("This link has no invitation in it: open the whole link you were sent.".into()))
        }
        Some(code) => leptos::task::spawn_local(async move {
            step.set(match check_invitation(&code).await {
                Ok(offer) => Step::Offered(offer),
                Err(failure) => Step::Unusable(failure.to_string()),
            });
        }),
    }
    let code = StoredValue::new(code.unwrap_or_default());
    let shown = move || match step.get() {
        Step::Checking => view! { <p class="loading" role="status">"Reading the invitation…"</p> }.into_any(),
        Step::Unusable(why) => view! { <p class="banner error" role="alert">{why}</p> }.into_any(),
        Step::Offered(offer) => view! { <Offer offer code=code.get_value() step/> }.into_any(),
        Step::Joined(joined) => view! { <Welcome joined/> }.into_any(),
    };
    view! {
        <section class="page narrow">
            <h1>"Join Jobdeck"</h1>
            {shown}
        </section>
    }
}

/// What the invitation offers, and the way to accept it.
#[component]
fn Offer(offer: InvitationPreview, code: String, step: RwSignal<Step>) -> impl IntoView {
    let by = offer.invited_by.clone().unwrap_or_else(|| "An admin".into());
    let said = format!(
        "{by} invited you to this workspace as a {}. The invitation works once, until {}.",
        offer.role.as_str(),
        format_time(offer.expires_at)
    );
    let accept = match offer.single_sign_on {
        Some(method) => {
            let href = format!(
                "{}?next={}&invitation={}",
                method.start,
                routes::encode_component(routes::JOBS),
                routes::encode_component(&code)
            );
            view! {
                <p>
                    <a class="button primary single-sign-on" href=href rel="external">
                        {format!("Accept with {}", method.name)}
                    </a>
                </p>
            }
            .into_any()
        }
        None => view! { <PickName code step/> }.into_any(),
    };
    view! {
        <p>{said}</p>
        {accept}
    }
}

/// A workspace without an identity provider: the teammate picks a name.
#[component]
fn PickName(code: String, step: RwSignal<Step>) -> impl IntoView {
    let session = use_session();
    let name = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let code = StoredValue::new(code);
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let wanted = name.get_untracked().trim().to_string();
        let problems = jobdeck_api::invitations::user_name_problems(&wanted);
        if !problems.is_empty() {
            error.set(Some(format!("Your name: {}.", problems.join("; "))));
            return;
        }
        busy.set(true);
        error.set(None);
        leptos::task::spawn_local(async move {
            match redeem_invitation(&code.get_value(), &wanted).await {
                Ok(joined) => match start_session_with(session, &joined.token.token).await {
                    Ok(_) => step.set(Step::Joined(joined)),
                    Err(failure) => error.set(Some(failure.to_string())),
                },
                Err(ApiFailure::Invalid { fields, message }) => {
                    let said = fields.get("name").map(|m| m.join("; ")).unwrap_or(message);
                    error.set(Some(format!("Your name: {said}.")));
                }
                Err(failure) => error.set(Some(failure.to_string())),
            }
            busy.set(false);
        });
    };
    view! {
        <form class="card" on:submit=on_submit>
            <label for="name">"Your name here"</label>
            <input id="name" autocomplete="username" spellcheck="false" aria-describedby="name-help name-error" bind:value=name/>
            <p id="name-help" class="help">"Letters, digits and . _ @ + -; others see it on your jobs."</p>
            <p id="name-error" class="field-error" role="alert">{move || error.get()}</p>
            <button type="submit" class="primary" disabled=move || busy.get()>
                {move || if busy.get() { "Joining…" } else { "Join" }}
            </button>
        </form>
    }
}

/// In: the new account's token, shown once, and the way on.
#[component]
fn Welcome(joined: RedeemedInvitation) -> impl IntoView {
    view! {
        <p class="banner" role="status">
            {format!("Welcome, {}. You are signed in as a {}.", joined.user, joined.role.as_str())}
        </p>
        <p>
            {joined.token.info.expires_at.map(|at| format!("Keep this token: it is how you sign in again, until {}. ", format_time(at)))}
            "Make more, and revoke them, on " <a href=routes::ACCOUNT>"your account page"</a> "."
        </p>
        <NewToken token=joined.token.token/>
        <p>
            <a class="button primary" href=routes::JOBS>"Go to the deployments"</a>
        </p>
    }
}
