//! The client leg of the official MCP conformance suite runs this with a test server's URL
//! as its last argument (`tests/interop/conformance-client.sh`). It drives toolgate's own
//! gateway code as `toolgate serve` and `toolgate mcp login` do: the server is mounted
//! from a `[mcp_servers.test]` entry, started, logged in to when it needs a login (the
//! authorization-code flow of `mcp login`, with `$BROWSER` set by the script to a command
//! that follows the redirects back to the loopback callback), listed, and its tools called
//! through the gateway's mounted tools.
//!
//! Environment, from the suite: `MCP_CONFORMANCE_SCENARIO` (what to do),
//! `MCP_CONFORMANCE_CONTEXT` (JSON: a pre-registered `client_id` and `client_secret`),
//! `MCP_CONFORMANCE_PROTOCOL_VERSION`. Tokens go to a 0600 file store in a temporary folder.

#![allow(clippy::print_stderr)]

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolgate_core::{
    Approval, AskError, CallContext, ClientAsk, ClientLink, Registry, Session, SessionInit,
    ToolError,
};
use toolgate_gateway::{
    CredentialStoreMode, Discovered, Gateway, GatewayLimits, LoginError, LoginHandler,
    LoginOptions, McpServerConfig, OAuthConfig, ServerSpec, ServerState, TokenStore,
};

/// The Client ID Metadata Document the suite's authorization servers accept.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Where the pre-registered client's secret is handed to the re-executed runner.
const SECRET_VAR: &str = "TOOLGATE_CONFORMANCE_CLIENT_SECRET";

/// Most logins in one run: a server that keeps asking for more scopes is given up on.
const MAX_LOGINS: u32 = 3;

/// Why the run failed; printed after `conformance_client: `.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error("usage: conformance_client URL")]
    Usage,
    #[error("{0}")]
    TempDir(#[source] std::io::Error),
    #[error("{0}")]
    Gateway(#[source] toolgate_core::RegistryError),
    #[error("{0}")]
    Store(#[from] toolgate_gateway::StoreError),
    #[error("{0}")]
    Login(#[from] LoginError),
    #[error("the server is not ready: {0:?}")]
    NotReady(ServerState),
    #[error("no tool named {0}")]
    NoTool(String),
    #[error("calling {tool} failed: {source}")]
    Call {
        tool: String,
        #[source]
        source: ToolError,
    },
}

/// A login handler that has logged in as often as it may.
#[derive(Debug, thiserror::Error)]
#[error("gave up after {MAX_LOGINS} logins")]
struct GaveUp;

/// Logs in the way `toolgate mcp login` does, when a call finds the server needs it.
struct Login {
    store: TokenStore,
    count: AtomicU32,
}

impl LoginHandler for Login {
    fn login<'a>(
        &'a self,
        spec: &'a ServerSpec,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), LoginError>> {
        Box::pin(async move {
            if self.count.fetch_add(1, Ordering::SeqCst) >= MAX_LOGINS {
                return Err(LoginError::Handler(Box::new(GaveUp)));
            }
            let options = LoginOptions {
                timeout: Duration::from_secs(20),
                challenge: challenge.map(str::to_owned),
                ..LoginOptions::default()
            };
            toolgate_gateway::login(spec, &self.store, &options, &|line| eprintln!("{line}"))
                .await
                .map(|_| ())
        })
    }
}

fn main() -> ExitCode {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    // The config names the secret's variable (`client_secret_env`), as a user's would: run
    // again with it set rather than change this process's environment.
    if let Some(secret) = context.get("client_secret").and_then(Value::as_str)
        && std::env::var_os(SECRET_VAR).is_none()
    {
        let me = std::env::current_exe();
        let status = me.and_then(|me| {
            std::process::Command::new(me)
                .args(std::env::args_os().skip(1))
                .env(SECRET_VAR, secret)
                .status()
        });
        return match status {
            Ok(s) if s.success() => ExitCode::SUCCESS,
            Ok(_) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("conformance_client: cannot run again: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("conformance_client: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&context)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance_client: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(context: &Value) -> Result<(), RunError> {
    let url = std::env::args().nth(1).ok_or(RunError::Usage)?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let dir = tempfile::tempdir().map_err(RunError::TempDir)?;

    let oauth = OAuthConfig {
        client_id: context
            .get("client_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        client_secret_env: context
            .get("client_secret")
            .is_some()
            .then(|| SECRET_VAR.to_owned()),
        client_metadata_url: Some(CIMD_URL.to_owned()),
        ..OAuthConfig::default()
    };
    let config = McpServerConfig {
        url: Some(url),
        oauth: Some(oauth),
        startup_timeout_sec: Some(20.0),
        ..McpServerConfig::default()
    };
    let spec = ServerSpec::resolve("test", &config, "conformance".to_owned(), dir.path());
    let registry = Arc::new(Registry::new());
    let discovered = Discovered {
        servers: vec![spec.clone()],
        problems: Vec::new(),
    };
    let store = TokenStore::in_dir(dir.path().join("tokens"), CredentialStoreMode::File)?;
    let login = Arc::new(Login {
        store: store.clone(),
        count: AtomicU32::new(0),
    });
    let gateway = Gateway::builder(discovered, GatewayLimits::default(), &registry)
        .token_store(store)
        .login_handler(Arc::clone(&login) as Arc<dyn LoginHandler>)
        .build()
        .map_err(RunError::Gateway)?;

    let outcome = drive(&gateway, &spec, &login, &scenario, context).await;
    gateway.shutdown().await;
    outcome
}

async fn drive(
    gateway: &Gateway,
    spec: &ServerSpec,
    login: &Login,
    scenario: &str,
    context: &Value,
) -> Result<(), RunError> {
    gateway.start_all().await;
    while let ServerState::NeedsLogin(reason) = status(gateway) {
        // What a user does on `needs login`: `toolgate mcp login test`, then the running
        // gateway picks the tokens up.
        eprintln!("conformance_client: needs login ({reason}); logging in");
        login.login(spec, None).await?;
        gateway.start_all().await;
    }
    match status(gateway) {
        ServerState::Ready => {}
        other => return Err(RunError::NotReady(other)),
    }
    let tools = gateway.server_tools("test").unwrap_or_default();
    eprintln!(
        "conformance_client: tools: {:?}",
        tools
            .iter()
            .map(|t| t.spec().name.clone())
            .collect::<Vec<_>>()
    );
    // The session the calls come from: its client is a user who accepts every form.
    let session = Session::new(SessionInit {
        approval: Approval::Nobody,
        profile: None,
        client: Some(Arc::new(AcceptingUser)),
        identity: None,
        rate_key: None,
    });
    let call = |suffix: &str, args: Value| {
        let ctx = CallContext::new(Arc::clone(&session));
        let tool = tools
            .iter()
            .find(|t| t.spec().name.rsplit("__").next() == Some(suffix))
            .cloned();
        let suffix = suffix.to_owned();
        async move {
            let tool = tool.ok_or_else(|| RunError::NoTool(suffix.clone()))?;
            let output = tool
                .call(args, ctx)
                .await
                .map_err(|source| RunError::Call {
                    tool: suffix.clone(),
                    source,
                })?;
            eprintln!("conformance_client: {suffix}: {output:?}");
            Ok::<(), RunError>(())
        }
    };
    if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
        // The scenario names the calls to make.
        for c in calls {
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            let args = c.get("arguments").cloned().unwrap_or_else(|| json!({}));
            call(name, args).await?;
        }
        return Ok(());
    }
    match scenario {
        "initialize" => Ok(()),
        "tools_call" => call("add_numbers", json!({"a": 5, "b": 3})).await,
        s if s.starts_with("auth/") => call("test-tool", json!({})).await,
        // Every tool the server offers, at once, with arguments its schema requires.
        _ => {
            let calls = tools.iter().map(|t| {
                let name = t
                    .spec()
                    .name
                    .rsplit("__")
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let args = arguments_for(&Value::Object((*t.spec().input_schema).clone()));
                let call = &call;
                async move { call(&name, args).await }
            });
            let results = futures::future::join_all(calls).await;
            results.into_iter().find(Result::is_err).unwrap_or(Ok(()))
        }
    }
}

/// The user behind the client: accepts every form the server shows, as it is offered — the
/// gateway completes the answer with the form's defaults (SEP-1034).
struct AcceptingUser;

impl ClientLink for AcceptingUser {
    fn can_ask(&self, ask: ClientAsk) -> Result<(), &'static str> {
        (ask == ClientAsk::FormElicitation)
            .then_some(())
            .ok_or("the conformance client answers forms only")
    }

    fn request(
        &self,
        ask: ClientAsk,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        eprintln!("conformance_client: {}: {params}; accepting", ask.method());
        Box::pin(async { Ok(json!({"action": "accept", "content": {}})) })
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// Arguments that satisfy a schema's required properties (strings, numbers, booleans).
fn arguments_for(schema: &Value) -> Value {
    let mut args = serde_json::Map::new();
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let kind = schema
            .pointer(&format!("/properties/{name}/type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = match kind {
            "number" | "integer" => json!(1),
            "boolean" => json!(true),
            "object" => json!({}),
            "array" => json!([]),
            _ => json!("us-west1"),
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

fn status(gateway: &Gateway) -> ServerState {
    gateway
        .status()
        .into_iter()
        .find(|s| s.name == "test")
        .map(|s| s.state)
        .unwrap_or(ServerState::NotStarted)
}
