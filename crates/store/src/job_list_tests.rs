//! The list at scale on a real SQLite file: pages read from the list's end
//! are the same list; the state and creator indexes change which rows a
//! selective listing reads, never which it answers; labels live in
//! `job_labels` from creation to deletion, and a previous release's jobs
//! get theirs; a name or label total stops counting at the cap.

use std::collections::BTreeMap;

use jobdeck_api::JobState;

use super::tests::{database_of_schema, job_row};
use super::*;

fn everything(viewer: &str) -> JobFilter {
    JobFilter {
        viewer: viewer.into(),
        mode: QueryMode::AliveAndArchive,
        page: 1,
        page_size: 500,
        ..JobFilter::default()
    }
}

fn ids(rows: &[JobRow]) -> Vec<String> {
    rows.iter().map(|r| r.id.clone()).collect()
}

/// Every page of `filter`, `size` at a time, in order: the first half read
/// forwards, the rest from the list's end.
async fn paged(store: &Store, filter: &JobFilter, size: i64) -> Vec<String> {
    let mut all = Vec::new();
    for page in 1.. {
        let got = store.list_jobs(JobFilter { page, page_size: size, ..filter.clone() }).await.unwrap();
        assert_eq!(got.total, store.list_jobs(filter.clone()).await.unwrap().total);
        if got.rows.is_empty() {
            break;
        }
        all.extend(ids(&got.rows));
    }
    all
}

#[tokio::test]
async fn every_page_read_from_either_end_is_the_list_in_order() {
    let (_dir, store) = tests::temp_store();
    let owners = ["alice", "bob", "carol"];
    let states = ["Completed", "Failed", "Stopped", "Archived", "Completed", "Completed"];
    // 70 jobs, some created in the same millisecond (ties are ordered by
    // id), one running: a listing of it is selective.
    for k in 0..70usize {
        let name = ["train", "eval", "sweep"][k % 3];
        let state = if k == 33 { "Running" } else { states[k % states.len()] };
        let visibility = if k % 5 == 0 { "private" } else { "public" };
        let mut row = job_row(&format!("{name}-{k:02}"), owners[k % 3], visibility, (k / 3) as i64, state);
        row.name = name.into();
        let team = if k % 4 == 0 { "nlp" } else { "cv" };
        row.metadata = serde_json::from_value(serde_json::json!({"labels": {"team": team}})).unwrap();
        store.insert_job(row, vec![]).await.unwrap();
    }
    let mut filters = Vec::new();
    for sort in [SortKey::CreatedAt, SortKey::Name, SortKey::State] {
        for ascending in [false, true] {
            for viewer in ["alice", "bob"] {
                let base = JobFilter { sort, ascending, ..everything(viewer) };
                filters.push(base.clone());
                filters.push(JobFilter { states: vec![JobState::Running], ..base.clone() });
                filters.push(JobFilter { states: vec![JobState::Completed], ..base.clone() });
                filters.push(JobFilter { created_by: vec!["carol".into()], ..base.clone() });
                filters.push(JobFilter { mode: QueryMode::AliveOnly, ..base.clone() });
                filters.push(JobFilter { q: Some("ai".into()), ..base.clone() });
                let team_nlp = jobdeck_api::parse_label_selector("team=nlp").unwrap();
                filters.push(JobFilter { labels: team_nlp.clone(), ..base.clone() });
                // The label's index tests state, creator and visibility on
                // its own copies of them (migration 20).
                filters.push(JobFilter { labels: team_nlp.clone(), states: vec![JobState::Completed], ..base.clone() });
                filters.push(JobFilter {
                    labels: team_nlp.clone(),
                    created_by: vec!["carol".into()],
                    mode: QueryMode::AliveOnly,
                    ..base.clone()
                });
                filters.push(JobFilter { labels: team_nlp, created_by_prefixes: vec!["al".into()], ..base });
            }
        }
    }
    for filter in filters {
        let whole = store.list_jobs(filter.clone()).await.unwrap();
        assert_eq!(whole.total, whole.rows.len() as i64, "{filter:?}");
        assert!(!whole.total_capped);
        for size in [1, 7, 50] {
            assert_eq!(paged(&store, &filter, size).await, ids(&whole.rows), "pages of {size}: {filter:?}");
        }
    }
    // A `key=value` label drives the listing from the label's index; a set
    // of one value walks the list: the same jobs in the same order.
    for ascending in [false, true] {
        for viewer in ["alice", "bob"] {
            let with = |selector: &str| JobFilter {
                ascending,
                labels: jobdeck_api::parse_label_selector(selector).unwrap(),
                ..everything(viewer)
            };
            let driven = store.list_jobs(with("team=nlp,team!=x")).await.unwrap();
            let walked = store.list_jobs(with("team in (nlp),team!=x")).await.unwrap();
            assert_eq!(ids(&driven.rows), ids(&walked.rows));
            assert_eq!(driven.total, walked.total);
            assert!(driven.total > 0);
            // Counted on the label's index alone (a name), and through the
            // jobs (a node group, which the label's entries do not copy).
            for narrowed in [
                JobFilter { q: Some("ai".into()), ..JobFilter::default() },
                JobFilter { node_groups: vec!["g".into()], any_group_matches: true, ..JobFilter::default() },
            ] {
                let and = |filter: JobFilter| JobFilter {
                    q: narrowed.q.clone(),
                    node_groups: narrowed.node_groups.clone(),
                    any_group_matches: narrowed.any_group_matches,
                    ..filter
                };
                let driven = store.list_jobs(and(with("team=nlp"))).await.unwrap();
                let walked = store.list_jobs(and(with("team in (nlp)"))).await.unwrap();
                assert_eq!(ids(&driven.rows), ids(&walked.rows), "{narrowed:?}");
                assert_eq!(driven.total, walked.total, "{narrowed:?}");
                assert!(driven.total > 0, "{narrowed:?}");
            }
        }
    }
    // The running job is found through the state index: the same answer.
    let running = store.list_jobs(JobFilter { states: vec![JobState::Running], ..everything("bob") }).await.unwrap();
    assert_eq!(ids(&running.rows), ["train-33"]);
}

#[tokio::test]
async fn labels_follow_their_job_from_creation_to_deletion() {
    let (_dir, store) = tests::temp_store();
    let mut row = job_row("a-1", "alice", "public", 1, "Completed");
    row.metadata =
        serde_json::from_value(serde_json::json!({"labels": {"team": "nlp", "quote": "it's \"x\""}})).unwrap();
    store.insert_job(row, vec![]).await.unwrap();
    store.insert_job(job_row("b-1", "alice", "public", 2, "Completed"), vec![]).await.unwrap();
    let labelled = |selector: &str| {
        let store = store.clone();
        let labels = jobdeck_api::parse_label_selector(selector).unwrap();
        async move { ids(&store.list_jobs(JobFilter { labels, ..everything("bob") }).await.unwrap().rows) }
    };
    assert_eq!(labelled("team=nlp").await, ["a-1"]);
    assert_eq!(labelled("!team").await, ["b-1"]);
    assert_eq!(labelled("quote").await, ["a-1"]);
    // A job's metadata rewritten (as an owner change would) brings its
    // labels along.
    store
        .write(|tx| Ok(tx.execute("UPDATE jobs SET metadata = '{\"labels\":{\"team\":\"cv\"}}' WHERE id = 'a-1'", [])?))
        .await
        .unwrap();
    assert_eq!(labelled("team=nlp").await, Vec::<String>::new());
    assert_eq!(labelled("team=cv").await, ["a-1"]);
    assert_eq!(labelled("quote").await, Vec::<String>::new());
    // The label's copies of the job's state and owner follow them.
    let failed_of = |owner: &str| {
        let store = store.clone();
        let filter = JobFilter {
            labels: jobdeck_api::parse_label_selector("team=cv").unwrap(),
            states: vec![JobState::Failed],
            created_by: vec![owner.into()],
            ..everything("bob")
        };
        async move { ids(&store.list_jobs(filter).await.unwrap().rows) }
    };
    assert_eq!(failed_of("alice").await, Vec::<String>::new());
    store
        .write(|tx| Ok(tx.execute("UPDATE jobs SET state = 'Failed', created_by = 'carol' WHERE id = 'a-1'", [])?))
        .await
        .unwrap();
    assert_eq!(failed_of("alice").await, Vec::<String>::new());
    assert_eq!(failed_of("carol").await, ["a-1"]);
    store.delete_job("a-1".into()).await.unwrap();
    let rows: i64 = store.read(|c| c.query_row("SELECT COUNT(*) FROM job_labels", [], |r| r.get(0))).await.unwrap();
    assert_eq!(rows, 0, "the deleted job's labels went with it");
}

/// The current store opened on a database of schema `schema` holding the
/// jobs `rows` (the `VALUES` of an insert of id, name, owner, visibility,
/// creation, state, metadata and spec), as that release left them.
fn store_upgraded_from(schema: usize, rows: &str) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    database_of_schema(&path, schema)
        .execute_batch(&format!(
            "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec) VALUES {rows};"
        ))
        .unwrap();
    let store = Store::open(&path).unwrap();
    (dir, store)
}

/// Migration 19 gives every job of the previous release its labels; one
/// whose metadata cannot be read gets none, and the upgrade goes on.
#[tokio::test]
async fn the_previous_releases_jobs_get_their_labels() {
    let (_dir, store) = store_upgraded_from(
        18,
        "('a-1', 'a', 'alice', 'public', 1, 'Completed', '{\"labels\":{\"team\":\"nlp\",\"n\":\"1\"}}', '{}'),
         ('b-1', 'b', 'alice', 'public', 2, 'Completed', '{}', '{}'),
         ('c-1', 'c', 'alice', 'public', 3, 'Completed', 'not json', '{}')",
    );
    let rows: i64 = store.read(|c| c.query_row("SELECT COUNT(*) FROM job_labels", [], |r| r.get(0))).await.unwrap();
    assert_eq!(rows, 2, "a-1's two labels");
    // The unreadable job is left out of the listings below (a listing
    // cannot show it either way).
    store.write(|tx| Ok(tx.execute("DELETE FROM jobs WHERE id = 'c-1'", [])?)).await.unwrap();
    let labelled = |selector: &str| {
        let store = store.clone();
        let labels = jobdeck_api::parse_label_selector(selector).unwrap();
        async move { ids(&store.list_jobs(JobFilter { labels, ..everything("bob") }).await.unwrap().rows) }
    };
    assert_eq!(labelled("team=nlp,n=1").await, ["a-1"]);
    assert_eq!(labelled("!team").await, ["b-1"]);
    let listed = store.list_jobs(everything("bob")).await.unwrap();
    assert_eq!(listed.total, 2, "nothing else lost");
}

/// Migration 20 copies each labelled job's visibility, owner and state into
/// its labels' entries: a release-19 store's labelled jobs are found by a
/// label with a state or an owner after the upgrade, and a private one
/// stays its owner's.
#[tokio::test]
async fn the_previous_releases_labels_learn_their_jobs_state_and_owner() {
    let (_dir, store) = store_upgraded_from(
        19,
        "('a-1', 'a', 'alice', 'public', 1, 'Failed', '{\"labels\":{\"team\":\"nlp\"}}', '{}'),
         ('b-1', 'b', 'alice', 'private', 2, 'Failed', '{\"labels\":{\"team\":\"nlp\"}}', '{}'),
         ('c-1', 'c', 'bob', 'public', 3, 'Completed', '{\"labels\":{\"team\":\"nlp\"}}', '{}')",
    );
    let listed = |viewer: &str, states: Vec<JobState>, created_by: Vec<String>| {
        let store = store.clone();
        let filter = JobFilter {
            labels: jobdeck_api::parse_label_selector("team=nlp").unwrap(),
            states,
            created_by,
            ..everything(viewer)
        };
        async move { ids(&store.list_jobs(filter).await.unwrap().rows) }
    };
    assert_eq!(listed("alice", vec![JobState::Failed], vec![]).await, ["b-1", "a-1"]);
    assert_eq!(listed("bob", vec![JobState::Failed], vec![]).await, ["a-1"], "b-1 is alice's");
    assert_eq!(listed("bob", vec![], vec!["bob".into()]).await, ["c-1"]);
    assert_eq!(listed("bob", vec![], vec![]).await, ["c-1", "a-1"]);
}

#[tokio::test]
async fn a_name_or_label_total_stops_counting_at_the_cap() {
    let (_dir, store) = tests::temp_store();
    let jobs = TOTAL_COUNT_CAP + 2;
    store
        .write(move |tx| {
            for k in 0..jobs {
                tx.execute(
                    "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec)
                     VALUES (?1, 'e', 'alice', 'public', ?2, 'Completed', '{\"labels\":{\"team\":\"nlp\"}}', '{}')",
                    rusqlite::params![format!("e-{k:06}"), k],
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
    for filter in [
        JobFilter { q: Some("e-".into()), ..everything("bob") },
        JobFilter { labels: jobdeck_api::parse_label_selector("team=nlp").unwrap(), ..everything("bob") },
    ] {
        let listed = store.list_jobs(JobFilter { page_size: 50, ..filter.clone() }).await.unwrap();
        assert_eq!((listed.total, listed.total_capped), (TOTAL_COUNT_CAP, true), "{filter:?}");
        assert_eq!(listed.rows[0].id, format!("e-{:06}", jobs - 1), "newest first");
        // A page past the cap is still read (forwards: the total is not known).
        let far = store.list_jobs(JobFilter { page: TOTAL_COUNT_CAP / 50 + 1, page_size: 50, ..filter }).await.unwrap();
        assert_eq!(ids(&far.rows), ["e-000001", "e-000000"]);
    }
    let exact = store.list_jobs(everything("bob")).await.unwrap();
    assert_eq!((exact.total, exact.total_capped), (jobs, false), "the counts table stays exact");
}

/// A two-character search goes through the trigram index (every trigram
/// around the two) and finds them at either end of an id and inside it;
/// one the index has never seen answers at once.
#[tokio::test]
async fn a_two_character_search_finds_the_pair_anywhere_in_an_id() {
    let (_dir, store) = tests::temp_store();
    for (k, id) in ["qz-aaaaa", "a-bbbqz", "xqzx-ccccc", "q-zzzzz", "train-ddddd"].into_iter().enumerate() {
        store.insert_job(job_row(id, "alice", "public", k as i64, "Completed"), vec![]).await.unwrap();
    }
    let found = |q: &str| {
        let store = store.clone();
        let filter = JobFilter { q: Some(q.into()), ..everything("bob") };
        async move { ids(&store.list_jobs(filter).await.unwrap().rows) }
    };
    assert_eq!(found("QZ").await, ["xqzx-ccccc", "a-bbbqz", "qz-aaaaa"]);
    assert_eq!(found("zq").await, Vec::<String>::new());
    assert_eq!(found("-z").await, ["q-zzzzz"]);
    assert_eq!(found("\"q").await, Vec::<String>::new());
    assert_eq!(found("z").await.len(), 4);
}

/// The trigram counts (migration 22) of `store`, those above zero.
async fn trigram_counts(store: &Store) -> BTreeMap<String, i64> {
    store
        .read(|c| {
            let mut stmt = c.prepare("SELECT trigram, n FROM job_trigram_counts WHERE n > 0")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<BTreeMap<String, i64>>>()
        })
        .await
        .unwrap()
}

/// A search of four characters or more asks the index for its two rarest
/// trigrams, then keeps the ids that hold the whole text: an id holding
/// every trigram of it, but not together, is not found; counts follow jobs
/// in and out.
#[tokio::test]
async fn a_long_search_finds_the_text_through_its_rarest_trigrams_and_nothing_else() {
    let (_dir, store) = tests::temp_store();
    let mut stored = vec!["abcde-11111".to_string(), "xx-abcde-yy".to_string(), "abcd-cde-zz".to_string()];
    // Ids that make `abc` and `bcd` common and `cde` rare.
    stored.extend((0..30).map(|k| format!("abcd-{k:05}")));
    for (k, id) in stored.iter().enumerate() {
        store.insert_job(job_row(id, "alice", "public", k as i64, "Completed"), vec![]).await.unwrap();
    }
    let counts = trigram_counts(&store).await;
    assert_eq!((counts["abc"], counts["bcd"], counts["cde"]), (33, 33, 3));
    assert_eq!(counts["-11"], 1, "an id's trigram counts once, however often it holds it");
    let found = |q: &str| {
        let store = store.clone();
        let filter = JobFilter { q: Some(q.into()), ..everything("bob") };
        async move { ids(&store.list_jobs(filter).await.unwrap().rows) }
    };
    assert_eq!(found("ABCDE").await, ["xx-abcde-yy", "abcde-11111"]);
    assert_eq!(found("cde-z").await, ["abcd-cde-zz"]);
    assert_eq!(found("abcd-0001").await.len(), 10);
    assert_eq!(found("qqqq").await, Vec::<String>::new(), "a trigram no id holds");
    store.write(|tx| Ok(tx.execute("DELETE FROM jobs WHERE id = 'xx-abcde-yy'", [])?)).await.unwrap();
    let counts = trigram_counts(&store).await;
    assert_eq!((counts["cde"], counts.get("xx-")), (2, None));
    assert_eq!(found("abcde").await, ["abcde-11111"]);
}

/// Migration 22 counts the trigrams of a release-21 store's jobs, and its
/// searches find them after the upgrade.
#[tokio::test]
async fn the_previous_releases_ids_get_their_trigrams_counted() {
    let (_dir, store) = store_upgraded_from(
        21,
        "('sweep-11-aaaaa', 'sweep', 'alice', 'public', 1, 'Completed', '{}', '{}'),
         ('sweep-12-bbbbb', 'sweep', 'alice', 'public', 2, 'Completed', '{}', '{}'),
         ('eval-11-ccccc', 'eval', 'alice', 'public', 3, 'Completed', '{}', '{}')",
    );
    let counts = trigram_counts(&store).await;
    assert_eq!((counts["swe"], counts["-11"], counts["al-"], counts["aaa"]), (2, 2, 1, 1));
    let filter = JobFilter { q: Some("sweep-11-".into()), ..everything("bob") };
    assert_eq!(ids(&store.list_jobs(filter).await.unwrap().rows), ["sweep-11-aaaaa"]);
    // New jobs are counted by the triggers from then on.
    store.insert_job(job_row("sweep-11-ddddd", "alice", "public", 4, "Completed"), vec![]).await.unwrap();
    assert_eq!(trigram_counts(&store).await["-11"], 3);
}

/// Texts whose trigrams more ids hold than the index's limit go to the
/// walk without asking the index, and find what it would have: a pair and
/// a trigram held by every job, and a long text whose rare trigrams are
/// not rare enough.
#[tokio::test]
async fn a_search_the_counts_call_common_finds_by_walking() {
    let (_dir, store) = tests::temp_store();
    let jobs = crate::job_list::SEARCH_INDEX_MAX_MATCHES + 100;
    store
        .write(move |tx| {
            for k in 0..jobs {
                tx.execute(
                    "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec)
                     VALUES (?1, 'ab', 'alice', 'public', ?2, 'Completed', '{}', '{}')",
                    rusqlite::params![format!("ab-{k:05}"), k],
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(trigram_counts(&store).await["ab-"], jobs);
    let listed = |q: &str| {
        let store = store.clone();
        let filter = JobFilter { q: Some(q.into()), page_size: 3, ..everything("bob") };
        async move {
            let page = store.list_jobs(filter).await.unwrap();
            (ids(&page.rows), page.total, page.total_capped)
        }
    };
    let newest = vec![format!("ab-{:05}", jobs - 1), format!("ab-{:05}", jobs - 2), format!("ab-{:05}", jobs - 3)];
    assert_eq!(listed("AB").await, (newest.clone(), TOTAL_COUNT_CAP, true));
    assert_eq!(listed("ab-").await, (newest.clone(), TOTAL_COUNT_CAP, true));
    assert_eq!(listed("ab-0").await, (newest, TOTAL_COUNT_CAP, true));
    assert_eq!(listed("ab-0010").await.0, ["ab-00109", "ab-00108", "ab-00107"]);
    assert_eq!(listed("ab-0010").await.1, 10);
    assert_eq!(listed("b-020").await.1, 100);
}
