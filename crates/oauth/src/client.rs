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

use rmcp::transport::auth::OAuthClientConfig;

use crate::bound::{ServerCredentials, Shared};
use crate::config::Server;
use crate::store::{StoreError, TokenStore};

/// Seconds before expiry a token is renewed: rmcp's 30 s (or half a short token's life).
const RENEW_BEFORE_SECS: u64 = 30;

/// `C` with the stored OAuth token of one server on every request: an rmcp Streamable
/// HTTP client, from [`authorized_client`].
pub struct Authorized<C> {
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
    fn new(inner: C, manager: AuthorizationManager, credentials: Arc<ServerCredentials>) -> Self {
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

/// Why no authorized client could be made for a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The stored login cannot be read.
    #[error("its stored login cannot be read: {0}")]
    Store(#[source] StoreError),
    /// rmcp's authorization manager refused the server or the stored client.
    #[error("{}", toolgate_core::with_causes(.0))]
    OAuth(#[source] AuthError),
    /// The authorization server's metadata cannot be fetched (retried later; no human
    /// can help).
    #[error("its authorization server cannot be reached: {}", toolgate_core::with_causes(.0))]
    Unreachable(#[source] AuthError),
    /// The server's authorization server is not the one the stored login is from.
    #[error(
        "it now uses another authorization server ({}); the old login does not apply there",
        if issuer.is_empty() { "without an issuer" } else { issuer }
    )]
    IssuerChanged {
        /// The issuer the server names now (empty when it names none).
        issuer: String,
    },
}

impl ClientError {
    /// Whether a human must log in again (rather than the server being retried).
    pub fn needs_login(&self) -> bool {
        matches!(self, Self::IssuerChanged { .. })
    }
}

/// An HTTP client over the stored tokens of `server` (in the store's `record_key`), or
/// `None` when nothing is stored (the server is then tried without a token; a `401` makes
/// it need a login). A server whose authorization server changed needs a login
/// ([`ClientError::needs_login`]); one whose authorization server cannot be reached has
/// failed (and is retried), it does not need a human.
pub async fn authorized_client(
    store: &TokenStore,
    server: Server<'_>,
    record_key: &str,
) -> Result<Option<Authorized<reqwest::Client>>, ClientError> {
    let url = server.url;
    let record = store.load(record_key).map_err(ClientError::Store)?;
    if record.issuers.is_empty() {
        return Ok(None);
    }
    // rmcp's OAuth client is a reqwest client, which needs rustls' provider first.
    crate::tls_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(ClientError::OAuth)?;
    let metadata = manager
        .resolve_metadata()
        .await
        .map_err(ClientError::Unreachable)?
        .metadata;
    let issuer = metadata.issuer.clone().unwrap_or_default();
    let Some(entry) = record.issuers.get(&issuer).cloned() else {
        return Err(ClientError::IssuerChanged { issuer });
    };
    manager.set_metadata(metadata);
    let credentials = Arc::new(ServerCredentials::new(
        store.clone(),
        record_key,
        Some(issuer).filter(|i| !i.is_empty()),
    ));
    manager.set_credential_store(Shared(Arc::clone(&credentials)));
    let secret = entry.client_secret.clone().or_else(|| {
        server
            .oauth
            .client_secret_env
            .as_ref()
            .filter(|_| server.oauth.client_id.as_deref() == Some(&entry.credentials.client_id))
            .and_then(|var| std::env::var(var).ok())
    });
    let mut config = OAuthClientConfig::new(entry.credentials.client_id.clone(), url.to_owned());
    if let Some(secret) = secret {
        config = config.with_client_secret(secret);
    }
    manager
        .configure_client(config)
        .map_err(ClientError::OAuth)?;
    crate::tls_provider();
    Ok(Some(Authorized::new(
        reqwest::Client::new(),
        manager,
        credentials,
    )))
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
