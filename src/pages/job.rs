//! The job page (`/jobs/<id>` and `/jobs/<id>/<tab>`).

use jobdeck_api::LeptonJob;
use leptos::prelude::*;

use crate::api::{self, ApiFailure};
use crate::components::api_error::ApiErrorView;
use crate::components::state_badge::StateBadge;
use crate::components::time::format_time;
use crate::session::require_sign_in;

#[component]
pub fn JobPage(id: String) -> impl IntoView {
    let signed_in = require_sign_in();
    let job = LocalResource::new(move || {
        let id = id.clone();
        async move {
            if !signed_in {
                return Err(ApiFailure::Unauthorized);
            }
            api::job(&id).await
        }
    });
    view! {
        <section class="page">
            <Transition fallback=|| view! { <p class="loading" aria-busy="true">"Loading job…"</p> }>
                <ErrorBoundary fallback=|errors| view! { <ApiErrorView errors/> }>
                    {move || Suspend::new(async move { job.await.map(|job| view! { <JobOverview job/> }) })}
                </ErrorBoundary>
            </Transition>
        </section>
    }
}

#[component]
fn JobOverview(job: LeptonJob) -> impl IntoView {
    let name = job.metadata.name.clone().unwrap_or_else(|| job.id().to_string());
    let state = job.state();
    let command = job.spec.container.command.clone().unwrap_or_default().join(" ");
    let image = job.spec.container.image.clone().unwrap_or_default();
    let created_by = job.metadata.created_by.clone().unwrap_or_default();
    let created_at = job.metadata.created_at.map(format_time).unwrap_or_default();
    view! {
        <div class="page-head">
            <h1>{name}</h1>
            <StateBadge state=Signal::stored(state)/>
        </div>
        <dl class="facts">
            <dt>"Job id"</dt><dd class="mono">{job.id().to_string()}</dd>
            <dt>"Container image"</dt><dd class="mono">{image}</dd>
            <dt>"Command"</dt><dd class="mono">{if command.is_empty() { "(image default)".to_string() } else { command }}</dd>
            <dt>"Created by"</dt><dd>{created_by}</dd>
            <dt>"Created"</dt><dd>{created_at}</dd>
        </dl>
    }
}
