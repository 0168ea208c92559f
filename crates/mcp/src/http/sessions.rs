//! A cap on Streamable HTTP sessions: each costs memory until it ends or times out (about
//! 61 KB for rmcp's 5 minutes), so past the cap the least recently active session is closed
//! to make room for a new one, instead of letting abandoned sessions pile up.
//!
//! Each session also remembers the caller that opened it ([`crate::http::current::caller`]), so
//! the door can refuse another caller's token on it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio::time::Instant;
use toolgate_core::Identity;

/// A live session: when it was last active and who opened it (`None`: no OAuth caller — the
/// static token, or no auth).
struct Live {
    at: Instant,
    owner: Option<Identity>,
}

/// [`LocalSessionManager`] with at most `cap` live sessions.
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    cap: usize,
    /// Each live session.
    active: Mutex<HashMap<SessionId, Live>>,
}

impl CappedSessions {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            inner: LocalSessionManager::default(),
            cap: cap.max(1),
            active: Mutex::default(),
        }
    }

    fn touch(&self, id: &SessionId) {
        let mut active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = active.get_mut(id) {
            live.at = Instant::now();
        }
    }

    /// The sessions to close so one more fits, least recently active first.
    fn overflow(&self) -> Vec<SessionId> {
        let active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        let excess = (active.len() + 1).saturating_sub(self.cap);
        let mut by_age: Vec<(&SessionId, &Live)> = active.iter().collect();
        by_age.sort_by_key(|(_, live)| live.at);
        by_age
            .into_iter()
            .take(excess)
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn forget(&self, id: &SessionId) {
        self.active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Who opened session `id`: `None` when it is not a live session, `Some(None)` when it
    /// was opened without an OAuth caller.
    pub(crate) fn owner(&self, id: &str) -> Option<Option<Identity>> {
        let active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        active.get(id).map(|live| live.owner.clone())
    }

    /// Live sessions (for tests and logs).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl SessionManager for CappedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        for old in self.overflow() {
            tracing::info!(session = %old, cap = self.cap, "closing the least recently active HTTP session to make room");
            self.forget(&old);
            let _ = self.inner.close_session(&old).await;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                id.clone(),
                Live {
                    at: Instant::now(),
                    owner: crate::http::current::caller(),
                },
            );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        let live = self.inner.has_session(id).await?;
        if !live {
            // Ended by itself (its keep-alive ran out): no longer counted.
            self.forget(id);
        }
        Ok(live)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.forget(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A paused clock: each step is 5 ms later, exactly.
    #[tokio::test(start_paused = true)]
    async fn past_the_cap_the_least_recently_active_session_is_closed() {
        let sessions = CappedSessions::new(2);
        let (a, _ta) = sessions.create_session().await.unwrap();
        tokio::time::advance(std::time::Duration::from_millis(5)).await;
        let (b, _tb) = sessions.create_session().await.unwrap();
        tokio::time::advance(std::time::Duration::from_millis(5)).await;
        // `a` is used again, so `b` is now the least recently active.
        sessions.touch(&a);
        let (c, _tc) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.len(), 2);
        assert!(sessions.inner.has_session(&a).await.unwrap());
        assert!(
            !sessions.inner.has_session(&b).await.unwrap(),
            "b was closed"
        );
        assert!(sessions.inner.has_session(&c).await.unwrap());
    }
}
