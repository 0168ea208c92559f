//! `toolgate mcp login NAME`: the authorization-code flow with PKCE, run by a human.
//!
//! 1. An unauthenticated request to the server: its `401`'s `WWW-Authenticate` challenge
//!    seeds discovery (`resource_metadata`) and the scopes (`scope`).
//! 2. rmcp's [`AuthorizationManager`] discovers the protected-resource metadata (RFC 9728,
//!    from the challenge or the well-known paths) and the authorization server's metadata
//!    (RFC 8414 / OpenID, with their path fallbacks), checking `resource` and `issuer`.
//! 3. The client: pre-registered (`client_id`), else a Client ID Metadata Document
//!    (`client_metadata_url`, when the server supports it), else dynamic registration.
//! 4. Scopes: `scopes` from the config, else the ones a server asked for with
//!    `insufficient_scope` plus those already granted (step-up), else the challenge's, else
//!    the resource's `scopes_supported`; `offline_access` is added where offered.
//! 5. The browser (`$BROWSER URL`, else the platform opener) goes to the authorization URL
//!    (PKCE S256, `resource` per RFC 8707); the loopback callback receives `code`, `state`
//!    and `iss` (checked per RFC 9207); the code is exchanged and the tokens stored.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::transport::AuthorizationManager;
use rmcp::transport::auth::{AuthError, OAuthClientConfig, WWWAuthenticateParams};
use serde_json::Value;

use crate::bound::{ServerCredentials, Shared};
use crate::callback::Callback;
use crate::config::Server;
use crate::store::{AuthStatus, TokenStore};

/// How `login` talks to the human.
#[derive(Debug, Clone)]
pub struct LoginOptions {
    /// Open the browser (`$BROWSER`, else the platform opener); false only prints the URL
    /// (`--no-browser`, for a remote shell).
    pub open_browser: bool,
    /// How long to wait for the browser to come back to the callback. Default 5 minutes.
    pub timeout: Duration,
    /// The client name sent with a dynamic registration.
    pub client_name: String,
    /// The server's `WWW-Authenticate` challenge that made the login necessary, when the
    /// caller has it (a call refused with `401`/`403`); otherwise the login asks the server
    /// for one.
    pub challenge: Option<String>,
}

impl Default for LoginOptions {
    fn default() -> Self {
        Self {
            open_browser: true,
            timeout: Duration::from_secs(300),
            client_name: "toolgate".to_owned(),
            challenge: None,
        }
    }
}

/// Why a login failed, with what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The server is not a remote one (a caller that has servers of other kinds says so).
    #[error("`{0}` is not a remote (url) server; only servers reached over HTTP log in")]
    NotRemote(String),
    /// Something the user must fix in the config; the text says what.
    #[error("{0}")]
    Config(String),
    /// The loopback callback cannot listen.
    #[error(
        "cannot listen for the login callback on 127.0.0.1:{port}: {source}; free the port or change `callback_port`"
    )]
    Listen {
        /// The port asked for (0: any).
        port: u16,
        /// Why it cannot be bound.
        #[source]
        source: std::io::Error,
    },
    /// The authorization URL may not be given to a browser.
    #[error(transparent)]
    Url(#[from] crate::browser::LoginUrlError),
    /// The OAuth exchange failed (with its causes, which carry the useful part).
    #[error("{}", toolgate_core::with_causes(.0))]
    OAuth(#[from] AuthError),
    /// The authorization URL has no `state` to wait for.
    #[error("the authorization URL carries no `state`; report this as a bug")]
    NoState,
    /// The browser brought no code back.
    #[error(transparent)]
    Callback(#[from] crate::callback::CallbackError),
    /// The token store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Whoever ran the login on the caller's behalf gave up, for its own reason.
    #[error(transparent)]
    Handler(Box<dyn std::error::Error + Send + Sync>),
}

/// Runs the authorization-code flow for `server` and stores the tokens. `say` gets the
/// lines a human should read (the URL to open).
///
/// Boxed: the flow is compiled here once, not again in every crate that awaits it
/// (docs/development.md, "Where a crate's code is compiled").
pub fn login<'a>(
    server: Server<'a>,
    store: &'a TokenStore,
    options: &'a LoginOptions,
    say: &'a (dyn Fn(&str) + Send + Sync),
) -> futures::future::BoxFuture<'a, Result<AuthStatus, LoginError>> {
    Box::pin(async move {
        let port = server.oauth.callback_port;
        let callback = Callback::bind(port)
            .await
            .map_err(|source| LoginError::Listen {
                port: port.unwrap_or(0),
                source,
            })?;
        let started = start(server, store, server.url, &callback.redirect_uri(), options).await?;
        let auth_url = &started.auth_url;
        say(&format!(
            "To log in to `{}`, open this URL in a browser:\n\n  {auth_url}\n",
            server.name
        ));
        if options.open_browser
            && let Err(e) = crate::browser::open(auth_url)
        {
            say(&format!(
                "(could not open a browser: {e}; open the URL yourself)"
            ));
        }
        let state = started.state().ok_or(LoginError::NoState)?;
        let reply = callback.wait(&state, options.timeout).await?;
        started
            .finish(&reply.code, &reply.state, reply.issuer.as_deref())
            .await?;
        Ok(store.status(server.url)?)
    })
}

/// A login waiting for its browser: the URL to open, and what exchanges the code.
pub struct Started {
    /// The authorization server's URL the browser opens (checked: see `browser.rs`).
    pub auth_url: String,
    manager: AuthorizationManager,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("auth_url", &self.auth_url)
            .finish_non_exhaustive()
    }
}

impl Started {
    /// The `state` the authorization URL carries (the redirect names it again).
    pub fn state(&self) -> Option<String> {
        url::Url::parse(&self.auth_url).ok().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
    }

    /// Exchanges the redirect's code for tokens, which the store keeps.
    pub async fn finish(
        self,
        code: &str,
        state: &str,
        issuer: Option<&str>,
    ) -> Result<(), LoginError> {
        self.manager
            .exchange_code_for_token_with_issuer(code, state, issuer)
            .await?;
        Ok(())
    }
}

/// Starts the authorization-code flow for `server` with `redirect_uri`, its tokens to be
/// kept in the store's `record_key` (the server URL; for a login per caller, that caller's
/// record). Whether the server may be logged in to at all (trusted, remote) is the
/// caller's to check first.
pub async fn start(
    server: Server<'_>,
    store: &TokenStore,
    record_key: &str,
    redirect_uri: &str,
    options: &LoginOptions,
) -> Result<Started, LoginError> {
    let url = server.url;
    let redirect_uri = redirect_uri.to_owned();
    let oauth = server.oauth;
    let secret = match &oauth.client_secret_env {
        Some(var) => Some(std::env::var(var).ok().filter(|s| !s.is_empty()).ok_or_else(|| {
            LoginError::Config(format!(
                "`client_secret_env` names `{var}`, which is not set; export it and run the login again"
            ))
        })?),
        None => None,
    };
    if secret.is_some() && oauth.client_id.is_none() {
        return Err(LoginError::Config(
            "`client_secret_env` is set without `client_id`; a client secret belongs to a pre-registered client".to_owned(),
        ));
    }
    crate::tls_provider();
    let challenge = match &options.challenge {
        Some(c) => Some(c.clone()),
        None => probe_challenge(url, server.headers).await,
    };
    let mut manager = AuthorizationManager::new(url).await?;
    let credentials = std::sync::Arc::new(ServerCredentials::new(store.clone(), record_key, None));
    manager.set_credential_store(Shared(std::sync::Arc::clone(&credentials)));
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await?;
    let metadata = resolution.metadata;
    manager.set_metadata(metadata.clone());

    let offered = |s: &str| {
        metadata
            .scopes_supported
            .as_ref()
            .is_some_and(|l| l.iter().any(|x| x == s))
    };
    let record = store.load(record_key)?;
    let mut scopes: Vec<String> = match &oauth.scopes {
        Some(scopes) => scopes.clone(),
        None if !record.pending_scopes.is_empty() => {
            // Step-up: what was granted, plus what the server asked for.
            let mut s: Vec<String> = record
                .current_entry()
                .map(|e| e.credentials.granted_scopes.clone())
                .unwrap_or_default();
            s.extend(record.pending_scopes.iter().cloned());
            s
        }
        None => {
            let challenged = challenge
                .as_deref()
                .and_then(|c| parse_challenge(url, c).scope)
                .map(|s| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
                .unwrap_or_default();
            // The scopes of the caller's challenge, else those a real request was
            // challenged with (kept by `serve`), else the probe's, else the advertised ones.
            if !challenged.is_empty() && options.challenge.is_some() {
                challenged
            } else if !record.challenge_scopes.is_empty() {
                record.challenge_scopes.clone()
            } else if !challenged.is_empty() {
                challenged
            } else {
                manager.select_initial_scopes(&[]).await
            }
        }
    };
    dedup(&mut scopes);
    if !scopes.is_empty()
        && offered("offline_access")
        && !scopes.iter().any(|s| s == "offline_access")
    {
        scopes.push("offline_access".to_owned());
    }
    let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();

    let cimd_supported = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(client_id) = &oauth.client_id {
        let mut config = OAuthClientConfig::new(client_id.clone(), redirect_uri.clone())
            .with_scopes(scopes.clone());
        if let Some(secret) = &secret {
            config = config.with_client_secret(secret.clone());
        }
        manager.configure_client(config)?;
    } else if let Some(document) = oauth
        .client_metadata_url
        .as_ref()
        .filter(|_| cimd_supported)
    {
        manager.configure_client(
            OAuthClientConfig::new(document.clone(), redirect_uri.clone())
                .with_scopes(scopes.clone()),
        )?;
    } else if metadata.registration_endpoint.is_some() {
        let config = manager
            .register_client(&options.client_name, &redirect_uri, &scope_refs)
            .await?;
        credentials.keep_client_secret(config.client_secret.clone());
    } else {
        return Err(LoginError::Config(format!(
            "the authorization server of `{}` does not allow dynamic client registration; register toolgate with it (redirect URI {redirect_uri}) and set `[mcp_servers.{}.oauth] client_id` (and `client_secret_env` for a confidential client)",
            server.name, server.name
        )));
    }
    let auth_url = manager.get_authorization_url(&scope_refs).await?;
    // Checked once here: this URL goes to a browser (`mcp login`) or into a page's link
    // (`per_user` logins).
    let auth_url = crate::browser::browsable(&auth_url)?;
    Ok(Started { auth_url, manager })
}

/// Remembers the scopes of a server's challenge for the next login, which may run in
/// another process (`toolgate mcp login`): those of an `insufficient_scope` step-up are
/// added to what was granted; those of a plain `401` are what the server wants.
pub fn remember_challenge(store: &TokenStore, url: &str, challenge: &str) {
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
async fn probe_challenge(url: &str, headers: &BTreeMap<String, String>) -> Option<String> {
    crate::tls_provider();
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

/// The challenge's parameters (scope, error), with `resource_metadata` resolved.
fn parse_challenge(url: &str, challenge: &str) -> WWWAuthenticateParams {
    match url::Url::parse(url) {
        Ok(base) => WWWAuthenticateParams::parse(challenge, &base),
        Err(_) => WWWAuthenticateParams::default(),
    }
}

fn dedup(scopes: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    scopes.retain(|s| !s.is_empty() && seen.insert(s.clone()));
}
