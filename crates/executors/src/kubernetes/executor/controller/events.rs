//! Kubernetes events about a run's Job and pods: recorded as the job's
//! events (repetitions folded), replayed for recovered runs, and read for
//! the image pulls a pending replica waits on.

use super::*;

impl ClusterController {
    /// Takes in what one events watch (of Job or of pod events) reports.
    pub(super) async fn on_events(&mut self, kind: &str, change: Change<Event>) {
        let now = jobdeck_store::now_millis();
        let events = match change {
            Change::Listed(events) => {
                // A list replaces what this watch reported before, not
                // what the other one did.
                self.events.retain(|_, (e, _)| e.involved_object.kind.as_deref() != Some(kind));
                for event in &events {
                    self.events.insert(event_key(event), (event.clone(), now));
                }
                // Repetition counts are kept while their event may come
                // again; an event in neither list is gone from Kubernetes.
                let events_now = &self.events;
                self.event_counts.retain(|key, _| events_now.contains_key(key));
                events
            }
            Change::Applied(event) => {
                self.events.insert(event_key(&event), (event.clone(), now));
                vec![event]
            }
            Change::Deleted(event) => {
                // Kubernetes deleted it (events live about an hour): no
                // repetition of it can come any more.
                let key = event_key(&event);
                self.events.remove(&key);
                self.event_counts.remove(&key);
                return;
            }
        };
        for event in events {
            self.on_event(&event).await;
        }
    }

    /// Drops cached events about objects that are not Jobdeck's (other
    /// workloads of the namespace), once an event has had time to be
    /// matched with an object that arrived after it. Jobdeck's objects are
    /// the Jobs and pods its label-selected watches see, and those of the
    /// runs it follows (a deleted pod's events stay while its run is
    /// followed, so a new list of events does not record them twice).
    pub(super) fn prune_events(&mut self, now: i64) {
        use std::collections::HashSet;
        let mut pod_uids: HashSet<&str> = self.pods.keys().map(String::as_str).collect();
        let mut pod_names: HashSet<&str> = self.pods.values().filter_map(|p| p.metadata.name.as_deref()).collect();
        for state in self.runs.values() {
            pod_uids.extend(state.tracked.keys().map(String::as_str));
            pod_names.extend(state.tracked.values().map(|t| t.pod_name.as_str()));
        }
        let managed = |event: &Event| {
            let involved = &event.involved_object;
            match involved.kind.as_deref() {
                Some("Job") => involved
                    .name
                    .as_ref()
                    .is_some_and(|name| self.jobs.contains_key(name) || self.runs.contains_key(name)),
                Some("Pod") => {
                    involved.uid.as_deref().is_some_and(|uid| pod_uids.contains(uid))
                        || involved.name.as_deref().is_some_and(|name| pod_names.contains(name))
                }
                _ => false,
            }
        };
        let grace = EVENT_GRACE.as_millis() as i64;
        let stale: Vec<String> = self
            .events
            .iter()
            .filter(|(_, (event, arrived))| now - arrived >= grace && !managed(event))
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            self.events.remove(&key);
            self.event_counts.remove(&key);
        }
    }

    /// Records the cached events about a pod that was just given an attempt
    /// number: an event can arrive before the watch of pods delivers its pod.
    pub(super) async fn replay_pod_events(&mut self, uid: &str, name: &str) {
        let mut events: Vec<Event> = self
            .events
            .values()
            .map(|(e, _)| e)
            .filter(|e| {
                e.involved_object.kind.as_deref() == Some("Pod")
                    && (e.involved_object.uid.as_deref() == Some(uid)
                        || e.involved_object.name.as_deref() == Some(name))
            })
            .cloned()
            .collect();
        events.sort_by_key(status::event_order);
        for event in events {
            self.on_event(&event).await;
        }
    }

    /// Records a Kubernetes event about a run's Job or one of its pods.
    pub(super) async fn on_event(&mut self, event: &Event) {
        let involved = &event.involved_object;
        let (Some(kind), Some(name)) = (involved.kind.as_deref(), involved.name.as_deref()) else {
            return;
        };
        let (job_id, replica) = match kind {
            "Job" => {
                let Some(state) = self.runs.get(name) else {
                    return;
                };
                if involved.uid.is_some() && state.job_uid.is_some() && involved.uid != state.job_uid {
                    return;
                }
                (name.to_string(), None)
            }
            "Pod" => {
                let tracked = self.runs.values().find_map(|state| {
                    state
                        .tracked
                        .iter()
                        .find(|(uid, t)| Some(uid.as_str()) == involved.uid.as_deref() || t.pod_name == name)
                        .map(|(uid, t)| (state.job_id.clone(), uid.clone(), state.replica_id(t)))
                });
                match tracked {
                    Some((job_id, uid, replica)) => {
                        self.note_image_pull(&job_id, &uid, event.reason.as_deref()).await;
                        (job_id, Some(replica))
                    }
                    None => return,
                }
            }
            _ => return,
        };
        let Some(state) = self.runs.get(&job_id) else {
            return;
        };
        let translated = status::job_event(event, |_| replica.clone());
        let observed = translated
            .last_observed_time
            .parse::<k8s_openapi::jiff::Timestamp>()
            .map(|t| t.as_millisecond())
            .unwrap_or(i64::MAX);
        // A minute of slack for a cluster clock behind Jobdeck's.
        if observed < state.since_ms.saturating_sub(60_000) {
            return;
        }
        let uid = event_key(event);
        let seen = self.event_counts.get(&uid).copied().unwrap_or(0);
        if translated.count <= seen {
            return;
        }
        self.event_counts.insert(uid, translated.count);
        let repeats = (translated.count - seen).min(MAX_EVENT_REPEATS);
        let kind = translated.kind;
        for _ in 0..repeats {
            let result = self
                .shared
                .host
                .event(ExecutorEvent {
                    job_id: job_id.clone(),
                    kind,
                    reason: translated.reason.clone(),
                    message: translated.message.clone(),
                    regarding_replica: replica.clone(),
                })
                .await;
            if let Err(e) = result {
                tracing::warn!("kubernetes: cannot record an event of {job_id}: {e:?}");
                break;
            }
        }
    }
}

impl ClusterController {
    /// Follows the kubelet's image pull of a tracked pod from its events and
    /// reports a pending replica's readiness as "Pulling image" meanwhile.
    pub(super) async fn note_image_pull(&mut self, job_id: &str, uid: &str, reason: Option<&str>) {
        let pulling = match reason {
            Some("Pulling") => true,
            Some("Pulled" | "Failed" | "BackOff" | "ErrImageNeverPull" | "InspectFailed") => false,
            _ => return,
        };
        let Some(state) = self.runs.get_mut(job_id) else { return };
        let (run, node_group) = (state.run, state.node_group.clone());
        let Some(tracked) = state.tracked.get_mut(uid) else { return };
        if tracked.pulling == pulling || tracked.finished {
            return;
        }
        tracked.pulling = pulling;
        let Some(attempt) = tracked.last.clone() else { return };
        let observation = observation(job_id, run, &node_group, tracked, &attempt);
        if tracked.reported.as_ref() != Some(&observation) {
            tracked.reported = Some(observation.clone());
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::warn!("kubernetes: cannot record replica of {job_id}: {e:?}");
            }
        }
    }
}

/// What identifies a Kubernetes event across its repetitions.
pub(super) fn event_key(event: &Event) -> String {
    event.metadata.uid.clone().or_else(|| event.metadata.name.clone()).unwrap_or_default()
}
