//! Fetching lines: the ranges on screen, and following a running attempt.

use super::controls::LogState;
use super::{Viewer, CHUNK, FOLLOW_WAIT_SECONDS, MAX_IN_FLIGHT};
use crate::api::{self, ApiFailure};
use crate::components::live::sleep;

/// Follows a running attempt: each request waits for lines after the last
/// one known and answers with them and the new total. While the user reads
/// elsewhere in the log only the total is asked for, so a fast-growing log
/// does not stream lines nobody looks at.
pub(super) async fn follow_log(viewer: &Viewer, signal: Option<web_sys::AbortSignal>) {
    loop {
        let Some((job, replica, known, ended, following)) =
            viewer.read(|c| (c.job.clone(), c.replica.clone(), c.total, c.ended, c.follow))
        else {
            return;
        };
        if ended {
            viewer.change(|c| {
                c.follow = false;
                c.set_state(LogState::Ended);
            });
            return;
        }
        let to = if following { known + CHUNK } else { known + 1 };
        let answer = api::log_range_waiting(&job, &replica, known + 1, to, FOLLOW_WAIT_SECONDS, signal.as_ref()).await;
        if signal.as_ref().is_some_and(|s| s.aborted()) {
            return;
        }
        match answer {
            Ok(range) => {
                let alive = viewer.change(|c| {
                    c.absorb(range);
                    if c.follow {
                        c.draw();
                        c.scroll_to_end();
                    }
                });
                if alive.is_none() {
                    return;
                }
                refresh(viewer);
            }
            Err(ApiFailure::Unauthorized) => {
                let why = "Your session has ended; sign in again to follow the log.";
                viewer.change(|c| c.set_state(LogState::Failed(why.into())));
                return;
            }
            Err(failure) => {
                viewer.change(|c| c.set_state(LogState::Failed(format!("{failure}; trying again…"))));
                sleep(2000).await;
                if viewer.change(|c| c.set_state(LogState::Live)).is_none() {
                    return;
                }
            }
        }
    }
}

/// Draws the rows on screen and the controls, then fetches whatever the
/// rows lack; each answer draws again. Fetches are few at a time, so
/// dragging the scroll bar across a long log asks only for where it stops.
pub(super) fn refresh(viewer: &Viewer) {
    let Some(wanted) = viewer.change(|c| {
        c.show_controls();
        c.draw()
    }) else {
        return;
    };
    for (from, to) in wanted {
        let Some(Some((job, replica, signal))) = viewer.change(|c| {
            if c.in_flight.len() >= MAX_IN_FLIGHT {
                return None;
            }
            c.in_flight.push((from, to));
            Some((c.job.clone(), c.replica.clone(), c.abort.as_ref().map(|a| a.signal())))
        }) else {
            return;
        };
        let viewer = viewer.clone();
        leptos::task::spawn_local(async move {
            let answer = api::log_range(&job, &replica, from, to, signal.as_ref()).await;
            let alive = viewer.change(|c| {
                c.in_flight.retain(|r| *r != (from, to));
                if let Ok(range) = &answer {
                    c.absorb(range.clone());
                }
            });
            if alive.is_none() || signal.as_ref().is_some_and(|s| s.aborted()) {
                return;
            }
            match answer {
                Ok(_) => refresh(&viewer),
                Err(failure) => {
                    viewer.change(|c| c.set_state(LogState::Failed(failure.to_string())));
                }
            }
        });
    }
}
