//! The deployments list (`/jobs`).

use jobdeck_api::{JobList, LeptonJob};
use leptos::prelude::*;

use crate::api;
use crate::components::api_error::ApiErrorView;
use crate::components::state_badge::StateBadge;
use crate::components::time::format_time;
use crate::router::use_url;
use crate::routes;
use crate::session::require_sign_in;

#[component]
pub fn JobsListPage() -> impl IntoView {
    let signed_in = require_sign_in();
    let url = use_url();
    let jobs = LocalResource::new(move || {
        let query = url.with(|u| u.query.clone());
        async move {
            if !signed_in {
                return Err(api::ApiFailure::Unauthorized);
            }
            api::list_jobs(&query).await
        }
    });

    view! {
        <section class="page">
            <div class="page-head">
                <h1>"Deployments"</h1>
                <a href=routes::NEW_JOB class="button primary">"New job"</a>
            </div>
            <Transition fallback=|| view! { <p class="loading" aria-busy="true">"Loading jobs…"</p> }>
                <ErrorBoundary fallback=|errors| view! { <ApiErrorView errors/> }>
                    {move || Suspend::new(async move { jobs.await.map(|list| view! { <JobsTable list/> }) })}
                </ErrorBoundary>
            </Transition>
        </section>
    }
}

#[component]
fn JobsTable(list: JobList) -> impl IntoView {
    if list.jobs.is_empty() {
        return view! {
            <div class="empty">
                <p>"No jobs yet."</p>
                <p>
                    "Deploy one with " <a href=routes::NEW_JOB>"New job"</a>
                    ", or from a terminal with " <code>"lep job create"</code> "."
                </p>
            </div>
        }
        .into_any();
    }
    let shown = list.jobs.len();
    view! {
        <table class="jobs">
            <thead>
                <tr>
                    <th scope="col">"Name"</th>
                    <th scope="col">"State"</th>
                    <th scope="col">"Owner"</th>
                    <th scope="col">"Image"</th>
                    <th scope="col">"Created"</th>
                </tr>
            </thead>
            <tbody>
                {list.jobs.into_iter().map(|job| view! { <JobRow job/> }).collect_view()}
            </tbody>
        </table>
        <p class="count">{format!("{shown} of {} jobs", list.total)}</p>
    }
    .into_any()
}

#[component]
fn JobRow(job: LeptonJob) -> impl IntoView {
    let id = job.id().to_string();
    let name = job.metadata.name.clone().unwrap_or_else(|| id.clone());
    let state = job.state();
    let owner = job.metadata.created_by.clone().unwrap_or_default();
    let image = job.spec.container.image.clone().unwrap_or_default();
    let created = job.metadata.created_at.map(format_time).unwrap_or_default();
    view! {
        <tr>
            <td><a href=routes::job(&id)>{name}</a></td>
            <td><StateBadge state=Signal::stored(state)/></td>
            <td>{owner}</td>
            <td class="mono">{image}</td>
            <td>{created}</td>
        </tr>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::{JobState, JobStatus, Metadata};
    use wasm_bindgen::JsCast;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn mount(list: JobList) -> web_sys::HtmlElement {
        let document = web_sys::window().unwrap().document().unwrap();
        let host: web_sys::HtmlElement = document.create_element("div").unwrap().unchecked_into();
        document.body().unwrap().append_child(&host).unwrap();
        let handle = leptos::mount::mount_to(host.clone(), move || {
            view! { <JobsTable list=list.clone()/> }
        });
        handle.forget();
        host
    }

    #[wasm_bindgen_test]
    fn an_empty_list_says_how_to_create_a_job() {
        let host = mount(JobList::default());
        let text = host.text_content().unwrap();
        assert!(text.contains("No jobs yet."), "{text}");
        assert!(host.query_selector("table").unwrap().is_none());
    }

    #[wasm_bindgen_test]
    fn each_job_is_a_row_linking_to_its_page() {
        let job = LeptonJob {
            metadata: Metadata {
                id: Some("train-ab12c".into()),
                name: Some("train".into()),
                created_by: Some("alice".into()),
                ..Default::default()
            },
            status: Some(JobStatus { state: Some(JobState::Failed), ..Default::default() }),
            ..Default::default()
        };
        let host = mount(JobList { jobs: vec![job], total: 7, page: 1, page_size: 50 });
        let link = host.query_selector("tbody tr td a").unwrap().expect("a link in the row");
        assert_eq!(link.get_attribute("href").as_deref(), Some("/jobs/train-ab12c"));
        assert_eq!(link.text_content().as_deref(), Some("train"));
        let badge = host.query_selector(".badge").unwrap().unwrap();
        assert_eq!(badge.text_content().as_deref(), Some("Failed"));
        assert_eq!(badge.class_name(), "badge bad");
        assert!(host.text_content().unwrap().contains("1 of 7 jobs"));
    }
}
