//! How handlers reach the scheduler task: the messages it takes and the
//! handle that sends them, each answered on its own channel.

use super::*;

pub(super) enum Msg {
    Create {
        job: Box<NewJob>,
        by: String,
        reply: oneshot::Sender<SchedulerResult<JobRow>>,
    },
    Command {
        id: String,
        command: Command,
        by: String,
        reply: oneshot::Sender<SchedulerResult<JobRow>>,
    },
    HandOver {
        id: String,
        to: String,
        by: String,
        reply: oneshot::Sender<SchedulerResult<JobRow>>,
    },
    ReplaceSecretRefs {
        id: String,
        envs: Vec<jobdeck_api::EnvVar>,
        by: String,
        reply: oneshot::Sender<SchedulerResult<JobRow>>,
    },
    QuotasChanged {
        reply: oneshot::Sender<SchedulerResult<()>>,
    },
    QueueStanding {
        id: String,
        reply: oneshot::Sender<SchedulerResult<Option<QueueStanding>>>,
    },
    Queue {
        reply: oneshot::Sender<Vec<QueuedJob>>,
    },
    RemoveDueLogs {
        now: i64,
        reply: oneshot::Sender<SchedulerResult<usize>>,
    },
    HoldLogsToBudget {
        reply: oneshot::Sender<SchedulerResult<usize>>,
    },
    MeasureRunningLogs {
        reply: oneshot::Sender<()>,
    },
    SetMinimumRetention {
        minimum_ms: Option<i64>,
        reply: oneshot::Sender<SchedulerResult<crate::retention::LogRetentionRule>>,
    },
}

/// How handlers reach the scheduler; cheap to clone.
#[derive(Clone)]
pub struct SchedulerHandle {
    pub(super) tx: mpsc::UnboundedSender<Msg>,
}

impl SchedulerHandle {
    /// Stores a new job in its first state (queued, or stopped when created
    /// stopped) with its first events, and answers with it as stored.
    pub async fn create(&self, job: NewJob, by: &str) -> SchedulerResult<JobRow> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::Create { job: Box::new(job), by: by.to_string(), reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a creation"))?
    }

    /// Runs a user's command and answers with the job as it is afterwards
    /// (for a delete: as it was when the deletion began).
    pub async fn command(&self, id: &str, command: Command, by: &str) -> SchedulerResult<JobRow> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::Command { id: id.to_string(), command, by: by.to_string(), reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a command"))?
    }

    /// Gives the job `id` the creator `to` (a removed user's job handed to
    /// a teammate by `by`), and answers with it as it is afterwards.
    pub async fn hand_over(&self, id: &str, to: &str, by: &str) -> SchedulerResult<JobRow> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::HandOver { id: id.to_string(), to: to.to_string(), by: by.to_string(), reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a hand-over"))?
    }

    /// Tells the scheduler that an admin changed a quota: it reads them
    /// anew and judges the queue again (a raised quota may admit a job).
    pub async fn quotas_changed(&self) -> SchedulerResult<()> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::QuotasChanged { reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a quota change"))?
    }

    /// Where a queued job stands: its place in the queue and what would let
    /// it start (`standing::queue_standing`); `None` for a job that is not
    /// queued.
    pub async fn queue_standing(&self, id: &str) -> SchedulerResult<Option<QueueStanding>> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::QueueStanding { id: id.to_string(), reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a queue question"))?
    }

    /// Every queued job in the admission order (`queue_view.rs`).
    pub async fn queue(&self) -> SchedulerResult<Vec<QueuedJob>> {
        let (reply, answer) = oneshot::channel();
        self.tx.send(Msg::Queue { reply }).map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a queue question"))
    }
}
