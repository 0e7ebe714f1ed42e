//! A series of samples kept bounded whatever the run's length: at most
//! [`MAX_POINTS`] points per series and attempt. When a series grows past
//! it, its points are merged pairwise, oldest first, into points twice as
//! coarse, so a week-long run keeps its whole history at a resolution of
//! minutes and a short one every sample.

use serde::{Deserialize, Serialize};

/// The most points one series of one attempt keeps.
pub const MAX_POINTS: usize = 2_000;

/// One point: the mean of the samples it stands for, their peak, and how
/// many samples it merges.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Unix ms of its first sample.
    pub t: i64,
    pub mean: f64,
    pub max: f64,
    pub count: u32,
}

impl Point {
    pub fn sample(t: i64, value: f64) -> Point {
        Point { t, mean: value, max: value, count: 1 }
    }

    fn merge(a: Point, b: Point) -> Point {
        let count = a.count + b.count;
        Point {
            t: a.t,
            mean: (a.mean * f64::from(a.count) + b.mean * f64::from(b.count)) / f64::from(count),
            max: a.max.max(b.max),
            count,
        }
    }
}

/// Merges the older half of `points` pairwise when there are more than
/// `limit`, so the newest samples keep their full resolution. Returns
/// whether anything was merged.
pub fn compact(points: &mut Vec<Point>, limit: usize) -> bool {
    if points.len() <= limit {
        return false;
    }
    let older = points.len() / 2;
    let mut merged: Vec<Point> =
        points[..older].chunks(2).map(|pair| pair.iter().copied().reduce(Point::merge).unwrap()).collect();
    merged.extend_from_slice(&points[older..]);
    *points = merged;
    // A series far over the limit (samples stored by an older version)
    // needs more than one pass.
    compact(points, limit);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_stay_bounded_and_keep_their_means_and_peaks() {
        // A week of 5 s samples.
        let mut points = Vec::new();
        let week = 7 * 24 * 3600 / 5;
        for i in 0..week {
            let value = if i == 1000 { 99.0 } else { (i % 10) as f64 };
            points.push(Point::sample(i as i64 * 5_000, value));
            compact(&mut points, MAX_POINTS);
        }
        assert!(points.len() <= MAX_POINTS, "{}", points.len());
        assert!(points.len() > MAX_POINTS / 2, "{}", points.len());
        let samples: u32 = points.iter().map(|p| p.count).sum();
        assert_eq!(samples as usize, week, "every sample is in exactly one point");
        assert!(points.windows(2).all(|w| w[0].t < w[1].t), "in time order");
        assert_eq!(points.iter().map(|p| p.max).fold(0.0, f64::max), 99.0, "the peak survives merging");
        let mean = points.iter().map(|p| p.mean * f64::from(p.count)).sum::<f64>() / f64::from(samples);
        assert!((mean - 4.5).abs() < 0.01, "{mean}");
        assert_eq!(points.last().unwrap().count, 1, "the newest samples are kept as they are");
    }

    #[test]
    fn short_series_are_untouched() {
        let mut points: Vec<Point> = (0..10).map(|i| Point::sample(i, i as f64)).collect();
        assert!(!compact(&mut points, 10));
        assert_eq!(points.len(), 10);
        assert!(compact(&mut points, 9));
        assert_eq!(points.len(), 8);
        assert_eq!(points[0], Point { t: 0, mean: 0.5, max: 1.0, count: 2 });
    }
}
