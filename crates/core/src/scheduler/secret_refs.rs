//! Replacing the secrets a job's variables reference while it runs
//! (`PATCH /jobs/{id}` with `spec.envs`, seed 004's "secrets can be
//! updated on a running task"): the job's spec changes, an event says
//! which variables now read which secret, and a running run hands the new
//! values to its next attempts. The handler has checked that nothing but
//! the references changed and that the secrets exist for the creator.

use jobdeck_api::EnvVar;

use super::*;

impl SchedulerHandle {
    /// Gives the job `id` the variables `envs` (its own, with other secret
    /// references), and answers with the job as it is afterwards.
    pub async fn replace_secret_refs(&self, id: &str, envs: Vec<EnvVar>, by: &str) -> SchedulerResult<JobRow> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::ReplaceSecretRefs { id: id.to_string(), envs, by: by.to_string(), reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a change of secrets"))?
    }
}

/// `HF_TOKEN (hf-old → hf-new)` for each variable whose secret changed.
fn changes(before: &[EnvVar], after: &[EnvVar]) -> Vec<String> {
    let secret = |var: &EnvVar| var.value_from.as_ref().and_then(|v| v.secret_name_ref.clone()).unwrap_or_default();
    before
        .iter()
        .zip(after)
        .filter(|(old, new)| old.value_from != new.value_from)
        .map(|(old, new)| format!("{} ({} → {})", new.name, secret(old), secret(new)))
        .collect()
}

impl Scheduler {
    pub(super) async fn replace_secret_refs(
        &mut self,
        id: &str,
        envs: Vec<EnvVar>,
        by: &str,
    ) -> SchedulerResult<JobRow> {
        let mut row = self.current_row(id).await?;
        let changed = changes(row.spec.envs(), &envs);
        if changed.is_empty() {
            return Ok(row);
        }
        row.spec.envs = Some(envs);
        self.store.update_job_spec(row.id.clone(), row.spec.clone()).await?;
        let running = match self.jobs.get_mut(id) {
            Some(active) => {
                active.row.spec = row.spec.clone();
                active.placement().is_some().then_some(active.row.runtime.run)
            }
            None => None,
        };
        // A run going now takes the new values for its next attempts where
        // the executor can hand them over; otherwise the next run reads
        // them, as every run resolves the job's secrets when it starts.
        let taken = match running {
            Some(run) => match self.resolve_env(&row).await? {
                Ok(env) => self.executor.replace_env(id, run, env),
                Err(_) => false,
            },
            None => false,
        };
        let when = if taken { "its next attempts use them" } else { "its next run uses them" };
        let said = format!("secret references replaced by {by}: {}; {when}", changed.join(", "));
        self.store.record_event(event(id, EventType::Normal, "SecretsReplaced", said)).await?;
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::EnvValue;

    fn var(name: &str, secret: Option<&str>, value: Option<&str>) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: value.map(String::from),
            value_from: secret
                .map(|s| EnvValue { secret_name_ref: Some(s.into()), secret_owner: Some("alice".into()) }),
        }
    }

    #[test]
    fn only_the_variables_whose_secret_changed_are_named() {
        let before = [var("A", None, Some("1")), var("HF_TOKEN", Some("hf-old"), None), var("K", Some("k"), None)];
        let after = [var("A", None, Some("1")), var("HF_TOKEN", Some("hf-new"), None), var("K", Some("k"), None)];
        assert_eq!(changes(&before, &after), ["HF_TOKEN (hf-old → hf-new)"]);
        assert!(changes(&before, &before).is_empty());
    }
}
