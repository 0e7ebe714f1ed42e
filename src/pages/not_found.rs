//! The page for a path that matches no route.

use leptos::prelude::*;

use crate::routes;

#[component]
pub fn NotFoundPage() -> impl IntoView {
    view! {
        <section class="page narrow">
            <h1>"Page not found"</h1>
            <p>"Nothing lives at this address."</p>
            <p><a href=routes::JOBS>"Go to the deployments list"</a></p>
        </section>
    }
}
