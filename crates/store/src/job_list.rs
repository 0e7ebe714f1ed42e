//! One page of the deployments list (`GET /jobs`) and its total.
//!
//! The page walks `jobs_list` (every column a listing filters on but the
//! labels, in the list's order) and tests each entry inside the index, so it
//! reads only the rows it shows. When the listing matches few of the jobs in
//! view, the state and creator indexes find them instead. A page in the
//! latter half of an exactly counted listing is read from the list's end, so
//! the last page costs what the first does rather than a walk past every job
//! before it (SQLite's `OFFSET` steps over the rows it skips).
//!
//! The total comes from `job_counts` (kept by triggers) unless the listing
//! filters by name or label, which that table does not know; those are
//! counted up to [`TOTAL_COUNT_CAP`], and a larger total is said to be at
//! least that: counting a million matches would cost more than the page.
//!
//! A name search that matches few jobs reads just those, found through the
//! trigram index of the ids (`job_search`), asked only what the counts of
//! ids per trigram (`job_trigram_counts`) say is worth asking
//! (`searched_ids`).

use rusqlite::types::Value;
use rusqlite::{params_from_iter, OptionalExtension};

use super::error::StoreResult;
use super::job_row::{job_column_count, job_row, JOB_COLUMNS};
use super::{JobFilter, JobRow, QueryMode, SortKey, Store};

/// Up to how many matches a listing filtered by name or label is counted.
pub const TOTAL_COUNT_CAP: i64 = 1_000;

/// A listing counts as selective, and may take the state and creator
/// indexes, when it matches at most one in this many of the jobs in view.
const SELECTIVE_RATIO: i64 = 32;

/// One page of a listing.
#[derive(Debug, Clone, Default)]
pub struct JobPage {
    pub rows: Vec<JobRow>,
    /// How many jobs match over all pages; with `total_capped`, at least
    /// this many ([`TOTAL_COUNT_CAP`]).
    pub total: i64,
    pub total_capped: bool,
}

impl Store {
    /// One page of the jobs `filter.viewer` may see, and the total over all
    /// pages (the module's comment says how each is found).
    ///
    /// A name search of two or more characters that the trigram index
    /// `job_search` says matches few jobs reads just those; one that matches
    /// many reads the index walk, which then finds its page early.
    pub async fn list_jobs(&self, filter: JobFilter) -> StoreResult<JobPage> {
        self.read(move |conn| {
            // One read transaction: the total and the page see the same jobs.
            let tx = conn.unchecked_transaction()?;
            // The ids a name search's trigram query finds, when they are
            // few: asked once, then tested as a list.
            let search = match filter.q.as_deref().map(str::to_lowercase) {
                Some(q) => searched_ids(&tx, &q)?.map(|found| serde_json::Value::from(found).to_string()),
                None => None,
            };
            let source = Source::of(&filter);
            let rest = source.rest_of(&filter);
            if let Some(found) = search {
                return narrowed_page(&tx, &filter, &source, &rest, found);
            }
            let counted_by_table = filter.q.as_deref().is_none_or(str::is_empty) && filter.labels.is_empty();
            let (total, total_capped, selective) = if counted_by_table {
                let (clause, values) = where_clause(&filter, None, false, &JOB_COLUMNS_TESTED);
                let total: i64 = tx
                    .prepare_cached(&format!("SELECT COALESCE(SUM(n), 0) FROM job_counts WHERE {clause}"))?
                    .query_row(params_from_iter(values.iter()), |r| r.get(0))?;
                let filtered = !filter.states.is_empty() || !filter.created_by.is_empty();
                let selective = filtered && {
                    let in_view: i64 = tx
                        .prepare_cached(
                            "SELECT COALESCE(SUM(n), 0) FROM job_counts WHERE visibility = 'public' OR created_by = ?1",
                        )?
                        .query_row([&filter.viewer], |r| r.get(0))?;
                    total.saturating_mul(SELECTIVE_RATIO) <= in_view
                };
                (total, false, selective)
            } else {
                let (clause, values) = where_clause(&rest, None, false, source.tested);
                let clause = source.and(&clause);
                let mut values = [source.values.clone(), values].concat();
                values.push(Value::Integer(TOTAL_COUNT_CAP + 1));
                let from = source.counted_from(&rest);
                // Counted along the list's own index, which stops at the cap
                // after about as many entries as the matches are rare; in
                // another index's order (by state, say) the count could walk
                // past every archived job first.
                let along = match source.order {
                    Some((at, id)) => format!("ORDER BY {}", order_by_columns(at, id, false, false)),
                    None => "ORDER BY created_at DESC, id DESC".to_string(),
                };
                let counted: i64 = tx
                    .prepare_cached(&format!(
                        "SELECT COUNT(*) FROM (SELECT 1 FROM {from} WHERE {clause} {along} LIMIT ?)"
                    ))?
                    .query_row(params_from_iter(values.iter()), |r| r.get(0))?;
                (counted.min(TOTAL_COUNT_CAP), counted > TOTAL_COUNT_CAP, false)
            };
            let (clause, values) = where_clause(&rest, None, selective, source.tested);
            let clause = source.and(&clause);
            let mut values = [source.values.clone(), values].concat();
            // Saturating: `page=9223372036854775807` is a page past the end
            // (an empty list), not an overflow.
            let offset = filter.page.saturating_sub(1).max(0).saturating_mul(filter.page_size);
            let from_end = !total_capped && offset < total && offset > total / 2;
            let (limit, offset) = if from_end {
                let end = offset.saturating_add(filter.page_size).min(total);
                (end - offset, total - end)
            } else {
                (filter.page_size, offset)
            };
            let order = match source.order {
                Some((at, id)) => order_by_columns(at, id, filter.ascending, from_end),
                None => order_by(filter.sort, filter.ascending, from_end, ""),
            };
            values.push(Value::Integer(limit));
            values.push(Value::Integer(offset));
            let sql =
                format!("SELECT {JOB_COLUMNS} FROM {} WHERE {clause} ORDER BY {order} LIMIT ? OFFSET ?", source.from);
            let mut stmt = tx.prepare_cached(&sql)?;
            let mut rows =
                stmt.query_map(params_from_iter(values.iter()), job_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
            if from_end {
                rows.reverse();
            }
            Ok(JobPage { rows, total, total_capped })
        })
        .await
    }
}

/// A listing narrowed by a name search to the few jobs (at most
/// [`SEARCH_INDEX_MAX_MATCHES`]) the trigram index found, as a JSON array
/// of ids: every match's keys are read and sorted once (`+` keeps the
/// planner from walking an ordered index past every other job instead),
/// which gives the total, and only the page's rows are then read whole.
/// Counting and paging separately looked each found job up twice, and
/// sorting whole rows (their spec and metadata) cost more than finding
/// them.
fn narrowed_page(
    tx: &rusqlite::Transaction<'_>,
    filter: &JobFilter,
    source: &Source,
    rest: &JobFilter,
    found: String,
) -> rusqlite::Result<JobPage> {
    let (clause, values) = where_clause(rest, Some(found), false, source.tested);
    let clause = source.and(&clause);
    let values = [source.values.clone(), values].concat();
    let order = match source.order {
        Some((at, id)) => order_by_columns(at, id, filter.ascending, false),
        None => order_by(filter.sort, filter.ascending, false, "+"),
    };
    let matches: Vec<i64> = tx
        .prepare_cached(&format!("SELECT jobs.rowid FROM {} WHERE {clause} ORDER BY {order}", source.from))?
        .query_map(params_from_iter(values.iter()), |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let total = matches.len() as i64;
    let offset = filter.page.saturating_sub(1).max(0).saturating_mul(filter.page_size);
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(matches.len());
    let end = start.saturating_add(usize::try_from(filter.page_size).unwrap_or(0)).min(matches.len());
    let page = &matches[start..end];
    let rowid_at = job_column_count();
    let mut rows = tx
        .prepare_cached(&format!(
            "SELECT {JOB_COLUMNS}, rowid FROM jobs WHERE rowid IN (SELECT value FROM json_each(?1))"
        ))?
        .query_map([serde_json::Value::from(page.to_vec()).to_string()], |r| {
            Ok((r.get::<_, i64>(rowid_at)?, job_row(r)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.sort_by_key(|(rowid, _)| page.iter().position(|p| p == rowid));
    Ok(JobPage {
        rows: rows.into_iter().map(|(_, row)| row).collect(),
        total: total.min(TOTAL_COUNT_CAP),
        total_capped: total > TOTAL_COUNT_CAP,
    })
}

/// The ids of the jobs whose id contains `q` (lowercase), found through
/// the trigram index when they are at most [`SEARCH_INDEX_MAX_MATCHES`];
/// `None` when they are more, or `q` has no trigram worth asking.
///
/// How many ids hold each trigram (`job_trigram_counts`, kept by triggers,
/// migration 22) decides what the index is asked. A two- or three-character
/// text one of whose trigrams more ids hold than the limit matches more:
/// the index is not asked at all (its answer would be thrown away). A
/// longer text is asked for by its rare trigrams alone, those held by at
/// most [`RARE_TRIGRAM`] ids (at least its two rarest), and the ids found
/// are those that hold the whole text: the phrase query reads the list of
/// every trigram of the text, including the few that a large share of the
/// jobs hold (`sweep-11-`: four of its seven are in an eighth of the ids).
/// When its rare trigrams find too many, and it has common ones, the
/// phrase query decides.
fn searched_ids(tx: &rusqlite::Transaction<'_>, q: &str) -> rusqlite::Result<Option<Vec<String>>> {
    let ask = |query: String| -> rusqlite::Result<Option<Vec<String>>> {
        let mut stmt = tx.prepare_cached("SELECT id FROM job_search WHERE job_search MATCH ?1 LIMIT ?2")?;
        let found = stmt
            .query_map(rusqlite::params![query, SEARCH_INDEX_MAX_MATCHES + 1], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((found.len() as i64 <= SEARCH_INDEX_MAX_MATCHES).then_some(found))
    };
    let Some(query) = trigram_query(q) else { return Ok(None) };
    let short = q.chars().count() <= 3;
    if short && q.is_ascii() {
        let trigrams = if q.len() == 2 { pair_trigrams(q) } else { vec![q.to_string()] };
        if held_by(tx, &trigrams)?.iter().any(|(n, _)| *n > SEARCH_INDEX_MAX_MATCHES) {
            return Ok(None);
        }
    }
    if !short && q.is_ascii() {
        let mut trigrams: Vec<String> = (0..=q.len() - 3).map(|at| q[at..at + 3].to_string()).collect();
        trigrams.sort();
        trigrams.dedup();
        let held = held_by(tx, &trigrams)?;
        let rare: Vec<String> = held
            .iter()
            .enumerate()
            .take_while(|(at, (n, _))| *at < 2 || *n <= RARE_TRIGRAM)
            .map(|(_, (_, t))| quoted(t))
            .collect();
        let every = rare.len() == held.len();
        match ask(rare.join(" AND "))? {
            Some(found) => return Ok(Some(found.into_iter().filter(|id| id.to_lowercase().contains(q)).collect())),
            None if every => return Ok(None),
            None => {}
        }
    }
    ask(query)
}

/// Up to how many job ids may hold a trigram that a long name search asks
/// the index for: its list is read whole.
const RARE_TRIGRAM: i64 = 16 * SEARCH_INDEX_MAX_MATCHES;

/// The trigrams that hold the two characters `q`: each character of an id
/// before or after them.
fn pair_trigrams(q: &str) -> Vec<String> {
    ID_CHARACTERS.chars().flat_map(|c| [format!("{q}{c}"), format!("{c}{q}")]).collect()
}

/// How many job ids hold each of `trigrams`, fewest first. A trigram
/// missing from the counts is held by none: the counts choose what the
/// index is asked, the index decides what is found (an id's trigrams past
/// the counted places look rarer than they are, never missing from it).
fn held_by(tx: &rusqlite::Transaction<'_>, trigrams: &[String]) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut stmt = tx.prepare_cached("SELECT n FROM job_trigram_counts WHERE trigram = ?1")?;
    let mut held = Vec::with_capacity(trigrams.len());
    for trigram in trigrams {
        let n: Option<i64> = stmt.query_row([trigram.as_str()], |r| r.get(0)).optional()?;
        held.push((n.unwrap_or(0), trigram.clone()));
    }
    held.sort();
    Ok(held)
}

/// `text` as a full-text phrase.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// The characters of a job id: a job name's (lowercase letters, digits and
/// `-`) and its suffix's.
const ID_CHARACTERS: &str = "abcdefghijklmnopqrstuvwxyz0123456789-";

/// The full-text query of `job_search` (a trigram index) that finds every
/// id containing `q`, for a `q` of two characters or more: `q` itself as a
/// phrase, or, for two characters, which no trigram is, every trigram that
/// begins or ends with them (an id is longer than two characters). A single
/// character has none worth asking: it matches most jobs, and the walk
/// finds them at once.
fn trigram_query(q: &str) -> Option<String> {
    match q.chars().count() {
        0 | 1 => None,
        2 => {
            let around: Vec<String> = pair_trigrams(q).iter().map(|t| quoted(t)).collect();
            Some(around.join(" OR "))
        }
        _ => Some(quoted(q)),
    }
}

/// Where a listing's rows come from: the jobs themselves (walked along
/// `jobs_list` or an index the planner picks), or, for a listing by
/// creation time with a `key=value` label condition, that label's entries
/// in `job_labels_by_value`, newest first, each joined to its job: a rare
/// label is found without walking every job, a common one early.
struct Source {
    from: &'static str,
    /// What the source itself asks of its rows (the WHERE clause's first
    /// condition), and the values of its parameters, which come first.
    condition: Option<&'static str>,
    values: Vec<Value>,
    /// The driving index's creation time and id columns, to order by.
    order: Option<(&'static str, &'static str)>,
    /// The label condition the source answers, which the WHERE clause need
    /// not test again.
    driving: Option<jobdeck_api::LabelCondition>,
    /// Where the WHERE clause finds the columns every listing tests.
    tested: &'static TestedColumns,
    /// The source without its join to the jobs, for a count whose
    /// conditions need nothing else of a job: the count then reads the
    /// label's index alone (a lookup in `jobs_list` per entry is a page
    /// read of its own at a million jobs).
    alone: Option<&'static str>,
}

/// The columns of a job that every listing tests (its id, who may see
/// it, its state), by the names a source holds them under.
struct TestedColumns {
    id: &'static str,
    visibility: &'static str,
    created_by: &'static str,
    state: &'static str,
}

/// The job's own columns: `jobs`, its indexes and `job_counts`.
const JOB_COLUMNS_TESTED: TestedColumns =
    TestedColumns { id: "id", visibility: "visibility", created_by: "created_by", state: "state" };

/// The copies a label's entry keeps (migration 20), tested inside
/// `job_labels_by_value` before the entry is joined to its job: a walk of a
/// label's jobs reads only the label's index until it finds a match.
const LABEL_COLUMNS_TESTED: TestedColumns = TestedColumns {
    id: "driving.job_id",
    visibility: "driving.job_visibility",
    created_by: "driving.job_created_by",
    state: "driving.job_state",
};

impl Source {
    /// What the count of `rest` (the filter without what this source
    /// answers) reads: the source alone when only node groups, which the
    /// label's entries do not copy, need the job's own row.
    fn counted_from(&self, rest: &JobFilter) -> &'static str {
        match self.alone {
            Some(alone) if rest.node_groups.is_empty() && rest.node_group_patterns.is_empty() => alone,
            _ => self.from,
        }
    }

    /// `clause` (a listing's conditions) after the source's own.
    fn and(&self, clause: &str) -> String {
        match self.condition {
            Some(condition) => format!("{condition} AND {clause}"),
            None => clause.to_string(),
        }
    }

    /// `filter` without the condition this source answers.
    fn rest_of(&self, filter: &JobFilter) -> JobFilter {
        let mut rest = filter.clone();
        if let Some(driving) = &self.driving {
            if let Some(at) = rest.labels.iter().position(|c| c == driving) {
                rest.labels.remove(at);
            }
        }
        rest
    }
}

impl Source {
    fn of(filter: &JobFilter) -> Source {
        let label = filter.labels.iter().find_map(|condition| match condition {
            jobdeck_api::LabelCondition::Equals(key, value) => Some((key, value)),
            _ => None,
        });
        match label {
            Some((key, value)) if filter.sort == SortKey::CreatedAt => Source {
                driving: Some(jobdeck_api::LabelCondition::Equals(key.clone(), value.clone())),
                // Joined on the creation time too, so a count reaches each
                // job through `jobs_list`, which holds every column the
                // filters test, without reading the job's row.
                from: "job_labels AS driving CROSS JOIN jobs
                    ON jobs.created_at = driving.job_created_at AND jobs.id = driving.job_id",
                condition: Some("driving.key = ? AND driving.value = ?"),
                values: vec![Value::Text(key.clone()), Value::Text(value.clone())],
                order: Some(("driving.job_created_at", "driving.job_id")),
                tested: &LABEL_COLUMNS_TESTED,
                alone: Some("job_labels AS driving"),
            },
            _ => Source {
                from: "jobs",
                values: Vec::new(),
                order: None,
                driving: None,
                tested: &JOB_COLUMNS_TESTED,
                alone: None,
                condition: None,
            },
        }
    }
}

/// The ORDER BY of a listing by creation time along the columns `at` and
/// `id` (ties by id), ascending or not, `reversed` read from its end.
fn order_by_columns(at: &str, id: &str, ascending: bool, reversed: bool) -> String {
    let direction = if ascending != reversed { "ASC" } else { "DESC" };
    format!("{at} {direction}, {id} {direction}")
}

/// The ORDER BY of a listing sorted by `sort`, ascending or not; ties go
/// newest first, then by id, so every order is total. `reversed` flips every
/// term: the same list read from its end.
fn order_by(sort: SortKey, ascending: bool, reversed: bool, sort_first: &str) -> String {
    let terms: [(&str, bool); 3] = match sort {
        SortKey::CreatedAt => [("created_at", ascending), ("id", ascending), ("", true)],
        SortKey::Name => [("name", ascending), ("created_at", false), ("id", true)],
        SortKey::State => [("state", ascending), ("created_at", false), ("id", true)],
    };
    let terms: Vec<String> = terms
        .iter()
        .filter(|(column, _)| !column.is_empty())
        .enumerate()
        .map(|(n, (column, up))| {
            let first = if n == 0 { sort_first } else { "" };
            format!("{first}{column} {}", if *up != reversed { "ASC" } else { "DESC" })
        })
        .collect();
    terms.join(", ")
}

/// Up to how many trigram matches a name search reads the matching jobs one
/// by one; above, it walks `jobs_list` (which then finds its page early).
pub(crate) const SEARCH_INDEX_MAX_MATCHES: i64 = 2000;

/// `text` as a LIKE pattern that matches only itself: `%`, `_` and the
/// escape character are escaped. (LIKE ignores the case of ASCII letters,
/// which is what Lepton's patterns do.)
fn like_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The WHERE clause of a listing and its parameters, in order. `search` is
/// the ids the name search's trigram query found (a JSON array) when they
/// narrow it;
/// `selective` lets the planner take the state and creator indexes (the
/// listing matches few of the jobs in view), which it is otherwise kept off
/// with a unary `+`: for a common state or creator they would mean reading
/// and sorting most of the table.
fn where_clause(
    filter: &JobFilter,
    search: Option<String>,
    selective: bool,
    tested: &TestedColumns,
) -> (String, Vec<Value>) {
    // The clause uses only columns `jobs` and `job_counts` share (and `id`
    // for the name and label filters, which are counted on `jobs`), or a
    // label's copies of them (`tested`), so one clause serves the page and
    // the total.
    let keep_off = if selective { "" } else { "+" };
    let TestedColumns { id, visibility, created_by, state } = tested;
    let mut clauses = vec![format!("({visibility} = 'public' OR {created_by} = ?)")];
    let mut values = vec![Value::Text(filter.viewer.clone())];
    match filter.mode {
        QueryMode::AliveOnly => clauses.push(format!("+{state} != 'Archived'")),
        QueryMode::ArchiveOnly => clauses.push(format!("+{state} = 'Archived'")),
        QueryMode::AliveAndArchive => {}
    }
    if let Some(q) = filter.q.as_deref().filter(|q| !q.is_empty()) {
        // Ids are a lowercase job name and a lowercase suffix, so a
        // lowercased `instr` is the case-insensitive substring match, without
        // LIKE's pattern machinery.
        clauses.push(format!("instr({id}, ?) > 0"));
        values.push(Value::Text(q.to_lowercase()));
        if let Some(ids) = search {
            clauses.push(format!("{id} IN (SELECT value FROM json_each(?))"));
            values.push(Value::Text(ids));
        }
    }
    if !filter.states.is_empty() {
        clauses.push(format!("{keep_off}{state} IN ({})", vec!["?"; filter.states.len()].join(", ")));
        values.extend(filter.states.iter().map(|s| Value::Text(s.as_str().into())));
    }
    if !filter.node_groups.is_empty() {
        // `node_groups` holds the allowed groups as `,a,b,`, so `,g,` occurs
        // exactly when `g` is one of them (`instr` is case-sensitive and
        // takes no wildcards; group names cannot contain a comma).
        let mut any: Vec<&str> = filter.node_groups.iter().map(|_| "instr(node_groups, ?) > 0").collect();
        if filter.any_group_matches {
            any.push("node_groups = ''");
        }
        clauses.push(format!("({})", any.join(" OR ")));
        values.extend(filter.node_groups.iter().map(|g| Value::Text(format!(",{g},"))));
    }
    if !filter.node_group_patterns.is_empty() {
        let mut any: Vec<&str> = filter.node_group_patterns.iter().map(|_| "node_groups LIKE ? ESCAPE '\\'").collect();
        if filter.any_group_pattern_matches {
            any.push("node_groups = ''");
        }
        clauses.push(format!("({})", any.join(" OR ")));
        values.extend(filter.node_group_patterns.iter().map(|p| Value::Text(format!("%{}%", like_literal(p)))));
    }
    if !filter.created_by_prefixes.is_empty() {
        let any: Vec<String> =
            filter.created_by_prefixes.iter().map(|_| format!("{created_by} LIKE ? ESCAPE '\\'")).collect();
        clauses.push(format!("({})", any.join(" OR ")));
        values.extend(filter.created_by_prefixes.iter().map(|p| Value::Text(format!("{}%", like_literal(p)))));
    }
    if !filter.created_by.is_empty() {
        clauses.push(format!("{keep_off}{created_by} IN ({})", vec!["?"; filter.created_by.len()].join(", ")));
        values.extend(filter.created_by.iter().cloned().map(Value::Text));
    }
    for condition in &filter.labels {
        // A point lookup in `job_labels` per job the walk meets; keys and
        // values are compared as values, never written into the query.
        use jobdeck_api::LabelCondition as C;
        let (negated, wanted): (bool, &[String]) = match condition {
            C::Exists(_) => (false, &[]),
            C::Absent(_) => (true, &[]),
            C::Equals(_, value) => (false, std::slice::from_ref(value)),
            C::NotEquals(_, value) => (true, std::slice::from_ref(value)),
            C::In(_, set) => (false, set),
            C::NotIn(_, set) => (true, set),
        };
        let values_clause = if wanted.is_empty() {
            String::new()
        } else {
            format!(" AND other.value IN ({})", vec!["?"; wanted.len()].join(", "))
        };
        let not = if negated { "NOT " } else { "" };
        clauses.push(format!(
            "{not}EXISTS (SELECT 1 FROM job_labels AS other WHERE other.job_id = {id} AND other.key = ?{values_clause})"
        ));
        values.push(Value::Text(condition.key().to_string()));
        values.extend(wanted.iter().cloned().map(Value::Text));
    }
    (clauses.join(" AND "), values)
}
