//! `serve --http` as an OAuth resource server, against an issuer in the test: metadata and
//! JWKS served by axum on loopback, tokens signed here with ring-made P-256 keys.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_core::{
    Disclosure, DisclosureMode, DisclosureSettings, DispatchLimits, Dispatcher, Policy,
    RenderOptions, Scope, ToolOutput,
};
use toolgate_mcp::{HttpOptions, OAuthLimits, OAuthSettings, ToolgateServer};
use toolgate_test_support::FnTool;

const AUDIENCE: &str = "toolgate-test";

/// A P-256 signing key and its public JWK.
struct SigningKey {
    kid: String,
    private: EncodingKey,
    public: Vec<u8>,
}

impl SigningKey {
    fn new(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Self {
            kid: kid.to_owned(),
            private: EncodingKey::from_ec_der(pkcs8.as_ref()),
            public: pair.public_key().as_ref().to_vec(),
        }
    }

    fn jwk(&self) -> Value {
        // Uncompressed point: 0x04 || x || y.
        json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
            "x": URL_SAFE_NO_PAD.encode(&self.public[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&self.public[33..65]),
        })
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.private).unwrap()
    }
}

/// The authorization server: its metadata (RFC 8414 or only OpenID discovery) and a JWKS
/// that can change (rotation) or fail.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    jwks_fetches: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl Issuer {
    async fn start(rfc8414: bool) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let keys: Arc<Mutex<Vec<Value>>> = Arc::default();
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let meta = json!({"issuer": url, "jwks_uri": format!("{url}/jwks")});
        let (k, n) = (Arc::clone(&keys), Arc::clone(&jwks_fetches));
        let mut app = axum::Router::new()
            .route(
                "/.well-known/openid-configuration",
                axum::routing::get({
                    let meta = meta.to_string();
                    move || async move { meta }
                }),
            )
            .route(
                "/jwks",
                axum::routing::get(move || {
                    n.fetch_add(1, Ordering::SeqCst);
                    let keys = k.lock().unwrap().clone();
                    async move { json!({"keys": keys}).to_string() }
                }),
            );
        if rfc8414 {
            let meta = meta.to_string();
            app = app.route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || async move { meta }),
            );
        }
        let stop = CancellationToken::new();
        let until = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { until.cancelled().await })
                .await
        });
        Self {
            url,
            keys,
            jwks_fetches,
            stop,
        }
    }

    fn publish(&self, keys: &[&SigningKey]) {
        *self.keys.lock().unwrap() = keys.iter().map(|k| k.jwk()).collect();
    }

    fn claims(&self, sub: &str) -> Value {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        json!({"iss": self.url, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 300,
               "scope": "mcp tools", "groups": ["eng"]})
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A server over `registry` under `policy`, its lists cut per caller as `serve` does.
fn server_for(registry: Arc<toolgate_core::Registry>, policy: Policy) -> ToolgateServer {
    policy.filter_lists_of(&registry);
    ToolgateServer::new(
        Arc::new(Dispatcher::new(
            registry,
            Scope::global(),
            policy,
            DispatchLimits::default(),
        )),
        RenderOptions::default(),
        String::new(),
    )
}

/// toolgate on a free loopback port with `whoami`, which answers with its session's identity.
struct Gate {
    base: String,
    http: reqwest::Client,
    stop: CancellationToken,
}

impl Gate {
    async fn start(
        issuer: &str,
        token: Option<&str>,
        scopes: &[&str],
        limits: OAuthLimits,
    ) -> Self {
        Self::start_with(issuer, token, scopes, limits, Policy::allow_all()).await
    }

    /// [`Gate::start`] under `policy`, with `deploy` beside `whoami`.
    async fn start_with(
        issuer: &str,
        token: Option<&str>,
        scopes: &[&str],
        limits: OAuthLimits,
        policy: Policy,
    ) -> Self {
        let deploy = FnTool::new("deploy")
            .describe("Deploys.")
            .reply(|_args, _ctx| Box::pin(async move { Ok(ToolOutput::text("deployed")) }))
            .erased();
        let whoami = FnTool::new("whoami")
            .describe("Says who the session belongs to.")
            .reply(|_args, ctx| {
                Box::pin(async move {
                    let who = ctx.session.identity().map(|i| {
                        json!({"subject": i.subject, "issuer": i.issuer, "groups": i.groups,
                               "scopes": i.scopes})
                    });
                    Ok(ToolOutput::text(json!(who).to_string()))
                })
            })
            .erased();
        let registry = toolgate_test_support::registry_with(vec![whoami, deploy]);
        Self::serve(server_for(registry, policy), issuer, token, scopes, limits).await
    }

    /// `server` behind the door: `issuer`'s tokens, and `token` as the static one.
    async fn serve(
        server: ToolgateServer,
        issuer: &str,
        token: Option<&str>,
        scopes: &[&str],
        limits: OAuthLimits,
    ) -> Self {
        let oauth = OAuthSettings::new(
            issuer,
            AUDIENCE,
            scopes.iter().map(|s| (*s).to_owned()).collect(),
        )
        .unwrap()
        .with_limits(limits);
        let options = HttpOptions {
            token: token.map(str::to_owned),
            oauth: Some(oauth),
            ..crate::loopback_options()
        };
        let stop = CancellationToken::new();
        let addr = crate::spawn_http(server, options, &stop).await;
        Self {
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
            stop,
        }
    }

    /// POSTs a JSON-RPC message to `/mcp`: the status, the headers and the JSON-RPC reply
    /// (from the SSE body), if any.
    async fn post(
        &self,
        token: Option<&str>,
        session: Option<&str>,
        body: Value,
    ) -> (u16, reqwest::header::HeaderMap, Option<Value>) {
        let mut request = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let reply = crate::reply_in(&text);
        (status, headers, reply)
    }

    /// Opens a session with `token`: its id.
    async fn initialize(&self, token: &str) -> String {
        let (status, headers, reply) = self
            .post(
                Some(token),
                None,
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "oauth-test", "version": "1"}}}),
            )
            .await;
        assert_eq!(status, 200, "{reply:?}");
        let id = headers["mcp-session-id"].to_str().unwrap().to_owned();
        let (status, _, _) = self
            .post(
                Some(token),
                Some(&id),
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await;
        assert_eq!(status, 202);
        id
    }

    /// Calls `whoami` on `session`: the status and the identity it reports.
    async fn whoami(&self, token: &str, session: &str) -> (u16, Option<Value>) {
        let (status, _, reply) = self
            .post(
                Some(token),
                Some(session),
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "whoami", "arguments": {}}}),
            )
            .await;
        let who = reply.and_then(|r| {
            r["result"]["content"][0]["text"]
                .as_str()
                .map(|t| serde_json::from_str(t).unwrap())
        });
        (status, who)
    }

    /// The tools `session` lists.
    async fn tools(&self, token: &str, session: &str) -> Vec<Value> {
        let (status, _, reply) = self
            .post(
                Some(token),
                Some(session),
                json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}),
            )
            .await;
        assert_eq!(status, 200, "{reply:?}");
        reply.unwrap()["result"]["tools"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// Their names.
    async fn tool_names(&self, token: &str, session: &str) -> Vec<String> {
        let tools = self.tools(token, session).await;
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The description of `search_tool` as `session` lists it.
    async fn search_description(&self, token: &str, session: &str) -> String {
        let tools = self.tools(token, session).await;
        let search = tools.iter().find(|t| t["name"] == "search_tool").unwrap();
        search["description"].as_str().unwrap().to_owned()
    }

    /// Calls `tool` on `session`: the result.
    async fn call(&self, token: &str, session: &str, tool: &str) -> Value {
        let (status, _, reply) = self
            .post(
                Some(token),
                Some(session),
                json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": tool, "arguments": {}}}),
            )
            .await;
        assert_eq!(status, 200, "{reply:?}");
        reply.unwrap()["result"].clone()
    }

    /// The status and `WWW-Authenticate` of an `initialize` with `token`.
    async fn refused(&self, token: Option<&str>) -> (u16, String) {
        let (status, headers, _) = self
            .post(
                token,
                None,
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "oauth-test", "version": "1"}}}),
            )
            .await;
        let challenge = headers
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, challenge)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn no_refetch_floor() -> OAuthLimits {
    OAuthLimits {
        min_refetch: Duration::ZERO,
        ..OAuthLimits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_calls_a_tool_and_its_caller_is_the_sessions_identity() {
    let issuer = Issuer::start(true).await;
    let key = SigningKey::new("k1");
    issuer.publish(&[&key]);
    let gate = Gate::start(&issuer.url, None, &["mcp"], OAuthLimits::default()).await;
    let token = key.sign(&issuer.claims("alice"));
    let session = gate.initialize(&token).await;
    let (status, who) = gate.whoami(&token, &session).await;
    assert_eq!(status, 200);
    assert_eq!(
        who.unwrap(),
        json!({"subject": "alice", "issuer": issuer.url, "groups": ["eng"],
               "scopes": ["mcp", "tools"]})
    );
    // The keys were fetched once and are cached.
    gate.whoami(&token, &session).await;
    assert_eq!(issuer.jwks_fetches.load(Ordering::SeqCst), 1);
}

/// Tokens of two callers: alice in the issuer's default groups (`eng`), bob in `ops`.
fn eng_and_ops(issuer: &Issuer, key: &SigningKey) -> (String, String) {
    let mut ops = issuer.claims("bob");
    ops["groups"] = json!(["ops"]);
    (key.sign(&issuer.claims("alice")), key.sign(&ops))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_in_different_groups_see_and_may_call_different_tools() {
    let issuer = Issuer::start(true).await;
    let key = SigningKey::new("k1");
    issuer.publish(&[&key]);
    let deny = [r#"deploy unless group = "eng""#.to_owned()];
    let policy = Policy::from_lists(&[], &[], &deny).unwrap();
    let gate = Gate::start_with(&issuer.url, None, &["mcp"], no_refetch_floor(), policy).await;
    let (eng, ops) = eng_and_ops(&issuer, &key);
    let eng_session = gate.initialize(&eng).await;
    let ops_session = gate.initialize(&ops).await;
    // Listed in turn on one server: the list cached for one caller must not serve the other.
    for _ in 0..2 {
        assert_eq!(
            gate.tool_names(&eng, &eng_session).await,
            ["deploy", "whoami"]
        );
        assert_eq!(gate.tool_names(&ops, &ops_session).await, ["whoami"]);
    }
    let ran = gate.call(&eng, &eng_session, "deploy").await;
    assert_eq!(ran["isError"], json!(false), "{ran}");
    assert_eq!(ran["content"][0]["text"], "deployed");
    let refused = gate.call(&ops, &ops_session, "deploy").await;
    assert_eq!(refused["isError"], json!(true), "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(r#"deny = ["deploy unless group = \"eng\""]"#),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_tools_catalog_names_no_deferred_tool_its_caller_is_denied() {
    let issuer = Issuer::start(true).await;
    let key = SigningKey::new("k1");
    issuer.publish(&[&key]);
    let tools: Vec<_> = (0..20)
        .map(|i| {
            FnTool::new(&format!("mcp__demo__tool_{i:02}"))
                .describe(&format!("Demo tool number {i}."))
                .reply(|_args, _ctx| Box::pin(async move { Ok(ToolOutput::text("ok")) }))
                .erased()
        })
        .collect();
    let registry = toolgate_test_support::registry_with(tools);
    let deny = [r#"mcp__demo__tool_07 unless group = "eng""#.to_owned()];
    let policy = Policy::from_lists(&[], &[], &deny).unwrap();
    let settings = DisclosureSettings {
        mode: DisclosureMode::Auto(15),
        ..DisclosureSettings::default()
    };
    let disclosure = Arc::new(Disclosure::new(&settings, &Default::default()).unwrap());
    disclosure.attach(&registry, Scope::global()).unwrap();
    let server = server_for(registry, policy).with_disclosure(disclosure);
    let gate = Gate::serve(server, &issuer.url, None, &["mcp"], no_refetch_floor()).await;
    let (eng, ops) = eng_and_ops(&issuer, &key);
    let eng_session = gate.initialize(&eng).await;
    let ops_session = gate.initialize(&ops).await;
    // In turn on one server: neither caller's catalog may serve the other.
    for _ in 0..2 {
        let for_eng = gate.search_description(&eng, &eng_session).await;
        assert!(for_eng.contains("20 tools are not loaded"), "{for_eng}");
        assert!(for_eng.contains("mcp__demo__tool_07"), "{for_eng}");
        let for_ops = gate.search_description(&ops, &ops_session).await;
        assert!(for_ops.contains("19 tools are not loaded"), "{for_ops}");
        assert!(!for_ops.contains("mcp__demo__tool_07"), "{for_ops}");
        assert!(for_ops.contains("mcp__demo__tool_08"), "{for_ops}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_callers_token_on_a_session_is_refused() {
    let issuer = Issuer::start(true).await;
    let key = SigningKey::new("k1");
    issuer.publish(&[&key]);
    let gate = Gate::start(
        &issuer.url,
        Some("static-secret"),
        &[],
        OAuthLimits::default(),
    )
    .await;
    let alice = key.sign(&issuer.claims("alice"));
    let bob = key.sign(&issuer.claims("bob"));
    let session = gate.initialize(&alice).await;
    let (status, who) = gate.whoami(&bob, &session).await;
    assert_eq!((status, who), (403, None));
    // Nor does the static token take over a caller's session.
    let (status, _) = gate.whoami("static-secret", &session).await;
    assert_eq!(status, 403);
    // A fresh token of the same caller (other scopes) keeps working.
    let mut claims = issuer.claims("alice");
    claims["scope"] = json!("mcp");
    let (status, who) = gate.whoami(&key.sign(&claims), &session).await;
    assert_eq!(status, 200);
    assert_eq!(who.unwrap()["subject"], "alice");
    // The static token still opens sessions of its own, without an identity.
    let own = gate.initialize("static-secret").await;
    let (status, who) = gate.whoami("static-secret", &own).await;
    assert_eq!((status, who), (200, Some(Value::Null)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_get_401_invalid_token_and_missing_scopes_403() {
    let issuer = Issuer::start(false).await; // OpenID discovery only.
    let key = SigningKey::new("k1");
    issuer.publish(&[&key]);
    let gate = Gate::start(&issuer.url, None, &["mcp"], OAuthLimits::default()).await;
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", gate.base);

    let (status, challenge) = gate.refused(None).await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp\"")
    );

    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let cases: Vec<(&str, Value)> = vec![
        ("another audience", {
            let mut c = issuer.claims("alice");
            c["aud"] = json!("someone-else");
            c
        }),
        ("expired", {
            let mut c = issuer.claims("alice");
            c["exp"] = json!(now - 3600);
            c
        }),
        ("another issuer", {
            let mut c = issuer.claims("alice");
            c["iss"] = json!("https://evil.example");
            c
        }),
        ("no subject", {
            let mut c = issuer.claims("alice");
            c.as_object_mut().unwrap().remove("sub");
            c
        }),
        // An empty subject names nobody: it is no identity, not an anonymous one.
        ("empty subject", issuer.claims("")),
        ("blank subject", issuer.claims(" \t")),
    ];
    for (what, claims) in cases {
        let (status, challenge) = gate.refused(Some(&key.sign(&claims))).await;
        assert_eq!(status, 401, "{what}");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\", error_description=\"")
                && challenge.ends_with(&format!("resource_metadata=\"{metadata}\"")),
            "{what}: {challenge}"
        );
    }

    // A key the issuer does not publish.
    let stranger = SigningKey::new("k1");
    let (status, challenge) = gate
        .refused(Some(&stranger.sign(&issuer.claims("alice"))))
        .await;
    assert_eq!(status, 401);
    assert!(challenge.contains("invalid_token"), "{challenge}");

    // Without the required scope: 403 insufficient_scope naming it.
    let mut claims = issuer.claims("alice");
    claims["scope"] = json!("tools");
    let (status, challenge) = gate.refused(Some(&key.sign(&claims))).await;
    assert_eq!(status, 403);
    assert_eq!(
        challenge,
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp\", resource_metadata=\"{metadata}\""
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alg_none_and_hmac_with_the_public_key_are_refused() {
    let issuer = Issuer::start(true).await;
    let key = SigningKey::new("k1");
    issuer.publish(&[&key]);
    let gate = Gate::start(&issuer.url, None, &[], OAuthLimits::default()).await;
    let claims = issuer.claims("mallory");

    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "none", "kid": "k1"}).to_string());
    let body = URL_SAFE_NO_PAD.encode(claims.to_string());
    let (status, challenge) = gate.refused(Some(&format!("{header}.{body}."))).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("invalid_token"), "{challenge}");

    // HS256 keyed with the public key, in both forms an attacker could find it.
    for secret in [key.public.clone(), key.jwk().to_string().into_bytes()] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".to_owned());
        let forged =
            jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(&secret)).unwrap();
        let (status, challenge) = gate.refused(Some(&forged)).await;
        assert_eq!(status, 401);
        assert!(challenge.contains("invalid_token"), "{challenge}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_kid_refetches_the_keys_once_and_a_flood_does_not_hammer_the_issuer() {
    let issuer = Issuer::start(true).await;
    let old = SigningKey::new("old");
    issuer.publish(&[&old]);
    // Rotation: no floor between refetches.
    let gate = Gate::start(&issuer.url, None, &[], no_refetch_floor()).await;
    let session = gate.initialize(&old.sign(&issuer.claims("alice"))).await;
    assert_eq!(issuer.jwks_fetches.load(Ordering::SeqCst), 1);
    let new = SigningKey::new("new");
    issuer.publish(&[&old, &new]);
    let (status, who) = gate
        .whoami(&new.sign(&issuer.claims("alice")), &session)
        .await;
    assert_eq!(status, 200);
    assert_eq!(who.unwrap()["subject"], "alice");
    assert_eq!(issuer.jwks_fetches.load(Ordering::SeqCst), 2);

    // Flood: with the default floor, many made-up kids cost one refetch.
    let gate = Gate::start(&issuer.url, None, &[], OAuthLimits::default()).await;
    gate.initialize(&old.sign(&issuer.claims("alice"))).await;
    let before = issuer.jwks_fetches.load(Ordering::SeqCst);
    for i in 0..20 {
        let bogus = SigningKey::new(&format!("bogus-{i}"));
        let (status, _) = gate
            .refused(Some(&bogus.sign(&issuer.claims("mallory"))))
            .await;
        assert_eq!(status, 401);
    }
    assert!(
        issuer.jwks_fetches.load(Ordering::SeqCst) - before <= 1,
        "a flood of unknown kids refetched {} times",
        issuer.jwks_fetches.load(Ordering::SeqCst) - before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_issuer_lets_nobody_in_and_says_so() {
    // An issuer that is not listening.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let gate = Gate::start(&url, None, &[], OAuthLimits::default()).await;
    let key = SigningKey::new("k1");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = key.sign(&json!({"iss": url, "aud": AUDIENCE, "sub": "alice", "exp": now + 300}));
    let response = gate
        .http
        .post(format!("{}/mcp", gate.base))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    let text = response.text().await.unwrap();
    assert!(
        text.contains("cannot check tokens") && text.contains(&url),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protected_resource_metadata_is_public_and_names_the_issuer() {
    let issuer = Issuer::start(true).await;
    let gate = Gate::start(&issuer.url, None, &["mcp"], OAuthLimits::default()).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = gate
            .http
            .get(format!("{}{path}", gate.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let doc: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(
            doc,
            json!({"resource": format!("{}/mcp", gate.base),
                   "authorization_servers": [issuer.url],
                   "scopes_supported": ["mcp"],
                   "bearer_methods_supported": ["header"],
                   "resource_name": "toolgate"}),
            "{path}"
        );
    }
    // Behind a TLS proxy the resource is the https URL the client used.
    let doc: Value = serde_json::from_str(
        &gate
            .http
            .get(format!(
                "{}/.well-known/oauth-protected-resource/mcp",
                gate.base
            ))
            .header("x-forwarded-proto", "https")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        doc["resource"],
        format!("{}/mcp", gate.base.replace("http://", "https://"))
    );
}

/// Regression: the metadata echoed any `Host` into `resource`, so a request naming another
/// server got a document that named it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_never_names_a_host_this_server_does_not_answer_to() {
    let issuer = Issuer::start(true).await;
    let gate = Gate::start(&issuer.url, None, &["mcp"], OAuthLimits::default()).await;
    let response = gate
        .http
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            gate.base
        ))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    // Nothing configured names this server by another name (no `public_url`, and the
    // audience is no URL): refused rather than made up.
    assert_eq!(response.status().as_u16(), 404);
    assert!(!response.text().await.unwrap().contains("evil"));
}

#[test]
fn a_bad_auth_config_says_what_to_set() {
    let e = OAuthSettings::new("http://login.example.com", "a", Vec::new()).unwrap_err();
    assert!(e.to_string().contains("must be an https:// URL"), "{e}");
    let e = OAuthSettings::new("https://login.example.com", " ", Vec::new()).unwrap_err();
    assert!(e.to_string().contains("set `audience = "), "{e}");
    let e = OAuthSettings::new("", "a", Vec::new()).unwrap_err();
    assert!(e.to_string().contains("set `issuer = "), "{e}");
    assert!(OAuthSettings::new("http://127.0.0.1:9", "a", Vec::new()).is_ok());
    assert!(OAuthSettings::new("http://localhost:9/realms/x", "a", Vec::new()).is_ok());
}
