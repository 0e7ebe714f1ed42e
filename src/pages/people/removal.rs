//! Removing a user from the people page: what it touches, read from the
//! server first (their jobs that will stop, their secrets that will go,
//! and other users' jobs that read one of those), then the removal once
//! the admin confirms, with their running jobs stopped or handed to a
//! member or admin the admin picks.

use jobdeck_api::{Role, UserInfo, UserRemoval};
use leptos::prelude::*;

use crate::api::people::{removal, remove_user};

/// The sentences that say what removing the user does.
pub fn consequences(removal: &UserRemoval) -> Vec<String> {
    let mut said = Vec::new();
    let jobs: Vec<String> = removal.active_jobs.iter().map(|j| format!("{} ({})", j.name, j.state)).collect();
    if !jobs.is_empty() {
        said.push(format!("Their running jobs: {}.", jobs.join(", ")));
    }
    let secrets: Vec<&str> = removal.secrets.iter().chain(&removal.image_pull_secrets).map(String::as_str).collect();
    if !secrets.is_empty() {
        said.push(format!("Deletes their secrets: {}.", secrets.join(", ")));
    }
    for used in &removal.secret_uses {
        said.push(format!(
            "{}'s job {} reads their secret {} and will not start again without it.",
            used.job.created_by, used.job.name, used.secret
        ));
    }
    said.push("Revokes every token and console session of theirs at once. Their name stays theirs.".into());
    said
}

/// The Remove button of a user's row, and the confirmation it opens.
#[component]
pub fn RemoveUser(
    name: String,
    problem: RwSignal<Option<String>>,
    list: RwSignal<Option<Vec<UserInfo>>>,
) -> impl IntoView {
    let name = StoredValue::new(name);
    let asked = RwSignal::new(None::<UserRemoval>);
    // Who gets their running jobs; empty: they stop.
    let heir = RwSignal::new(String::new());
    let ask = move |_| {
        leptos::task::spawn_local(async move {
            match removal(&name.get_value()).await {
                Ok(said) => asked.set(Some(said)),
                Err(failure) => problem.set(Some(failure.to_string())),
            }
        });
    };
    let confirm = move |_| {
        leptos::task::spawn_local(async move {
            let heir = heir.get_untracked();
            match remove_user(&name.get_value(), Some(heir.as_str()).filter(|h| !h.is_empty())).await {
                Ok(removed) => {
                    asked.set(None);
                    list.update(|users| users.iter_mut().for_each(|u| u.retain(|user| user.name != removed.name)));
                }
                Err(failure) => problem.set(Some(failure.to_string())),
            }
        });
    };
    view! {
        <button type="button" class="danger remove-user" on:click=ask>"Remove"</button>
        {move || {
            asked.get().map(|said| {
                let lines = consequences(&said).into_iter().map(|line| view! { <li>{line}</li> }).collect_view();
                // Members and admins other than the one removed may take
                // the running jobs over.
                let heirs: Vec<String> = list.with(|users| {
                    users.iter().flatten().filter(|u| u.name != said.name && u.role >= Role::Member).map(|u| u.name.clone()).collect()
                });
                let choice = (!said.active_jobs.is_empty()).then(|| {
                    view! {
                        <label class="filter">
                            "Their running jobs"
                            <select class="heir" bind:value=heir>
                                <option value="">"stop"</option>
                                {heirs.into_iter().map(|h| view! { <option value=h.clone()>{format!("go to {h}")}</option> }).collect_view()}
                            </select>
                        </label>
                    }
                });
                view! {
                    <div class="card removal" role="alertdialog" aria-label=format!("Remove {}", said.name)>
                        <p><strong>{format!("Remove {}?", said.name)}</strong></p>
                        <ul>{lines}</ul>
                        {choice}
                        <p class="dialog-buttons">
                            <button type="button" on:click=move |_| asked.set(None)>"Cancel"</button>
                            <button type="button" class="danger confirm-removal" on:click=confirm>
                                {format!("Remove {}", said.name)}
                            </button>
                        </p>
                    </div>
                }
            })
        }}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::{JobBrief, JobState, SecretUse};

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_removal_says_what_stops_what_goes_and_whose_jobs_lose_a_secret() {
        let job = |id: &str, by: &str| JobBrief {
            id: id.into(),
            name: id.into(),
            created_by: by.into(),
            state: JobState::Running,
        };
        let removal = UserRemoval {
            name: "bob".into(),
            active_jobs: vec![job("train", "bob")],
            secrets: vec!["HF".into()],
            image_pull_secrets: vec!["ngc".into()],
            secret_uses: vec![SecretUse { secret: "HF".into(), job: job("eval", "ann") }],
        };
        let said = consequences(&removal);
        assert_eq!(said[0], "Their running jobs: train (Running).");
        assert_eq!(said[1], "Deletes their secrets: HF, ngc.");
        assert_eq!(said[2], "ann's job eval reads their secret HF and will not start again without it.");
        assert!(said[3].starts_with("Revokes every token"));
    }
}
