//! The database's schema as a list of steps, and the step runner that
//! brings a database of any earlier release up to date at start-up.

use rusqlite::Connection;

/// The schema, one step per entry; a step is never edited once released,
/// only followed by new ones.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: users, hashed tokens and jobs.
    "CREATE TABLE users (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE tokens (
        hash TEXT PRIMARY KEY,
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_by TEXT NOT NULL,
        visibility TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        state TEXT NOT NULL,
        metadata TEXT NOT NULL,
        spec TEXT NOT NULL
    );
    CREATE INDEX jobs_by_created ON jobs(created_at DESC, id);",
    // 2: the lifecycle of jobs (runs, queueing, placement, counts, archiving),
    // replica attempts, events and secrets.
    "ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 4000;
    ALTER TABLE jobs ADD COLUMN node_groups TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN reason TEXT;
    ALTER TABLE jobs ADD COLUMN message TEXT;
    ALTER TABLE jobs ADD COLUMN run INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN queued_at INTEGER;
    ALTER TABLE jobs ADD COLUMN started_at INTEGER;
    ALTER TABLE jobs ADD COLUMN completed_at INTEGER;
    ALTER TABLE jobs ADD COLUMN archive_at INTEGER;
    ALTER TABLE jobs ADD COLUMN placement TEXT;
    ALTER TABLE jobs ADD COLUMN stop_reason TEXT;
    ALTER TABLE jobs ADD COLUMN job_retries INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN succeeded INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN active INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN ready INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN master_port INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX jobs_by_state ON jobs(state);
    CREATE INDEX jobs_by_archive_at ON jobs(archive_at) WHERE archive_at IS NOT NULL;
    CREATE INDEX jobs_by_name ON jobs(name, created_at DESC);
    CREATE TABLE replicas (
        job_id TEXT NOT NULL,
        completion_index INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        run INTEGER NOT NULL,
        phase TEXT NOT NULL,
        readiness_reason TEXT,
        readiness_message TEXT,
        node TEXT,
        node_group TEXT,
        gpu_ids TEXT NOT NULL DEFAULT '',
        exit_code INTEGER,
        signal INTEGER,
        reason TEXT,
        message TEXT,
        created_at INTEGER NOT NULL,
        start_time INTEGER,
        end_time INTEGER,
        executor_state TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, completion_index, attempt)
    ) WITHOUT ROWID;
    CREATE TABLE job_events (
        id INTEGER PRIMARY KEY,
        job_id TEXT NOT NULL,
        type TEXT NOT NULL,
        reason TEXT NOT NULL,
        message TEXT NOT NULL,
        regarding_kind TEXT NOT NULL,
        regarding_name TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 1,
        first_time INTEGER NOT NULL,
        last_time INTEGER NOT NULL
    );
    CREATE INDEX job_events_by_job ON job_events(job_id, id);
    CREATE TABLE secrets (
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        visibility TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (owner, name)
    );
    CREATE INDEX secrets_by_name ON secrets(name);",
    // 3: listings that stay fast with 100,000 jobs (docs/measurements.md).
    // `jobs_list` walks jobs newest first with every column a listing filters
    // on except labels, so a page is found without reading rows it skips;
    // `job_counts` keeps the number of jobs per (visibility, creator, state,
    // node groups), maintained by triggers, so the total of a listing that
    // filters on nothing else is a sum over a few dozen rows instead of a
    // count over every job; `job_search` is a trigram index of the job ids,
    // which finds the few jobs a name search matches without reading every
    // id (`list_jobs`).
    "DROP INDEX jobs_by_created;
    CREATE INDEX jobs_list ON jobs(created_at DESC, id DESC, visibility, created_by, state, node_groups);
    CREATE TABLE job_counts (
        visibility TEXT NOT NULL,
        created_by TEXT NOT NULL,
        state TEXT NOT NULL,
        node_groups TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (visibility, created_by, state, node_groups)
    ) WITHOUT ROWID;
    INSERT INTO job_counts SELECT visibility, created_by, state, node_groups, COUNT(*) FROM jobs GROUP BY 1, 2, 3, 4;
    CREATE VIRTUAL TABLE job_search USING fts5(id, tokenize = 'trigram');
    INSERT INTO job_search(id) SELECT id FROM jobs;
    CREATE TRIGGER jobs_searchable_on_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO job_search(id) VALUES (NEW.id);
    END;
    CREATE TRIGGER jobs_searchable_on_delete AFTER DELETE ON jobs BEGIN
        DELETE FROM job_search
            WHERE job_search MATCH char(34) || replace(OLD.id, char(34), char(34) || char(34)) || char(34) AND id = OLD.id;
    END;
    CREATE TRIGGER jobs_counted_on_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO job_counts VALUES (NEW.visibility, NEW.created_by, NEW.state, NEW.node_groups, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER jobs_counted_on_delete AFTER DELETE ON jobs BEGIN
        UPDATE job_counts SET n = n - 1 WHERE visibility = OLD.visibility AND created_by = OLD.created_by
            AND state = OLD.state AND node_groups = OLD.node_groups;
        DELETE FROM job_counts WHERE n <= 0;
    END;
    CREATE TRIGGER jobs_counted_on_update AFTER UPDATE OF visibility, created_by, state, node_groups ON jobs
    WHEN OLD.visibility IS NOT NEW.visibility OR OLD.created_by IS NOT NEW.created_by
        OR OLD.state IS NOT NEW.state OR OLD.node_groups IS NOT NEW.node_groups
    BEGIN
        UPDATE job_counts SET n = n - 1 WHERE visibility = OLD.visibility AND created_by = OLD.created_by
            AND state = OLD.state AND node_groups = OLD.node_groups;
        DELETE FROM job_counts WHERE n <= 0;
        INSERT INTO job_counts VALUES (NEW.visibility, NEW.created_by, NEW.state, NEW.node_groups, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;",
    // 4: image pull secrets (`/imagepullsecrets`): registry credentials a job
    // names in `spec.image_pull_secrets`; names are unique per owner.
    "CREATE TABLE image_pull_secrets (
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        registry_server TEXT NOT NULL,
        username TEXT NOT NULL,
        password TEXT NOT NULL,
        email TEXT NOT NULL DEFAULT '',
        visibility TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (owner, name)
    );",
    // 5: when a replica waiting out its retry back-off starts (Unix ms), and
    // what the executor calls an attempt (a container, a Slurm job).
    "ALTER TABLE replicas ADD COLUMN retry_at INTEGER;
    ALTER TABLE replicas ADD COLUMN executor_id TEXT;",
    // 6: resource use per replica attempt and series, kept bounded
    // (metrics/series.rs): a point is the mean and peak of `count` samples
    // from time `t` on.
    "CREATE TABLE metrics (
        job_id TEXT NOT NULL,
        completion_index INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        series TEXT NOT NULL,
        t INTEGER NOT NULL,
        mean REAL NOT NULL,
        max REAL NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (job_id, completion_index, attempt, series, t)
    ) WITHOUT ROWID;",
    // 7: tokens with an id to list and revoke them by, a kind, a name, an
    // expiry, when they were last used and revoked, and the token a console
    // session was made from (`origin_id`), so that revoking a token ends its
    // sessions too (auth.rs). Tokens from before keep working: kind `api`,
    // no expiry.
    "CREATE TABLE tokens_v7 (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        last_used_at INTEGER,
        revoked_at INTEGER,
        origin_id INTEGER
    );
    INSERT INTO tokens_v7 (hash, user_id, kind, created_at)
        SELECT hash, user_id, 'api', created_at FROM tokens ORDER BY created_at, rowid;
    DROP TABLE tokens;
    ALTER TABLE tokens_v7 RENAME TO tokens;
    CREATE INDEX tokens_by_user ON tokens(user_id, id);
    CREATE INDEX tokens_by_origin ON tokens(origin_id) WHERE origin_id IS NOT NULL;",
    // 8: roles in a column (`viewer`, `member`, `admin`): before, a user was
    // the administrator because its name was "admin", so that user is made
    // an admin and everyone else a member, which is what each could do. And
    // a token's first and last characters (`masked`), which Lepton's
    // `GET /tokens` lists so a client can tell its own token's expiry;
    // tokens from before have none and are listed without.
    "ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'member';
    UPDATE users SET role = 'admin' WHERE name = 'admin';
    ALTER TABLE tokens ADD COLUMN masked TEXT;",
    // 9: users who sign in through an identity provider are known by its
    // issuer and subject (`sub`), never by their name here, which is only
    // what the provider suggested, made unique. Local users have neither.
    "ALTER TABLE users ADD COLUMN issuer TEXT;
    ALTER TABLE users ADD COLUMN subject TEXT;
    ALTER TABLE users ADD COLUMN email TEXT;
    CREATE UNIQUE INDEX users_by_identity ON users(issuer, subject) WHERE issuer IS NOT NULL;",
    // 10: invitations an admin makes for a teammate: a role, a note, a code
    // kept only as its hash, an expiry, and who used it when (once), or
    // when it was withdrawn. The users it names may be removed later; the
    // record stays.
    "CREATE TABLE invitations (
        id INTEGER PRIMARY KEY,
        code_hash TEXT NOT NULL UNIQUE,
        role TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        created_by INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        used_by INTEGER REFERENCES users(id) ON DELETE SET NULL,
        withdrawn_at INTEGER
    );",
    // 11: users an admin removed. The row stays, so the name stays theirs
    // (jobs and events name their creator) and nobody new takes it; a
    // removed user signs in no more until an admin lets them back.
    "ALTER TABLE users ADD COLUMN removed_at INTEGER;",
    // 12: quotas an admin set in the console (they replace the config's for
    // the same role or user); what each run held from admission to release,
    // for usage over time (kept when its job is deleted); each job's log
    // bytes on disk as last measured, and each user's total per day. Runs
    // that hold resources when the server is upgraded are charged from
    // their admission (their CPUs were not recorded before: 0).
    "CREATE TABLE quotas (
        scope TEXT NOT NULL,
        name TEXT NOT NULL,
        running_gpus INTEGER,
        running_replicas INTEGER,
        queued_jobs INTEGER,
        log_bytes INTEGER,
        updated_by TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (scope, name)
    );
    CREATE TABLE usage_charges (
        id INTEGER PRIMARY KEY,
        job_id TEXT NOT NULL,
        run INTEGER NOT NULL,
        user TEXT NOT NULL,
        node_group TEXT NOT NULL,
        replicas INTEGER NOT NULL,
        gpus INTEGER NOT NULL,
        cpus REAL NOT NULL,
        started_at INTEGER NOT NULL,
        ended_at INTEGER
    );
    CREATE INDEX usage_charges_open ON usage_charges(job_id) WHERE ended_at IS NULL;
    CREATE INDEX usage_charges_by_start ON usage_charges(started_at);
    INSERT INTO usage_charges (job_id, run, user, node_group, replicas, gpus, cpus, started_at)
        SELECT id, run, created_by, COALESCE(json_extract(placement, '$.node_group'), ''),
            COALESCE(json_array_length(placement, '$.slots'), 0),
            (SELECT COALESCE(SUM(json_array_length(slot.value, '$.gpu_ids')), 0)
                FROM json_each(jobs.placement, '$.slots') AS slot),
            0, COALESCE(started_at, created_at)
        FROM jobs WHERE placement IS NOT NULL AND json_valid(placement);
    ALTER TABLE jobs ADD COLUMN log_bytes INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX jobs_log_bytes ON jobs(created_by, log_bytes) WHERE log_bytes > 0;
    CREATE TABLE log_bytes_days (
        day INTEGER NOT NULL,
        user TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        PRIMARY KEY (user, day)
    ) WITHOUT ROWID;",
    // 13: the audit log: every change, sign-in and refused attempt, with
    // who, when, what and from where. Rows are only added, and deleted
    // when older than the retention; the trigger refuses any change to one.
    "CREATE TABLE audit_log (
        id INTEGER PRIMARY KEY,
        time INTEGER NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        outcome TEXT NOT NULL,
        detail TEXT NOT NULL,
        source TEXT NOT NULL
    );
    CREATE INDEX audit_log_by_time ON audit_log(time);
    CREATE INDEX audit_log_by_actor ON audit_log(actor, id);
    CREATE TRIGGER audit_log_is_append_only BEFORE UPDATE ON audit_log
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;",
    // 14: private job templates, each its owner's, named by an id unique
    // among the owner's.
    "CREATE TABLE templates (
        owner TEXT NOT NULL,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        content TEXT NOT NULL,
        json_schema TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (owner, id)
    ) WITHOUT ROWID;",
    // 15: a rerun of a job's failed indexes names the job it reruns; the
    // index finds a job's reruns.
    "ALTER TABLE jobs ADD COLUMN rerun_of TEXT;
    CREATE INDEX jobs_by_rerun_of ON jobs(rerun_of) WHERE rerun_of IS NOT NULL;",
    // 16: notifications. A user's endpoints (the address and secret
    // sealed), which transitions of which jobs go to them, the transitions
    // waiting to be matched (written with the state change itself, and only
    // while some rule could match), and each endpoint's deliveries.
    "CREATE TABLE webhooks (
        id INTEGER PRIMARY KEY,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        url TEXT NOT NULL,
        destination TEXT NOT NULL,
        secret TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        disabled_reason TEXT,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX webhooks_by_owner ON webhooks(owner);
    CREATE TABLE notifications (
        id INTEGER PRIMARY KEY,
        owner TEXT NOT NULL,
        job_id TEXT,
        events TEXT NOT NULL,
        webhook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX notifications_by_owner ON notifications(owner) WHERE job_id IS NULL;
    CREATE INDEX notifications_by_job ON notifications(job_id) WHERE job_id IS NOT NULL;
    CREATE INDEX notifications_by_webhook ON notifications(webhook_id);
    CREATE TABLE job_transitions (
        id INTEGER PRIMARY KEY,
        job_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        from_state TEXT NOT NULL,
        to_state TEXT NOT NULL,
        reason TEXT,
        message TEXT,
        time INTEGER NOT NULL
    );
    CREATE TABLE webhook_deliveries (
        id INTEGER PRIMARY KEY,
        webhook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event TEXT NOT NULL,
        job_id TEXT NOT NULL,
        job_name TEXT NOT NULL,
        job_owner TEXT NOT NULL,
        from_state TEXT NOT NULL,
        to_state TEXT NOT NULL,
        reason TEXT,
        message TEXT,
        time INTEGER NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_status INTEGER,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        next_at INTEGER,
        delivered_at INTEGER
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_at) WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_id, id);",
    // 17: conditions of a running job to be notified of (its GPUs idle,
    // memory near its limit, a log line matching). A rule keeps each
    // condition's setting; a condition met is kept once per rule, job and
    // run (so it is delivered once, also across a restart) and waits as a
    // transition that names its rule, with the replica and line it was
    // met on, which its deliveries keep for their link.
    "ALTER TABLE notifications ADD COLUMN gpu_idle_minutes INTEGER;
    ALTER TABLE notifications ADD COLUMN memory_percent INTEGER;
    ALTER TABLE notifications ADD COLUMN log_pattern TEXT;
    ALTER TABLE job_transitions ADD COLUMN event TEXT;
    ALTER TABLE job_transitions ADD COLUMN rule_id INTEGER;
    ALTER TABLE job_transitions ADD COLUMN replica TEXT;
    ALTER TABLE job_transitions ADD COLUMN line INTEGER;
    ALTER TABLE webhook_deliveries ADD COLUMN replica TEXT;
    ALTER TABLE webhook_deliveries ADD COLUMN line INTEGER;
    CREATE TABLE notification_conditions_met (
        rule_id INTEGER NOT NULL,
        job_id TEXT NOT NULL,
        run INTEGER NOT NULL,
        event TEXT NOT NULL,
        time INTEGER NOT NULL,
        PRIMARY KEY (rule_id, job_id, run, event)
    ) WITHOUT ROWID;
    CREATE INDEX notification_conditions_met_by_job ON notification_conditions_met(job_id);",
    // 18: finished jobs' logs are removed (docs/api.md, "Log retention").
    // A job keeps when its own archive time lets its logs go
    // (`logs_expire_at`: finished + `ttl_seconds_after_finished`, default
    // 3 days, at most 10 years: the same expression as `jobs.rs` writes
    // with each finish), when they are due by the workspace's rule
    // (`logs_due_at`, written at start by `Store::use_log_retention`, which
    // keeps the rule in `store_settings`; the disk budget takes the longest
    // finished first), when they went and by which rule, and its failure
    // analysis, which reads them, as it was just
    // before. A store that had jobs is marked upgraded now: nothing is
    // removed for a grace period.
    "ALTER TABLE jobs ADD COLUMN logs_expire_at INTEGER;
    ALTER TABLE jobs ADD COLUMN logs_due_at INTEGER;
    ALTER TABLE jobs ADD COLUMN logs_removed_at INTEGER;
    ALTER TABLE jobs ADD COLUMN logs_removed_by TEXT;
    UPDATE jobs SET logs_expire_at = completed_at
        + MIN(MAX(COALESCE(json_extract(spec, '$.ttl_seconds_after_finished'), 259200), 0), 315360000) * 1000
        WHERE completed_at IS NOT NULL AND json_valid(spec);
    CREATE INDEX jobs_by_logs_due_at ON jobs(logs_due_at)
        WHERE logs_due_at IS NOT NULL AND logs_removed_at IS NULL;
    CREATE INDEX jobs_with_logs_by_completed_at ON jobs(completed_at)
        WHERE completed_at IS NOT NULL AND logs_removed_at IS NULL;
    CREATE TABLE kept_failure_analyses (
        job_id TEXT PRIMARY KEY,
        analysis TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE store_settings (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO store_settings (name, value)
        SELECT 'logs_removal_upgrade', CAST(strftime('%s', 'now') AS INTEGER) * 1000 WHERE EXISTS (SELECT 1 FROM jobs);",
    // 19: the list at a million jobs (`job_list.rs`). A job's labels are
    // rows of `job_labels`, kept by triggers, so a label selector looks each
    // job up instead of parsing its metadata, or walks one label's jobs
    // newest first; the state and creator indexes are in the list's order
    // and hold what a listing filters on, so a listing that matches few
    // jobs reads just those.
    "DROP INDEX jobs_by_state;
    CREATE INDEX jobs_by_state ON jobs(state, created_at DESC, id DESC, visibility, created_by, node_groups);
    CREATE INDEX jobs_by_creator ON jobs(created_by, created_at DESC, id DESC, visibility, state, node_groups);
    CREATE TABLE job_labels (
        job_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        job_created_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX job_labels_by_value ON job_labels(key, value, job_created_at DESC, job_id DESC);
    INSERT INTO job_labels (job_id, key, value, job_created_at)
        SELECT jobs.id, label.key, label.value, jobs.created_at
        FROM jobs, json_each(CASE WHEN json_valid(jobs.metadata) THEN jobs.metadata ELSE '{}' END, '$.labels') AS label
        WHERE label.type = 'text';
    CREATE TRIGGER jobs_labelled_on_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO job_labels (job_id, key, value, job_created_at)
            SELECT NEW.id, key, value, NEW.created_at
            FROM json_each(CASE WHEN json_valid(NEW.metadata) THEN NEW.metadata ELSE '{}' END, '$.labels')
            WHERE type = 'text';
    END;
    CREATE TRIGGER jobs_labelled_on_update AFTER UPDATE OF metadata ON jobs BEGIN
        DELETE FROM job_labels WHERE job_id = OLD.id;
        INSERT INTO job_labels (job_id, key, value, job_created_at)
            SELECT NEW.id, key, value, NEW.created_at
            FROM json_each(CASE WHEN json_valid(NEW.metadata) THEN NEW.metadata ELSE '{}' END, '$.labels')
            WHERE type = 'text';
    END;
    CREATE TRIGGER jobs_unlabelled_on_delete AFTER DELETE ON jobs BEGIN
        DELETE FROM job_labels WHERE job_id = OLD.id;
    END;",
    // 20: a listing by label tests the job's state, visibility and creator
    // inside the label's index (`job_list.rs`), instead of looking each of
    // the label's jobs up in `jobs_list`: a label with a state (`team=nlp`,
    // `Failed`) read about six entries per match that way. Triggers keep the
    // copies as the job changes.
    "ALTER TABLE job_labels ADD COLUMN job_visibility TEXT NOT NULL DEFAULT '';
    ALTER TABLE job_labels ADD COLUMN job_created_by TEXT NOT NULL DEFAULT '';
    ALTER TABLE job_labels ADD COLUMN job_state TEXT NOT NULL DEFAULT '';
    UPDATE job_labels SET (job_visibility, job_created_by, job_state) =
        (SELECT visibility, created_by, state FROM jobs WHERE jobs.id = job_labels.job_id);
    DROP INDEX job_labels_by_value;
    CREATE INDEX job_labels_by_value
        ON job_labels(key, value, job_created_at DESC, job_id DESC, job_visibility, job_created_by, job_state);
    DROP TRIGGER jobs_labelled_on_insert;
    DROP TRIGGER jobs_labelled_on_update;
    CREATE TRIGGER jobs_labelled_on_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO job_labels (job_id, key, value, job_created_at, job_visibility, job_created_by, job_state)
            SELECT NEW.id, key, value, NEW.created_at, NEW.visibility, NEW.created_by, NEW.state
            FROM json_each(CASE WHEN json_valid(NEW.metadata) THEN NEW.metadata ELSE '{}' END, '$.labels')
            WHERE type = 'text';
    END;
    CREATE TRIGGER jobs_labelled_on_update AFTER UPDATE OF metadata ON jobs BEGIN
        DELETE FROM job_labels WHERE job_id = OLD.id;
        INSERT INTO job_labels (job_id, key, value, job_created_at, job_visibility, job_created_by, job_state)
            SELECT NEW.id, key, value, NEW.created_at, NEW.visibility, NEW.created_by, NEW.state
            FROM json_each(CASE WHEN json_valid(NEW.metadata) THEN NEW.metadata ELSE '{}' END, '$.labels')
            WHERE type = 'text';
    END;
    CREATE TRIGGER jobs_labels_follow_their_job AFTER UPDATE OF visibility, created_by, state ON jobs
    WHEN OLD.visibility IS NOT NEW.visibility OR OLD.created_by IS NOT NEW.created_by OR OLD.state IS NOT NEW.state
    BEGIN
        UPDATE job_labels SET job_visibility = NEW.visibility, job_created_by = NEW.created_by, job_state = NEW.state
            WHERE job_id = NEW.id;
    END;",
    // 21: the jobs whose logs take the most, largest first (`GET
    // /usage/logs`), without reading every job that has logs.
    "CREATE INDEX jobs_by_log_bytes ON jobs(log_bytes DESC) WHERE log_bytes > 0;",
    // 22: how many job ids hold each trigram, so that a name search asks
    // the trigram index for its two rarest trigrams only (`job_list.rs`,
    // `searched_ids`). `id_positions` numbers the places of a trigram in an
    // id (a trigger cannot use a recursive query to count them); an id's
    // trigrams past the 512th place are not counted, which makes them look
    // rarer than they are, never changes what a search finds.
    "CREATE TABLE id_positions (n INTEGER PRIMARY KEY);
    INSERT INTO id_positions (n)
        WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 512) SELECT n FROM k;
    CREATE TABLE job_trigram_counts (trigram TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO job_trigram_counts (trigram, n)
        SELECT trigram, COUNT(*) FROM (
            SELECT DISTINCT jobs.rowid AS job, lower(substr(jobs.id, p.n, 3)) AS trigram
            FROM jobs JOIN id_positions AS p ON p.n <= length(jobs.id) - 2
        ) GROUP BY trigram;
    CREATE TRIGGER jobs_trigrams_counted_on_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO job_trigram_counts (trigram, n)
            SELECT DISTINCT lower(substr(NEW.id, n, 3)), 1 FROM id_positions WHERE n <= length(NEW.id) - 2
            ON CONFLICT (trigram) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER jobs_trigrams_counted_on_delete AFTER DELETE ON jobs BEGIN
        UPDATE job_trigram_counts SET n = n - 1
            WHERE trigram IN (SELECT lower(substr(OLD.id, n, 3)) FROM id_positions WHERE n <= length(OLD.id) - 2);
    END;",
];

/// Applies the steps a database has not had yet, each in its own
/// transaction, and records how far it got in `PRAGMA user_version`.
pub(crate) fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for (index, step) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", (index + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}
