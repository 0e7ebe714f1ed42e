//! Usage over time: what each user or role held per day (GPU-hours and
//! CPU-hours from the runs' charges) and the log bytes they kept, and the
//! same as CSV. Pure functions over what the store recorded.

use std::collections::{BTreeMap, HashMap};

use jobdeck_api::{Role, UsageDay, UsageGrouping};
use jobdeck_store::{Charge, DAY_MS};

const HOUR_MS: f64 = 3_600_000.0;

/// `YYYY-MM-DD` of a day number (days since the Unix epoch, UTC).
pub fn day_text(day: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis((day.max(0) * DAY_MS) as u64);
    humantime::format_rfc3339_seconds(time).to_string()[..10].to_string()
}

/// The day number of `YYYY-MM-DD`; `None` for anything else.
pub fn parse_day(text: &str) -> Option<i64> {
    let well_formed = text.len() == 10
        && text.char_indices().all(|(i, c)| if i == 4 || i == 7 { c == '-' } else { c.is_ascii_digit() });
    if !well_formed {
        return None;
    }
    let time = humantime::parse_rfc3339(&format!("{text}T00:00:00Z")).ok()?;
    let ms = time.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64;
    Some(ms / DAY_MS)
}

/// What the history is asked for.
#[derive(Debug, Clone)]
pub struct HistoryRequest {
    pub by: UsageGrouping,
    /// First and last day (inclusive), as day numbers.
    pub from: i64,
    pub to: i64,
    /// Unix ms: runs still holding resources are counted up to it.
    pub now: i64,
}

#[derive(Default, Clone, Copy)]
struct Sums {
    gpu_hours: f64,
    cpu_hours: f64,
    log_bytes: i64,
}

/// The rows of the history: one per subject and day with any use, in day
/// order, then by subject. `log_days` are the store's `(day, user, bytes)`
/// in day order, each user's last value before `from` first; `roles` names
/// each user's role (a user missing from it sums under "unknown").
pub fn history(
    request: &HistoryRequest,
    charges: &[Charge],
    log_days: &[(i64, String, i64)],
    roles: &HashMap<String, Role>,
) -> Vec<UsageDay> {
    let subject = |user: &str| -> String {
        match request.by {
            UsageGrouping::User => user.to_string(),
            UsageGrouping::Role => roles.get(user).map_or("unknown", |r| r.as_str()).to_string(),
        }
    };
    let mut sums: BTreeMap<(i64, String), Sums> = BTreeMap::new();
    let window = (request.from * DAY_MS, (request.to + 1) * DAY_MS);
    for charge in charges {
        let start = charge.started_at.max(window.0);
        let end = charge.ended_at.unwrap_or(request.now).min(window.1).min(request.now.max(start));
        let mut day = start.div_euclid(DAY_MS);
        while day * DAY_MS < end {
            let overlap = (end.min((day + 1) * DAY_MS) - start.max(day * DAY_MS)).max(0) as f64 / HOUR_MS;
            let entry = sums.entry((day, subject(&charge.user))).or_default();
            entry.gpu_hours += charge.gpus as f64 * overlap;
            entry.cpu_hours += charge.cpus * overlap;
            day += 1;
        }
    }
    // Each user's log bytes carry forward from the day they were measured
    // until the next measurement.
    let mut per_user: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
    for (day, user, bytes) in log_days {
        per_user.entry(user.as_str()).or_default().push((*day, *bytes));
    }
    let last_day = request.to.min(request.now.div_euclid(DAY_MS));
    for (user, points) in per_user {
        let mut points = points.iter().peekable();
        let mut current = 0;
        for day in request.from..=last_day {
            while let Some((_, bytes)) = points.next_if(|(d, _)| *d <= day) {
                current = *bytes;
            }
            if current > 0 {
                sums.entry((day, subject(user))).or_default().log_bytes += current;
            }
        }
    }
    sums.into_iter()
        .filter(|(_, s)| s.gpu_hours > 0.0 || s.cpu_hours > 0.0 || s.log_bytes > 0)
        .map(|((day, subject), s)| UsageDay {
            day: day_text(day),
            subject,
            gpu_hours: round6(s.gpu_hours),
            cpu_hours: round6(s.cpu_hours),
            log_bytes: s.log_bytes,
        })
        .collect()
}

/// Hours to a millionth (3.6 ms): short runs still count.
fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// One CSV field: quoted when it holds a comma, quote or line break, and
/// with a leading `'` when a spreadsheet would read it as a formula.
fn csv_field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{text}") } else { text.to_string() };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// The history as CSV, one header line and one line per row.
pub fn csv(by: UsageGrouping, rows: &[UsageDay]) -> String {
    let mut out = format!("day,{},gpu_hours,cpu_hours,log_bytes\n", by.as_str());
    for row in rows {
        out.push_str(&format!(
            "{},{},{},{},{}\n",
            row.day,
            csv_field(&row.subject),
            row.gpu_hours,
            row.cpu_hours,
            row.log_bytes
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(user: &str, gpus: i64, cpus: f64, start_h: i64, end_h: Option<i64>) -> Charge {
        Charge {
            job_id: "j".into(),
            user: user.into(),
            gpus,
            cpus,
            replicas: 1,
            started_at: start_h * 3_600_000,
            ended_at: end_h.map(|h| h * 3_600_000),
        }
    }

    #[test]
    fn days_read_and_write_as_dates() {
        assert_eq!(parse_day("1970-01-02"), Some(1));
        assert_eq!(day_text(parse_day("2026-11-28").unwrap()), "2026-11-28");
        assert_eq!(parse_day("2026-11-28T00"), None);
        assert_eq!(parse_day("2026-13-01"), None);
    }

    #[test]
    fn a_run_across_midnight_is_split_between_the_days() {
        let request = HistoryRequest { by: UsageGrouping::User, from: 0, to: 2, now: 100 * 3_600_000 };
        let rows = history(&request, &[charge("alice", 2, 4.0, 20, Some(26))], &[], &HashMap::new());
        let got: Vec<(&str, f64, f64)> = rows.iter().map(|r| (r.day.as_str(), r.gpu_hours, r.cpu_hours)).collect();
        assert_eq!(got, [("1970-01-01", 8.0, 16.0), ("1970-01-02", 4.0, 8.0)]);
    }

    #[test]
    fn a_run_still_holding_counts_until_now_and_roles_sum_their_users() {
        let request = HistoryRequest { by: UsageGrouping::Role, from: 0, to: 0, now: 3 * 3_600_000 };
        let roles: HashMap<String, Role> =
            [("alice".to_string(), Role::Member), ("bob".to_string(), Role::Member)].into();
        let charges = [charge("alice", 1, 0.0, 1, None), charge("bob", 1, 0.0, 0, Some(1))];
        let rows = history(&request, &charges, &[(0, "alice".into(), 500)], &roles);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].subject.as_str(), rows[0].gpu_hours, rows[0].log_bytes), ("member", 3.0, 500));
    }

    #[test]
    fn log_bytes_carry_forward_until_the_next_measurement() {
        let request = HistoryRequest { by: UsageGrouping::User, from: 1, to: 3, now: 10 * DAY_MS };
        let log_days = [(0, "alice".to_string(), 100), (2, "alice".to_string(), 300)];
        let rows = history(&request, &[], &log_days, &HashMap::new());
        let got: Vec<i64> = rows.iter().map(|r| r.log_bytes).collect();
        assert_eq!(got, [100, 300, 300]);
    }

    #[test]
    fn csv_fields_cannot_become_formulas_or_break_rows() {
        let rows = [UsageDay {
            day: "2026-11-28".into(),
            subject: "=cmd,1".into(),
            gpu_hours: 1.5,
            cpu_hours: 0.0,
            log_bytes: 7,
        }];
        assert_eq!(
            csv(UsageGrouping::User, &rows),
            "day,user,gpu_hours,cpu_hours,log_bytes\n2026-11-28,\"'=cmd,1\",1.5,0,7\n"
        );
    }
}
