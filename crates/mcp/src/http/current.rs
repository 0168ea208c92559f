//! The caller of the request being served on this task, as the door admitted it: set by the
//! door (`door.rs`) around each request it lets in, read by the session factory and the
//! session manager (`sessions.rs`) when they build a session. It sits below both so the
//! door, which holds the session manager, and the session manager do not depend on each other.

use std::future::Future;

use toolgate_core::Identity;

tokio::task_local! {
    static CALLER: Option<Identity>;
    static RATE_KEY: Option<String>;
}

/// `served`, run with `caller` and `rate_key` as the request's caller and rate-limit key.
pub(super) fn serve_as<F: Future>(
    caller: Option<Identity>,
    rate_key: Option<String>,
    served: F,
) -> impl Future<Output = F::Output> {
    CALLER.scope(caller, RATE_KEY.scope(rate_key, served))
}

/// The OAuth caller of the request being served on this task, if any.
pub(crate) fn caller() -> Option<Identity> {
    CALLER.try_with(Clone::clone).ok().flatten()
}

/// Whom the request being served on this task counts against for rate limits when it has
/// no identity (the door's `Door::rate_key` decides it).
pub(crate) fn rate_key() -> Option<String> {
    RATE_KEY.try_with(Clone::clone).ok().flatten()
}
