//! The audit log: who did what, when and from where, appended and never
//! changed (a trigger refuses updates); entries older than the retention
//! are deleted whole.

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter};

use super::error::StoreResult;
use super::Store;

/// One entry to append.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuditRecord {
    /// Unix ms.
    pub time: i64,
    /// The user's name; empty for someone not signed in.
    pub actor: String,
    /// What was done (`job.create`, `sign_in.failed`, …).
    pub action: String,
    /// What it was done to (a job id, a user's name); may be empty.
    pub target: String,
    /// `ok` or `refused`.
    pub outcome: String,
    /// A sentence: the refusal's status and reason, a role given, …
    pub detail: String,
    /// Where the request came from (the peer's address), or `cli`.
    pub source: String,
}

/// An appended entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    pub id: i64,
    pub record: AuditRecord,
}

/// Which entries to read: each set field must match (an action ending in
/// `.` matches every action it starts: `job.`), newest first, before the
/// entry `before` when set.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub actor: Option<String>,
    pub action: Option<String>,
    pub target: Option<String>,
    pub outcome: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub before: Option<i64>,
    pub limit: i64,
}

impl Store {
    /// Appends entries, in order, in one transaction.
    pub async fn record_audit(&self, records: Vec<AuditRecord>) -> StoreResult<()> {
        self.write(move |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO audit_log (time, actor, action, target, outcome, detail, source)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for r in &records {
                insert.execute(params![r.time, r.actor, r.action, r.target, r.outcome, r.detail, r.source])?;
            }
            Ok(())
        })
        .await
    }

    /// The entries `filter` asks for, newest first.
    pub async fn audit(&self, filter: AuditFilter) -> StoreResult<Vec<AuditRow>> {
        self.read(move |conn| {
            let mut clauses = Vec::new();
            let mut values: Vec<Value> = Vec::new();
            let mut when = |clause: &str, value: Value| {
                values.push(value);
                clauses.push(clause.replace('?', &format!("?{}", values.len())));
            };
            if let Some(actor) = filter.actor {
                when("actor = ?", actor.into());
            }
            match filter.action {
                Some(prefix) if prefix.ends_with('.') => when("substr(action, 1, length(?)) = ?", prefix.into()),
                Some(action) => when("action = ?", action.into()),
                None => {}
            }
            if let Some(target) = filter.target {
                when("target = ?", target.into());
            }
            if let Some(outcome) = filter.outcome {
                when("outcome = ?", outcome.into());
            }
            if let Some(since) = filter.since {
                when("time >= ?", since.into());
            }
            if let Some(until) = filter.until {
                when("time < ?", until.into());
            }
            if let Some(before) = filter.before {
                when("id < ?", before.into());
            }
            values.push(filter.limit.into());
            let sql = format!(
                "SELECT id, time, actor, action, target, outcome, detail, source FROM audit_log {} ORDER BY id DESC LIMIT ?{}",
                if clauses.is_empty() { String::new() } else { format!("WHERE {}", clauses.join(" AND ")) },
                values.len()
            );
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(params_from_iter(values), |r| {
                Ok(AuditRow {
                    id: r.get(0)?,
                    record: AuditRecord {
                        time: r.get(1)?,
                        actor: r.get(2)?,
                        action: r.get(3)?,
                        target: r.get(4)?,
                        outcome: r.get(5)?,
                        detail: r.get(6)?,
                        source: r.get(7)?,
                    },
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// Deletes the entries older than `before` (Unix ms); how many went.
    pub async fn prune_audit(&self, before: i64) -> StoreResult<usize> {
        self.write(move |tx| Ok(tx.execute("DELETE FROM audit_log WHERE time < ?1", params![before])?)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(time: i64, actor: &str, action: &str) -> AuditRecord {
        AuditRecord {
            time,
            actor: actor.into(),
            action: action.into(),
            target: "t".into(),
            outcome: "ok".into(),
            detail: String::new(),
            source: "127.0.0.1".into(),
        }
    }

    /// On a database the previous release (schema 11) left.
    #[tokio::test]
    async fn entries_are_appended_filtered_newest_first_never_changed_and_pruned_by_age() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        drop(crate::tests::database_of_schema(&path, 11));
        let store = Store::open(&path).unwrap();
        store.record_audit(vec![entry(10, "ann", "job.create"), entry(20, "bob", "job.stop")]).await.unwrap();
        store.record_audit(vec![entry(30, "ann", "token.create")]).await.unwrap();
        let all = store.audit(AuditFilter { limit: 10, ..Default::default() }).await.unwrap();
        assert_eq!(all.iter().map(|r| r.record.time).collect::<Vec<_>>(), [30, 20, 10]);
        let jobs = store.audit(AuditFilter { action: Some("job.".into()), limit: 10, ..Default::default() });
        assert_eq!(jobs.await.unwrap().len(), 2);
        let anns = store.audit(AuditFilter {
            actor: Some("ann".into()),
            before: Some(all[0].id),
            limit: 10,
            ..Default::default()
        });
        assert_eq!(anns.await.unwrap().iter().map(|r| r.record.action.as_str()).collect::<Vec<_>>(), ["job.create"]);
        let window = store.audit(AuditFilter { since: Some(15), until: Some(30), limit: 10, ..Default::default() });
        assert_eq!(window.await.unwrap().len(), 1);
        let changed = store.write(|tx| Ok(tx.execute("UPDATE audit_log SET actor = 'mallory'", [])?)).await;
        assert!(changed.is_err(), "an entry cannot be changed");
        assert_eq!(store.prune_audit(25).await.unwrap(), 2);
        assert_eq!(store.audit(AuditFilter { limit: 10, ..Default::default() }).await.unwrap().len(), 1);
    }
}
