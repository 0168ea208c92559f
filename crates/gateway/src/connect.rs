//! Reaching a server: stdio child processes that can never outlive the gateway, and
//! Streamable HTTP endpoints.
//!
//! A stdio server runs in its own process group, so `npx` and whatever it starts are one
//! unit. [`ChildGuard`] kills that group with SIGKILL when dropped — on a panic, an aborted
//! task or a runtime shutdown — and [`ChildGuard::close`] ends it politely first, as the MCP
//! spec describes (close stdin, wait, SIGTERM, wait, SIGKILL). What the server says on
//! stderr, and any stdout line that is not JSON-RPC, is kept for failure messages.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};
use toolgate_contain::{LaunchError, ProcessGroup};

use crate::import::NESTED_ENV;

mod traced;

use traced::Traced;

/// How long a server may take to exit after its stdin closes, before SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);
/// Lines of stderr kept for failure messages.
const STDERR_LINES: usize = 12;
/// Characters kept of one stderr or stray stdout line.
const LINE_CHARS: usize = 300;
/// How deep gateways may start one another (`TOOLGATE_GATEWAY_DEPTH`): a toolgate that is
/// itself the third mounted server down a chain starts no stdio server. A user config that
/// mounts `toolgate serve` would otherwise be read again by every toolgate it starts, each
/// mounting the next, until the machine runs out of processes.
pub(crate) const MAX_GATEWAY_DEPTH: u32 = 3;

/// Why a server's process or transport could not be set up; the text says what to fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// This toolgate is too deep down a chain of gateways mounting one another.
    #[error(
        "not started: this toolgate runs {depth} levels down a chain of gateways mounting \
         one another ({NESTED_ENV}={depth}), the deepest allowed. Usually a config mounts toolgate itself and \
         every toolgate it starts reads that config again: give the mounted toolgate its own \
         config (`env = {{ XDG_CONFIG_HOME = \"...\" }}` on the server, or its `--root` a \
         project without this server)"
    )]
    Nested { depth: u32 },
    /// The sandbox cannot be applied to the command.
    #[error("cannot start `{command}` in its sandbox: {source}")]
    Sandbox {
        command: String,
        #[source]
        source: toolgate_contain::SandboxError,
    },
    /// No such program, or no such working folder.
    #[error(
        "cannot start `{command}`: no such program (or `cwd` {} does not exist); check `command` and PATH",
        .cwd.display()
    )]
    NotFound {
        command: String,
        cwd: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The program did not start.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// The child came without the pipes asked for.
    #[error("cannot start `{command}`: its pipes are missing")]
    NoPipes { command: String },
    /// `bearer_token_env` names an unset variable.
    #[error(
        "`bearer_token_env` names `{var}`, which is not set; export it before starting toolgate"
    )]
    TokenUnset { var: String },
    /// `bearer_token_env`'s value cannot go into a header.
    #[error(
        "`bearer_token_env` names `{var}`, whose value has a control character (a CR or LF, say, from a file read with its line end), which no HTTP header can carry; set it to the token alone"
    )]
    TokenControl { var: String },
    /// A configured header name is not one.
    #[error("header name `{name}` is invalid: {source}")]
    HeaderName {
        name: String,
        #[source]
        source: http::header::InvalidHeaderName,
    },
    /// A configured header value cannot be sent.
    #[error("header `{name}` has an invalid value: {source}")]
    HeaderValue {
        name: String,
        #[source]
        source: http::header::InvalidHeaderValue,
    },
}

/// Whether a gateway `depth` levels down may start stdio servers; `Err` says why not.
pub(crate) fn nesting_refusal(depth: u32) -> Result<(), ConnectError> {
    match depth >= MAX_GATEWAY_DEPTH {
        true => Err(ConnectError::Nested { depth }),
        false => Ok(()),
    }
}

/// What a server revealed about itself besides JSON-RPC: for failure messages.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    inner: Mutex<DiagInner>,
}

#[derive(Debug, Default)]
struct DiagInner {
    stderr: VecDeque<String>,
    garbage_lines: usize,
    garbage_sample: Option<String>,
}

impl Diagnostics {
    fn lock(&self) -> std::sync::MutexGuard<'_, DiagInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stderr_line(&self, line: &str) {
        let mut inner = self.lock();
        if inner.stderr.len() == STDERR_LINES {
            inner.stderr.pop_front();
        }
        inner.stderr.push_back(cut(line.trim_end()));
    }

    fn garbage(&self, sample: &[u8]) {
        let mut inner = self.lock();
        inner.garbage_lines += 1;
        if inner.garbage_sample.is_none() {
            inner.garbage_sample = Some(cut(String::from_utf8_lossy(sample).trim_end()));
        }
    }

    /// A sentence or two to append to a failure: stray stdout, then the end of stderr.
    pub(crate) fn describe(&self) -> String {
        let inner = self.lock();
        let mut out = String::new();
        if let Some(sample) = &inner.garbage_sample {
            out.push_str(&format!(
                "; it printed {} line(s) on stdout that are not JSON-RPC (first: `{sample}`) — an MCP stdio server must write only JSON-RPC to stdout and log to stderr",
                inner.garbage_lines
            ));
        }
        if !inner.stderr.is_empty() {
            let tail: Vec<&str> = inner.stderr.iter().map(String::as_str).collect();
            out.push_str(&format!("; its stderr ends with: {}", tail.join(" | ")));
        }
        out
    }
}

fn cut(text: &str) -> String {
    if text.chars().count() <= LINE_CHARS {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(LINE_CHARS).collect();
        s.push('…');
        s
    }
}

/// A stdio server's process group: killed on drop (the [`ProcessGroup`]'s own drop),
/// closed politely by [`ChildGuard::close`].
#[derive(Debug)]
pub(crate) struct ChildGuard {
    child: Child,
    /// `None` only when the leader was reaped before its pid was read.
    group: Option<ProcessGroup>,
    done: bool,
}

impl ChildGuard {
    /// Ends the process group: waits for the leader to exit on its own (its stdin is
    /// closed), then SIGTERM, then SIGKILL; finally kills anything left in the group.
    /// Returns how the leader ended.
    pub(crate) async fn close(mut self) -> String {
        let status = match self.group.take() {
            Some(group) => group.close(&mut self.child, EXIT_GRACE, TERM_GRACE).await,
            None => self.child.wait().await,
        };
        self.done = true;
        describe_status(status)
    }

    /// Kills the group at once and reaps the leader.
    pub(crate) async fn kill(mut self) -> String {
        let status = match self.group.take() {
            Some(group) => group.kill(&mut self.child).await,
            None => {
                let _ = self.child.start_kill();
                self.child.wait().await
            }
        };
        self.done = true;
        describe_status(status)
    }

    /// The leader's exit, if it has already exited (reaps it).
    pub(crate) async fn exited_within(&mut self, wait: Duration) -> Option<String> {
        match tokio::time::timeout(wait, self.child.wait()).await {
            Ok(status) => Some(describe_status(status)),
            Err(_) => None,
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if !self.done {
            // Synchronous and runtime-free: works during a panic or a runtime shutdown.
            // tokio reaps the killed leader (kill_on_drop puts it on its orphan queue).
            drop(self.group.take());
            let _ = self.child.start_kill();
        }
    }
}

fn describe_status(status: std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            match (s.code(), s.signal()) {
                (Some(code), _) => format!("exit status {code}"),
                (None, Some(sig)) => format!("killed by signal {sig}"),
                _ => s.to_string(),
            }
        }
        Err(e) => format!("unknown exit ({e})"),
    }
}

/// A started stdio server: its pipes for the rmcp transport, and its guard.
pub(crate) struct Spawned {
    pub(crate) stdout: Tap<ChildStdout>,
    pub(crate) stdin: ChildStdin,
    pub(crate) guard: ChildGuard,
}

/// Starts `command` contained like a `run_shell` command (its own process group, inside
/// toolgate's PID namespace, under a supervisor) and in `sandbox`, with piped stdio. Its
/// stderr is drained into `diag` (and the debug log) for as long as it runs.
pub(crate) fn spawn_stdio(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &std::path::Path,
    sandbox: &toolgate_contain::Sandbox,
    diag: &Arc<Diagnostics>,
) -> Result<Spawned, ConnectError> {
    let depth = std::env::var(NESTED_ENV)
        .ok()
        .and_then(|d| d.parse::<u32>().ok())
        .unwrap_or(0);
    nesting_refusal(depth)?;
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(env)
        .env(NESTED_ENV, (depth + 1).to_string())
        .current_dir(cwd)
        .stdin(Stdio::piped());
    let (mut child, group) = toolgate_contain::spawn(&mut cmd, sandbox).map_err(|e| {
        let command = command.to_owned();
        match e {
            LaunchError::Sandbox(source) => ConnectError::Sandbox { command, source },
            LaunchError::Start(source) if source.kind() == std::io::ErrorKind::NotFound => {
                let cwd = cwd.to_path_buf();
                ConnectError::NotFound {
                    command,
                    cwd,
                    source,
                }
            }
            LaunchError::Start(source) => ConnectError::Spawn { command, source },
        }
    })?;
    let (Some(stdin), Some(stdout), stderr) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ConnectError::NoPipes {
            command: command.to_owned(),
        });
    };
    if let Some(stderr) = stderr {
        let diag = Arc::clone(diag);
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %server, "stderr: {line}");
                diag.stderr_line(&line);
            }
        });
    }
    Ok(Spawned {
        stdout: Tap::new(stdout, Arc::clone(diag))
            .ending_with(group.as_ref().map(ProcessGroup::id)),
        stdin,
        guard: ChildGuard {
            child,
            group,
            done: false,
        },
    })
}

/// Registers `fd` with the reactor, for readiness only.
#[allow(unsafe_code)]
fn watch_fd(fd: std::os::fd::OwnedFd) -> Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    // SAFETY: an `OwnedFd` stays open and refers to the same file description until it is
    // dropped, which only happens when the `AsyncFd` holding it is dropped.
    unsafe { tokio::io::unix::AsyncFd::register(fd) }.ok()
}

/// Reads a server's stdout unchanged, noting every line that does not start like a
/// JSON-RPC message (rmcp skips such lines silently; a failure message should not).
pub(crate) struct Tap<R> {
    inner: R,
    diag: Arc<Diagnostics>,
    state: LineState,
    sample: Vec<u8>,
    /// Readable once the server process has exited (a pidfd): then the stream ends as soon
    /// as nothing is left to read, even when a child of the server still holds the pipe.
    exited: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LineState {
    /// At the start of a line, or only whitespace so far.
    Start,
    /// The line looks like JSON; skip to its end.
    Json,
    /// The line is not JSON; collect a sample until its end.
    Garbage,
}

impl<R> Tap<R> {
    fn new(inner: R, diag: Arc<Diagnostics>) -> Self {
        Self {
            inner,
            diag,
            state: LineState::Start,
            sample: Vec::new(),
            exited: None,
        }
    }

    /// Ends the stream when process `pid` exits, whatever else holds the pipe. Without a
    /// pidfd (Linux < 5.3) the stream ends at the pipe's end, as before.
    fn ending_with(mut self, pid: Option<i32>) -> Self {
        let pidfd = pid
            .and_then(rustix::process::Pid::from_raw)
            .and_then(|pid| {
                rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).ok()
            });
        self.exited = pidfd.and_then(watch_fd);
        self
    }

    fn scan(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match (self.state, b) {
                (_, b'\n') => {
                    if self.state == LineState::Garbage {
                        self.diag.garbage(&self.sample);
                        self.sample.clear();
                    }
                    self.state = LineState::Start;
                }
                (LineState::Start, b' ' | b'\t' | b'\r') => {}
                (LineState::Start, b'{' | b'[') => self.state = LineState::Json,
                (LineState::Start, other) => {
                    self.state = LineState::Garbage;
                    self.sample.push(other);
                }
                (LineState::Garbage, other) => {
                    if self.sample.len() < LINE_CHARS * 4 {
                        self.sample.push(other);
                    }
                }
                (LineState::Json, _) => {}
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Tap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &poll {
            let fresh = buf.filled()[before..].to_vec();
            self.scan(&fresh);
        }
        if poll.is_pending()
            && let Some(exited) = &self.exited
            && exited.poll_read_ready(cx).is_ready()
        {
            // The server is gone and has nothing more to say: end of stream, so the crash
            // is seen now, not when a lingering child of the server closes the pipe.
            return Poll::Ready(Ok(()));
        }
        poll
    }
}

/// Installs rustls' process-wide crypto provider (ring) once; reqwest's TLS needs one
/// before any client is built, `http://` included.
pub(crate) fn tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another part of the process installed one first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A Streamable HTTP transport for `url` with the configured headers and bearer token.
pub(crate) fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
    bearer_token_env: Option<&str>,
) -> Result<StreamableHttpClientTransport<Traced<reqwest::Client>>, ConnectError> {
    tls_provider();
    http_transport_with(reqwest::Client::default(), url, headers, bearer_token_env)
}

/// A Streamable HTTP transport for `url` over `client` (plain reqwest, or rmcp's
/// `AuthClient` for a server that needs OAuth).
pub(crate) fn http_transport_with<C>(
    client: C,
    url: &str,
    headers: &BTreeMap<String, String>,
    bearer_token_env: Option<&str>,
) -> Result<StreamableHttpClientTransport<Traced<C>>, ConnectError>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient + Sync,
{
    tls_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(var) = bearer_token_env {
        let token = std::env::var(var).unwrap_or_default();
        config = config.auth_header(bearer_token(var, token)?);
    }
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = http::HeaderName::from_bytes(name.as_bytes()).map_err(|source| {
            ConnectError::HeaderName {
                name: name.clone(),
                source,
            }
        })?;
        let value =
            http::HeaderValue::from_str(value).map_err(|source| ConnectError::HeaderValue {
                name: name.clone(),
                source,
            })?;
        custom.insert(header, value);
    }
    config = config.custom_headers(custom);
    Ok(StreamableHttpClientTransport::with_client(
        Traced(client),
        config,
    ))
}

/// The token `bearer_token_env` names, if it can go into an `Authorization` header.
fn bearer_token(var: &str, token: String) -> Result<String, ConnectError> {
    let var = var.to_owned();
    if token.is_empty() {
        return Err(ConnectError::TokenUnset { var });
    }
    if token.chars().any(char::is_control) {
        return Err(ConnectError::TokenControl { var });
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_token_with_cr_or_lf_is_refused_naming_its_variable() {
        assert_eq!(bearer_token("T", "abc".into()).unwrap(), "abc");
        for bad in ["abc\r\n", "abc\nX-Injected: 1", "a\u{0}b"] {
            let err = bearer_token("T", bad.into()).unwrap_err().to_string();
            assert!(
                err.contains("`T`") && err.contains("control character"),
                "{err}"
            );
        }
        assert!(
            bearer_token("T", String::new())
                .unwrap_err()
                .to_string()
                .contains("not set")
        );
    }

    #[test]
    fn gateways_stop_starting_servers_three_levels_down() {
        assert!(nesting_refusal(0).is_ok());
        assert!(nesting_refusal(MAX_GATEWAY_DEPTH - 1).is_ok());
        let refusal = nesting_refusal(MAX_GATEWAY_DEPTH).unwrap_err().to_string();
        assert!(refusal.contains("TOOLGATE_GATEWAY_DEPTH=3"), "{refusal}");
        assert!(nesting_refusal(u32::MAX).is_err());
    }

    #[test]
    fn tap_notes_lines_that_are_not_json() {
        let diag = Arc::new(Diagnostics::default());
        let mut tap = Tap::new((), Arc::clone(&diag));
        tap.scan(b"{\"jsonrpc\":\"2.0\"}\nhello garbage\n  [1]\n");
        tap.scan(b"partial ");
        tap.scan(b"line\n");
        assert_eq!(diag.lock().garbage_lines, 2);
        assert!(diag.describe().contains("first: `hello garbage`"));
    }

    #[test]
    fn stderr_tail_is_bounded() {
        let diag = Diagnostics::default();
        for i in 0..50 {
            diag.stderr_line(&format!("line {i}"));
        }
        let text = diag.describe();
        assert!(text.contains("line 49") && !text.contains("line 37 "));
    }
}
