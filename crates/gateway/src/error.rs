//! Why a mounted server could not serve a request: the gateway's control flow after startup
//! (a live connection on demand in `mount/call.rs`, a caller's own connection in
//! `mount/per_user.rs`, prompts, resources, completion and subscriptions). Each text names
//! the server and says what to do; it reaches the model as a tool result, or the client as
//! the error of its request ([`ForwardError`]).
//!
//! Why a start failed is [`crate::failure::Failure`]: its reason becomes the server's
//! state, which these errors quote.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceError;
use toolgate_oauth::NoCode;

use crate::connect::ConnectError;
use crate::relay::RelayError;
use toolgate_oauth::LoginError;

/// What a request to a mounted server asked for, as its errors name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asked {
    /// `prompts/get` of this prompt (the server's own name).
    Prompt(String),
    /// `resources/read` of this URI.
    Read(String),
    /// `completion/complete` of this argument.
    Complete(String),
    /// `resources/subscribe` of this URI.
    Subscribe(String),
}

impl Asked {
    /// The request awaited: "`prompts/get` for `NAME`".
    fn request(&self) -> String {
        match self {
            Self::Prompt(name) => format!("`prompts/get` for `{name}`"),
            Self::Read(uri) => format!("`resources/read` for `{uri}`"),
            Self::Complete(_) => "`completion/complete`".to_owned(),
            Self::Subscribe(uri) => format!("`resources/subscribe` for `{uri}`"),
        }
    }

    /// What the server did not do: "could not give prompt `NAME`".
    fn failed(&self) -> String {
        match self {
            Self::Prompt(name) => format!("could not give prompt `{name}`"),
            Self::Read(uri) => format!("could not read `{uri}`"),
            Self::Complete(argument) => format!("could not complete `{argument}`"),
            Self::Subscribe(uri) => format!("refused the subscription to `{uri}`"),
        }
    }

    /// What the input was for: "for prompt `NAME`", "to read `URI`".
    fn input(&self) -> String {
        match self {
            Self::Prompt(name) => format!("for prompt `{name}`"),
            Self::Read(uri) => format!("to read `{uri}`"),
            Self::Complete(argument) => format!("to complete `{argument}`"),
            Self::Subscribe(uri) => format!("to follow `{uri}`"),
        }
    }

    /// What the result was for: "for prompt `NAME`", "for `URI`".
    fn result(&self) -> String {
        match self {
            Self::Prompt(name) => format!("for prompt `{name}`"),
            Self::Read(uri) | Self::Subscribe(uri) => format!("for `{uri}`"),
            Self::Complete(argument) => format!("for `{argument}`"),
        }
    }
}

/// Why a mounted server could not serve a request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// Its names clash with names toolgate already has (`prefix = "never"`).
    #[error("MCP server `{server}` is not mounted: {clash}")]
    NotMounted { server: String, clash: String },
    /// toolgate is shutting down.
    #[error("MCP server `{server}` is stopped: toolgate is shutting down")]
    ShuttingDown { server: String },
    /// `enabled = false`; `origin` names the file that says so.
    #[error("MCP server `{server}` is disabled (enabled = false, {origin})")]
    Disabled { server: String, origin: String },
    /// Defined by a project file (`origin`) and not trusted as it is.
    #[error(
        "MCP server `{server}` was not started: {reason}. It is defined by a project file ({origin}), so it runs only as the user trusted it; ask the user to check it and run `{}`",
        crate::trust::trust_command(.server)
    )]
    Untrusted {
        server: String,
        reason: String,
        origin: String,
    },
    /// It failed; a restart is allowed after `retry_in`.
    #[error(
        "MCP server `{server}` is not available: {reason}; the next restart is allowed in {}; try again then, or use another tool",
        secs(*.retry_in)
    )]
    Backoff {
        server: String,
        reason: String,
        retry_in: Duration,
    },
    /// It failed to start; only a config change and a restart of toolgate help.
    #[error(
        "MCP server `{server}` is not available: {reason}; fix its config (see `toolgate mcp list`) and restart toolgate"
    )]
    Failed { server: String, reason: String },
    /// It needs a human to log in, and nobody here can.
    #[error(
        "MCP server `{server}` needs a login ({reason}). A human must run `toolgate mcp login {server}` in a terminal (it opens a browser to sign in); you cannot do it yourself, so ask the user. Once they have, call this tool again: no restart is needed"
    )]
    NeedsLogin { server: String, reason: String },
    /// The gateway's login handler failed.
    #[error("logging in to MCP server `{server}` failed: {source}")]
    Login {
        server: String,
        #[source]
        source: LoginError,
    },
    /// It stopped being available while the request waited for it.
    #[error("MCP server `{server}` is not available")]
    Gone { server: String },

    /// `per_user = true` on a server that is not reached over HTTP.
    #[error(
        "MCP server `{server}` has `per_user = true` but is not a remote (url) server; only servers reached over HTTP take a login per user"
    )]
    PerUserNotRemote { server: String },
    /// A caller's connection to a server that is not remote.
    #[error("MCP server `{server}` is not a remote server")]
    NotRemote { server: String },
    /// The gateway has no token store for a caller's login.
    #[error("MCP server `{server}`: no OAuth token store")]
    NoTokenStore { server: String },
    /// The caller's stored login cannot be used; the reason says why.
    #[error("MCP server `{server}` cannot be reached: {reason}")]
    Unreachable { server: String, reason: String },
    /// The caller's transport cannot be set up.
    #[error("MCP server `{server}`: {source}")]
    Transport {
        server: String,
        #[source]
        source: ConnectError,
    },
    /// The caller's connection failed at the handshake; the reason says why.
    #[error("MCP server `{server}` cannot be reached as the caller: {reason} (at {url})")]
    CallerUnreachable {
        server: String,
        reason: String,
        url: String,
    },
    /// The caller's connection did not finish `stage` within the startup timeout.
    #[error(
        "MCP server `{server}` did not finish `{stage}` within {} (startup_timeout_sec) at {url}",
        secs(*.timeout)
    )]
    StartupTimeout {
        server: String,
        stage: &'static str,
        timeout: Duration,
        url: String,
    },
    /// The caller must open `link` to log in as themselves.
    #[error(
        "MCP server `{server}` needs the user to log in to it as themselves (each user of this toolgate uses their own account there). Give the user this link to open in a browser and sign in, then call the tool again:\n\n{link}"
    )]
    LoginLink { server: String, link: String },
    /// The caller declined to log in.
    #[error(
        "the user declined to log in to MCP server `{server}`; its tools cannot be used for them without it"
    )]
    LoginDeclined { server: String },
    /// The caller's login failed.
    #[error(
        "logging in to MCP server `{server}` failed: {source}; call the tool again for a new link"
    )]
    CallerLogin {
        server: String,
        #[source]
        source: CallerLoginError,
    },
    /// The caller's login ended without an outcome.
    #[error(
        "the login to MCP server `{server}` was not finished in time; call the tool again for a new link"
    )]
    LoginUnfinished { server: String },
    /// A login per caller needs the HTTP listener, which this toolgate does not run.
    #[error(
        "MCP server `{server}` is used per user (`per_user = true`), which needs `toolgate serve --http` to receive the login's redirect; this toolgate does not serve HTTP"
    )]
    NoLoginListener { server: String },
    /// The authorization URL has no `state` to wait for.
    #[error("logging in to MCP server `{server}` failed: its authorization URL has no `state`")]
    NoLoginState { server: String },
    /// Too many logins wait for their browser.
    #[error("logging in to MCP server `{server}`: {source}")]
    LoginsBusy {
        server: String,
        #[source]
        source: toolgate_oauth::TooManyLogins,
    },

    /// No answer within `tool_timeout_sec`.
    #[error("MCP server `{server}` did not answer {} in time", .asked.request())]
    Timeout { server: String, asked: Asked },
    /// The server answered with an error (or the request could not be sent).
    #[error(
        "MCP server `{server}` {}: {}",
        .asked.failed(),
        tidy(&.source.to_string())
    )]
    Refused {
        server: String,
        asked: Asked,
        #[source]
        source: ServiceError,
    },
    /// The server asked for input the caller's client cannot give.
    #[error(
        "MCP server `{server}` needs input {} that this session cannot give: {source}",
        .asked.input()
    )]
    NeedsInput {
        server: String,
        asked: Asked,
        #[source]
        source: RelayError,
    },
    /// A result of a kind toolgate does not know.
    #[error(
        "MCP server `{server}` answered with a kind of result toolgate does not know {}",
        .asked.result()
    )]
    UnknownResult { server: String, asked: Asked },
    /// More `input_required` rounds than allowed.
    #[error(
        "MCP server `{server}` kept asking for more input {} ({rounds} rounds); the server is misbehaving",
        .asked.input()
    )]
    TooManyRounds {
        server: String,
        asked: Asked,
        rounds: usize,
    },
    /// The server offers no subscriptions.
    #[error(
        "MCP server `{server}` does not offer subscriptions to its resources (no `resources.subscribe`), so `{uri}` cannot be followed; read it again instead"
    )]
    NoSubscriptions { server: String, uri: String },
    /// A 2026-07-28 server's listen stream left `uri` out.
    #[error("MCP server `{server}` did not accept updates of `{uri}`")]
    NotAccepted { server: String, uri: String },
    /// No acknowledgement of `subscriptions/listen` in time.
    #[error("MCP server `{server}` did not acknowledge `subscriptions/listen` in time")]
    ListenTimeout { server: String },
    /// `subscriptions/listen` refused.
    #[error(
        "MCP server `{server}` refused `subscriptions/listen`: {}",
        tidy(&.source.to_string())
    )]
    ListenRefused {
        server: String,
        #[source]
        source: ServiceError,
    },
}

/// Why a mounted server could not answer a client's request ([`ForwardError`]): the
/// text names the server and says what to do.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ServerError(UpstreamError);

impl ForwardError {
    /// The client's error for a request its server could not serve.
    pub(crate) fn upstream(e: UpstreamError) -> Self {
        Self::Server(ServerError(e))
    }
}

/// Why a mounted server's prompt or resource could not be had ([`crate::Gateway::get_prompt`],
/// [`crate::Gateway::read_resource`]); the text is for the client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForwardError {
    /// No mounted server lists a prompt by that name.
    #[error("no mounted MCP server has a prompt named `{name}`")]
    UnknownPrompt {
        /// The name asked for.
        name: String,
    },
    /// No mounted server lists the resource or has a template it fits.
    #[error("no mounted MCP server offers the resource `{uri}`")]
    UnknownResource {
        /// The URI asked for.
        uri: String,
    },
    /// The server that has it is not available, did not answer in time or refused; the
    /// text names the server and says what to do.
    #[error(transparent)]
    Server(ServerError),
    /// A permission rule refuses it: denied, or an `ask` rule nobody can answer over MCP.
    /// The text names the rule and what to do.
    #[error("{0}")]
    Refused(String),
}

/// Why a caller's login in their browser failed (shared by everyone waiting for it).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CallerLoginError {
    /// The browser did not come back within the login's wait (ten minutes).
    #[error("no browser came back in time")]
    NoBrowser,
    /// The browser came back without a code.
    #[error(transparent)]
    NoCode(#[from] NoCode),
    /// Exchanging the code failed.
    #[error(transparent)]
    Failed(Arc<LoginError>),
}

/// `2 s`, `1.5 s`.
pub(crate) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if (s - s.round()).abs() < 0.05 {
        format!("{} s", s.round() as u64)
    } else {
        format!("{s:.1} s")
    }
}

pub(crate) use toolgate_core::with_causes;

/// An rmcp error message without the Rust type names it embeds
/// ("Transport [rmcp::transport::worker::WorkerTransport<…>] error: ").
pub(crate) fn tidy(message: &str) -> String {
    let mut out = message.to_owned();
    while let Some(start) = out.find("Transport [") {
        let Some(len) = out[start..].find("] error: ") else {
            break;
        };
        out.replace_range(start..start + len + "] error: ".len(), "");
    }
    out
}
