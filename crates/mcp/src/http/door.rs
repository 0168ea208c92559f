//! The door of `/mcp`: who may come in, and as whom.
//!
//! A request passes with the static bearer token (`[server] token_env`; no identity) or an
//! OAuth access token the [`Validator`] accepts (its caller becomes the identity). The caller
//! rides along two ways: in the request's extensions as [`Caller`] (rmcp hands them to the
//! handler inside `http::request::Parts`), and in a task-local while the request is served,
//! where the session factory and the session manager read it ([`current::caller`]) to build a new
//! session as that caller. A session keeps the caller that opened it: a request bearing
//! another caller's token on it is refused here, before rmcp sees it.
//!
//! Refusals follow RFC 6750 §3 and the MCP authorization spec: 401 with
//! `WWW-Authenticate: Bearer resource_metadata="…"` pointing at the protected-resource
//! metadata (RFC 9728), which tells a client where to log in; `error="invalid_token"` when
//! a token was sent and refused; 403 `error="insufficient_scope"` with the scopes needed.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use toolgate_core::Identity;

use super::current;
use super::hosts::Hosts;
use super::oauth::{Rejection, Validator};
use super::sessions::CappedSessions;

/// The caller of an HTTP request as the door admitted it (`None`: the static token, or no
/// auth), in the request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub(crate) Option<Identity>);

/// The checks in front of `/mcp`.
pub(crate) struct Door {
    pub(crate) token: Option<String>,
    pub(crate) oauth: Option<Arc<Validator>>,
    pub(crate) sessions: Arc<CappedSessions>,
    /// The bound address, for URLs when no configured name applies.
    pub(crate) addr: SocketAddr,
    /// This server's names: URLs are made from them, never from a foreign `Host`.
    pub(crate) hosts: Arc<Hosts>,
}

const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

impl Door {
    /// Whether anything is checked at all.
    pub(crate) fn guards(&self) -> bool {
        self.token.is_some() || self.oauth.is_some()
    }

    pub(crate) async fn admit(&self, mut req: Request, next: Next) -> Response {
        let caller = match self.guards() {
            true => match self.identify(req.headers()).await {
                Ok(caller) => caller,
                Err(refusal) => return refusal,
            },
            false => None,
        };
        let rate_key = self.rate_key(caller.as_ref(), &req);
        let session = req
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok());
        if let Some(id) = session
            && let Some(owner) = self.sessions.owner(id)
            && !same_caller(owner.as_ref(), caller.as_ref())
        {
            tracing::warn!(session = %id, caller = ?caller.as_ref().map(|c| &c.subject), "refused a request on another caller's session");
            return (
                StatusCode::FORBIDDEN,
                "this session was opened by another caller: start a session of your own (initialize) with your token\n",
            )
                .into_response();
        }
        req.extensions_mut().insert(Caller(caller.clone()));
        current::serve_as(caller, rate_key, next.run(req)).await
    }

    /// The rate-limit key of an admitted request without an identity: the static token's
    /// digest (so its fresh sessions and stateless requests share one budget; the token
    /// itself is kept out of keys and logs), else, with no token to check, the client's
    /// address (its port changes with every connection).
    fn rate_key(&self, caller: Option<&Identity>, req: &Request) -> Option<String> {
        if caller.is_some() {
            return None;
        }
        if let (true, Some(token)) = (self.guards(), bearer(req.headers())) {
            let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
            let hex: String = digest.as_ref()[..16]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            return Some(format!("token:{hex}"));
        }
        let ConnectInfo(peer) = req.extensions().get::<ConnectInfo<SocketAddr>>()?;
        Some(format!("address:{}", peer.ip()))
    }

    /// The request's caller, or the response that refuses it.
    async fn identify(&self, headers: &HeaderMap) -> Result<Option<Identity>, Response> {
        let given = bearer(headers);
        if let (Some(token), Some(given)) = (&self.token, given)
            && constant_time_eq(given.as_bytes(), token.as_bytes())
        {
            return Ok(None);
        }
        let Some(oauth) = &self.oauth else {
            return Err((
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "missing or wrong bearer token: send `Authorization: Bearer <token>`\n",
            )
                .into_response());
        };
        let base = self
            .hosts
            .base_url(headers)
            .unwrap_or_else(|| format!("http://{}", self.addr));
        let metadata = format!("{base}{METADATA_PATH}");
        let Some(given) = given else {
            let mut challenge = format!("Bearer resource_metadata=\"{metadata}\"");
            let scopes = oauth.settings().required_scopes();
            if !scopes.is_empty() {
                challenge.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
            }
            let body = format!(
                "missing access token: send `Authorization: Bearer <token>` with a token from {} (an MCP client finds how to log in at {metadata})\n",
                oauth.settings().issuer()
            );
            return Err(refusal(StatusCode::UNAUTHORIZED, Some(&challenge), body));
        };
        match oauth.validate(given).await {
            Ok(identity) => Ok(Some(identity)),
            Err(Rejection::Invalid(why)) => {
                tracing::info!(%why, "refused an access token");
                let challenge = format!(
                    "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata}\"",
                    quoted(&why)
                );
                Err(refusal(
                    StatusCode::UNAUTHORIZED,
                    Some(&challenge),
                    format!("invalid access token: {why}\n"),
                ))
            }
            Err(Rejection::Scope(missing)) => {
                let scope = oauth.settings().required_scopes().join(" ");
                let challenge = format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{metadata}\"",
                    quoted(&scope)
                );
                Err(refusal(
                    StatusCode::FORBIDDEN,
                    Some(&challenge),
                    format!(
                        "the access token lacks the scope(s) {}: log in again asking for `{scope}`\n",
                        missing.join(", ")
                    ),
                ))
            }
            Err(Rejection::Unavailable(why)) => {
                tracing::warn!(%why, "cannot check access tokens");
                Err(refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    format!("{why}\n"),
                ))
            }
        }
    }

    /// The protected-resource metadata (RFC 9728 §2) of `/mcp`; `None` without OAuth, or
    /// for a `Host` that is not a name of this server when nothing else names it.
    pub(crate) fn metadata(&self, headers: &HeaderMap) -> Option<serde_json::Value> {
        let oauth = self.oauth.as_ref()?;
        let settings = oauth.settings();
        let mut doc = serde_json::json!({
            "resource": format!("{}/mcp", self.hosts.base_url(headers)?),
            "authorization_servers": [settings.issuer()],
            "bearer_methods_supported": ["header"],
            "resource_name": "toolgate",
        });
        if !settings.required_scopes().is_empty() {
            doc["scopes_supported"] = serde_json::json!(settings.required_scopes());
        }
        Some(doc)
    }
}

fn refusal(status: StatusCode, challenge: Option<&str>, body: String) -> Response {
    let mut response = (status, body).into_response();
    if let Some(challenge) = challenge.and_then(|c| HeaderValue::from_str(c).ok()) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// `text` fit for a quoted-string parameter: no quotes, backslashes or control characters.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => ' ',
        })
        .collect()
}

/// The token of an `Authorization: Bearer …` header; the scheme name is case-insensitive
/// (RFC 7235 §2.1).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty())
}

pub(crate) fn same_caller(a: Option<&Identity>, b: Option<&Identity>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_caller(b),
        _ => false,
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_cannot_be_broken_out_of() {
        assert_eq!(quoted("a \"b\" \\c\nd"), "a 'b' 'c d");
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_an_empty_token_is_none() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bEaReR abc "),
        );
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer  "));
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&headers), None);
    }
}
