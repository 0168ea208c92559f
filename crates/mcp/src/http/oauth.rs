//! OAuth access tokens at the door of `serve --http`: toolgate as an MCP resource server.
//!
//! A token is a JWT signed by one of the issuer's keys. The keys come from the issuer's
//! JWKS, found through its metadata (RFC 8414 `/.well-known/oauth-authorization-server`,
//! else OpenID Connect discovery), fetched once and cached. A token whose `kid` is not among
//! the cached keys makes one refetch (the issuer rotated its keys), at most once per
//! [`OAuthLimits::min_refetch`], so a flood of made-up `kid`s costs the issuer one request.
//!
//! What a token must be to pass, and why each check is here:
//! - signed with an algorithm of the key it names: `alg: none` does not parse, and HS* is
//!   never accepted, so a public key cannot be used as an HMAC secret (algorithm confusion);
//! - `iss` = the configured issuer, `aud` contains the configured audience (a token minted
//!   for another service is not ours to accept), `exp` / `nbf` with a small leeway;
//! - `sub` present and not blank: it becomes the session's [`Identity`] (an empty `sub` would
//!   make every such token one anonymous caller, sharing sessions and limits).
//!
//! The checks are in builds with the `jwt` feature (part of `team`); a build without it
//! refuses `[server.auth]` and says how to get one that has them.

use std::time::Duration;

#[cfg(feature = "jwt")]
mod jwt;
#[cfg(feature = "jwt")]
pub(crate) use jwt::Validator;

#[cfg(not(feature = "jwt"))]
mod off;
#[cfg(not(feature = "jwt"))]
pub(crate) use off::Validator;

/// Who issues the tokens `serve --http` accepts (`[server.auth]`), checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSettings {
    issuer: String,
    audience: String,
    required_scopes: Vec<String>,
    limits: OAuthLimits,
    /// Proof that this build checks tokens: without the `jwt` feature no settings exist.
    jwt: Jwt,
}

/// Inhabited only in builds that check JWTs.
#[cfg(feature = "jwt")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Jwt;

/// Inhabited only in builds that check JWTs.
#[cfg(not(feature = "jwt"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Jwt {}

/// A `[server.auth]` that cannot be used; the text says what to set.
#[derive(Debug, Clone, thiserror::Error)]
#[error("[server.auth]: {0}")]
pub struct OAuthConfigError(String);

impl OAuthSettings {
    /// Checks the settings: `issuer` an `https://` URL (`http://` only on loopback, for
    /// tests and local issuers), `audience` not empty.
    pub fn new(
        issuer: &str,
        audience: &str,
        required_scopes: Vec<String>,
    ) -> Result<Self, OAuthConfigError> {
        let issuer = issuer.trim();
        if issuer.is_empty() {
            return Err(OAuthConfigError(
                "set `issuer = \"https://…\"`: the authorization server whose access tokens toolgate accepts (its `iss`)".to_owned(),
            ));
        }
        let Ok(url) = reqwest::Url::parse(issuer) else {
            return Err(OAuthConfigError(format!(
                "`issuer = \"{issuer}\"` is not a URL; set the authorization server's issuer, e.g. \"https://login.example.com\""
            )));
        };
        let loopback = match url.host() {
            Some(url::Host::Domain(name)) => name == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        };
        if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
            return Err(OAuthConfigError(format!(
                "`issuer = \"{issuer}\"` must be an https:// URL (http:// only on loopback): its keys decide who gets in"
            )));
        }
        if audience.trim().is_empty() {
            return Err(OAuthConfigError(
                "set `audience = \"…\"`: the value your issuer puts in the `aud` of access tokens meant for this toolgate (often its /mcp URL)".to_owned(),
            ));
        }
        #[cfg(not(feature = "jwt"))]
        return Err(OAuthConfigError({
            let _ = required_scopes;
            "this build of toolgate has no OAuth resource server; install one that has (`cargo install toolgate --features team`) or use the static token (`[server] token_env`)".to_owned()
        }));
        #[cfg(feature = "jwt")]
        Ok(Self {
            issuer: issuer.to_owned(),
            audience: audience.trim().to_owned(),
            required_scopes,
            limits: OAuthLimits::default(),
            jwt: Jwt,
        })
    }

    /// The same settings with other limits (tests shorten [`OAuthLimits::min_refetch`]).
    pub fn with_limits(mut self, limits: OAuthLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The issuer, as tokens must name it in `iss`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audience tokens must name in `aud`.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Scopes every token must grant.
    pub fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }
}

/// How often toolgate goes back to the issuer. Defaults follow common resource-server
/// practice (Microsoft.IdentityModel refetches keys at most every 5 minutes on a miss; a
/// shorter floor lets a rotation through sooner while still absorbing a flood).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthLimits {
    /// Least time between two key fetches caused by an unknown `kid`.
    pub min_refetch: Duration, // 30 s
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64, // 60
    /// Longest wait for the issuer's metadata or keys.
    pub fetch_timeout: Duration, // 10 s
}

impl Default for OAuthLimits {
    fn default() -> Self {
        Self {
            min_refetch: Duration::from_secs(30),
            leeway_secs: 60,
            fetch_timeout: Duration::from_secs(10),
        }
    }
}

/// Why a request's token was not accepted.
#[cfg_attr(not(feature = "jwt"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// The token is not valid here (401 `invalid_token`).
    Invalid(String),
    /// Valid, but without these scopes (403 `insufficient_scope`).
    Scope(Vec<String>),
    /// The issuer's keys could not be had: nobody can be checked (503).
    Unavailable(String),
}
