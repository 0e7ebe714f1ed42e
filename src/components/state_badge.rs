//! A job state as a coloured badge that also reads well without colour.

use jobdeck_api::{EndReason, JobState, ReplicaPhase, ReplicaStatus};
use leptos::prelude::*;

/// The CSS class of a state's colour family (a badge is `badge <tone>`).
pub fn state_tone(state: JobState) -> &'static str {
    match state {
        JobState::Completed => "ok",
        JobState::Running | JobState::Starting | JobState::Restarting => "active",
        JobState::Failed => "bad",
        JobState::Queueing | JobState::Awaiting | JobState::PendingRetry => "waiting",
        _ => "neutral",
    }
}

/// How one replica attempt stands or ended, as (colour family, word). A
/// preempted or stopped attempt did not fail on its own, so it is told apart
/// from a failure.
pub fn replica_outcome(status: &ReplicaStatus) -> (&'static str, &'static str) {
    match status.phase {
        ReplicaPhase::Pending => ("waiting", "Pending"),
        ReplicaPhase::Running => ("active", "Running"),
        ReplicaPhase::Succeeded => ("ok", "Succeeded"),
        ReplicaPhase::Failed => match status.reason.as_deref().map(EndReason::parse) {
            Some(EndReason::Preempted) => ("waiting", "Preempted"),
            Some(EndReason::Stopped) => ("neutral", "Stopped"),
            _ => ("bad", "Failed"),
        },
    }
}

/// A replica attempt's outcome as a badge.
#[component]
pub fn ReplicaBadge(#[prop(into)] status: Signal<ReplicaStatus>) -> impl IntoView {
    let outcome = Memo::new(move |_| status.with(replica_outcome));
    view! {
        <span class=move || format!("badge {}", outcome.get().0)>{move || outcome.get().1}</span>
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

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn replica_outcomes() {
        let status = |phase, reason: Option<&str>| ReplicaStatus {
            reason: reason.map(String::from),
            ..crate::fixtures::replica(0, 0, phase, None, None).status
        };
        let table = [
            (ReplicaPhase::Pending, None, ("waiting", "Pending")),
            (ReplicaPhase::Running, None, ("active", "Running")),
            (ReplicaPhase::Succeeded, Some("Completed"), ("ok", "Succeeded")),
            (ReplicaPhase::Failed, Some("Error"), ("bad", "Failed")),
            (ReplicaPhase::Failed, Some("OOMKilled"), ("bad", "Failed")),
            (ReplicaPhase::Failed, Some("Preempted"), ("waiting", "Preempted")),
            (ReplicaPhase::Failed, Some("Stopped"), ("neutral", "Stopped")),
        ];
        for (phase, reason, expected) in table {
            assert_eq!(replica_outcome(&status(phase, reason)), expected, "{phase:?} {reason:?}");
        }
    }
}
