//! Streamable HTTP transport at `/mcp`: loopback by default, Host and Origin validated
//! (DNS-rebinding protection), optional bearer token.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::server::ToolgateServer;

mod sessions;

/// Default cap on live HTTP sessions (each holds about 61 KB until it ends).
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// Settings of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Address to bind; loopback unless a token is set or `insecure_no_auth`.
    pub addr: SocketAddr,
    /// Bearer token clients must send, if any.
    pub token: Option<String>,
    /// Browser origins allowed besides loopback ones (`https://app.example.com:443`).
    pub allowed_origins: Vec<String>,
    /// Allow a non-loopback address without a token.
    pub insecure_no_auth: bool,
    /// Most live sessions; past it the least recently active one is closed for a new one.
    pub max_sessions: usize,
    /// Served at `/metrics` (behind the same token as `/mcp`) when set; the server handler
    /// given to [`http_router`] should count into the same ([`ToolgateServer::with_metrics`]).
    pub metrics: Option<Arc<Metrics>>,
}

/// Why the HTTP server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to serve {0} without a bearer token: anyone on the network could run tools. Set the token variable (default TOOLGATE_TOKEN), bind 127.0.0.1, or pass --insecure-no-auth if you really mean it"
    )]
    NeedsToken(SocketAddr),
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
    let mut origins: Vec<String> = [
        "http://localhost:*",
        "http://127.0.0.1:*",
        "http://[::1]:*",
        "https://localhost:*",
        "https://127.0.0.1:*",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    origins.extend(options.allowed_origins.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(origins)
        .with_cancellation_token(shutdown.child_token());
    let ip = options.addr.ip();
    if ip.is_unspecified() {
        // Bound to every interface: clients may use any name; the token guards access.
        config = config.disable_allowed_hosts();
    } else if !ip.is_loopback() {
        config = config.with_allowed_hosts([
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            ip.to_string(),
        ]);
    }
    let service = StreamableHttpService::new(
        move || Ok(server.new_session()),
        Arc::new(sessions::CappedSessions::new(options.max_sessions)),
        config,
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(metrics) = options.metrics.clone() {
        router = router.route(
            "/metrics",
            axum::routing::get(move || {
                let metrics = Arc::clone(&metrics);
                async move { metrics_page(&metrics) }
            }),
        );
    }
    match options.token.clone() {
        Some(token) => {
            let token = Arc::new(token);
            router.layer(axum::middleware::from_fn(
                move |req: Request, next: Next| {
                    let token = Arc::clone(&token);
                    async move { check_bearer(&token, req, next).await }
                },
            ))
        }
        None => router,
    }
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

async fn check_bearer(token: &str, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        // The scheme name is case-insensitive (RFC 7235 §2.1).
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, token)| token.trim());
    if constant_time_eq(given.as_bytes(), token.as_bytes()) {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token: send `Authorization: Bearer <token>`\n",
        )
            .into_response()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves MCP over HTTP until `shutdown` is cancelled. `on_bound` learns the bound address
/// (useful with port 0).
pub async fn serve_http(
    server: ToolgateServer,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), HttpError> {
    if !options.addr.ip().is_loopback() && options.token.is_none() && !options.insecure_no_auth {
        return Err(HttpError::NeedsToken(options.addr));
    }
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| HttpError::Bind {
            addr: options.addr,
            source,
        })?;
    let bound = listener.local_addr().map_err(HttpError::Serve)?;
    on_bound(bound);
    let router = http_router(server, &options, shutdown.clone());
    // Responses are small SSE events written in pieces: without TCP_NODELAY, Nagle and the
    // client's delayed ACK add ~40 ms to every call.
    let listener =
        axum::serve::ListenerExt::tap_io(listener, |stream: &mut tokio::net::TcpStream| {
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(%e, "could not set TCP_NODELAY");
            }
        });
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(HttpError::Serve)
}
