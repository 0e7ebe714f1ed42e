//! Resource-use samples per replica attempt and series, bounded
//! (`metrics::series`).

use rusqlite::params;

use super::changes::Change;
use super::error::StoreResult;
use super::series::{compact, Point, MAX_POINTS};
use super::Store;

/// One sample to store.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSample {
    pub job_id: String,
    pub completion_index: i64,
    pub attempt: i64,
    pub series: String,
    /// Unix ms.
    pub t: i64,
    pub value: f64,
}

impl Store {
    /// Stores a tick's samples; a series that grew past the bound is merged
    /// down in the same transaction.
    pub async fn append_metrics(&self, samples: Vec<MetricSample>) -> StoreResult<()> {
        if samples.is_empty() {
            return Ok(());
        }
        let mut jobs: Vec<String> = samples.iter().map(|s| s.job_id.clone()).collect();
        jobs.sort();
        jobs.dedup();
        self.write(move |tx| {
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR REPLACE INTO metrics (job_id, completion_index, attempt, series, t, mean, max, count)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 1)",
                )?;
                for s in &samples {
                    insert.execute(params![s.job_id, s.completion_index, s.attempt, s.series, s.t, s.value])?;
                }
            }
            let mut touched: Vec<(&str, i64, i64, &str)> = samples
                .iter()
                .map(|s| (s.job_id.as_str(), s.completion_index, s.attempt, s.series.as_str()))
                .collect();
            touched.sort();
            touched.dedup();
            for (job, index, attempt, series) in touched {
                let count: i64 = tx.query_row(
                    "SELECT COUNT(*) FROM metrics WHERE job_id = ?1 AND completion_index = ?2 AND attempt = ?3 AND series = ?4",
                    params![job, index, attempt, series],
                    |r| r.get(0),
                )?;
                if count as usize <= MAX_POINTS {
                    continue;
                }
                let mut points = read_points(tx, job, index, attempt, series, i64::MIN, i64::MAX)?;
                compact(&mut points, MAX_POINTS);
                tx.execute(
                    "DELETE FROM metrics WHERE job_id = ?1 AND completion_index = ?2 AND attempt = ?3 AND series = ?4",
                    params![job, index, attempt, series],
                )?;
                let mut insert = tx.prepare_cached(
                    "INSERT INTO metrics (job_id, completion_index, attempt, series, t, mean, max, count)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )?;
                for p in points {
                    insert.execute(params![job, index, attempt, series, p.t, p.mean, p.max, p.count])?;
                }
            }
            Ok(())
        })
        .await?;
        self.publish(jobs.into_iter().map(Change::Metrics));
        Ok(())
    }

    /// The names of an attempt's series.
    pub async fn metric_series(&self, job_id: String, index: i64, attempt: i64) -> StoreResult<Vec<String>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT DISTINCT series FROM metrics WHERE job_id = ?1 AND completion_index = ?2 AND attempt = ?3
                 ORDER BY series",
            )?;
            let rows = stmt.query_map(params![job_id, index, attempt], |r| r.get(0))?;
            rows.collect()
        })
        .await
    }

    /// One series of an attempt between `from` and `to` (Unix ms,
    /// inclusive), oldest first.
    pub async fn metric_points(
        &self,
        job_id: String,
        index: i64,
        attempt: i64,
        series: String,
        from: i64,
        to: i64,
    ) -> StoreResult<Vec<Point>> {
        self.read(move |conn| read_points(conn, &job_id, index, attempt, &series, from, to)).await
    }

    /// Every point of every series of a job: the job's summary and its
    /// flags are computed from them (at most [`MAX_POINTS`] per series).
    pub async fn job_metrics(&self, job_id: String) -> StoreResult<Vec<(i64, i64, String, Point)>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT completion_index, attempt, series, t, mean, max, count FROM metrics WHERE job_id = ?1
                 ORDER BY completion_index, attempt, series, t",
            )?;
            let rows = stmt.query_map(params![job_id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    Point { t: r.get(3)?, mean: r.get(4)?, max: r.get(5)?, count: r.get(6)? },
                ))
            })?;
            rows.collect()
        })
        .await
    }

    /// Deletes a job's samples (with the job).
    pub async fn delete_metrics(&self, job_id: String) -> StoreResult<()> {
        self.write(move |tx| {
            tx.execute("DELETE FROM metrics WHERE job_id = ?1", params![job_id])?;
            Ok(())
        })
        .await
    }
}

fn read_points(
    conn: &rusqlite::Connection,
    job: &str,
    index: i64,
    attempt: i64,
    series: &str,
    from: i64,
    to: i64,
) -> rusqlite::Result<Vec<Point>> {
    let mut stmt = conn.prepare_cached(
        "SELECT t, mean, max, count FROM metrics
         WHERE job_id = ?1 AND completion_index = ?2 AND attempt = ?3 AND series = ?4 AND t BETWEEN ?5 AND ?6
         ORDER BY t",
    )?;
    let rows = stmt.query_map(params![job, index, attempt, series, from, to], |r| {
        Ok(Point { t: r.get(0)?, mean: r.get(1)?, max: r.get(2)?, count: r.get(3)? })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn samples_are_kept_bounded_per_series_and_deleted_with_the_job() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let sample = |series: &str, t: i64, value: f64| MetricSample {
            job_id: "j".into(),
            completion_index: 0,
            attempt: 0,
            series: series.into(),
            t,
            value,
        };
        for tick in 0..(MAX_POINTS as i64 + 500) {
            store
                .append_metrics(vec![sample("cpu", tick * 5_000, 1.0), sample("memory", tick * 5_000, tick as f64)])
                .await
                .unwrap();
        }
        let cpu = store.metric_points("j".into(), 0, 0, "cpu".into(), i64::MIN, i64::MAX).await.unwrap();
        assert!(cpu.len() <= MAX_POINTS && cpu.len() > MAX_POINTS / 2, "{}", cpu.len());
        assert_eq!(cpu.iter().map(|p| p.count as usize).sum::<usize>(), MAX_POINTS + 500);
        let memory = store.metric_points("j".into(), 0, 0, "memory".into(), i64::MIN, i64::MAX).await.unwrap();
        assert_eq!(memory.last().unwrap().max, (MAX_POINTS + 499) as f64);
        let window = store.metric_points("j".into(), 0, 0, "memory".into(), 0, 10_000).await.unwrap();
        assert!(window.iter().all(|p| p.t <= 10_000));
        assert_eq!(store.metric_series("j".into(), 0, 0).await.unwrap(), ["cpu", "memory"]);
        store.delete_metrics("j".into()).await.unwrap();
        assert!(store.job_metrics("j".into()).await.unwrap().is_empty());
    }
}
