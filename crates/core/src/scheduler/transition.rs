//! What a user's command does to a job in a given state: a pure table the
//! scheduler consults before it touches anything, so every pair of state and
//! command has one answer that a test can read.

use jobdeck_api::JobState;

/// What a user asks of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Stop,
    Start,
    Delete,
}

/// What the scheduler does for an accepted command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The job holds no resources yet: it becomes Stopped at once.
    StopUnplaced,
    /// The job's run holds resources: it moves to Stopping and the executor
    /// is asked to stop the run.
    BeginStop,
    /// The job is stopping or stopped already; only the user's wish (the
    /// stored "stopped" flag) is recorded.
    RecordStopped,
    /// The job has ended on its own: nothing changes. Stopping it is not an
    /// error, as on Lepton, where `lep job stop-all` stops every job a
    /// filter lists, finished ones included, and would abort on a refusal.
    AlreadyEnded,
    /// A stopped job queues again for a new run.
    Requeue,
    /// The job is already on its way to running; only the user's wish is
    /// recorded (the "stopped" flag is cleared).
    RecordStarted,
    /// The run is stopped first; the job is deleted once its replicas are gone.
    StopThenDelete,
    /// A stop already under way ends in a deletion instead.
    DeleteAfterStop,
    /// A deletion is under way; asking again changes nothing.
    AlreadyDeleting,
    /// Nothing runs: the job is deleted now.
    DeleteNow,
}

/// Why a command is refused; each answers 409 Conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    BeingDeleted,
    StillStopping,
    /// Start of a job that ended in a state other than Stopped.
    NotStopped(JobState),
}

impl Refusal {
    /// The message a user reads, naming the job.
    pub fn message(self, id: &str) -> String {
        match self {
            Refusal::BeingDeleted => format!("job '{id}' is being deleted"),
            Refusal::StillStopping => format!("job '{id}' is still stopping; start it again once it is Stopped"),
            Refusal::NotStopped(state) => {
                format!("job '{id}' has ended ({state}); only a stopped job can be started again")
            }
        }
    }
}

/// Where a new job starts, with the reason and message of its first state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Creation {
    pub state: JobState,
    pub reason: &'static str,
    pub message: String,
}

/// A new job queues for its node groups, unless it was created stopped.
pub fn on_create(stopped: bool, node_groups: &[String]) -> Creation {
    if stopped {
        Creation { state: JobState::Stopped, reason: "Stopped", message: "the job was created stopped".into() }
    } else {
        Creation {
            state: JobState::Queueing,
            reason: "Queued",
            message: format!("waiting for the scheduler in node group(s) {}", node_groups.join(", ")),
        }
    }
}

/// The effect of `command` on a job in `state`, or why it is refused.
pub fn transition(state: JobState, command: Command) -> Result<Effect, Refusal> {
    use JobState as S;
    match command {
        Command::Stop => match state {
            S::Queueing | S::PendingRetry => Ok(Effect::StopUnplaced),
            S::Starting | S::Running => Ok(Effect::BeginStop),
            S::Stopping | S::Stopped => Ok(Effect::RecordStopped),
            S::Deleting => Err(Refusal::BeingDeleted),
            _ => Ok(Effect::AlreadyEnded),
        },
        Command::Start => match state {
            S::Stopped => Ok(Effect::Requeue),
            S::Queueing | S::Starting | S::Running | S::PendingRetry => Ok(Effect::RecordStarted),
            S::Stopping => Err(Refusal::StillStopping),
            S::Deleting => Err(Refusal::BeingDeleted),
            other => Err(Refusal::NotStopped(other)),
        },
        Command::Delete => match state {
            S::Starting | S::Running => Ok(Effect::StopThenDelete),
            S::Stopping => Ok(Effect::DeleteAfterStop),
            S::Deleting => Ok(Effect::AlreadyDeleting),
            _ => Ok(Effect::DeleteNow),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Effect as E;
    use JobState as S;
    use Refusal as R;

    /// Every state with what stop, start and delete do to it.
    #[rustfmt::skip]
    const TABLE: [(JobState, Result<Effect, Refusal>, Result<Effect, Refusal>, Result<Effect, Refusal>); 15] = [
        (S::Queueing,     Ok(E::StopUnplaced),             Ok(E::RecordStarted),               Ok(E::DeleteNow)),
        (S::PendingRetry, Ok(E::StopUnplaced),             Ok(E::RecordStarted),               Ok(E::DeleteNow)),
        (S::Starting,     Ok(E::BeginStop),                Ok(E::RecordStarted),               Ok(E::StopThenDelete)),
        (S::Running,      Ok(E::BeginStop),                Ok(E::RecordStarted),               Ok(E::StopThenDelete)),
        (S::Stopping,     Ok(E::RecordStopped),            Err(R::StillStopping),              Ok(E::DeleteAfterStop)),
        (S::Stopped,      Ok(E::RecordStopped),            Ok(E::Requeue),                     Ok(E::DeleteNow)),
        (S::Deleting,     Err(R::BeingDeleted),            Err(R::BeingDeleted),               Ok(E::AlreadyDeleting)),
        (S::Completed,    Ok(E::AlreadyEnded),             Err(R::NotStopped(S::Completed)), Ok(E::DeleteNow)),
        (S::Failed,       Ok(E::AlreadyEnded),             Err(R::NotStopped(S::Failed)),    Ok(E::DeleteNow)),
        (S::Archived,     Ok(E::AlreadyEnded),             Err(R::NotStopped(S::Archived)),  Ok(E::DeleteNow)),
        (S::Deleted,      Ok(E::AlreadyEnded),             Err(R::NotStopped(S::Deleted)),   Ok(E::DeleteNow)),
        // Lepton's states that Jobdeck never enters: a stored job in one of
        // them can be deleted, and a stop changes nothing.
        (S::Restarting,   Ok(E::AlreadyEnded),             Err(R::NotStopped(S::Restarting)),  Ok(E::DeleteNow)),
        (S::Awaiting,     Ok(E::AlreadyEnded),             Err(R::NotStopped(S::Awaiting)),    Ok(E::DeleteNow)),
        (S::Terminating,  Ok(E::AlreadyEnded),             Err(R::NotStopped(S::Terminating)), Ok(E::DeleteNow)),
        (S::Unknown,      Ok(E::AlreadyEnded),             Err(R::NotStopped(S::Unknown)),     Ok(E::DeleteNow)),
    ];

    #[test]
    fn every_state_and_command_has_the_effect_in_the_table() {
        for (state, stop, start, delete) in TABLE {
            assert_eq!(transition(state, Command::Stop), stop, "stop {state}");
            assert_eq!(transition(state, Command::Start), start, "start {state}");
            assert_eq!(transition(state, Command::Delete), delete, "delete {state}");
        }
        let listed: Vec<JobState> = TABLE.iter().map(|row| row.0).collect();
        for state in JobState::ALL {
            assert!(listed.contains(&state), "the table has no row for {state}");
        }
    }

    #[test]
    fn a_new_job_queues_for_its_groups_unless_created_stopped() {
        let groups = ["gpu-a".to_string(), "gpu-b".to_string()];
        let queued = on_create(false, &groups);
        assert_eq!((queued.state, queued.reason), (S::Queueing, "Queued"));
        assert!(queued.message.ends_with("node group(s) gpu-a, gpu-b"), "{}", queued.message);
        let stopped = on_create(true, &groups);
        assert_eq!((stopped.state, stopped.reason), (S::Stopped, "Stopped"));
    }

    #[test]
    fn refusals_name_the_job_and_its_state() {
        assert_eq!(
            Refusal::NotStopped(S::Completed).message("train-ab12"),
            "job 'train-ab12' has ended (Completed); only a stopped job can be started again"
        );
        assert!(Refusal::NotStopped(S::Failed).message("x").contains("(Failed)"));
    }
}
