//! The condition watch: finds the conditions of running jobs that rules ask
//! about (`gpu_idle`, `memory_near_limit`, `log_match`) and leaves each one
//! met for the notifier, once per rule and run of the job.
//!
//! Every `[notifications] watch_interval` it reads the rules that name a
//! condition (one query; with none it reads nothing more) and the running
//! jobs, and checks each job a rule covers: its GPUs' idle time and its
//! replicas' memory from the samples the executor last took
//! ([`metrics::Now`], so only where the executor samples: the local
//! executor, not Slurm or Kubernetes), and the new lines of its current
//! run's logs against the rule's pattern. A rule scans each replica's log
//! from where its last round stopped, at most [`SCAN_LINES_PER_ROUND`]
//! lines a round, so a large backlog never holds a round long; a job that
//! the change feed says changed since the last round and no longer runs
//! gets one last pass, so a line written just before it ended (or by a run
//! shorter than a round) is still seen. A condition met is written
//! with [`Store::record_condition`], which keeps it once per rule, job and
//! run across restarts; after a restart the scans start again from each
//! log's first line and find the same lines already heard of.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use jobdeck_api::metrics::GPU_IDLE_PERCENT;
use jobdeck_api::{replica_id, JobState, NotifyOn, GPU_IDLE_MINUTES_DEFAULT, MEMORY_PERCENT_DEFAULT};
use jobdeck_core::{metrics, Config};
use jobdeck_store::changes::{Change, Since};
use jobdeck_store::logs::LogStore;
use jobdeck_store::{ConditionMet, JobRow, NotificationRow, ReplicaRow, Store, StoreResult};
use regex::bytes::Regex;
use tokio::sync::Notify;

/// Lines one rule reads of one replica's log in one round.
pub const SCAN_LINES_PER_ROUND: u64 = 1_000_000;
/// The most of a matching line a notification quotes, in characters.
const QUOTE_MAX_CHARS: usize = 300;
/// The most memory a compiled pattern may take: a pattern such as
/// `\w{1000}{1000}` is refused rather than built.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// A rule's `log_pattern` compiled, or why it cannot be: what
/// `POST /notifications` checks and the watch uses, one rule for both.
pub fn compile_log_pattern(pattern: &str) -> Result<Regex, String> {
    regex::bytes::RegexBuilder::new(pattern)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("not a regular expression this server accepts: {e}"))
}

/// Starts the watch's task; `met` is told of each condition newly met.
pub fn spawn(store: Store, logs: LogStore, samples: metrics::Now, config: Arc<Config>, met: Arc<Notify>) {
    tokio::spawn(async move {
        let interval = config.notifications.watch_interval;
        let mut watch = Watch::new(store, logs, samples, config, met);
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(e) = watch.round(jobdeck_store::now_millis()).await {
                tracing::warn!(error = %jobdeck_core::error_chain(&e), "notifications: cannot watch for conditions");
            }
        }
    });
}

/// One replica attempt's log, read for one rule.
type ScanKey = (i64, String, i64, i64);

pub struct Watch {
    store: Store,
    logs: LogStore,
    samples: metrics::Now,
    config: Arc<Config>,
    met: Arc<Notify>,
    /// The line each rule's scan of each replica attempt's log goes on from.
    next_line: HashMap<ScanKey, u64>,
    /// Each rule's compiled pattern, with the text it was compiled from;
    /// `None` for a pattern that no longer compiles (a server upgrade).
    patterns: HashMap<i64, (String, Option<Regex>)>,
    /// (rule, job, run, condition) already written: no write per round.
    heard: HashSet<(i64, String, i64, NotifyOn)>,
    /// How far the change feed was read: the jobs changed since are
    /// looked at once more, running or not.
    cursor: u64,
}

impl Watch {
    pub fn new(store: Store, logs: LogStore, samples: metrics::Now, config: Arc<Config>, met: Arc<Notify>) -> Watch {
        Watch {
            cursor: store.changes().newest(),
            store,
            logs,
            samples,
            config,
            met,
            next_line: HashMap::new(),
            patterns: HashMap::new(),
            heard: HashSet::new(),
        }
    }

    /// One look at every job a condition rule covers, at `now` (Unix ms).
    pub async fn round(&mut self, now: i64) -> StoreResult<()> {
        let changed = self.jobs_changed();
        let rules = self.store.condition_rules().await?;
        if rules.is_empty() {
            self.next_line.clear();
            self.patterns.clear();
            self.heard.clear();
            return Ok(());
        }
        let mut jobs: Vec<(JobRow, bool)> =
            self.store.jobs_in_state(JobState::Running).await?.into_iter().map(|job| (job, true)).collect();
        let watches_logs = rules.iter().any(|rule| rule.on.contains(&NotifyOn::LogMatch));
        for id in changed.into_iter().filter(|_| watches_logs) {
            if !jobs.iter().any(|(job, _)| job.id == id) {
                if let Some(job) = self.store.job(id).await? {
                    jobs.push((job, false));
                }
            }
        }
        let mut attempts: HashMap<String, Vec<ReplicaRow>> = HashMap::new();
        for rule in &rules {
            for (job, running) in jobs.iter().filter(|(job, _)| covers(rule, job)) {
                for on in rule.on.iter().copied().filter(|on| on.is_condition()) {
                    let heard = (rule.id, job.id.clone(), job.runtime.run, on);
                    if self.heard.contains(&heard) {
                        continue;
                    }
                    let met = match on {
                        NotifyOn::GpuIdle if *running => self.gpu_idle(rule, job, now),
                        NotifyOn::MemoryNearLimit if *running => self.memory_near_limit(rule, job, now),
                        NotifyOn::LogMatch => {
                            if !attempts.contains_key(&job.id) {
                                let of_run = self.store.replicas_of(job.id.clone()).await?;
                                let of_run = of_run.into_iter().filter(|a| a.run == job.runtime.run).collect();
                                attempts.insert(job.id.clone(), of_run);
                            }
                            self.log_match(rule, job, &attempts[&job.id], now).await
                        }
                        _ => None,
                    };
                    if let Some(met) = met {
                        if self.store.record_condition(met).await? {
                            self.met.notify_one();
                        }
                        self.heard.insert(heard);
                    }
                }
            }
        }
        // What is kept is only about rules and jobs still watched.
        let rule_ids: HashSet<i64> = rules.iter().map(|r| r.id).collect();
        let job_ids: HashSet<&str> = jobs.iter().filter(|(_, running)| *running).map(|(j, _)| j.id.as_str()).collect();
        self.next_line.retain(|(rule, job, _, _), _| rule_ids.contains(rule) && job_ids.contains(job.as_str()));
        self.heard.retain(|(rule, job, _, _)| rule_ids.contains(rule) && job_ids.contains(job.as_str()));
        self.patterns.retain(|rule, _| rule_ids.contains(rule));
        Ok(())
    }

    /// The jobs whose record or replicas changed since the last round;
    /// none when the feed moved on past what it keeps.
    fn jobs_changed(&mut self) -> HashSet<String> {
        let feed = self.store.changes();
        match feed.since(self.cursor) {
            Since::Changes(changes) => {
                self.cursor = changes.last().map_or(self.cursor, |(number, _)| *number);
                let about_a_job = changes.into_iter().filter_map(|(_, change)| match change {
                    Change::Job(id) | Change::Replicas(id) => Some(id),
                    _ => None,
                });
                about_a_job.collect()
            }
            Since::Missed => {
                self.cursor = feed.newest();
                HashSet::new()
            }
        }
    }

    /// How recent a sample must be to count: a job whose sampling stopped
    /// is not idle, it is unknown.
    fn sample_max_age_ms(&self) -> i64 {
        let interval = self.config.executor.local.metrics_interval_ms as i64;
        (3 * interval).max(Duration::from_secs(30).as_millis() as i64)
    }

    fn gpu_idle(&self, rule: &NotificationRow, job: &JobRow, now: i64) -> Option<ConditionMet> {
        let minutes = rule.gpu_idle_minutes.unwrap_or(GPU_IDLE_MINUTES_DEFAULT);
        let idle_ms = self.samples.gpu_idle_for(&job.id, now, self.sample_max_age_ms())?;
        (idle_ms >= i64::from(minutes) * 60_000).then(|| ConditionMet {
            rule_id: rule.id,
            job_id: job.id.clone(),
            run: job.runtime.run,
            event: NotifyOn::GpuIdle,
            message: format!("every GPU of the job has been under {GPU_IDLE_PERCENT} % for {minutes} minutes"),
            replica: None,
            line: None,
            time: now,
        })
    }

    fn memory_near_limit(&self, rule: &NotificationRow, job: &JobRow, now: i64) -> Option<ConditionMet> {
        let limit_mib = self.config.shape_of(&job.spec).map(|shape| shape.memory_mb).filter(|m| *m > 0)?;
        let most = self.samples.memory_most(&job.id, now, self.sample_max_age_ms())?;
        let percent = rule.memory_percent.unwrap_or(MEMORY_PERCENT_DEFAULT);
        let used_mib = most.bytes / f64::from(1 << 20);
        (used_mib * 100.0 >= f64::from(percent) * limit_mib as f64).then(|| {
            let replica = replica_id(&job.id, most.completion_index, most.attempt);
            ConditionMet {
                rule_id: rule.id,
                job_id: job.id.clone(),
                run: job.runtime.run,
                event: NotifyOn::MemoryNearLimit,
                message: format!(
                    "replica {replica} uses {used_mib:.0} MiB of its {limit_mib} MiB memory limit \
                     ({:.0} %, the rule's mark is {percent} %)",
                    used_mib * 100.0 / limit_mib as f64
                ),
                replica: Some(replica),
                line: None,
                time: now,
            }
        })
    }

    /// Reads the new lines of each attempt of the job's run for the rule's
    /// pattern; the first match found.
    async fn log_match(
        &mut self,
        rule: &NotificationRow,
        job: &JobRow,
        attempts: &[ReplicaRow],
        now: i64,
    ) -> Option<ConditionMet> {
        let pattern = self.pattern(rule)?;
        for attempt in attempts {
            let key = (rule.id, job.id.clone(), attempt.completion_index, attempt.attempt);
            let from = self.next_line.get(&key).copied().unwrap_or(1);
            let (logs, pattern) = (self.logs.clone(), pattern.clone());
            let (job_id, index, number) = (job.id.clone(), attempt.completion_index, attempt.attempt);
            let scanned = tokio::task::spawn_blocking(move || scan(&logs, &job_id, index, number, from, &pattern));
            let (next, found) = match scanned.await {
                Ok(Ok(scanned)) => scanned,
                Ok(Err(e)) => {
                    tracing::warn!(job = %job.id, error = %e, "notifications: cannot read a log for a rule's pattern");
                    continue;
                }
                Err(_) => continue,
            };
            self.next_line.insert(key, next);
            if let Some((line, text)) = found {
                let replica = replica_id(&job.id, attempt.completion_index, attempt.attempt);
                let quoted: String = text.chars().take(QUOTE_MAX_CHARS).collect();
                let cut = if quoted.len() < text.len() { "…" } else { "" };
                return Some(ConditionMet {
                    rule_id: rule.id,
                    job_id: job.id.clone(),
                    run: job.runtime.run,
                    event: NotifyOn::LogMatch,
                    message: format!("line {line} of replica {replica} matches the rule's pattern: {quoted}{cut}"),
                    replica: Some(replica),
                    line: Some(line),
                    time: now,
                });
            }
        }
        None
    }

    /// The rule's pattern, compiled once while the rule's text stays.
    fn pattern(&mut self, rule: &NotificationRow) -> Option<Arc<Regex>> {
        let text = rule.log_pattern.as_deref()?;
        let current = self.patterns.get(&rule.id).is_some_and(|(kept, _)| kept == text);
        if !current {
            let compiled = compile_log_pattern(text);
            if let Err(why) = &compiled {
                tracing::warn!(rule = rule.id, "notifications: a rule's log pattern cannot be used: {why}");
            }
            self.patterns.insert(rule.id, (text.to_string(), compiled.ok()));
        }
        self.patterns.get(&rule.id).and_then(|(_, regex)| regex.clone().map(Arc::new))
    }
}

/// Whether a rule is about a job: its own job, or every job of its owner.
fn covers(rule: &NotificationRow, job: &JobRow) -> bool {
    match &rule.job_id {
        Some(id) => *id == job.id,
        None => job.created_by == rule.owner,
    }
}

/// Reads an attempt's log from line `from` for `pattern`, at most
/// [`SCAN_LINES_PER_ROUND`] lines; the line to go on from and the first
/// match (its number and text).
pub fn scan(
    logs: &LogStore,
    job_id: &str,
    completion_index: i64,
    attempt: i64,
    from: u64,
    pattern: &Regex,
) -> std::io::Result<(u64, Option<(u64, String)>)> {
    let Some(mut reader) = logs.open(job_id, completion_index, attempt)? else { return Ok((from, None)) };
    let mut next = from;
    let mut found = None;
    reader.visit(from, |number, _, _, text| {
        next = number + 1;
        if pattern.is_match(text) {
            found = Some((number, String::from_utf8_lossy(text).into_owned()));
            return ControlFlow::Break(());
        }
        if next - from >= SCAN_LINES_PER_ROUND {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    Ok((next, found))
}
