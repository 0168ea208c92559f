//! rmcp's [`CredentialStore`] over a [`TokenStore`] record: one server URL, bound to the
//! issuer whose metadata the authorization manager uses, so tokens minted by one
//! authorization server are never offered to another.

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use base64::Engine;
use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde_json::Value;

use crate::store::{FileLock, IssuerEntry, TokenStore};

/// The credentials of one server, as rmcp's authorization manager reads and writes them.
pub(crate) struct ServerCredentials {
    store: TokenStore,
    url: String,
    /// The issuer of the metadata in use; `None` reads the entry of the last login.
    issuer: Mutex<Option<String>>,
    /// A client secret to keep with the next save (from a dynamic registration).
    client_secret: Mutex<Option<String>>,
    /// The refresh lock a caller took before asking rmcp to refresh (see `client.rs`):
    /// rmcp's next `acquire_refresh_guard` takes it instead of locking again.
    held: Mutex<Option<FileLock>>,
}

impl ServerCredentials {
    pub(crate) fn new(store: TokenStore, url: &str, issuer: Option<String>) -> Self {
        Self {
            store,
            url: url.to_owned(),
            issuer: Mutex::new(issuer),
            client_secret: Mutex::new(None),
            held: Mutex::new(None),
        }
    }

    /// The stored credentials rmcp would load.
    pub(crate) fn stored(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.entry()?.map(|e| e.credentials))
    }

    /// Takes the store's refresh lock of this server (across processes and replicas).
    pub(crate) async fn refresh_lock(&self) -> Result<FileLock, AuthError> {
        let store = self.store.clone();
        let url = self.url.clone();
        tokio::task::spawn_blocking(move || store.lock(&url, "refresh"))
            .await
            .map_err(store_error)?
            .map_err(store_error)
    }

    /// Hands `lock` to rmcp's next refresh guard. Only while holding the authorization
    /// manager's mutex, under which rmcp asks for its guards.
    pub(crate) fn hold_refresh_lock(&self, lock: FileLock) {
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(lock);
    }

    /// The held lock rmcp did not take, if any.
    pub(crate) fn take_held_lock(&self) -> Option<FileLock> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    pub(crate) fn keep_client_secret(&self, secret: Option<String>) {
        *self
            .client_secret
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = secret;
    }

    fn issuer(&self) -> Option<String> {
        self.issuer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn entry(&self) -> Result<Option<IssuerEntry>, AuthError> {
        let record = self.store.load(&self.url).map_err(store_error)?;
        Ok(match self.issuer() {
            Some(issuer) => record.issuers.get(&issuer).cloned(),
            None => record.current_entry().cloned(),
        })
    }
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.stored()
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        // A token goes into an `Authorization` header: one with CR/LF from a hostile or broken
        // authorization server could never be sent, and has no business in the store.
        if let Some(token) = &credentials.token_response {
            let access = token.access_token().secret();
            let refresh = token.refresh_token().map(|r| r.secret());
            if std::iter::once(access)
                .chain(refresh)
                .any(|t| t.chars().any(char::is_control))
            {
                return Err(AuthError::CredentialStoreError(
                    "the authorization server sent a token with a control character (CR, LF, …), which no HTTP header can carry; it was not stored — tell the server's operator, then log in again".into(),
                ));
            }
        }
        let key = credentials.issuer.clone().unwrap_or_default();
        let bound = (!key.is_empty()).then(|| key.clone());
        let secret = self
            .client_secret
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let subject = credentials.token_response.as_ref().and_then(subject_of);
        self.store
            .update(&self.url, |record| {
                let old = record.issuers.remove(&key);
                let same_client = old
                    .as_ref()
                    .is_some_and(|o| o.credentials.client_id == credentials.client_id);
                let entry = IssuerEntry {
                    client_secret: secret.or_else(|| {
                        old.as_ref()
                            .filter(|_| same_client)
                            .and_then(|o| o.client_secret.clone())
                    }),
                    subject: subject.or_else(|| old.and_then(|o| o.subject)),
                    credentials,
                };
                record.issuers.insert(key.clone(), entry);
                record.current = Some(key);
                record.pending_scopes.clear();
                record.challenge_scopes.clear();
            })
            .map_err(store_error)?;
        *self.issuer.lock().unwrap_or_else(PoisonError::into_inner) = bound;
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let issuer = self.issuer();
        self.store
            .update(&self.url, |record| {
                let key = issuer
                    .or_else(|| record.current.clone())
                    .unwrap_or_default();
                record.issuers.remove(&key);
            })
            .map_err(store_error)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let lock = match self.take_held_lock() {
            Some(lock) => lock,
            None => self.refresh_lock().await?,
        };
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

/// An `Arc`'d credential store, so the caller keeps a handle on what rmcp writes.
pub(crate) struct Shared(pub(crate) std::sync::Arc<ServerCredentials>);

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

/// Who a token response is for, for display only (not verified): the ID token's claims,
/// else a JWT access token's.
pub(crate) fn subject_of(token: &rmcp::transport::auth::OAuthTokenResponse) -> Option<String> {
    let id_token = token
        .extra_fields()
        .0
        .get("id_token")
        .and_then(Value::as_str)
        .map(str::to_owned);
    id_token
        .into_iter()
        .chain(std::iter::once(token.access_token().secret().clone()))
        .find_map(|jwt| who(&jwt))
}

fn who(jwt: &str) -> Option<String> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    ["email", "preferred_username", "username", "name", "sub"]
        .iter()
        .find_map(|k| claims.get(k).and_then(Value::as_str))
        .filter(|s| !s.is_empty() && s.len() <= 200)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::auth::OAuthTokenResponse;

    #[tokio::test]
    async fn a_token_with_cr_or_lf_from_the_authorization_server_is_not_stored() {
        const URL: &str = "https://mcp.example.com/mcp";
        let dir = tempfile::tempdir().unwrap();
        let mode = crate::CredentialStoreMode::File;
        let store = TokenStore::in_dir(dir.path().to_path_buf(), mode).unwrap();
        let credentials = ServerCredentials::new(store.clone(), URL, None);
        let save = |access: &str, refresh: Option<&str>| {
            let mut body = serde_json::json!({"access_token": access, "token_type": "Bearer"});
            if let Some(refresh) = refresh {
                body["refresh_token"] = refresh.into();
            }
            let token: OAuthTokenResponse = serde_json::from_value(body).unwrap();
            credentials.save(StoredCredentials::new(
                "c".into(),
                Some(token),
                vec![],
                None,
            ))
        };
        for (access, refresh) in [("a\r\nX-Injected: 1", None), ("a", Some("r\n"))] {
            let err = save(access, refresh).await.unwrap_err().to_string();
            assert!(err.contains("control character"), "{err}");
        }
        assert!(store.load(URL).unwrap().issuers.is_empty());
        save("a", Some("r")).await.unwrap();
        assert_eq!(store.load(URL).unwrap().issuers.len(), 1);
    }

    #[test]
    fn who_reads_the_friendliest_claim_and_ignores_opaque_tokens() {
        // {"sub":"u1","email":"ada@example.com"}
        let jwt = "e30.eyJzdWIiOiJ1MSIsImVtYWlsIjoiYWRhQGV4YW1wbGUuY29tIn0.sig";
        assert_eq!(who(jwt).as_deref(), Some("ada@example.com"));
        assert_eq!(who("opaque-token"), None);
        assert_eq!(who("a.!!!.c"), None);
    }
}
