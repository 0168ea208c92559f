//! MCP authorization (OAuth 2.1) for remote servers that need a login, on rmcp's `auth`
//! feature (its `AuthorizationManager` and credential-store trait), per the
//! MCP authorization spec (MCP 2025-11-25 and 2026-07-28, Authorization).
//!
//! - [`login`]: `toolgate mcp login NAME`, the authorization-code flow with PKCE, run by a
//!   human with a browser (`login.rs`, `callback.rs`, `browser.rs`).
//! - [`TokenStore`]: tokens in the OS credential store or a 0600 file, keyed by server URL
//!   and issuer (`store.rs`, and `bound.rs` for rmcp's side of it).
//! - [`authorized_client`]: what a mount uses: an HTTP client over the stored tokens which
//!   refreshes before expiry and on a `401`, once per token across processes and replicas
//!   (`client.rs`). A server with no usable tokens is `needs login`; `serve` never waits
//!   for a human.
//!
//! What rmcp 3.11 lacks and this module adds around it (wrapping, not forking): persistent
//! stores keyed by issuer, the client secret of a dynamic registration kept for refreshes
//! (rmcp's `initialize_from_store` forgets it), refreshes that re-read the store under its
//! lock (rmcp's `AuthClient` refreshes again what another process just renewed), a
//! loopback callback and a browser opener,
//! step-up scopes remembered across processes, and the union of granted and challenged
//! scopes for a login made by a later process.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, CredentialRefreshGuard, CredentialStore, OAuthClientConfig,
    StoredCredentials,
};

use crate::config::ServerSpec;
use crate::failure::{Failure, NeedsLogin};

mod bound;
mod browser;
mod callback;
mod client;
mod login;
mod store;

pub(crate) use bound::ServerCredentials;
pub use browser::LoginUrlError;
pub use callback::CallbackError;
pub(crate) use client::Authorized;
pub use login::{LoginError, LoginOptions, login};
pub(crate) use login::{describe, parse_challenge, start};
pub use store::{AuthStatus, SharedStoreUrlError, StoreError, TokenStore};

/// Signs a human in when a server needs it. `serve` has none (it never waits for a
/// human); a terminal command or a test harness may.
pub trait LoginHandler: Send + Sync {
    /// Logs in to `spec`'s server; `challenge` is the server's `WWW-Authenticate`.
    fn login<'a>(
        &'a self,
        spec: &'a ServerSpec,
        challenge: Option<&'a str>,
    ) -> futures::future::BoxFuture<'a, Result<(), LoginError>>;
}

/// An `Arc`'d credential store, so the caller keeps a handle on what rmcp writes.
pub(crate) struct Shared(pub(crate) Arc<ServerCredentials>);

#[async_trait]
impl CredentialStore for Shared {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.0.load().await
    }
    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.0.save(credentials).await
    }
    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().await
    }
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        self.0.acquire_refresh_guard().await
    }
}

/// rmcp's `AuthClient` over the stored tokens of `url`, or `None` when nothing is stored
/// (the server is then tried without a token; a `401` makes it `needs login`). A server
/// whose authorization server changed needs a login; one whose authorization server cannot
/// be reached has failed (and is retried), it does not need a human.
pub(crate) async fn authorized_client(
    store: &TokenStore,
    spec: &ServerSpec,
    url: &str,
    record_key: &str,
) -> Result<Option<Authorized<reqwest::Client>>, Failure> {
    let record = store
        .load(record_key)
        .map_err(|e| Failure::Failed(format!("its stored login cannot be read: {e}")))?;
    if record.issuers.is_empty() {
        return Ok(None);
    }
    // rmcp's OAuth client is a reqwest client, which needs rustls' provider first.
    crate::connect::tls_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| Failure::Failed(describe(&e)))?;
    let metadata = manager
        .resolve_metadata()
        .await
        .map_err(|e| {
            Failure::Failed(format!(
                "its authorization server cannot be reached: {}",
                describe(&e)
            ))
        })?
        .metadata;
    let issuer = metadata.issuer.clone().unwrap_or_default();
    let Some(entry) = record.issuers.get(&issuer).cloned() else {
        return Err(Failure::NeedsLogin(NeedsLogin {
            reason: format!(
                "it now uses another authorization server ({}); the old login does not apply there",
                if issuer.is_empty() {
                    "without an issuer"
                } else {
                    &issuer
                }
            ),
            challenge: None,
        }));
    };
    manager.set_metadata(metadata);
    let credentials = Arc::new(ServerCredentials::new(
        store.clone(),
        record_key,
        Some(issuer).filter(|i| !i.is_empty()),
    ));
    manager.set_credential_store(Shared(Arc::clone(&credentials)));
    let secret = entry.client_secret.clone().or_else(|| {
        spec.oauth
            .client_secret_env
            .as_ref()
            .filter(|_| spec.oauth.client_id.as_deref() == Some(&entry.credentials.client_id))
            .and_then(|var| std::env::var(var).ok())
    });
    let mut config = OAuthClientConfig::new(entry.credentials.client_id.clone(), url.to_owned());
    if let Some(secret) = secret {
        config = config.with_client_secret(secret);
    }
    manager
        .configure_client(config)
        .map_err(|e| Failure::Failed(describe(&e)))?;
    crate::connect::tls_provider();
    Ok(Some(Authorized::new(
        reqwest::Client::new(),
        manager,
        credentials,
    )))
}

/// Remembers the scopes of a server's challenge for the next login, which may run in
/// another process (`toolgate mcp login`): those of an `insufficient_scope` step-up are
/// added to what was granted; those of a plain `401` are what the server wants.
pub(crate) fn remember_challenge(store: &TokenStore, url: &str, challenge: &str) {
    let params = parse_challenge(url, challenge);
    let Some(scope) = params.scope.clone() else {
        return;
    };
    let step_up = params.is_insufficient_scope();
    let _ = store.update(url, |record| {
        let list = if step_up {
            &mut record.pending_scopes
        } else {
            record.challenge_scopes.clear();
            &mut record.challenge_scopes
        };
        for s in scope.split_whitespace() {
            if !list.iter().any(|p| p == s) {
                list.push(s.to_owned());
            }
        }
    });
}

/// The `WWW-Authenticate` of an unauthenticated POST to the MCP endpoint, when the server
/// answers `401` or `403` (the challenge that starts discovery).
pub(crate) async fn probe_challenge(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Option<String> {
    crate::connect::tls_provider();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .ok()?;
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "toolgate", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(&body);
    for (name, value) in headers {
        if !name.eq_ignore_ascii_case("authorization") {
            request = request.header(name.as_str(), value.as_str());
        }
    }
    let response = request.send().await.ok()?;
    if !matches!(response.status().as_u16(), 401 | 403) {
        return None;
    }
    response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.to_ascii_lowercase().starts_with("bearer"))
        .map(str::to_owned)
}
