//! What a stream asks for: its query (`jobs`, `job`, `log`, `log_from`) and
//! where it resumes (`Last-Event-ID`). Pure, so every rule is tested here.

use crate::http::error::{AppError, AppResult};

/// The most jobs one stream follows (a page shows one; a few tabs' worth
/// fit in one stream).
pub const MAX_JOBS: usize = 16;

/// What a stream follows, as asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topics {
    /// Every job the caller may see (the list's changes).
    pub list: bool,
    /// Jobs followed whole (state, replicas, events, metrics), by id or name.
    pub jobs: Vec<String>,
    /// One log followed.
    pub log: Option<LogTopic>,
}

/// A log followed: `log=<job>/<replica>`, from line `log_from` (1-based;
/// 1 when not given, so a stream read with `curl -N` starts at the top).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTopic {
    pub job: String,
    pub replica: String,
    pub from: u64,
}

impl Topics {
    /// Reads the query's pairs; an unknown parameter or a bad value is a 400
    /// naming it, and a stream that follows nothing is one too.
    pub fn parse(pairs: &[(String, String)]) -> AppResult<Topics> {
        let mut topics = Topics::default();
        let mut log: Option<(String, String)> = None;
        let mut from: Option<u64> = None;
        for (key, value) in pairs {
            match key.as_str() {
                "jobs" => {
                    topics.list = match value.as_str() {
                        "true" | "1" | "" => true,
                        "false" | "0" => false,
                        _ => return Err(AppError::BadRequest(format!("jobs must be true or false, not '{value}'"))),
                    }
                }
                "job" => {
                    if value.is_empty() {
                        return Err(AppError::BadRequest("job must name a job".into()));
                    }
                    if !topics.jobs.contains(value) {
                        topics.jobs.push(value.clone());
                    }
                }
                "log" => {
                    let Some((job, replica)) = value.split_once('/').filter(|(j, r)| !j.is_empty() && !r.is_empty())
                    else {
                        return Err(AppError::BadRequest(format!("log must be <job>/<replica>, not '{value}'")));
                    };
                    if log.is_some() {
                        return Err(AppError::BadRequest("log may be given once".into()));
                    }
                    log = Some((job.to_string(), replica.to_string()));
                }
                "log_from" => {
                    from = Some(value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        AppError::BadRequest(format!("log_from must be a line number (1 or more), not '{value}'"))
                    })?)
                }
                // Asked by browsers' EventSource on a reconnect's first
                // request, where it cannot set a header.
                "last_event_id" => {}
                other => {
                    return Err(AppError::BadRequest(format!(
                        "unknown parameter '{other}': a stream takes jobs, job, log, log_from and last_event_id"
                    )))
                }
            }
        }
        if topics.jobs.len() > MAX_JOBS {
            return Err(AppError::BadRequest(format!("job may be given at most {MAX_JOBS} times")));
        }
        if from.is_some() && log.is_none() {
            return Err(AppError::BadRequest("log_from needs log".into()));
        }
        topics.log = log.map(|(job, replica)| LogTopic { job, replica, from: from.unwrap_or(1) });
        if !topics.list && topics.jobs.is_empty() && topics.log.is_none() {
            return Err(AppError::BadRequest(
                "a stream follows something: give jobs=true, job=<id> or log=<job>/<replica>".into(),
            ));
        }
        Ok(topics)
    }
}

/// Where a stream resumes: the `Last-Event-ID` a client sends (the id of
/// the last message it received, `<origin>-<number>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// Nothing to resume: a new stream.
    Fresh,
    /// After change `number` of the feed named `origin`.
    After { origin: String, number: u64 },
    /// An id this server never sent: the client reloads (a resync).
    Unknown,
}

impl Resume {
    /// Reads the header's (or the query's) value.
    pub fn parse(id: Option<&str>) -> Resume {
        let Some(id) = id.map(str::trim).filter(|id| !id.is_empty()) else {
            return Resume::Fresh;
        };
        match id.split_once('-') {
            Some((origin, number)) if !origin.is_empty() && origin.bytes().all(|b| b.is_ascii_hexdigit()) => {
                match number.parse() {
                    Ok(number) => Resume::After { origin: origin.to_string(), number },
                    Err(_) => Resume::Unknown,
                }
            }
            _ => Resume::Unknown,
        }
    }
}

/// A message id: the feed's origin and the number of the last change the
/// stream has handled.
pub fn message_id(origin: &str, number: u64) -> String {
    format!("{origin}-{number}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &str) -> Vec<(String, String)> {
        form_urlencoded::parse(query.as_bytes()).into_owned().collect()
    }

    #[test]
    fn a_query_names_what_the_stream_follows() {
        let topics = Topics::parse(&pairs("jobs=true&job=a&job=b&job=a&log=a/a-0-0&log_from=40")).unwrap();
        assert!(topics.list);
        assert_eq!(topics.jobs, ["a", "b"], "a job given twice is followed once");
        assert_eq!(topics.log, Some(LogTopic { job: "a".into(), replica: "a-0-0".into(), from: 40 }));
        let log_only = Topics::parse(&pairs("log=a/a-1-0")).unwrap();
        assert_eq!(log_only.log.unwrap().from, 1, "a log is followed from its first line unless told");
    }

    #[test]
    fn bad_queries_name_the_parameter() {
        for (query, says) in [
            ("", "a stream follows something"),
            ("jobs=maybe", "jobs must be true or false"),
            ("job=", "job must name a job"),
            ("log=a", "log must be <job>/<replica>"),
            ("log=/x", "log must be <job>/<replica>"),
            ("log=a/b&log=a/c", "log may be given once"),
            ("log=a/b&log_from=0", "log_from must be a line number"),
            ("job=a&log_from=3", "log_from needs log"),
            ("job=a&token=x", "unknown parameter 'token'"),
        ] {
            let Err(AppError::BadRequest(message)) = Topics::parse(&pairs(query)) else {
                panic!("{query} was accepted");
            };
            assert!(message.contains(says), "{query}: {message}");
        }
        let many: String = (0..=MAX_JOBS).map(|i| format!("job=j{i}&")).collect();
        assert!(Topics::parse(&pairs(&many)).is_err());
    }

    #[test]
    fn resume_points_read_back_and_strange_ids_ask_for_a_resync() {
        assert_eq!(Resume::parse(None), Resume::Fresh);
        assert_eq!(Resume::parse(Some(" ")), Resume::Fresh);
        assert_eq!(Resume::parse(Some(&message_id("0a1b", 42))), Resume::After { origin: "0a1b".into(), number: 42 });
        for strange in ["42", "zz-1", "0a1b-", "0a1b-x", "-4"] {
            assert_eq!(Resume::parse(Some(strange)), Resume::Unknown, "{strange}");
        }
    }
}
