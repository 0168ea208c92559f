//! The shell family's budgets: time, memory, and what reaches the model.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Limits of `run_shell`, `job_output` and `job_kill` (config section `[shell]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ShellLimits {
    /// Timeout of foreground commands that name no `timeout_ms`, in ms.
    ///
    /// Default 120,000 (two minutes).
    pub default_timeout_ms: u64,
    /// Timeout of background jobs that name no `timeout_ms`, in ms.
    ///
    /// Default 600,000: a job is started so it may outlive one call, so it gets the maximum.
    pub background_timeout_ms: u64,
    /// Larger `timeout_ms` values are lowered to this.
    ///
    /// Default 600,000 (ten minutes).
    pub max_timeout_ms: u64,
    /// Between SIGTERM and SIGKILL to the process group, in ms.
    ///
    /// Default 1,000: short enough that a cancelled call finishes inside the dispatcher's 2 s
    /// grace.
    pub kill_grace_ms: u64,
    /// Bytes of each stream held in memory (first and last halves); the rest is only on disk.
    ///
    /// Default 65,536 (64 KiB payload, stdout and stderr each).
    pub payload_bytes: usize,
    /// A stream up to this many characters is shown whole; a longer one as its compressed log
    /// (a failure, a test run, a build; within `[budget] log_chars`) or a `[budget]
    /// excerpt_chars` excerpt, plus the path of its full file. The old name `excerpt_chars` is
    /// still accepted.
    ///
    /// Default 16,000: both streams together stay under the 50,000-character result budget
    /// (`[budget] per_result_chars`).
    #[serde(alias = "excerpt_chars")]
    pub inline_chars: usize,
    /// A stream writing more than this stops the command.
    ///
    /// It would otherwise fill the disk. Default 4 GiB.
    pub max_stream_bytes: u64,
    /// Background jobs running at once per session.
    ///
    /// Default 64.
    pub max_jobs: usize,
    /// Finished jobs remembered per session for `job_output`; the oldest are forgotten first.
    pub max_finished_jobs: usize,
    /// `job_output` page without a `limit`.
    pub page_bytes: usize,
    /// Largest `job_output` `limit`.
    ///
    /// Default 49,152: a page plus its footer stays under the 50,000-character result budget
    /// that clients such as Claude Code enforce.
    pub max_page_bytes: usize,
    /// `"auto"` | `"namespace"` | `"process-group"`: how started commands and mounted servers
    /// are kept from outliving toolgate (see tools.md).
    ///
    /// `auto`: a PID namespace that dies with toolgate where the system allows one, else
    /// process groups.
    pub containment: toolgate_contain::Setting,
    /// `"off"` | `"read-only"` | `"workspace-write"`: Landlock + seccomp for commands (see
    /// security.md); a project may only tighten it.
    ///
    /// `read-only`: no write, no metadata change; `workspace-write`: writes and metadata
    /// changes only inside the roots, temp folders and `sandbox_writable`. See
    /// `toolgate_contain::Sandbox`.
    pub sandbox: crate::SandboxMode,
    /// false: commands can open no socket (only unix socketpairs).
    ///
    /// seccomp refuses every socket family, unix included, and allows only connected unix
    /// socket pairs.
    pub sandbox_network: bool,
    /// More folders `workspace-write` may write (commands, and servers under `[mcp] sandbox`),
    /// e.g. `["~/.cargo", "~/.npm"]`.
    pub sandbox_writable: Vec<std::path::PathBuf>,
    /// Folders and files commands cannot read under any `sandbox` mode but `off` (servers
    /// under `[mcp] sandbox` neither), e.g. `["~/.ssh", "~/.aws"]`; toolgate's own stores
    /// (its config folder with the OAuth tokens and the trust store) are hidden anyway.
    ///
    /// Each shows empty (an empty read-only mount over it). Default empty.
    pub sandbox_hide: Vec<std::path::PathBuf>,
    /// Variables of toolgate's environment commands get although toolgate keeps them back
    /// (its token, the provider keys, OAuth client secrets: see tools.md), e.g.
    /// `["OPENAI_API_KEY"]`.
    ///
    /// Default empty: commands get toolgate's environment without its own secrets.
    pub env_pass: Vec<String>,
}

impl Default for ShellLimits {
    fn default() -> Self {
        Self {
            default_timeout_ms: 120_000,
            background_timeout_ms: 600_000,
            max_timeout_ms: 600_000,
            kill_grace_ms: 1_000,
            payload_bytes: 64 * 1024,
            inline_chars: 16_000,
            max_stream_bytes: 4 << 30,
            max_jobs: 64,
            max_finished_jobs: 1_024,
            page_bytes: 32 * 1024,
            max_page_bytes: 48 * 1024,
            containment: toolgate_contain::Setting::Auto,
            sandbox: crate::SandboxMode::Off,
            sandbox_network: true,
            sandbox_writable: Vec::new(),
            sandbox_hide: Vec::new(),
            env_pass: Vec::new(),
        }
    }
}

impl ShellLimits {
    /// The longest a foreground `run_shell` call can take: the maximum timeout, the kill
    /// grace, and a margin for reaping and reading the last output. The dispatcher's own
    /// deadline for the tool should sit at or above this so the tool's timeout fires first
    /// and the model sees the output gathered so far.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let limits = toolgate_shell::ShellLimits::default();
    /// // The 600 s longest timeout, 1 s between SIGTERM and SIGKILL, and 5 s to finish up.
    /// assert_eq!(limits.call_deadline(), Duration::from_secs(606));
    /// ```
    pub fn call_deadline(&self) -> Duration {
        Duration::from_millis(self.max_timeout_ms + self.kill_grace_ms) + Duration::from_secs(5)
    }

    /// The sandbox of commands run in `roots`: `sandbox`, `sandbox_network`,
    /// `sandbox_writable`, `sandbox_hide` and `env_pass`. The caller adds toolgate's own
    /// secrets ([`crate::Sandbox::withholding`], [`crate::Sandbox::hiding`]).
    pub fn sandbox(&self, roots: &[std::path::PathBuf]) -> crate::Sandbox {
        crate::Sandbox::new(
            self.sandbox,
            self.sandbox_network,
            roots,
            &self.sandbox_writable,
        )
        .hiding(self.sandbox_hide.iter().cloned())
        .passing(self.env_pass.iter().cloned())
    }

    pub(crate) fn kill_grace(&self) -> Duration {
        Duration::from_millis(self.kill_grace_ms)
    }
}
