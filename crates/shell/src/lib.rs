//! toolgate's shell tools: `run_shell`, `job_output`, `job_kill` (see docs/tools.md).
//!
//! - A command runs under `bash -c` (`sh -c` without bash), stdin closed, in its own process
//!   group, with `PR_SET_PDEATHSIG` so the shell dies with toolgate. On timeout,
//!   cancellation, `job_kill` or the end of the session the *whole group* gets SIGTERM and,
//!   after a short grace, SIGKILL; whatever the command leaves running when it exits is
//!   stopped too. Nothing of the group survives ([`ShellLimits::kill_grace_ms`]), and what
//!   left the group (`setsid`) is killed by the command's supervisor (`toolgate-contain`).
//! - Memory stays bounded whatever the command prints: each stream is pumped by its own
//!   thread into a spill file as it arrives, and only its first and last
//!   [`ShellLimits::payload_bytes`]` / 2` bytes stay in memory for the excerpt.
//! - **stdout and stderr stay apart**: each has its own file, holding exactly the bytes the
//!   command wrote to it. A `run_shell` result shows them in two sections, each whole when
//!   short; else as the compressed log of the *whole* stream when it is a log (a failure
//!   with warning or error lines, or a test run, build or install of a known tool), else as
//!   a short excerpt (head-biased on success, tail-biased on failure), ANSI escapes and
//!   `\r` progress frames removed, with a pointer to its file for `read_file`. A job's
//!   streams are paged by byte offset with `job_output` (`stream: "stderr"` for the second).
//!   Commands that need both in one order write `2>&1`.
//! - Background jobs live in the session's [`JobTable`]: at most
//!   [`ShellLimits::max_jobs`] running, finished ones readable until the session ends.
//!
//! # Example: one command, both streams, its exit code
//!
//! ```
//! use std::sync::Arc;
//!
//! use toolgate_budget::{Budget, BudgetLimits, SpillStore};
//! use toolgate_core::CallContext;
//! use toolgate_fs::Roots;
//! use toolgate_shell::{ShellLimits, builtin_shell_tools};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let project = tempfile::tempdir()?;
//! let roots = Arc::new(Roots::new([project.path()])?);
//! let store = Arc::new(SpillStore::new(project.path().join(".toolgate/spill"), 1 << 30));
//! let budget = Arc::new(Budget::new(BudgetLimits::default(), store, project.path().to_owned()));
//! let tools = builtin_shell_tools(roots, budget, ShellLimits::default());
//! let run_shell = tools.iter().find(|t| t.spec().name == "run_shell").expect("run_shell");
//!
//! let args = serde_json::json!({"command": "echo built; echo 'no such target' >&2; exit 2"});
//! let out = run_shell.call(args, CallContext::unattended()).await?;
//! assert!(out.is_error, "a failed command is an error result the model can read");
//! assert_eq!(out.field("exit_code"), Some(serde_json::json!(2)));
//! assert!(out.text.contains("built") && out.text.contains("no such target"), "{}", out.text);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod capture;
mod clean;
mod error;
mod job_tools;
mod jobs;
mod limits;
mod process;
mod render;
mod run;
mod shared;
mod tools;
mod view;

pub use error::ShellError;
pub use job_tools::{
    JobKillArgs, JobKillOutput, JobKillTool, JobOutputArgs, JobOutputOutput, JobOutputTool,
    StreamName,
};
pub use jobs::JobTable;
pub use limits::ShellLimits;
pub use render::JobStatus;
pub use toolgate_contain::{Sandbox, SandboxMode, landlock_abi};
pub use tools::{
    RunShellArgs, RunShellOutput, RunShellTool, Shown, StreamInfo, builtin_shell_tools,
    builtin_shell_tools_in,
};
