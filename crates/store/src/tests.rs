//! The store's tests: its API on a real SQLite file, and upgrades from
//! the databases older releases wrote.

use super::migrations::MIGRATIONS;
use super::*;
use jobdeck_api::{JobSpec, Role, TokenKind};

/// A database as a release of schema `schema` left it (the first `schema`
/// migrations, its version recorded), for upgrade tests to fill with that
/// release's rows before the current store opens it.
pub(crate) fn database_of_schema(path: &Path, schema: usize) -> Connection {
    let conn = Connection::open(path).unwrap();
    for step in &MIGRATIONS[..schema] {
        conn.execute_batch(step).unwrap();
    }
    conn.pragma_update(None, "user_version", schema as i64).unwrap();
    conn
}

pub(crate) fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
    (dir, store)
}

pub fn job_row(id: &str, owner: &str, visibility: &str, created_at: i64, state: &str) -> JobRow {
    JobRow {
        id: id.into(),
        name: id.split('-').next().unwrap_or(id).into(),
        created_by: owner.into(),
        visibility: Visibility::parse(visibility).expect("a visibility"),
        created_at,
        metadata: StoredMetadata::default(),
        spec: JobSpec::default(),
        priority: 4000,
        node_groups: Vec::new(),
        rerun_of: None,
        runtime: JobRuntime { state: JobState::parse(state).expect("a job state"), ..JobRuntime::default() },
        logs: KeptLogs::default(),
    }
}

fn selector(text: &str) -> Vec<jobdeck_api::LabelCondition> {
    jobdeck_api::parse_label_selector(text).unwrap()
}

fn page(viewer: &str) -> JobFilter {
    JobFilter { viewer: viewer.into(), page: 1, page_size: 10, ..JobFilter::default() }
}

#[test]
fn migrations_are_applied_once_and_reopening_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let store = Store::open(&path).unwrap();
        store.ensure_user("admin", Role::Admin, 1).await.unwrap();
    });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let store = Store::open(&path).unwrap();
        let (user, created) = store.ensure_user("admin", Role::Viewer, 2).await.unwrap();
        assert!(!created, "the admin user survived a reopen");
        assert_eq!((user.name.as_str(), user.role), ("admin", Role::Admin), "an existing user keeps its role");
        let version: i64 = store.read(|c| c.pragma_query_value(None, "user_version", |r| r.get(0))).await.unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
    });
}

/// A database written before the listing indexes (schema 2) gets its
/// counts and its name index filled when it is opened.
#[tokio::test]
async fn an_older_database_gets_its_listing_indexes_filled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 2);
        for (id, owner, visibility, state) in [
            ("train-aaaaa", "alice", "public", "Running"),
            ("eval-bbbbb", "bob", "private", "Completed"),
            ("train-ccccc", "bob", "public", "Archived"),
        ] {
            conn.execute(
                "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec) VALUES (?1, ?1, ?2, ?3, 1, ?4, '{}', '{}')",
                rusqlite::params![id, owner, visibility, state],
            )
            .unwrap();
        }
    }
    let store = Store::open(&path).unwrap();
    let list = |viewer: &str, q: Option<&str>| JobFilter {
        viewer: viewer.into(),
        q: q.map(String::from),
        mode: QueryMode::AliveAndArchive,
        page: 1,
        page_size: 10,
        ..JobFilter::default()
    };
    assert_eq!(store.list_jobs(list("alice", None)).await.unwrap().total, 2);
    assert_eq!(store.list_jobs(list("bob", None)).await.unwrap().total, 3);
    let JobPage { rows, total, .. } = store.list_jobs(list("alice", Some("train"))).await.unwrap();
    assert_eq!((rows.len(), total), (2, 2));
}

/// Jobs as the release before typed rows wrote them (their JSON columns
/// and `,a,b,` written by the handler and the scheduler) read back whole,
/// and a row written now reads back as it was given.
#[tokio::test]
async fn job_rows_of_the_previous_release_read_back_typed() {
    let (_dir, store) = temp_store();
    let spec = r#"{"resource_shape":"gpu.1x","container":{"image":"busybox","command":["sh","-c","echo hi"]},"completions":2,"stopped":false}"#;
    store
        .write(move |tx| {
            tx.execute(
                &format!(
                    "INSERT INTO jobs (id, name, created_by, visibility, created_at, metadata, spec, priority, node_groups,
                        state, run, placement, stop_reason)
                     VALUES ('train-aaaaa', 'train', 'alice', 'public', 1, '{{\"labels\":{{\"team\":\"nlp\"}}}}', '{spec}',
                        4000, ',a,gpu-b,', 'Stopping', 2,
                        '{{\"node_group\":\"a\",\"slots\":[{{\"node\":\"n1\",\"gpu_ids\":[0,1]}},{{\"node\":\"n2\"}}]}}',
                        'Preempted')"
                ),
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let row = store.job("train-aaaaa".into()).await.unwrap().unwrap();
    assert_eq!(row.metadata.labels.as_ref().unwrap()["team"], "nlp");
    assert_eq!(row.spec.resource_shape.as_deref(), Some("gpu.1x"));
    assert_eq!(row.spec.stopped, Some(false));
    assert_eq!(row.node_groups, ["a", "gpu-b"]);
    assert_eq!(
        row.runtime.placement,
        Some(Placement {
            node_group: "a".into(),
            slots: vec![Slot { node: "n1".into(), gpu_ids: vec![0, 1] }, Slot { node: "n2".into(), gpu_ids: vec![] }],
        })
    );
    assert_eq!(row.runtime.stop_reason, Some(StopReason::Preempted));
    assert_eq!(row.runtime.run, 2);

    let mut again = row.clone();
    again.id = "train-bbbbb".into();
    store.insert_job(again.clone(), vec![]).await.unwrap();
    assert_eq!(store.job("train-bbbbb".into()).await.unwrap(), Some(again));
    assert!(store.active_jobs_to_recover().await.unwrap().iter().all(Result::is_ok));
}

/// A replica's GPUs read back as the previous release wrote them (`0,3`)
/// and as they are written now.
#[tokio::test]
async fn replica_gpus_read_back_in_both_forms() {
    let (_dir, store) = temp_store();
    store.insert_job(job_row("train-aaaaa", "alice", "public", 1, "Running"), vec![]).await.unwrap();
    let mut row = ReplicaRow { job_id: "train-aaaaa".into(), gpu_ids: vec![1, 2], ..ReplicaRow::default() };
    store.upsert_replica(row.clone()).await.unwrap();
    row.completion_index = 1;
    row.gpu_ids = vec![];
    store.upsert_replica(row).await.unwrap();
    store
        .write(|tx| {
            tx.execute(
                "INSERT INTO replicas (job_id, completion_index, attempt, run, phase, gpu_ids, created_at, updated_at)
                 VALUES ('train-aaaaa', 2, 0, 0, 'running', '0,3', 1, 1)",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let gpus: Vec<Vec<u32>> =
        store.replicas_of("train-aaaaa".into()).await.unwrap().into_iter().map(|r| r.gpu_ids).collect();
    assert_eq!(gpus, [vec![1, 2], vec![], vec![0, 3]]);
}

/// A job whose spec no longer reads is an error naming the column where
/// one job is asked for, and an unreadable job, with its runtime, where the
/// scheduler recovers the active ones.
#[tokio::test]
async fn an_unreadable_job_is_named_and_handed_to_the_scheduler() {
    let (_dir, store) = temp_store();
    for id in ["bad-aaaaa", "good-aaaaa"] {
        let mut row = job_row(id, "alice", "public", 1, "Queueing");
        row.runtime.run = 3;
        store.insert_job(row, vec![]).await.unwrap();
    }
    store
        .write(|tx| {
            tx.execute("UPDATE jobs SET spec = '{\"nope\": 1}' WHERE id = 'bad-aaaaa'", [])?;
            Ok(())
        })
        .await
        .unwrap();
    let err = store.job("bad-aaaaa".into()).await.unwrap_err();
    assert!(format!("{err:?}").contains("the spec cannot be read"), "{err:?}");
    let rows = store.active_jobs_to_recover().await.unwrap();
    let unreadable: Vec<&UnreadableJob> = rows.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0].id, "bad-aaaaa");
    assert_eq!(unreadable[0].runtime.run, 3);
    assert!(unreadable[0].problem.contains("the spec cannot be read"), "{}", unreadable[0].problem);
    assert_eq!(rows.iter().filter(|r| r.is_ok()).count(), 1);
}

/// Tokens made before tokens could expire (schema 6) keep signing in
/// after the upgrade, as API tokens without expiry.
#[tokio::test]
async fn tokens_of_an_older_database_keep_working_without_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 6);
        conn.execute_batch(
            "INSERT INTO users (id, name, created_at) VALUES (1, 'admin', 1), (2, 'bob', 2);
             INSERT INTO tokens (hash, user_id, created_at) VALUES ('hash-admin', 1, 10), ('hash-bob', 2, 20);",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let admin = store.token_by_hash("hash-admin".into()).await.unwrap().expect("the admin's token survives");
    assert_eq!(
        (admin.user.name.as_str(), admin.kind, admin.expires_at, admin.revoked_at),
        ("admin", TokenKind::Api, None, None)
    );
    let listed = store.list_tokens(None).await.unwrap();
    let summary: Vec<(i64, &str, i64)> = listed.iter().map(|t| (t.id, t.user.as_str(), t.created_at)).collect();
    assert_eq!(summary, vec![(1, "admin", 10), (2, "bob", 20)], "ids follow the tokens' age");
    // A new token gets the next id, and the old hashes stay unique.
    let id = store
        .insert_token(NewToken {
            user_id: 2,
            hash: "hash-new".into(),
            kind: TokenKind::Session,
            name: "console".into(),
            created_at: 30,
            expires_at: Some(100),
            origin_id: Some(2),
            masked: None,
        })
        .await
        .unwrap();
    assert_eq!(id, 3);
    let duplicate = NewToken {
        user_id: 1,
        hash: "hash-bob".into(),
        kind: TokenKind::Api,
        name: String::new(),
        created_at: 40,
        expires_at: None,
        origin_id: None,
        masked: None,
    };
    assert!(store.insert_token(duplicate).await.is_err());
}

/// Roles come in a column at schema 8: a database of the previous release
/// (schema 7) keeps every user and token; the user named "admin", who was
/// the administrator by that name, is an admin by role, everyone else a
/// member (what each could do before), and old tokens list without a
/// masked value.
#[tokio::test]
async fn users_of_the_previous_release_get_the_roles_their_names_gave_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 7);
        conn.execute_batch(
            "INSERT INTO users (id, name, created_at) VALUES (1, 'admin', 1), (2, 'bob', 2), (3, 'administrator', 3);
             INSERT INTO tokens (hash, user_id, kind, created_at, expires_at)
                 VALUES ('hash-admin', 1, 'api', 10, NULL), ('hash-bob', 2, 'session', 20, 99);",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let roles: Vec<(String, Role)> = store.list_users(0).await.unwrap().into_iter().map(|u| (u.name, u.role)).collect();
    let expected = [("admin", Role::Admin), ("administrator", Role::Member), ("bob", Role::Member)];
    assert_eq!(roles, expected.map(|(n, r)| (n.to_string(), r)).to_vec());
    let bob = store.token_by_hash("hash-bob".into()).await.unwrap().expect("bob's session survives");
    assert_eq!((bob.user.role, bob.kind, bob.expires_at), (Role::Member, TokenKind::Session, Some(99)));
    let listed = store.list_tokens(None).await.unwrap();
    assert!(listed.iter().all(|t| t.masked_value.is_none()), "old tokens have no mask to show");
    // A role is changed by name, and a role this release does not know
    // (a newer one wrote it) reads as the least.
    let changed = store.set_user_role("bob", Role::Viewer).await.unwrap();
    assert!(matches!(changed, RoleChanged::Changed(UserRow { role: Role::Viewer, .. })), "{changed:?}");
    assert_eq!(store.set_user_role("nobody", Role::Admin).await.unwrap(), RoleChanged::NoSuchUser);
    // The workspace keeps an admin: the only one cannot be demoted, one of
    // two can.
    assert_eq!(store.set_user_role("admin", Role::Member).await.unwrap(), RoleChanged::LastAdmin);
    assert!(matches!(store.set_user_role("bob", Role::Admin).await.unwrap(), RoleChanged::Changed(_)));
    assert!(matches!(store.set_user_role("admin", Role::Member).await.unwrap(), RoleChanged::Changed(_)));
    assert_eq!(store.set_user_role("bob", Role::Viewer).await.unwrap(), RoleChanged::LastAdmin);
    assert!(matches!(store.set_user_role("admin", Role::Admin).await.unwrap(), RoleChanged::Changed(_)));
    store.write(|tx| Ok(tx.execute("UPDATE users SET role = 'owner' WHERE name = 'admin'", [])?)).await.unwrap();
    assert_eq!(store.user("admin").await.unwrap().map(|u| u.role), Some(Role::Viewer));
}

/// Secret values of a database from before sealing (schema 7, in
/// clear) are sealed at the next start and still resolve; a key
/// rotated out still opens what it sealed until the start-up pass
/// seals it again with the new key.
#[tokio::test]
async fn clear_values_of_an_older_database_are_sealed_and_keys_rotate() {
    use sealing::SealingKeys;
    const A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const B: &str = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 7);
        conn.execute_batch(
            "INSERT INTO secrets (owner, name, value, visibility, created_at, updated_at)
                 VALUES ('alice', 'HF_TOKEN', 'hf_clear', 'public', 1, 1);
             INSERT INTO image_pull_secrets (owner, name, registry_server, username, password, visibility,
                 created_at, updated_at) VALUES ('alice', 'reg', 'r.example', 'u', 'pw_clear', 'private', 1, 1);",
        )
        .unwrap();
    }
    let raw = |path: &Path| {
        let conn = Connection::open(path).unwrap();
        let value: String = conn.query_row("SELECT value FROM secrets", [], |r| r.get(0)).unwrap();
        let password: String = conn.query_row("SELECT password FROM image_pull_secrets", [], |r| r.get(0)).unwrap();
        (value, password)
    };
    let store = Store::open(&path).unwrap();
    assert!(!store.holds_sealed_values().await.unwrap());
    store.use_keys(SealingKeys::from_hex(A, &[]).unwrap());
    assert_eq!(store.seal_stored_secrets().await.unwrap(), 2);
    assert_eq!(store.seal_stored_secrets().await.unwrap(), 0, "sealed once");
    let (value, password) = raw(&path);
    let a_id = SealingKeys::from_hex(A, &[]).unwrap().current_id().to_string();
    assert!(value.starts_with(&format!("sealed:v1:{a_id}:")) && !value.contains("clear"), "{value}");
    assert!(password.starts_with("sealed:v1:") && !password.contains("clear"), "{password}");
    assert!(store.holds_sealed_values().await.unwrap());
    let resolved = store.resolve_secret("bob".into(), "HF_TOKEN".into(), Some("alice".into())).await.unwrap();
    assert_eq!(resolved.as_deref(), Some("hf_clear"));
    let pull = store.resolve_image_pull_secret("alice".into(), "reg".into()).await.unwrap().unwrap();
    assert_eq!(pull.password, "pw_clear");
    drop(store);

    // Rotation: B is current, A is still known; the start-up pass moves
    // every value to B, after which A is no longer needed.
    let store = Store::open(&path).unwrap();
    store.use_keys(SealingKeys::from_hex(B, &[A]).unwrap());
    assert_eq!(store.seal_stored_secrets().await.unwrap(), 2);
    drop(store);
    let store = Store::open(&path).unwrap();
    store.use_keys(SealingKeys::from_hex(B, &[]).unwrap());
    let resolved = store.resolve_secret("alice".into(), "HF_TOKEN".into(), None).await.unwrap();
    assert_eq!(resolved.as_deref(), Some("hf_clear"));
    // A listing opens no value: it neither costs a decryption nor shows one.
    let visible = store.secrets_visible_to("alice".into()).await.unwrap();
    assert_eq!((visible[0].name.as_str(), visible[0].value.as_str()), ("HF_TOKEN", ""));

    // Without the key, a sealed value is an error, never its ciphertext.
    let store = Store::open(&path).unwrap();
    assert!(store.resolve_secret("alice".into(), "HF_TOKEN".into(), None).await.is_err());
}

#[tokio::test]
async fn private_jobs_are_visible_to_their_creator_only() {
    let (_dir, store) = temp_store();
    for (id, owner, visibility) in [("a", "alice", "private"), ("b", "bob", "public")] {
        store.insert_job(job_row(id, owner, visibility, 1, "Queueing"), vec![]).await.unwrap();
    }
    let JobPage { rows, total, .. } = store.list_jobs(page("bob")).await.unwrap();
    assert_eq!((rows.len(), total), (1, 1));
    assert_eq!(rows[0].id, "b");
    let JobPage { total, .. } = store.list_jobs(page("alice")).await.unwrap();
    assert_eq!(total, 2);
    assert!(store.job_visible_to("a".into(), "bob".into()).await.unwrap().is_none());
    assert!(store.job_visible_to("a".into(), "alice".into()).await.unwrap().is_some());
}

/// The totals a listing takes from `job_counts` equal the rows it lists,
/// for every filter, through creations, state changes and deletions.
#[tokio::test]
async fn listing_totals_follow_every_change_of_a_job() {
    let (_dir, store) = temp_store();
    let owners = ["alice", "bob", "carol"];
    let groups: [&[&str]; 4] = [&[], &["gpu-a"], &["gpu-b"], &["gpu-a", "gpu-b"]];
    let states = ["Queueing", "Running", "Completed", "Archived"];
    for k in 0..60usize {
        let mut row = job_row(
            &format!("job-{k:02}"),
            owners[k % 3],
            if k % 4 == 0 { "private" } else { "public" },
            k as i64,
            states[k % 4],
        );
        row.node_groups = groups[k % 4].iter().map(|g| g.to_string()).collect();
        store.insert_job(row, vec![]).await.unwrap();
    }
    let filters = || {
        let mut filters = Vec::new();
        for viewer in owners {
            for mode in [QueryMode::AliveOnly, QueryMode::ArchiveOnly, QueryMode::AliveAndArchive] {
                for states in [vec![], vec![JobState::Running], vec![JobState::Completed, JobState::Queueing]] {
                    for created_by in [vec![], vec!["bob".to_string()]] {
                        for (node_groups, any_group_matches) in
                            [(vec![], false), (vec!["gpu-a".to_string()], true), (vec!["gpu-b".to_string()], false)]
                        {
                            filters.push(JobFilter {
                                viewer: viewer.into(),
                                mode,
                                states: states.clone(),
                                created_by: created_by.clone(),
                                node_groups,
                                any_group_matches,
                                page: 1,
                                page_size: 500,
                                ..JobFilter::default()
                            });
                        }
                    }
                }
            }
        }
        filters
    };
    let check = |when: &'static str| {
        let store = store.clone();
        async move {
            for filter in filters() {
                let JobPage { rows, total, .. } = store.list_jobs(filter.clone()).await.unwrap();
                assert_eq!(total, rows.len() as i64, "{when}: {filter:?}");
            }
        }
    };
    check("after creation").await;
    for k in (0..60usize).step_by(3) {
        let id = format!("job-{k:02}");
        let mut runtime = store.job(id.clone()).await.unwrap().unwrap().runtime;
        runtime.state = JobState::parse(states[(k + 1) % 4]).unwrap();
        store.update_job_runtime(id.clone(), runtime.clone(), None, vec![]).await.unwrap();
        // Writing the same state again changes no count.
        store.update_job_runtime(id, runtime, None, vec![]).await.unwrap();
    }
    check("after state changes").await;
    for k in (0..60usize).step_by(7) {
        store.delete_job(format!("job-{k:02}")).await.unwrap();
    }
    check("after deletions").await;
    // A deleted job leaves the name index too.
    let search = |q: &str| JobFilter {
        viewer: "alice".into(),
        q: Some(q.into()),
        mode: QueryMode::AliveAndArchive,
        page: 1,
        page_size: 500,
        ..JobFilter::default()
    };
    assert_eq!(store.list_jobs(search("job-07")).await.unwrap().total, 0);
    assert_eq!(store.list_jobs(search("job-09")).await.unwrap().total, 1);
    let indexed: i64 = store.read(|c| c.query_row("SELECT COUNT(*) FROM job_search", [], |r| r.get(0))).await.unwrap();
    assert_eq!(indexed, 60 - 9);
    let counted: i64 = store.read(|c| c.query_row("SELECT SUM(n) FROM job_counts", [], |r| r.get(0))).await.unwrap();
    assert_eq!(counted, 60 - 9);
}

#[tokio::test]
async fn duplicate_job_ids_are_a_conflict_and_keep_the_first() {
    let (_dir, store) = temp_store();
    let row = job_row("x", "a", "public", 1, "Queueing");
    store.insert_job(row.clone(), vec![]).await.unwrap();
    let second = JobRow { name: "second".into(), ..row };
    assert!(matches!(store.insert_job(second, vec![]).await, Err(StoreError::DuplicateJob(_))));
    let kept = store.job_visible_to("x".into(), "a".into()).await.unwrap().unwrap();
    assert_eq!(kept.name, "x");
}

#[tokio::test]
async fn listings_filter_sort_and_page() {
    let (_dir, store) = temp_store();
    let jobs = [
        ("train-a", "alice", 1, "Running", ",gpu-a,", r#"{"labels":{"team":"nlp"}}"#),
        ("train-b", "bob", 2, "Completed", ",cpu,", r#"{"labels":{"team":"cv"}}"#),
        ("eval-c", "alice", 3, "Archived", "", "{}"),
        ("eval-d", "albert", 4, "Queueing", ",gpu-b,", "{}"),
    ];
    for (id, owner, at, state, groups, metadata) in jobs {
        let mut row = job_row(id, owner, "public", at, state);
        row.node_groups = groups.split(',').filter(|g| !g.is_empty()).map(String::from).collect();
        row.metadata = serde_json::from_str(metadata).unwrap();
        store.insert_job(row, vec![]).await.unwrap();
    }
    let ids = |rows: Vec<JobRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let cases: Vec<(JobFilter, Vec<&str>, i64)> = vec![
        (page("x"), vec!["eval-d", "train-b", "train-a"], 3),
        (JobFilter { mode: QueryMode::ArchiveOnly, ..page("x") }, vec!["eval-c"], 1),
        (
            JobFilter { mode: QueryMode::AliveAndArchive, ..page("x") },
            vec!["eval-d", "eval-c", "train-b", "train-a"],
            4,
        ),
        (JobFilter { q: Some("TRAIN".into()), ..page("x") }, vec!["train-b", "train-a"], 2),
        (JobFilter { q: Some("%".into()), ..page("x") }, vec![], 0),
        // Three characters or more go through the trigram index, fewer
        // through the walk; both are case-insensitive substrings.
        (JobFilter { q: Some("ain-".into()), ..page("x") }, vec!["train-b", "train-a"], 2),
        (JobFilter { q: Some("Ai".into()), ..page("x") }, vec!["train-b", "train-a"], 2),
        (JobFilter { q: Some("val-d".into()), ..page("x") }, vec!["eval-d"], 1),
        (JobFilter { q: Some("\"al".into()), ..page("x") }, vec![], 0),
        (JobFilter { q: Some("train-a-x".into()), ..page("x") }, vec![], 0),
        (JobFilter { states: vec![JobState::Running, JobState::Queueing], ..page("x") }, vec!["eval-d", "train-a"], 2),
        (JobFilter { node_groups: vec!["gpu".into()], ..page("x") }, vec![], 0),
        (JobFilter { node_groups: vec!["gpu-a".into()], ..page("x") }, vec!["train-a"], 1),
        (JobFilter { node_groups: vec!["gpu-a".into(), "gpu-b".into()], ..page("x") }, vec!["eval-d", "train-a"], 2),
        (
            JobFilter {
                node_groups: vec!["cpu".into()],
                any_group_matches: true,
                mode: QueryMode::AliveAndArchive,
                ..page("x")
            },
            vec!["eval-c", "train-b"],
            2,
        ),
        (JobFilter { created_by: vec!["al".into()], ..page("x") }, vec![], 0),
        (JobFilter { created_by: vec!["alice".into(), "albert".into()], ..page("x") }, vec!["eval-d", "train-a"], 2),
        (JobFilter { created_by: vec!["ALICE".into()], ..page("x") }, vec![], 0),
        (JobFilter { labels: selector("team=cv"), ..page("x") }, vec!["train-b"], 1),
        (JobFilter { labels: selector("team"), ..page("x") }, vec!["train-b", "train-a"], 2),
        (JobFilter { labels: selector("!team"), ..page("x") }, vec!["eval-d"], 1),
        // As in Kubernetes, a negative condition matches a job without the key.
        (JobFilter { labels: selector("team!=cv"), ..page("x") }, vec!["eval-d", "train-a"], 2),
        (JobFilter { labels: selector("team in (cv, nlp, x)"), ..page("x") }, vec!["train-b", "train-a"], 2),
        (JobFilter { labels: selector("team notin (nlp)"), ..page("x") }, vec!["eval-d", "train-b"], 2),
        (JobFilter { labels: selector("team in (cv),team!=cv"), ..page("x") }, vec![], 0),
        (JobFilter { sort: SortKey::Name, ascending: true, ..page("x") }, vec!["eval-d", "train-b", "train-a"], 3),
        (JobFilter { sort: SortKey::State, ascending: true, ..page("x") }, vec!["train-b", "eval-d", "train-a"], 3),
        (JobFilter { page: 2, page_size: 2, ..page("x") }, vec!["train-a"], 3),
    ];
    for (filter, expected, total) in cases {
        let description = format!("{filter:?}");
        let JobPage { rows, total: got_total, .. } = store.list_jobs(filter).await.unwrap();
        assert_eq!(ids(rows), expected, "{description}");
        assert_eq!(got_total, total, "{description}");
    }
}

#[tokio::test]
async fn repeated_events_are_counted_not_duplicated() {
    let (_dir, store) = temp_store();
    let event = |reason: &str, time: i64| EventRow {
        job_id: "j".into(),
        kind: EventType::Normal,
        reason: reason.into(),
        message: "m".into(),
        regarding_kind: "Job".into(),
        regarding_name: "j".into(),
        time,
    };
    store.record_event(event("Queued", 1)).await.unwrap();
    store.record_event(event("Queued", 2)).await.unwrap();
    store.record_event(event("Started", 3)).await.unwrap();
    let events = store.events_of("j".into()).await.unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!((events[0].reason.as_str(), events[0].count), ("Started", 1));
    assert_eq!((events[1].reason.as_str(), events[1].count, events[1].last_time), ("Queued", 2, 2));
}

#[tokio::test]
async fn finished_replicas_are_final() {
    let (_dir, store) = temp_store();
    let row = |phase: &str, exit: Option<i64>| ReplicaRow {
        job_id: "j".into(),
        phase: jobdeck_api::ReplicaPhase::parse(phase).unwrap(),
        exit_code: exit,
        ..ReplicaRow::default()
    };
    store.upsert_replica(row("running", None)).await.unwrap();
    store.upsert_replica(row("failed", Some(3))).await.unwrap();
    store.upsert_replica(row("running", None)).await.unwrap();
    store.upsert_replica(row("failed", Some(9))).await.unwrap();
    let got = store.replica("j".into(), 0, 0).await.unwrap().unwrap();
    assert_eq!((got.phase.as_str(), got.exit_code), ("failed", Some(3)));
}

/// A secret named `TOKEN`.
fn secret(owner: &str, visibility: &str, value: &str, at: i64) -> SecretRow {
    SecretRow {
        owner: owner.into(),
        name: "TOKEN".into(),
        value: value.into(),
        visibility: Visibility::parse(visibility).expect("a visibility"),
        tags: vec![],
        created_at: at,
        updated_at: at,
    }
}

#[tokio::test]
async fn secrets_resolve_own_first_then_public() {
    let (_dir, store) = temp_store();
    store.put_secrets(vec![secret("alice", "private", "a", 1), secret("bob", "public", "b", 2)]).await.unwrap();
    let resolve = |who: &str| store.resolve_secret(who.into(), "TOKEN".into(), None);
    assert_eq!(resolve("alice").await.unwrap().as_deref(), Some("a"));
    assert_eq!(resolve("carol").await.unwrap().as_deref(), Some("b"));
    store.put_secrets(vec![secret("carol", "private", "c", 3)]).await.unwrap();
    assert_eq!(resolve("carol").await.unwrap().as_deref(), Some("c"));
    assert_eq!(store.secrets_visible_to("alice".into()).await.unwrap().len(), 2);
    assert!(store.delete_secret("alice".into(), "TOKEN".into()).await.unwrap());
    assert!(!store.delete_secret("alice".into(), "TOKEN".into()).await.unwrap());
    assert_eq!(resolve("alice").await.unwrap().as_deref(), Some("b"));
}

/// A public name belongs to its first owner: another user's public
/// secret of that name is refused whole; a pinned reference reads only
/// its owner's secret, and only while the job's creator may.
#[tokio::test]
async fn a_public_secret_name_cannot_be_taken_over() {
    let (_dir, store) = temp_store();
    assert_eq!(store.put_secrets(vec![secret("alice", "public", "a", 1)]).await.unwrap(), None);
    let taken = store.put_secrets(vec![secret("mallory", "public", "m", 2)]).await.unwrap();
    assert_eq!(taken, Some(TakenName { name: "TOKEN".into(), owner: "alice".into() }));
    assert_eq!(store.secrets_visible_to("bob".into()).await.unwrap().len(), 1, "nothing was written");
    // Private under the same name is the owner's own business.
    assert_eq!(store.put_secrets(vec![secret("mallory", "private", "m", 3)]).await.unwrap(), None);
    let pinned = |owner: &str| store.resolve_secret("bob".into(), "TOKEN".into(), Some(owner.into()));
    assert_eq!(pinned("alice").await.unwrap().as_deref(), Some("a"));
    assert_eq!(pinned("mallory").await.unwrap(), None, "another user's private secret");
    // Alice may update her own public secret.
    assert_eq!(store.put_secrets(vec![secret("alice", "public", "a2", 4)]).await.unwrap(), None);
    assert_eq!(pinned("alice").await.unwrap().as_deref(), Some("a2"));
}

/// A provider's user is known by issuer and subject: one called "admin" is
/// never the local admin (a suffix makes its name unique), signs in as the
/// same user every time, and another issuer's subject is someone else.
/// A database of schema 8 keeps its users and gains the columns.
#[tokio::test]
async fn users_of_an_identity_provider_are_known_by_issuer_and_subject() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 8);
        conn.execute_batch("INSERT INTO users (id, name, created_at, role) VALUES (1, 'admin', 1, 'admin');").unwrap();
    }
    let store = Store::open(&path).unwrap();
    let provider = |name: &str, issuer: &str, subject: &str| NewIdentityUser {
        name: name.into(),
        issuer: issuer.into(),
        subject: subject.into(),
        email: Some(format!("{subject}@example.com")),
        role: Role::Member,
        now: 5,
    };
    let claimed = store.create_identity_user(provider("admin", "https://id.a", "s1")).await.unwrap();
    assert_eq!((claimed.name.as_str(), claimed.role), ("admin-2", Role::Member));
    assert_eq!(store.user("admin").await.unwrap().map(|u| (u.id, u.role)), Some((1, Role::Admin)));
    let again = store.create_identity_user(provider("renamed", "https://id.a", "s1")).await.unwrap();
    assert_eq!(again, claimed, "the same identity is the same user, whatever name it suggests now");
    assert_eq!(store.user_by_identity("https://id.a", "s1").await.unwrap(), Some(claimed.clone()));
    let other = store.create_identity_user(provider("admin", "https://id.a", "s2")).await.unwrap();
    assert_eq!(other.name, "admin-3");
    let elsewhere = store.create_identity_user(provider("ann", "https://id.b", "s1")).await.unwrap();
    assert_ne!(elsewhere.id, claimed.id, "another issuer's subject is another person");
    assert_eq!(store.user_by_identity("https://id.b", "s2").await.unwrap(), None);
}

/// Reruns come in a column at schema 15: a failed job of the previous
/// release (schema 14) and its replicas read back whole, with no rerun;
/// a rerun stored after the upgrade names it, and only those who may see
/// the rerun find it.
#[tokio::test]
async fn a_failed_job_of_the_previous_release_can_be_rerun_after_the_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 14);
        conn.execute_batch(
            r#"INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec, run)
                 VALUES ('shard-aaaaa', 'shard', 'alice', 'public', 1, 'Failed', '{}', '{"completions":4}', 1);
             INSERT INTO replicas (job_id, completion_index, attempt, run, phase, created_at, updated_at)
                 VALUES ('shard-aaaaa', 0, 0, 0, 'succeeded', 1, 1), ('shard-aaaaa', 0, 1, 1, 'succeeded', 1, 1),
                        ('shard-aaaaa', 1, 0, 0, 'succeeded', 1, 1), ('shard-aaaaa', 1, 1, 1, 'failed', 1, 1),
                        ('shard-aaaaa', 2, 1, 1, 'succeeded', 1, 1);"#,
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let job = store.job("shard-aaaaa".into()).await.unwrap().expect("the job survives");
    assert_eq!((job.runtime.state, job.spec.completions, job.rerun_of), (JobState::Failed, Some(4), None));
    assert_eq!(store.succeeded_indexes("shard-aaaaa".into(), 1).await.unwrap(), [0, 2], "the last run's only");
    let rerun = JobRow {
        rerun_of: Some("shard-aaaaa".into()),
        spec: JobSpec { completions: Some(4), completion_indexes: Some(vec![1, 3]), ..JobSpec::default() },
        ..job_row("shard-rerun-bbbbb", "alice", "private", 2, "Queueing")
    };
    store.insert_job(rerun, Vec::new()).await.unwrap();
    let stored = store.job("shard-rerun-bbbbb".into()).await.unwrap().unwrap();
    assert_eq!((stored.rerun_of.as_deref(), stored.spec.completion_indexes), (Some("shard-aaaaa"), Some(vec![1, 3])));
    assert_eq!(store.reruns_visible_to("shard-aaaaa".into(), "alice".into()).await.unwrap(), ["shard-rerun-bbbbb"]);
    assert!(store.reruns_visible_to("shard-aaaaa".into(), "bob".into()).await.unwrap().is_empty(), "private");
}
