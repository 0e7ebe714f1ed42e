//! The create-job form (`/jobs/new`).

use jobdeck_api::{Container, JobSpec, LeptonJob, Metadata};
use leptos::prelude::*;

use crate::api::{self, ApiFailure};
use crate::components::api_error::failure_view;
use crate::router::use_navigate;
use crate::routes;
use crate::session::require_sign_in;

#[component]
pub fn NewJobPage() -> impl IntoView {
    require_sign_in();
    let navigate = use_navigate();
    let name = RwSignal::new(String::new());
    let image = RwSignal::new(String::new());
    let command = RwSignal::new(String::new());
    let field_errors = RwSignal::new(jobdeck_api::FieldErrors::new());
    let failure = RwSignal::new(None::<ApiFailure>);

    let build = move || LeptonJob {
        metadata: Metadata {
            name: Some(name.get_untracked().trim().to_string()),
            ..Default::default()
        },
        spec: JobSpec {
            container: Container {
                image: Some(image.get_untracked().trim().to_string()).filter(|s| !s.is_empty()),
                command: Some(command.get_untracked())
                    .filter(|c| !c.trim().is_empty())
                    .map(|c| vec!["/bin/sh".into(), "-c".into(), c]),
                ..Default::default()
            },
            ..Default::default()
        },
        status: None,
    };

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let job = build();
        let errors = jobdeck_api::validate_job(&job);
        field_errors.set(errors.clone());
        if !errors.is_empty() {
            return;
        }
        let navigate = navigate.clone();
        leptos::task::spawn_local(async move {
            match api::create_job(&job).await {
                Ok(created) => navigate(&routes::job(created.id())),
                Err(ApiFailure::Invalid { fields, .. }) => field_errors.set(fields),
                Err(other) => failure.set(Some(other)),
            }
        });
    };
    let error_for = move |path: &'static str| {
        move || field_errors.with(|f| f.get(path).map(|m| m.join("; ")))
    };

    view! {
        <section class="page narrow">
            <h1>"New job"</h1>
            {move || failure.get().map(failure_view)}
            <form class="card" on:submit=on_submit novalidate>
                <label for="job-name">"Job name"</label>
                <input id="job-name" bind:value=name aria-describedby="job-name-error"/>
                <p id="job-name-error" class="field-error">{error_for("metadata.name")}</p>

                <label for="image">"Container image"</label>
                <input id="image" bind:value=image placeholder="nvcr.io/nvidia/base/ubuntu"/>

                <label for="command">"Command"</label>
                <input id="command" bind:value=command placeholder="echo hello"/>

                <button type="submit" class="primary">"Create"</button>
            </form>
        </section>
    }
}
