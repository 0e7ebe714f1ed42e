//! A job state as a coloured badge that also reads well without colour.

use jobdeck_api::JobState;
use leptos::prelude::*;

/// The CSS class of a state's colour family.
pub fn state_tone(state: JobState) -> &'static str {
    match state {
        JobState::Completed => "ok",
        JobState::Running | JobState::Starting | JobState::Restarting => "active",
        JobState::Failed => "bad",
        JobState::Queueing | JobState::Awaiting | JobState::PendingRetry => "waiting",
        _ => "neutral",
    }
}

#[component]
pub fn StateBadge(#[prop(into)] state: Signal<Option<JobState>>) -> impl IntoView {
    let state = move || state.get().unwrap_or(JobState::Unknown);
    view! {
        <span class=move || format!("badge {}", state_tone(state()))>{move || state().as_str()}</span>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn every_state_has_a_tone() {
        assert_eq!(state_tone(JobState::Failed), "bad");
        assert_eq!(state_tone(JobState::Completed), "ok");
        assert_eq!(state_tone(JobState::Queueing), "waiting");
        for s in JobState::ALL {
            assert!(!state_tone(s).is_empty());
        }
    }
}
