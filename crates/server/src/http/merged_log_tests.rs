use super::*;
use crate::http::lepton_logs::AttemptScan;
use crate::http::merged_download::MergedText;
use jobdeck_api::logs::MergedMatch;
use jobdeck_store::logs::{LogWriter, Stream};

fn pairs(query: &str) -> Vec<(String, String)> {
    query_pairs(Some(query))
}

fn refused(query: &str) -> String {
    match MergedQuery::parse(&pairs(query)) {
        Err(AppError::BadRequest(message)) => message,
        other => panic!("{query}: {other:?}"),
    }
}

#[test]
fn bad_queries_name_the_parameter() {
    let cases = [
        ("limit=0", "limit must be a whole number from 1 to 5000"),
        ("before=x", "before must be a line's <time>:<replica>"),
        ("after=5", "after must be a line's <time>:<replica>"),
        ("after=-5:job-0-0", "after must be a line's <time>:<replica>"),
        ("around=job-0-0:0", "around must be <replica>:<line number>"),
        ("around=7", "around must be <replica>:<line number>"),
        ("before=5:a&after=6:a", "before and after cannot be combined"),
        ("download=true&around=a:3", "cannot be combined with around"),
        ("replicas=,", "replicas must name 1 to 256 replicas"),
        ("q=a%0Ab", "q must not contain control characters"),
        ("from_start=maybe", "from_start must be true or false"),
        ("page=2", "unknown parameter 'page'"),
        ("wait=5", "wait follows new lines: it needs after"),
        ("wait=5&before=5:a", "wait follows new lines: it needs after"),
        ("wait=31&after=5:a", "wait must be a whole number from 0 to 30"),
    ];
    for (query, says) in cases {
        let message = refused(query);
        assert!(message.contains(says), "{query}: {message}");
    }
    let query =
        MergedQuery::parse(&pairs("replicas=j-1-0,j-0-0&after=1700000000123000001:j-0-0&limit=7&q=loss")).unwrap();
    assert_eq!(query.replicas, Some(vec!["j-1-0".to_string(), "j-0-0".to_string()]));
    assert_eq!(query.at, PageAt::After(Place { nanos: 1_700_000_000_123_000_001, replica: "j-0-0".into() }));
    assert_eq!((query.limit, query.text.as_str(), query.wait), (7, "loss", Duration::ZERO));
    let follow = MergedQuery::parse(&pairs("after=5:a&wait=25")).unwrap();
    assert_eq!(follow.wait, Duration::from_secs(25));
    let around = MergedQuery::parse(&pairs("around=job-3-1:120")).unwrap();
    assert_eq!(around.at, PageAt::Around { replica: "job-3-1".into(), line: 120 });
}

#[test]
fn a_search_is_asked_over_the_whole_merged_log() {
    let cases = [
        ("search=", "search must not be empty"),
        ("search=x&after=5:a", "search finds lines over the whole merged log"),
        ("search=x&from_start=true", "cannot be combined with before, after, around, from_start, download or wait"),
        ("search=x&download=true", "search finds lines over the whole merged log"),
        ("search=x&limit=100001", "limit must be a whole number from 1 to 100000"),
        ("search=x&regex=maybe", "regex must be true or false"),
        ("regex=true", "regex and ignore_case need search"),
        ("ignore_case=true&limit=5", "regex and ignore_case need search"),
        ("limit=6000", "limit must be a whole number from 1 to 5000"),
    ];
    for (query, says) in cases {
        let message = refused(query);
        assert!(message.contains(says), "{query}: {message}");
    }
    let long = format!("search={}", "x".repeat(1_001));
    assert!(refused(&long).contains("search must be at most 1000 characters"));
    let query = MergedQuery::parse(&pairs("search=NCCL.*timeout&regex=true&ignore_case=1&limit=6000&q=rank")).unwrap();
    let wanted = WantedMatches { text: "NCCL.*timeout".into(), regex: true, ignore_case: true, limit: 6_000 };
    assert_eq!((query.search, query.text.as_str()), (Some(wanted), "rank"));
    let default = MergedQuery::parse(&pairs("search=x")).unwrap().search.unwrap();
    assert_eq!(default.limit, DEFAULT_MATCHES);
}

/// A search finds, in the merged order and with the times the pages give
/// them, exactly the lines a page shows that match: over logs of several
/// blocks whose milliseconds hold many lines of every rank, with matches
/// close together (read in one pass) and far apart (looked up anew), a
/// regular expression, a case-blind text and the page's text filter.
#[test]
fn a_search_finds_the_lines_the_pages_show_with_their_places() {
    let dir = tempfile::tempdir().unwrap();
    let store = LogStore::new(dir.path());
    let mut attempts = Vec::new();
    let mut all: Vec<(Place, u64, String)> = Vec::new();
    for index in 0..3i64 {
        let (log, idx) = store.paths("job", index, 0);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for k in 0..60_000i64 {
            let text = format!("r{index} step {k} of a long enough training line");
            writer.append(Stream::Stdout, 1_000 + k / 5 + index % 2, text.as_bytes()).unwrap();
        }
        writer.flush().unwrap();
        let replica = replica_id("job", index, 0);
        let mut reader = store.open("job", index, 0).unwrap().unwrap();
        let count = reader.line_count().unwrap();
        // Blocks hold 1 MiB of lines: some are sealed, and the tail holds the rest.
        assert!(reader.byte_len().unwrap() > 2 << 20);
        for found in AttemptScan::new("", 0, i64::MAX).chunk(&mut reader, count, 1, count).unwrap() {
            all.push((Place { nanos: found.nanos, replica: replica.clone() }, found.number, found.text));
        }
        attempts.push((replica, index, 0));
    }
    all.sort();
    let cases: [(&str, bool, bool, &str); 4] = [
        ("step 1", false, false, ""),
        (r"^r[02] step \d*77 ", true, false, ""),
        ("R1 STEP 2999", false, true, ""),
        ("step 1", false, false, "r2 "),
    ];
    for (text, regex, ignore_case, holding) in cases {
        let pattern = jobdeck_store::logs::LinePattern::compile(text, regex, ignore_case).unwrap();
        let (matches, truncated) = merged_search::find(&store, "job", &attempts, &pattern, holding, 1_000_000).unwrap();
        let expected: Vec<MergedMatch> = all
            .iter()
            .filter(|(_, _, line)| pattern.is_match(line.as_bytes()) && line.contains(holding))
            .map(|(place, number, _)| MergedMatch {
                replica: place.replica.clone(),
                line: *number,
                time: place.nanos.to_string(),
            })
            .collect();
        assert!(expected.len() > 3, "{text}: {}", expected.len());
        assert_eq!((matches.len(), truncated), (expected.len(), false), "{text}");
        assert_eq!(matches, expected, "{text}");
    }
    // The oldest matches when more match than asked for.
    let pattern = jobdeck_store::logs::LinePattern::compile("step 1", false, false).unwrap();
    let (first, truncated) = merged_search::find(&store, "job", &attempts, &pattern, "", 5).unwrap();
    let lines: Vec<(&str, u64)> = first.iter().map(|m| (m.replica.as_str(), m.line)).collect();
    assert_eq!(lines, [("job-0-0", 2), ("job-2-0", 2), ("job-1-0", 2), ("job-0-0", 11), ("job-2-0", 11)]);
    assert!(truncated);
}

#[test]
fn the_latest_attempt_of_each_index_is_merged_unless_replicas_are_named() {
    // (completion index, attempt, finished)
    let rows = [(0, 0, true), (1, 0, true), (1, 1, false), (0, 1, true)];
    let (attempts, running) = chosen_attempts("job", &rows, None, None).unwrap();
    let ids: Vec<&str> = attempts.iter().map(|a| a.0.as_str()).collect();
    assert_eq!(ids, ["job-0-1", "job-1-1"]);
    assert!(running, "attempt 1 of index 1 runs");
    let (attempts, running) = chosen_attempts("job", &rows, Some(&["job-1-0".into(), "job-0-0".into()]), None).unwrap();
    let ids: Vec<&str> = attempts.iter().map(|a| a.0.as_str()).collect();
    assert_eq!((ids, running), (vec!["job-0-0", "job-1-0"], false));
    // A permalink's replica is merged too, an earlier attempt included.
    let (attempts, _) = chosen_attempts("job", &rows, None, Some("job-1-0")).unwrap();
    let ids: Vec<&str> = attempts.iter().map(|a| a.0.as_str()).collect();
    assert_eq!(ids, ["job-0-1", "job-1-0", "job-1-1"]);
    let (attempts, _) = chosen_attempts("job", &rows, None, Some("job-9-0")).unwrap();
    assert_eq!(attempts.len(), 2, "not a replica of the job: nothing added (the line is then not found)");
    for stranger in ["other-0-0", "job-7-0", "job-0-0-0", "job"] {
        match chosen_attempts("job", &rows, Some(&[stranger.into()]), None) {
            Err(AppError::BadRequest(message)) => {
                assert!(message.contains(&format!("replicas: '{stranger}' is not a replica of job 'job'")), "{message}")
            }
            other => panic!("{stranger}: {:?}", other.map(|a| a.0)),
        }
    }
}

/// Three replicas writing interleaved (`(millisecond, text)` each).
fn three_ranks(dir: &std::path::Path) -> (LogStore, Attempts) {
    let store = LogStore::new(dir);
    let mut attempts = Vec::new();
    for index in 0..3i64 {
        let (log, idx) = store.paths("job", index, 0);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for k in 0..10i64 {
            // Rank r writes at 10k + r; rank 2 writes twice in one millisecond.
            let stream = if k == 9 { Stream::Stderr } else { Stream::Stdout };
            writer.append(stream, 10 * k + index, format!("r{index} step {k}").as_bytes()).unwrap();
            if index == 2 {
                writer.append(Stream::Stdout, 10 * k + index, format!("r{index} step {k} again").as_bytes()).unwrap();
            }
        }
        writer.flush().unwrap();
        attempts.push((replica_id("job", index, 0), index, 0));
    }
    (store, attempts)
}

fn page(
    logs: &LogStore,
    job_id: &str,
    attempts: &Attempts,
    text: &str,
    at: &PageAt,
    limit: usize,
) -> std::io::Result<Option<(Vec<Placed>, bool, bool)>> {
    Merge { logs, job_id, attempts, text }.page(at, limit)
}

fn texts(lines: &[Placed]) -> Vec<String> {
    lines.iter().map(|l| l.found.text.clone()).collect()
}

/// Paging forward from the oldest, or back from the newest, by the last
/// place of each page gives every line once, in time order, whatever the
/// page size.
#[test]
fn pages_continue_from_a_place_without_skipping_or_repeating() {
    let dir = tempfile::tempdir().unwrap();
    let (store, attempts) = three_ranks(dir.path());
    let (all, before, after) = page(&store, "job", &attempts, "", &PageAt::Oldest, 1000).unwrap().unwrap();
    assert_eq!((all.len(), before, after), (40, false, false));
    assert_eq!(texts(&all)[..5], ["r0 step 0", "r1 step 0", "r2 step 0", "r2 step 0 again", "r0 step 1"]);
    let places: Vec<&Place> = all.iter().map(|l| &l.place).collect();
    assert!(places.windows(2).all(|w| w[0] < w[1]), "strictly in order");
    assert_eq!((all[3].found.number, all[3].place.nanos), (2, 2_000_001), "its own number and rank");
    assert!(all[36].found.stderr && !all[35].found.stderr);
    for size in [1, 3, 7] {
        let mut forward = Vec::new();
        let mut at = PageAt::Oldest;
        loop {
            let (lines, _, more) = page(&store, "job", &attempts, "", &at, size).unwrap().unwrap();
            assert!(lines.len() <= size);
            let Some(last) = lines.last() else { break };
            at = PageAt::After(last.place.clone());
            forward.extend(texts(&lines));
            if !more {
                break;
            }
        }
        assert_eq!(forward, texts(&all), "forward by {size}");
        let mut backward = Vec::new();
        let mut at = PageAt::Newest;
        loop {
            let (lines, more, _) = page(&store, "job", &attempts, "", &at, size).unwrap().unwrap();
            let Some(first) = lines.first() else { break };
            at = PageAt::Before(first.place.clone());
            backward.splice(0..0, texts(&lines));
            if !more {
                break;
            }
        }
        assert_eq!(backward, texts(&all), "backward by {size}");
    }
}

#[test]
fn a_page_around_a_line_holds_it_and_its_neighbours_and_text_filters() {
    let dir = tempfile::tempdir().unwrap();
    let (store, attempts) = three_ranks(dir.path());
    let around = PageAt::Around { replica: "job-2-0".into(), line: 10 };
    let (lines, before, after) = page(&store, "job", &attempts, "", &around, 4).unwrap().unwrap();
    // The line asked for is the first of the page's second half.
    assert_eq!(texts(&lines), ["r1 step 4", "r2 step 4", "r2 step 4 again", "r0 step 5"]);
    assert_eq!((lines[2].found.number, before, after), (10, true, true));
    let (lines, ..) = page(&store, "job", &attempts, "", &around, 5).unwrap().unwrap();
    assert_eq!((texts(&lines)[2].as_str(), lines.len()), ("r2 step 4 again", 5));
    let missing = PageAt::Around { replica: "job-2-0".into(), line: 21 };
    assert!(page(&store, "job", &attempts, "", &missing, 4).unwrap().is_none());
    let elsewhere = PageAt::Around { replica: "job-9-0".into(), line: 1 };
    assert!(page(&store, "job", &attempts, "", &elsewhere, 4).unwrap().is_none());

    let (lines, before, after) = page(&store, "job", &attempts, "again", &PageAt::Newest, 3).unwrap().unwrap();
    assert_eq!(texts(&lines), ["r2 step 7 again", "r2 step 8 again", "r2 step 9 again"]);
    assert_eq!((before, after), (true, false));
    let chosen: Attempts = attempts.iter().filter(|a| a.1 != 2).cloned().collect();
    let (lines, ..) = page(&store, "job", &chosen, "", &PageAt::Newest, 4).unwrap().unwrap();
    assert_eq!(texts(&lines), ["r0 step 8", "r1 step 8", "r0 step 9", "r1 step 9"]);
}

/// The page's lines as the download writes them.
fn download_lines(lines: &[Placed]) -> String {
    lines
        .iter()
        .map(|l| {
            format!(
                "{} [{}] {}\n",
                crate::http::replicas::rfc3339(l.found.nanos / 1_000_000),
                l.place.replica,
                l.found.text
            )
        })
        .collect()
}

/// The download merges every attempt's lines once, in the pages' order,
/// across its reading chunks: here a millisecond of 2,500 lines of one rank
/// spans a chunk's end while two other ranks write in the same millisecond;
/// an attempt without a log is left out and a text filter holds.
#[test]
fn the_download_holds_every_line_once_in_the_order_of_the_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mut attempts) = three_ranks(dir.path());
    let (log, idx) = store.paths("job", 3, 0);
    let mut writer = LogWriter::create(&log, &idx).unwrap();
    for k in 0..2_500 {
        writer.append(Stream::Stdout, 42, format!("r3 burst {k}").as_bytes()).unwrap();
    }
    writer.append(Stream::Stdout, 43, b"r3 after").unwrap();
    writer.flush().unwrap();
    attempts.push((replica_id("job", 3, 0), 3, 0));
    attempts.push((replica_id("job", 4, 0), 4, 0));
    for text in ["", "again", "burst 24"] {
        let (all, ..) = page(&store, "job", &attempts, text, &PageAt::Oldest, 5_000).unwrap().unwrap();
        let merged = MergedText::open(&store, "job", &attempts, text).unwrap().all().unwrap();
        assert_eq!(merged, download_lines(&all), "text {text:?}");
    }
    let merged = MergedText::open(&store, "job", &attempts, "").unwrap().all().unwrap();
    assert_eq!(merged.lines().count(), 40 + 2_501);
    // Within one millisecond, by rank, then by replica.
    let burst: Vec<&str> = merged.lines().filter(|l| l.contains(".042Z")).map(|l| &l[l.find('[').unwrap()..]).collect();
    assert_eq!(
        burst[..4],
        ["[job-2-0] r2 step 4", "[job-3-0] r3 burst 0", "[job-2-0] r2 step 4 again", "[job-3-0] r3 burst 1"]
    );
    assert_eq!((burst.len(), burst[2_501]), (2_502, "[job-3-0] r3 burst 2499"));
}
