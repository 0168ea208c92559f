//! Why a shell tool call failed. Every message says what to do next (STYLE "Errors").

use toolgate_core::ToolError;

/// A failure of `run_shell`, `job_output` or `job_kill`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShellError {
    /// The shell could not be started.
    #[error("could not start `{shell}`: {source}; {hint}")]
    Spawn {
        /// `bash` or `sh`.
        shell: String,
        /// What the OS said.
        source: std::io::Error,
        /// What to do about it.
        hint: &'static str,
    },
    /// `cwd` is not a folder inside the roots.
    #[error("cwd: {0}; give a folder inside the project, or omit cwd to run in the project root")]
    Cwd(#[source] toolgate_fs::PathError),
    /// The session already runs the most background jobs it may.
    #[error(
        "{limit} background jobs are already running (the limit); stop one with job_kill or wait for one to finish. Running: {running}"
    )]
    TooManyJobs {
        /// The limit.
        limit: usize,
        /// The running jobs, one `id (command)` each.
        running: String,
    },
    /// No job of that id in this session.
    #[error("no job `{id}` in this session; {known}")]
    UnknownJob {
        /// The id asked for.
        id: String,
        /// The known jobs, or a note that there are none.
        known: String,
    },
    /// `offset` lies beyond what the stream holds.
    #[error(
        "offset {offset} is past the end of {job}'s {stream}, which has {len} bytes{so_far}; use an offset from 0 to {len}"
    )]
    OffsetPastEnd {
        /// Job id.
        job: String,
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The offset asked for.
        offset: u64,
        /// Bytes in the stream.
        len: u64,
        /// " so far" while the job runs.
        so_far: &'static str,
    },
    /// The job's output file could not be read.
    #[error("could not read {job}'s {stream} from `{path}`: {source}")]
    Read {
        /// Job id.
        job: String,
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// An argument out of range.
    #[error("field `{field}`: {message}")]
    Argument {
        /// The argument.
        field: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The configured sandbox cannot be set up on this system (a config matter, not the
    /// model's).
    #[error("{0}")]
    Sandbox(#[source] toolgate_contain::SandboxError),
    /// A background job's output file cannot be created.
    #[error("could not open an output file for the job: {0}")]
    OutputFile(#[source] std::io::Error),
    /// The job's output file was evicted from the spill store; the store's text says to
    /// rerun the command.
    #[error("{message}")]
    Evicted {
        /// The spill store's explanation.
        message: String,
        /// The failed open or read of the file that is gone.
        #[source]
        source: std::io::Error,
    },
}

impl From<ShellError> for ToolError {
    fn from(e: ShellError) -> Self {
        match e {
            ShellError::Argument { .. } => ToolError::InvalidArguments(e.to_string()),
            ShellError::Sandbox(e) => ToolError::Fatal(e.to_string()),
            other => ToolError::recoverable(other.to_string()),
        }
    }
}
