//! DNS-rebinding protection for what sits behind the door (`/mcp`, `/metrics`): a request
//! must name this server in `Host`, and a browser's request must come from an allowed
//! `Origin`. The protected-resource metadata and the login challenges name this server from
//! the same configured names, never from a `Host` it does not answer to.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::uri::Authority;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::HttpOptions;

/// Origins always allowed: pages served from this machine.
const LOOPBACK_ORIGINS: [&str; 5] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
];

/// A host name (lowercase, IPv6 without brackets) and its port, if given.
type Name = (String, Option<u16>);

/// An allowed browser origin: scheme, host, port (`None`: any, written `:*`).
type Origin = (String, String, Option<u16>);

/// The names and origins this server answers to.
pub(crate) struct Hosts {
    /// Loopback names, the bound address and `allowed_hosts`; an entry without a port
    /// matches any port.
    names: Vec<Name>,
    /// Bound to every interface: any `Host` gets in (the token guards access), but only
    /// `names` are used to name this server.
    any_host: bool,
    origins: Vec<Origin>,
    /// Where clients reach this server when the request's `Host` is none of `names`:
    /// `[server] public_url`, else the origin of the OAuth audience when it is a URL.
    fallback: Option<String>,
}

impl Hosts {
    pub(crate) fn new(options: &HttpOptions) -> Self {
        let ip = options.addr.ip();
        let bound = (!ip.is_loopback() && !ip.is_unspecified()).then(|| ip.to_string());
        let names = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_owned)
            .chain(bound)
            .chain(options.allowed_hosts.iter().cloned())
            .map(|entry| match Authority::try_from(entry.as_str()) {
                Ok(authority) => (bare(authority.host()), authority.port_u16()),
                Err(_) => (bare(&entry), None),
            })
            .collect();
        let origins = LOOPBACK_ORIGINS
            .into_iter()
            .chain(options.allowed_origins.iter().map(String::as_str))
            .filter_map(|entry| match entry.strip_suffix(":*") {
                Some(base) => origin(base).map(|(scheme, host, _)| (scheme, host, None)),
                None => origin(entry),
            })
            .collect();
        let audience = options
            .oauth
            .as_ref()
            .and_then(|oauth| url::Url::parse(oauth.audience()).ok())
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .map(|url| url.origin().ascii_serialization());
        let fallback = options
            .public_url
            .as_deref()
            .map(|url| url.trim_end_matches('/').to_owned())
            .or(audience);
        Self {
            names,
            any_host: ip.is_unspecified(),
            origins,
            fallback,
        }
    }

    /// Refuses a request whose `Host` is not a name of this server, or whose `Origin` is
    /// not allowed.
    fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Response> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| Authority::try_from(h).ok())
            .or_else(|| uri.authority().cloned())
            .ok_or_else(|| {
                (
                    StatusCode::BAD_REQUEST,
                    "missing or malformed Host header\n",
                )
                    .into_response()
            })?;
        if !self.any_host && !self.is_named(&(bare(host.host()), host.port_u16())) {
            tracing::warn!(%host, "refused a request for a foreign Host (possible DNS rebinding)");
            return Err((
                StatusCode::FORBIDDEN,
                format!("Host `{host}` is not a name of this server (DNS-rebinding protection): list it in [server] allowed_hosts if clients reach toolgate by it\n"),
            )
                .into_response());
        }
        let Some(given) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let allowed = given
            .to_str()
            .ok()
            .and_then(origin)
            .is_some_and(|(scheme, host, port)| {
                self.origins.iter().any(|(s, h, p)| {
                    *s == scheme && *h == host && p.is_none_or(|p| Some(p) == port)
                })
            });
        if allowed {
            return Ok(());
        }
        tracing::warn!(origin = ?given, "refused a request from a foreign Origin");
        Err((
            StatusCode::FORBIDDEN,
            "this Origin may not call toolgate (a page of another site): list it in [server] allowed_origins if it should\n",
        )
            .into_response())
    }

    fn is_named(&self, (host, port): &Name) -> bool {
        self.names
            .iter()
            .any(|(name, p)| name == host && p.is_none_or(|p| Some(p) == *port))
    }

    /// `http(s)://host[:port]` of this server from configured names only: the request's
    /// `Host` when it is one of them (`https` behind a proxy sending `X-Forwarded-Proto:
    /// https`), else `public_url` or the audience's origin; `None` when none applies.
    pub(crate) fn base_url(&self, headers: &HeaderMap) -> Option<String> {
        let named = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| Authority::try_from(h).ok())
            .map(|a| (bare(a.host()), a.port_u16()))
            .filter(|name| self.is_named(name));
        let Some((host, port)) = named else {
            return self.fallback.clone();
        };
        let https = headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|p| p.eq_ignore_ascii_case("https"));
        let scheme = if https { "https" } else { "http" };
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        let port = port.map(|p| format!(":{p}")).unwrap_or_default();
        Some(format!("{scheme}://{host}{port}"))
    }
}

/// The middleware applying [`Hosts::check`].
pub(crate) async fn guard(hosts: Arc<Hosts>, req: Request, next: Next) -> Response {
    match hosts.check(req.headers(), req.uri()) {
        Ok(()) => next.run(req).await,
        Err(refusal) => refusal,
    }
}

/// A host as compared: lowercase, IPv6 without brackets.
fn bare(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Scheme, host and port (the scheme's default when not given, RFC 6454 §4) of an origin.
fn origin(text: &str) -> Option<Origin> {
    let url = url::Url::parse(text.trim()).ok()?;
    let host = bare(url.host_str()?);
    Some((url.scheme().to_owned(), host, url.port_or_known_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::ListenerLimits;
    use axum::http::HeaderValue;

    fn hosts(addr: &str, public_url: Option<&str>) -> Hosts {
        Hosts::new(&HttpOptions {
            addr: addr.parse().unwrap(),
            token: None,
            oauth: None,
            allowed_origins: vec!["https://app.example.com".to_owned()],
            allowed_hosts: vec!["mcp.example.com".to_owned()],
            insecure_no_auth: false,
            max_sessions: 1,
            metrics: None,
            public_url: public_url.map(str::to_owned),
            web_logins: None,
            listener: ListenerLimits::default(),
        })
    }

    fn with(pairs: &[(header::HeaderName, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_static(value)))
            .collect()
    }

    #[test]
    fn urls_name_this_server_by_a_configured_name_only() {
        let named = hosts("0.0.0.0:8765", Some("https://toolgate.example.com/"));
        let host = |h| with(&[(header::HOST, h)]);
        assert_eq!(
            named.base_url(&host("MCP.example.com:8443")).as_deref(),
            Some("http://mcp.example.com:8443")
        );
        assert_eq!(
            named.base_url(&host("[::1]:9")).as_deref(),
            Some("http://[::1]:9")
        );
        // Any `Host` gets in when bound to every interface, but is never echoed.
        assert!(named.check(&host("evil.example"), &Uri::default()).is_ok());
        assert_eq!(
            named.base_url(&host("evil.example")).as_deref(),
            Some("https://toolgate.example.com")
        );
        let unnamed = hosts("127.0.0.1:8765", None);
        assert!(
            unnamed
                .check(&host("evil.example"), &Uri::default())
                .is_err()
        );
        assert_eq!(unnamed.base_url(&host("evil.example")), None);
    }

    #[test]
    fn origins_match_scheme_host_and_port() {
        let hosts = hosts("127.0.0.1:8765", None);
        let from = |origin| {
            let headers = with(&[(header::HOST, "localhost"), (header::ORIGIN, origin)]);
            hosts.check(&headers, &Uri::default()).is_ok()
        };
        assert!(from("http://localhost:3000"));
        assert!(from("https://app.example.com"));
        assert!(from("https://app.example.com:443"));
        assert!(
            !from("https://app.example.com:8443"),
            "no port = the default one"
        );
        assert!(!from("http://app.example.com"));
        assert!(!from("https://evil.example"));
        assert!(!from("null"));
    }
}
