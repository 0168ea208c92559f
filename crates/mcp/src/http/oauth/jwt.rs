//! Checking a JWT access token against the issuer's keys.

use std::sync::Arc;

use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::Mutex;
use tokio::time::Instant;
use toolgate_core::Identity;

use super::{OAuthSettings, Rejection};

/// Installs rustls' process-wide crypto provider (ring) once; reqwest's TLS needs one
/// before any client is built, `http://` included.
fn tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another part of the process installed one first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// One key of the issuer's set, with the algorithms it may sign with.
struct Key {
    kid: Option<String>,
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

#[derive(Default)]
struct Keys {
    /// `None` until the first successful fetch.
    keys: Option<Arc<Vec<Key>>>,
    jwks_uri: Option<String>,
    /// When the last fetch started, successful or not.
    fetched: Option<Instant>,
}

/// Checks access tokens against one issuer.
pub(crate) struct Validator {
    settings: OAuthSettings,
    http: reqwest::Client,
    /// Held while fetching, so concurrent misses make one request.
    keys: Mutex<Keys>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self, split: bool) -> Vec<String> {
        match self {
            Self::One(s) if split => s.split_whitespace().map(str::to_owned).collect(),
            Self::One(s) => vec![s],
            Self::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    iss: String,
    #[serde(default)]
    scope: Option<OneOrMany>,
    #[serde(default)]
    scp: Option<OneOrMany>,
    #[serde(default)]
    groups: Option<OneOrMany>,
}

impl Validator {
    pub(crate) fn new(settings: OAuthSettings) -> Self {
        tls_provider();
        let http = reqwest::Client::builder()
            .timeout(settings.limits.fetch_timeout)
            .build()
            .unwrap_or_default();
        Self {
            settings,
            http,
            keys: Mutex::default(),
        }
    }

    pub(crate) fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// The caller `token` stands for, or why it is refused.
    pub(crate) async fn validate(&self, token: &str) -> Result<Identity, Rejection> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| {
            Rejection::Invalid(format!(
                "not a signed JWT access token ({e}); get one from {}",
                self.settings.issuer
            ))
        })?;
        let keys = self.keys_for(header.kid.as_deref()).await?;
        let candidates: Vec<&Key> = keys
            .iter()
            .filter(|k| header.kid.is_none() || k.kid == header.kid)
            .collect();
        if candidates.is_empty() {
            return Err(Rejection::Invalid(format!(
                "signed with key `{}`, which {} does not publish",
                header.kid.unwrap_or_default(),
                self.settings.issuer
            )));
        }
        let mut last = None;
        for key in candidates {
            if !key.algorithms.contains(&header.alg) {
                last = Some(format!(
                    "signed with {:?}, which the issuer's key does not sign with ({:?})",
                    header.alg, key.algorithms
                ));
                continue;
            }
            let mut validation = Validation::new(header.alg);
            validation.algorithms = vec![header.alg];
            validation.leeway = self.settings.limits.leeway_secs;
            validation.validate_nbf = true;
            validation.set_audience(&[&self.settings.audience]);
            validation.set_issuer(&[&self.settings.issuer]);
            validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) => return self.admit(data.claims),
                Err(e) => last = Some(explain(&e, &self.settings)),
            }
        }
        Err(Rejection::Invalid(last.unwrap_or_default()))
    }

    fn admit(&self, claims: Claims) -> Result<Identity, Rejection> {
        if claims.sub.trim().is_empty() {
            return Err(Rejection::Invalid(format!(
                "the token's `sub` is empty: it names nobody; get a token for a user from {}",
                self.settings.issuer
            )));
        }
        let scopes = claims
            .scope
            .or(claims.scp)
            .map(|s| s.into_vec(true))
            .unwrap_or_default();
        let missing: Vec<String> = self
            .settings
            .required_scopes
            .iter()
            .filter(|s| !scopes.contains(s))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Rejection::Scope(missing));
        }
        Ok(Identity {
            subject: claims.sub,
            issuer: Some(claims.iss),
            groups: claims.groups.map(|g| g.into_vec(false)).unwrap_or_default(),
            scopes,
        })
    }

    /// The cached keys; fetched first when there are none, or again when `kid` is not
    /// among them and the last fetch is old enough.
    async fn keys_for(&self, kid: Option<&str>) -> Result<Arc<Vec<Key>>, Rejection> {
        let mut state = self.keys.lock().await;
        if let Some(keys) = &state.keys {
            let known = kid.is_none_or(|kid| keys.iter().any(|k| k.kid.as_deref() == Some(kid)));
            let recent = state
                .fetched
                .is_some_and(|at| at.elapsed() < self.settings.limits.min_refetch);
            if known || recent {
                return Ok(Arc::clone(keys));
            }
        } else if state
            .fetched
            .is_some_and(|at| at.elapsed() < self.settings.limits.min_refetch)
        {
            // The last fetch failed a moment ago: do not hammer a struggling issuer.
            return Err(Rejection::Unavailable(format!(
                "cannot check tokens: fetching {}'s signing keys failed a moment ago; try again shortly",
                self.settings.issuer
            )));
        }
        state.fetched = Some(Instant::now());
        match self.fetch(state.jwks_uri.clone()).await {
            Ok((uri, keys)) => {
                tracing::info!(issuer = %self.settings.issuer, keys = keys.len(), "fetched the issuer's signing keys");
                let keys = Arc::new(keys);
                state.jwks_uri = Some(uri);
                state.keys = Some(Arc::clone(&keys));
                Ok(keys)
            }
            Err(e) => {
                tracing::warn!(issuer = %self.settings.issuer, error = %e, "cannot fetch the issuer's signing keys");
                match &state.keys {
                    // Rotation check failed: the cached keys still stand.
                    Some(keys) => Ok(Arc::clone(keys)),
                    None => Err(Rejection::Unavailable(format!(
                        "cannot check tokens: {e}; check that {} is reachable from toolgate",
                        self.settings.issuer
                    ))),
                }
            }
        }
    }

    /// The JWKS URI (found through the issuer's metadata unless known) and its keys.
    async fn fetch(&self, jwks_uri: Option<String>) -> Result<(String, Vec<Key>), KeysError> {
        let uri = match jwks_uri {
            Some(uri) => uri,
            None => self.discover().await?,
        };
        let set: JwkSet = match serde_json::from_slice(&self.get(&uri).await?) {
            Ok(set) => set,
            Err(source) => return Err(KeysError::NotJwks { uri, source }),
        };
        let keys: Vec<Key> = set.keys.iter().filter_map(key).collect();
        if keys.is_empty() {
            return Err(KeysError::NoKey { uri });
        }
        Ok((uri, keys))
    }

    /// The issuer's `jwks_uri`: RFC 8414 metadata first, then OpenID Connect discovery.
    async fn discover(&self) -> Result<String, KeysError> {
        let issuer = self.settings.issuer.trim_end_matches('/');
        let (origin, path) = match reqwest::Url::parse(issuer) {
            Ok(url) => (
                url.origin().ascii_serialization(),
                url.path().trim_end_matches('/').to_owned(),
            ),
            Err(source) => {
                return Err(KeysError::Issuer {
                    issuer: issuer.to_owned(),
                    source,
                });
            }
        };
        let places = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ];
        let mut errors = Vec::new();
        for place in places {
            match self.get(&place).await {
                Ok(body) => {
                    #[derive(Deserialize)]
                    struct Metadata {
                        issuer: String,
                        jwks_uri: Option<String>,
                    }
                    let meta: Metadata = match serde_json::from_slice(&body) {
                        Ok(meta) => meta,
                        Err(source) => return Err(KeysError::NotMetadata { place, source }),
                    };
                    if meta.issuer != self.settings.issuer {
                        return Err(KeysError::OtherIssuer {
                            place,
                            named: meta.issuer,
                            issuer: self.settings.issuer.clone(),
                        });
                    }
                    return meta.jwks_uri.ok_or(KeysError::NoJwksUri { place });
                }
                Err(e) => errors.push(e),
            }
        }
        Err(KeysError::NoMetadata(errors))
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, KeysError> {
        let failed = |source| KeysError::Http {
            url: url.to_owned(),
            source,
        };
        let response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(failed)?;
        let status = response.status();
        if !status.is_success() {
            return Err(KeysError::Status {
                url: url.to_owned(),
                status,
            });
        }
        let body = response.bytes().await.map_err(failed)?;
        Ok(body.to_vec())
    }
}

/// Why the issuer's signing keys could not be had; the text says where it went wrong.
#[derive(Debug, thiserror::Error)]
enum KeysError {
    /// The configured issuer is not a URL.
    #[error("issuer {issuer}: {source}")]
    Issuer {
        issuer: String,
        #[source]
        source: url::ParseError,
    },
    /// A request to the issuer failed.
    #[error("GET {url}: {source}")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The issuer answered with an error status.
    #[error("GET {url}: {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    /// A metadata document that does not parse.
    #[error("{place} is not issuer metadata: {source}")]
    NotMetadata {
        place: String,
        #[source]
        source: serde_json::Error,
    },
    /// Metadata of another issuer.
    #[error(
        "{place} names issuer `{named}`, not `{issuer}`; set [server.auth] issuer to the issuer exactly as it names itself"
    )]
    OtherIssuer {
        place: String,
        named: String,
        issuer: String,
    },
    /// Metadata without `jwks_uri`.
    #[error("{place} names no jwks_uri")]
    NoJwksUri { place: String },
    /// Neither metadata document could be had; why for each.
    #[error("no issuer metadata found ({})", joined(.0))]
    NoMetadata(Vec<KeysError>),
    /// A key set that does not parse.
    #[error("{uri} is not a JWK set: {source}")]
    NotJwks {
        uri: String,
        #[source]
        source: serde_json::Error,
    },
    /// A key set without a key toolgate can check signatures with.
    #[error("{uri} holds no signing key toolgate can use")]
    NoKey { uri: String },
}

/// `errors`, `; `-separated.
fn joined(errors: &[KeysError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A signing key of the set with the algorithms it may sign with; `None` for encryption
/// keys, symmetric keys (a JWKS is public: an HMAC key in it would let anyone sign) and
/// kinds toolgate cannot check.
fn key(jwk: &Jwk) -> Option<Key> {
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let family: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            vec![Algorithm::EdDSA]
        }
        _ => return None,
    };
    let algorithms = match jwk.common.key_algorithm {
        None => family,
        Some(named) => {
            let named = signing_algorithm(named)?;
            family.into_iter().filter(|a| *a == named).collect()
        }
    };
    if algorithms.is_empty() {
        return None;
    }
    Some(Key {
        kid: jwk.common.key_id.clone(),
        key: DecodingKey::from_jwk(jwk).ok()?,
        algorithms,
    })
}

fn signing_algorithm(named: KeyAlgorithm) -> Option<Algorithm> {
    Some(match named {
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

/// What was wrong with a token, in words that say what to do.
fn explain(error: &jsonwebtoken::errors::Error, settings: &OAuthSettings) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => "the token has expired; get a new one".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (`nbf`)".to_owned(),
        ErrorKind::InvalidAudience => format!(
            "the token is for another audience; toolgate accepts `aud` = `{}`",
            settings.audience
        ),
        ErrorKind::InvalidIssuer => format!(
            "the token is from another issuer; toolgate accepts `iss` = `{}`",
            settings.issuer
        ),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        _ => format!("the token is not valid: {error}"),
    }
}
