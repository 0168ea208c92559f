//! The Streamable HTTP client of a server toolgate logged in to: every request carries the
//! stored access token, renewed before it expires and once more when the server refuses
//! it, with the refresh coordinated through the token store so that one token is refreshed
//! once, however many processes or replicas find it stale at the same moment.
//!
//! rmcp's own `AuthClient` refreshes whenever *it* finds the token stale, even when another
//! process renewed it while it waited for the refresh lock: two replicas refused at once
//! each spent a refresh, one after the other. Here the lock is taken first, the record read
//! again under it, and the refresh made only when the token is still the stale one; the
//! exchange itself is rmcp's (`AuthorizationManager::refresh_token`), handed the lock
//! already held ([`ServerCredentials::hold_refresh_lock`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use oauth2::TokenResponse;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthError, AuthorizationManager, StoredCredentials};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::sync::Mutex;

use super::ServerCredentials;

/// Seconds before expiry a token is renewed: rmcp's 30 s (or half a short token's life).
const RENEW_BEFORE_SECS: u64 = 30;

/// `C` with the stored OAuth token of one server on every request.
pub(crate) struct Authorized<C> {
    inner: C,
    manager: Arc<Mutex<AuthorizationManager>>,
    credentials: Arc<ServerCredentials>,
}

impl<C: Clone> Clone for Authorized<C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            manager: Arc::clone(&self.manager),
            credentials: Arc::clone(&self.credentials),
        }
    }
}

impl<C> Authorized<C> {
    pub(crate) fn new(
        inner: C,
        manager: AuthorizationManager,
        credentials: Arc<ServerCredentials>,
    ) -> Self {
        Self {
            inner,
            manager: Arc::new(Mutex::new(manager)),
            credentials,
        }
    }
}

/// The stored access token, and whether it is due for renewal at `now`.
fn stored_token(credentials: &StoredCredentials, now: u64) -> Option<(String, bool)> {
    let token = credentials.token_response.as_ref()?;
    let due = match (token.expires_in(), credentials.token_received_at) {
        (Some(life), Some(received)) => {
            let remaining = life.as_secs().saturating_sub(now.saturating_sub(received));
            remaining < RENEW_BEFORE_SECS.min(life.as_secs() / 2).max(1)
        }
        // No expiry known: used until the server refuses it.
        _ => false,
    };
    Some((token.access_token().secret().clone(), due))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How a refresh ended.
enum Renewed {
    /// A token other than the stale one: renewed by this process or another.
    Token(String),
    /// No refresh is possible (none kept, or the grant was rejected): a login is needed.
    NeedsLogin,
}

impl<C> Authorized<C> {
    /// The token to send: the stored one, renewed first when it is due. `None` sends the
    /// request without one, so the server's `401` says a login is needed.
    async fn token<E>(&self) -> Result<Option<String>, StreamableHttpError<E>>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let manager = self.manager.lock().await;
        let Some((token, due)) = self
            .credentials
            .stored()?
            .and_then(|c| stored_token(&c, now_secs()))
        else {
            return Ok(None);
        };
        if !due {
            return Ok(Some(token));
        }
        match self.renew_unless_renewed(&manager, &token).await {
            Ok(Renewed::Token(fresh)) => Ok(Some(fresh)),
            Ok(Renewed::NeedsLogin) => Ok(None),
            // The provider is unreachable for now: a token not yet expired still works.
            Err(AuthError::TokenRefreshFailed(e)) => {
                tracing::warn!(error = %e, "OAuth token refresh failed; using the current token until it expires");
                Ok(Some(token))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Renews `stale` under the store's refresh lock, unless the record already holds
    /// another token (another request, process or replica renewed it meanwhile).
    async fn renew_unless_renewed(
        &self,
        manager: &AuthorizationManager,
        stale: &str,
    ) -> Result<Renewed, AuthError> {
        let lock = self.credentials.refresh_lock().await?;
        match self
            .credentials
            .stored()?
            .and_then(|c| stored_token(&c, now_secs()))
        {
            Some((current, false)) if current != stale => return Ok(Renewed::Token(current)),
            None => return Ok(Renewed::NeedsLogin),
            _ => {}
        }
        self.credentials.hold_refresh_lock(lock);
        let result = manager.refresh_token().await;
        // Not taken when rmcp failed before asking for it: released here.
        drop(self.credentials.take_held_lock());
        match result {
            Ok(response) => Ok(Renewed::Token(response.access_token().secret().clone())),
            Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
                tracing::warn!("OAuth token refresh not possible; the server needs a login");
                Ok(Renewed::NeedsLogin)
            }
            Err(e) => Err(e),
        }
    }

    /// Runs `call` with the token (the caller's, else the stored one); when the server
    /// refuses a token, renews it once (see the module docs) and calls again.
    async fn send<T, E, F, Fut>(
        &self,
        given: Option<String>,
        call: F,
    ) -> Result<T, StreamableHttpError<E>>
    where
        E: std::error::Error + Send + Sync + 'static,
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<E>>>,
    {
        let token = match given {
            Some(token) => Some(token),
            None => self.token().await?,
        };
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                let Some(sent) = token else {
                    return Err(StreamableHttpError::AuthRequired(challenge));
                };
                let manager = self.manager.lock().await;
                let renewed = self.renew_unless_renewed(&manager, &sent).await;
                drop(manager);
                match renewed {
                    Ok(Renewed::Token(fresh)) if fresh != sent => call(Some(fresh)).await,
                    Ok(_) => Err(StreamableHttpError::AuthRequired(challenge)),
                    Err(e) => Err(e.into()),
                }
            }
            result => result,
        }
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Authorized<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.send(auth_token, |token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.send(auth_token, |token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.send(auth_token, |token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.send(auth_token, |token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.send(auth_token, |token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.send(auth_token, |token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::stored_token;
    use rmcp::transport::auth::{OAuthTokenResponse, StoredCredentials};

    fn credentials(expires_in: Option<u64>, received: Option<u64>) -> StoredCredentials {
        let mut body = serde_json::json!({"access_token": "a", "token_type": "Bearer"});
        if let Some(life) = expires_in {
            body["expires_in"] = life.into();
        }
        let token: OAuthTokenResponse = serde_json::from_value(body).unwrap();
        StoredCredentials::new("client".into(), Some(token), vec![], received)
    }

    #[test]
    fn a_token_is_due_thirty_seconds_before_expiry_or_half_way_through_a_short_life() {
        let hour = credentials(Some(3600), Some(1000));
        assert_eq!(stored_token(&hour, 1000), Some(("a".into(), false)));
        assert_eq!(stored_token(&hour, 1000 + 3570), Some(("a".into(), false)));
        assert_eq!(stored_token(&hour, 1000 + 3571), Some(("a".into(), true)));
        assert_eq!(stored_token(&hour, 99_999), Some(("a".into(), true)));
        let short = credentials(Some(20), Some(1000));
        assert_eq!(stored_token(&short, 1009), Some(("a".into(), false)));
        assert_eq!(stored_token(&short, 1011), Some(("a".into(), true)));
        // No expiry known: never due.
        assert_eq!(
            stored_token(&credentials(None, None), 99_999),
            Some(("a".into(), false))
        );
    }
}
