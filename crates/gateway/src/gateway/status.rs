//! What `toolgate mcp list` shows of each server: its state, transport, tools and startup.

use std::time::Duration;

use super::Gateway;
use crate::config::Transport;
use crate::mount::Phase;

/// What `toolgate mcp list` shows about one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    /// Config name.
    pub name: String,
    /// Where it was configured.
    pub source: String,
    /// `stdio: npx -y …` or `http: https://…`.
    pub transport: String,
    /// Where it is in its lifecycle.
    pub state: ServerState,
    /// Tools mounted from it.
    pub tools: usize,
    /// How long the last successful start took.
    pub startup: Option<Duration>,
    /// How long a start may take before the server is stopped and marked failed.
    pub startup_timeout: Duration,
    /// Tools left out and why (caps, malformed definitions).
    pub notes: Vec<String>,
    /// For a server defined by a project file: the project files its launch runs, which
    /// its trust fingerprint covers (display names, relative to the project).
    pub files: Vec<String>,
    /// For a remote server: its OAuth login, as kept in the token store (`None` for a
    /// stdio server, or when the store cannot be read).
    pub auth: Option<toolgate_oauth::AuthStatus>,
}

/// A server's lifecycle state, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerState {
    /// `enabled = false`.
    Disabled,
    /// Configured but not started (a command that did not need it).
    NotStarted,
    /// Starting now.
    Starting,
    /// Serving its tools.
    Ready,
    /// Not serving; the reason says why and what to do.
    Failed(String),
    /// A `prefix = "never"` server whose tool or prompt names clash with names toolgate
    /// already has: stopped, offering nothing. The reason names each clash and the fix.
    NameClash(String),
    /// A remote server that needs a human to run `toolgate mcp login NAME`; the reason
    /// says what happened. It starts by itself after the login.
    NeedsLogin(String),
    /// Defined by a project file and not trusted, or changed since it was trusted (its
    /// command, or a file it runs): not started.
    Untrusted {
        /// What is not trusted: "`server.sh` changed since it was trusted", ….
        reason: String,
        /// The command that trusts it.
        command: String,
    },
}

impl Gateway {
    /// Every server's status, in name order.
    pub fn status(&self) -> Vec<ServerStatus> {
        let mounts = self.inner.mounts();
        let remote = mounts
            .iter()
            .any(|m| matches!(m.spec.transport, Transport::Http { .. }));
        let tokens = if remote {
            self.inner.token_store()
        } else {
            None
        };
        mounts
            .iter()
            .map(|m| {
                let tools = m.tools().len();
                let settling = m.is_settling();
                let st = m.state();
                let state = match &st.phase {
                    _ if st.clash.is_some() => {
                        ServerState::NameClash(st.clash.clone().unwrap_or_default())
                    }
                    Phase::Untrusted(reason) => ServerState::Untrusted {
                        reason: reason.clone(),
                        command: crate::trust::trust_command(&m.spec.name),
                    },
                    Phase::Disabled => ServerState::Disabled,
                    Phase::Idle if settling => ServerState::Starting,
                    Phase::Idle => ServerState::NotStarted,
                    Phase::Starting => ServerState::Starting,
                    Phase::Ready => ServerState::Ready,
                    Phase::Failed { reason, .. } => ServerState::Failed(reason.clone()),
                    Phase::NeedsLogin(needs) => ServerState::NeedsLogin(needs.reason.clone()),
                };
                let auth = match (&m.spec.transport, &tokens) {
                    (Transport::Http { url, .. }, Some(store)) => store.status(url).ok(),
                    _ => None,
                };
                ServerStatus {
                    name: m.spec.name.clone(),
                    source: m.spec.source.clone(),
                    transport: match m.spec.oauth.per_user {
                        // Its auth line is toolgate's own login; each caller has theirs.
                        true => format!(
                            "{} (per_user: each caller logs in as themselves)",
                            describe_transport(&m.spec.transport)
                        ),
                        false => describe_transport(&m.spec.transport),
                    },
                    state,
                    tools,
                    startup: st.startup,
                    startup_timeout: m.spec.startup_timeout,
                    notes: st.notes.clone(),
                    files: m
                        .spec
                        .launch
                        .as_ref()
                        .map(|l| l.files.keys().cloned().collect())
                        .unwrap_or_default(),
                    auth,
                }
            })
            .collect()
    }
}

/// `stdio: npx -y …` or `http: https://…`: how a server is reached, for humans.
pub fn describe_transport(transport: &Transport) -> String {
    match transport {
        Transport::Stdio { command, args, .. } => {
            let mut text = format!("stdio: {command}");
            for arg in args {
                text.push(' ');
                text.push_str(arg);
            }
            text
        }
        Transport::Http { url, .. } => format!("http: {url}"),
        Transport::Invalid(_) => "invalid".to_owned(),
    }
}
