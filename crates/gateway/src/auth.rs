//! The gateway's side of MCP authorization; the OAuth client itself is `toolgate-oauth`.
//! Here: a server's spec as that client sees it, the trust check before any login (a
//! server a project file defines logs in only once the user trusts it), and who logs a
//! human in when a mounted server needs it ([`LoginHandler`]).

use toolgate_oauth::{
    AuthStatus, Authorized, LoginError, LoginOptions, Server, Started, TokenStore,
};

use crate::config::{ServerSpec, Transport};
use crate::failure::Failure;

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

/// `spec` as the OAuth client sees it; `Err` for a server not reached over HTTP.
fn remote(spec: &ServerSpec) -> Result<Server<'_>, LoginError> {
    let Transport::Http { url, headers, .. } = &spec.transport else {
        return Err(LoginError::NotRemote(spec.name.clone()));
    };
    Ok(Server {
        name: &spec.name,
        url,
        headers,
        oauth: &spec.oauth,
    })
}

/// `spec` as the OAuth client sees it, when it may log in: remote, and trusted if a
/// project file defines it.
fn may_log_in(spec: &ServerSpec) -> Result<Server<'_>, LoginError> {
    let server = remote(spec)?;
    if !spec.trust.allows_start() {
        return Err(LoginError::Config(format!(
            "`{}` is defined by a project file ({}) and not trusted; check its url and `oauth` settings with `toolgate mcp list`, then run `{}` before logging in",
            spec.name,
            spec.source,
            crate::trust::trust_command(&spec.name)
        )));
    }
    Ok(server)
}

/// `toolgate mcp login NAME`: runs the authorization-code flow for `spec` and stores the
/// tokens ([`toolgate_oauth::login`]). `say` gets the lines a human should read (the URL to
/// open).
///
/// Boxed: the flow is compiled here once, not again in every crate that awaits it
/// (docs/development.md, "Where a crate's code is compiled").
pub fn login<'a>(
    spec: &'a ServerSpec,
    store: &'a TokenStore,
    options: &'a LoginOptions,
    say: &'a (dyn Fn(&str) + Send + Sync),
) -> futures::future::BoxFuture<'a, Result<AuthStatus, LoginError>> {
    Box::pin(async move { toolgate_oauth::login(may_log_in(spec)?, store, options, say).await })
}

/// Starts a login for `spec` whose browser comes back to `redirect_uri`, its tokens kept in
/// the store's `record_key` ([`toolgate_oauth::start`]).
pub(crate) async fn start(
    spec: &ServerSpec,
    store: &TokenStore,
    record_key: &str,
    redirect_uri: &str,
    options: &LoginOptions,
) -> Result<Started, LoginError> {
    toolgate_oauth::start(may_log_in(spec)?, store, record_key, redirect_uri, options).await
}

/// The HTTP client over the stored tokens of `spec` in the store's `record_key`
/// ([`toolgate_oauth::authorized_client`]); `None` when nothing is stored.
pub(crate) async fn authorized_client(
    store: &TokenStore,
    spec: &ServerSpec,
    record_key: &str,
) -> Result<Option<Authorized<reqwest::Client>>, Failure> {
    let server = remote(spec).map_err(|e| Failure::Failed(e.to_string()))?;
    Ok(toolgate_oauth::authorized_client(store, server, record_key).await?)
}
