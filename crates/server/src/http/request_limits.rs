//! What one request and one user may hold (`[limits]`, docs/security.md
//! "Requests"): every API request passes [`bound_request`], which asks who
//! sent it before any body is read, bounds the requests a user has in
//! flight, and bounds how long an answer may take to start. Log follows
//! take a second, smaller bound ([`UserLimits::follow`]).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::http::auth::CurrentUser;
use crate::http::error::AppError;
use crate::AppState;
use jobdeck_core::config::LimitsConfig;

/// How many of something each user holds now.
#[derive(Clone, Default)]
struct Counter(Arc<Mutex<HashMap<i64, usize>>>);

/// One held unit of a [`Counter`], given back when dropped.
pub struct Permit {
    counter: Counter,
    user_id: i64,
}

impl Counter {
    fn try_enter(&self, user_id: i64, bound: usize) -> Option<Permit> {
        let mut held = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = held.entry(user_id).or_insert(0);
        if *now >= bound {
            return None;
        }
        *now += 1;
        Some(Permit { counter: self.clone(), user_id })
    }

    #[cfg(test)]
    fn held(&self, user_id: i64) -> usize {
        self.0.lock().unwrap().get(&user_id).copied().unwrap_or(0)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut held = self.counter.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(now) = held.get_mut(&self.user_id) {
            *now = now.saturating_sub(1);
            if *now == 0 {
                held.remove(&self.user_id);
            }
        }
    }
}

/// The requests and log follows each user holds, against `[limits]`.
#[derive(Clone)]
pub struct UserLimits {
    limits: LimitsConfig,
    requests: Counter,
    followers: Counter,
    streams: Counter,
}

impl UserLimits {
    pub fn new(limits: &LimitsConfig) -> Self {
        Self {
            limits: limits.clone(),
            requests: Counter::default(),
            followers: Counter::default(),
            streams: Counter::default(),
        }
    }

    /// A request of `user` in flight, or 429 when it has as many as it may.
    fn request(&self, user: &CurrentUser) -> Result<Permit, AppError> {
        let bound = self.limits.requests_per_user;
        self.requests.try_enter(user.id, bound).ok_or_else(|| {
            AppError::TooManyRequests(format!(
                "{} has {bound} requests in flight, as many as one user may (limits.requests_per_user); \
                 wait for some to finish",
                user.name
            ))
        })
    }

    /// A log follow of `user` held open, or 429 when it holds as many as it
    /// may.
    pub fn follow(&self, user: &CurrentUser) -> Result<Permit, AppError> {
        let bound = self.limits.log_followers_per_user;
        self.followers.try_enter(user.id, bound).ok_or_else(|| {
            AppError::TooManyRequests(format!(
                "{} follows {bound} logs already, as many as one user may (limits.log_followers_per_user); \
                 close some",
                user.name
            ))
        })
    }
}

impl UserLimits {
    /// An event stream of `user` held open, or 429 when it holds as many as
    /// it may.
    pub fn stream(&self, user: &CurrentUser) -> Result<Permit, AppError> {
        let bound = self.limits.streams_per_user;
        self.streams.try_enter(user.id, bound).ok_or_else(|| {
            AppError::TooManyRequests(format!(
                "{} holds {bound} event streams already, as many as one user may (limits.streams_per_user); \
                 close some",
                user.name
            ))
        })
    }
}

/// Every API request: who sent it is asked first (a body of unknown length,
/// chunked, from someone without a valid token is refused with 401 before
/// a byte of it is read, since the server reads such a body itself to bound
/// it); a signed-in user's request counts against their bound until its
/// answer, streams included, has been sent; and the answer must start
/// within `limits.request_timeout`. The user found here is handed to the
/// handler's [`CurrentUser`] extractor, so the token is read once.
pub async fn bound_request(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let streamed = !request.headers().contains_key(axum::http::header::CONTENT_LENGTH)
        && request.headers().contains_key(axum::http::header::TRANSFER_ENCODING);
    let (mut parts, body) = request.into_parts();
    let permit = match CurrentUser::from_request_parts(&mut parts, &state).await {
        Ok(user) => match state.user_limits.request(&user) {
            Ok(permit) => {
                parts.extensions.insert(user);
                Some(permit)
            }
            Err(refused) => return refused.into_response(),
        },
        // A route that needs no token answers without one; one that needs
        // it refuses in its own extractor, with the same reason.
        Err(refused) if streamed => return refused.into_response(),
        Err(_) => None,
    };
    let limit = state.config.limits.request_timeout;
    let answer = tokio::time::timeout(limit, next.run(Request::from_parts(parts, body))).await;
    let response = match answer {
        Ok(response) => response,
        Err(_) => return AppError::TimedOut(limit).into_response(),
    };
    match permit {
        Some(permit) => response.map(|body| Body::new(HeldBody { body, _permit: permit })),
        None => response,
    }
}

/// An answer's body that holds its request's permit until it is sent (or
/// dropped when the client goes away).
struct HeldBody {
    body: Body,
    _permit: Permit,
}

impl http_body::Body for HeldBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_holds_at_most_the_bound_and_permits_come_back_when_dropped() {
        let counter = Counter::default();
        let first = counter.try_enter(1, 2).unwrap();
        let second = counter.try_enter(1, 2).unwrap();
        assert!(counter.try_enter(1, 2).is_none(), "a third is over the bound");
        assert!(counter.try_enter(2, 2).is_some(), "another user has a bound of their own");
        drop(first);
        assert_eq!(counter.held(1), 1);
        let third = counter.try_enter(1, 2).expect("a dropped permit makes room");
        drop((second, third));
        assert_eq!(counter.held(1), 0);
        assert!(counter.0.lock().unwrap().is_empty(), "users holding nothing are forgotten");
    }
}
