//! Streamable HTTP transport at `/mcp`: loopback by default, Host and Origin validated
//! (DNS-rebinding protection), a static bearer token and/or OAuth access tokens checked at
//! the door ([`door`], [`oauth`]), the protected-resource metadata at its well-known paths,
//! and an unauthenticated health check for load balancers ([`HEALTH_PATH`]).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use toolgate_oauth::{CALLBACK_PATH, Page, START_PATH, WebLogins};

use crate::metrics::Metrics;
use crate::server::ToolgateServer;

mod current;
pub(crate) mod door;
mod hosts;
mod listen;
mod oauth;
mod sessions;

pub use listen::ListenerLimits;
pub use oauth::{OAuthConfigError, OAuthLimits, OAuthSettings};

/// Where a load balancer checks a replica: `200 ok` without a token, outside `/mcp`'s
/// Host check, whatever the auth settings.
pub const HEALTH_PATH: &str = "/healthz";

/// Default cap on live HTTP sessions (each holds about 61 KB until it ends).
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// Settings of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Address to bind; loopback unless a token or OAuth is set, or `insecure_no_auth`.
    pub addr: SocketAddr,
    /// Static bearer token clients may send, if any.
    pub token: Option<String>,
    /// OAuth access tokens accepted besides the static token (`[server.auth]`), if any.
    pub oauth: Option<OAuthSettings>,
    /// Browser origins allowed besides loopback ones (`https://app.example.com:443`).
    pub allowed_origins: Vec<String>,
    /// `Host` names accepted besides loopback ones and the bound address (`mcp.example.com`):
    /// the name a load balancer in front is reached by. Ignored when bound to every
    /// interface, where any name is accepted.
    pub allowed_hosts: Vec<String>,
    /// Allow a non-loopback address without a token.
    pub insecure_no_auth: bool,
    /// Most live sessions; past it the least recently active one is closed for a new one.
    pub max_sessions: usize,
    /// Served at `/metrics` (behind the same token as `/mcp`) when set; the server handler
    /// given to [`http_router`] should count into the same ([`ToolgateServer::with_metrics`]).
    pub metrics: Option<Arc<Metrics>>,
    /// The URL clients reach this server at (`[server] public_url`), used to name it (the
    /// protected-resource metadata) when a request's `Host` is not one of its names.
    pub public_url: Option<String>,
    /// Budgets against connections that send no request (slowloris).
    pub listener: ListenerLimits,
    /// The logins per caller this listener's `/oauth/start` and `/oauth/callback` serve
    /// (the gateway starts them); `None`: no such pages.
    pub web_logins: Option<Arc<WebLogins>>,
}

/// Why the HTTP server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to serve {0} without a bearer token: anyone on the network could run tools. Set the token variable (default TOOLGATE_TOKEN) or [server.auth] (OAuth), bind 127.0.0.1, or pass --insecure-no-auth if you really mean it"
    )]
    NeedsToken(SocketAddr),
    /// The static token has a control character: no client could send it in a header.
    #[error(
        "the bearer token has a control character (a CR or LF, say, from a file read with its line end): no client can send it in an `Authorization` header; set the token variable (default TOOLGATE_TOKEN) to the token alone"
    )]
    BadToken,
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server stopped with an error.
    #[error("HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// The axum router serving MCP at `/mcp` with the security checks applied.
pub fn http_router(
    server: ToolgateServer,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> axum::Router {
    // `Host` and `Origin` are checked by [`hosts`] for `/metrics` too, not by rmcp.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_cancellation_token(shutdown.child_token());
    let hosts = Arc::new(hosts::Hosts::new(options));
    let sessions = Arc::new(sessions::CappedSessions::new(options.max_sessions));
    let service = StreamableHttpService::new(
        // The door put the request's caller in a task-local: the session is theirs.
        move || Ok(server.new_session_as(current::caller(), current::rate_key())),
        Arc::clone(&sessions),
        config,
    );
    let door = Arc::new(door::Door {
        token: options.token.clone(),
        oauth: options
            .oauth
            .clone()
            .map(|settings| Arc::new(oauth::Validator::new(settings))),
        sessions,
        addr: options.addr,
        hosts: Arc::clone(&hosts),
    });
    let mut router = axum::Router::new().nest_service("/mcp", service);
    // Behind the same door as /mcp.
    if let Some(metrics) = options.metrics.clone() {
        router = router.route(
            "/metrics",
            axum::routing::get(move || {
                let metrics = Arc::clone(&metrics);
                async move { metrics_page(&metrics) }
            }),
        );
    }
    // Without a token or OAuth the door checks nothing, but still names the caller (by
    // address) for rate limits.
    let guard = Arc::clone(&door);
    router = router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let door = Arc::clone(&guard);
            async move { door.admit(req, next).await }
        },
    ));
    // Outside the door: a rebound page is refused before its token is looked at.
    router = router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| hosts::guard(Arc::clone(&hosts), req, next),
    ));
    // Added after the layer, so public: the health check says only that the process serves
    // (a load balancer probes it without a token), the metadata tells a client where to
    // log in.
    router = router.route(HEALTH_PATH, axum::routing::get(|| async { "ok\n" }));
    // The page a user's login link opens, and where their browser comes back from logging
    // in to a mounted server as themselves (`per_user` servers): public, like any OAuth
    // redirect URI; the `state` picks the login.
    if let Some(logins) = options.web_logins.clone() {
        let (start, back, decide) = (Arc::clone(&logins), Arc::clone(&logins), logins);
        router = router
            .route(
                START_PATH,
                axum::routing::get(move |uri: Uri, headers: HeaderMap| async move {
                    login_page(
                        start.start_page(uri.query().unwrap_or(""), cookies(&headers).as_deref()),
                    )
                }),
            )
            .route(
                CALLBACK_PATH,
                axum::routing::get(move |uri: Uri, headers: HeaderMap| async move {
                    login_page(
                        back.callback(uri.query().unwrap_or(""), cookies(&headers).as_deref())
                            .await,
                    )
                })
                .post(move |headers: HeaderMap, form: String| async move {
                    login_page(decide.decide(&form, cookies(&headers).as_deref()).await)
                }),
            );
    }
    let metadata = move |headers: HeaderMap| {
        let door = Arc::clone(&door);
        async move {
            match door.metadata(&headers) {
                Some(doc) => (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    doc.to_string(),
                )
                    .into_response(),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        }
    };
    router
        .route(
            "/.well-known/oauth-protected-resource",
            axum::routing::get(metadata.clone()),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            axum::routing::get(metadata),
        )
}

/// The request's cookies, every `Cookie` header joined.
fn cookies(headers: &HeaderMap) -> Option<String> {
    let all: Vec<&str> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!all.is_empty()).then(|| all.join("; "))
}

/// A login page as an HTTP response: never cached, never framed (a page of another site
/// cannot show it under a decoy and have the user click "Finish").
fn login_page(page: Page) -> Response {
    let status = StatusCode::from_u16(page.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        page.html,
    )
        .into_response();
    if let Some(cookie) = page
        .set_cookie
        .and_then(|c| axum::http::HeaderValue::from_str(&c).ok())
    {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// The metrics in OpenMetrics text, as Prometheus scrapes it.
fn metrics_page(metrics: &Metrics) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.encode(),
    )
        .into_response()
}

/// Serves MCP over HTTP until `shutdown` is cancelled. `on_bound` learns the bound address
/// (useful with port 0). Raises the process's soft open-file limit to its hard limit first.
///
/// Boxed, `on_bound` too: the HTTP service is compiled here once, not again in every crate
/// that serves (docs/development.md, "Build profiles").
pub fn serve_http<'a>(
    server: ToolgateServer,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_bound: impl FnOnce(SocketAddr) + Send + 'a,
) -> futures::future::BoxFuture<'a, Result<(), HttpError>> {
    Box::pin(serve_http_inner(
        server,
        options,
        None,
        shutdown,
        Box::new(on_bound),
    ))
}

/// [`serve_http`] on `listener`, bound beforehand to `options.addr` (so the port an OS
/// picked for port 0 is known before the server is built, for the redirect URI of
/// [`WebLogins`]).
pub fn serve_http_on<'a>(
    listener: std::net::TcpListener,
    server: ToolgateServer,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_bound: impl FnOnce(SocketAddr) + Send + 'a,
) -> futures::future::BoxFuture<'a, Result<(), HttpError>> {
    Box::pin(serve_http_inner(
        server,
        options,
        Some(listener),
        shutdown,
        Box::new(on_bound),
    ))
}

async fn serve_http_inner(
    server: ToolgateServer,
    options: HttpOptions,
    bound: Option<std::net::TcpListener>,
    shutdown: CancellationToken,
    on_bound: Box<dyn FnOnce(SocketAddr) + Send + '_>,
) -> Result<(), HttpError> {
    if !options.addr.ip().is_loopback()
        && options.token.is_none()
        && options.oauth.is_none()
        && !options.insecure_no_auth
    {
        return Err(HttpError::NeedsToken(options.addr));
    }
    if let Some(token) = &options.token
        && token.chars().any(char::is_control)
    {
        return Err(HttpError::BadToken);
    }
    listen::raise_open_files();
    let bind_error = |source| HttpError::Bind {
        addr: options.addr,
        source,
    };
    let listener = match bound {
        Some(listener) => listener
            .set_nonblocking(true)
            .and_then(|()| tokio::net::TcpListener::from_std(listener))
            .map_err(bind_error)?,
        None => tokio::net::TcpListener::bind(options.addr)
            .await
            .map_err(bind_error)?,
    };
    let bound = listener.local_addr().map_err(HttpError::Serve)?;
    on_bound(bound);
    let router = http_router(server, &options, shutdown.clone());
    listen::serve(listener, router, &options.listener, shutdown).await;
    Ok(())
}
