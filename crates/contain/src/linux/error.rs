//! Why the namespace could not be started: the reason [`crate::Containment::ProcessGroup`]
//! gives when commands fall back to process groups.

use std::path::PathBuf;

use rustix::io::Errno;

/// Why [`super::start`] failed; its text is the fallback's reason, so it says what failed
/// and, for a refused step, what on the system usually refuses it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// The thread that forks the keeper did not start.
    #[error("cannot start a thread: {source}")]
    Thread {
        #[source]
        source: std::io::Error,
    },
    /// The keeper's thread sent nothing in time.
    #[error("the namespace keeper did not answer")]
    NoAnswer {
        #[source]
        source: std::sync::mpsc::RecvTimeoutError,
    },
    /// A namespace of the new init cannot be opened (to join it later).
    #[error("cannot open the new {kind} namespace: {source}")]
    OpenNamespace {
        /// `pid`, `mnt` or `user`.
        kind: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The new PID namespace's identity cannot be read.
    #[error("cannot read the new PID namespace: {source}")]
    ReadNamespace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another start won the race to record its namespace.
    #[error("containment was started twice")]
    StartedTwice,
    /// The keeper's report pipe.
    #[error("cannot make a pipe: {source}")]
    Pipe {
        #[source]
        source: Errno,
    },
    /// The keeper was not forked.
    #[error("cannot fork: {source}")]
    Fork {
        #[source]
        source: std::io::Error,
    },
    /// `fork` returned a pid no process can have.
    #[error("fork returned no pid")]
    NoPid,
    /// The keeper and the init did not report ready within the start limit.
    #[error("the namespace was not ready within 10 s")]
    NotReady,
    /// Waiting for their reports failed.
    #[error("poll: {source}")]
    Poll {
        #[source]
        source: Errno,
    },
    /// Reading their reports failed.
    #[error("read: {source}")]
    Read {
        #[source]
        source: Errno,
    },
    /// The report pipe closed before the namespace was ready.
    #[error("the namespace keeper exited before the namespace was ready")]
    KeeperExited,
    /// A report that is not the 8 bytes every report has.
    #[error("unexpected report from the namespace keeper ({bytes} bytes)")]
    ShortReport { bytes: usize },
    /// A report with a tag no report has.
    #[error("unexpected report {tag} from the keeper")]
    UnknownReport { tag: u8 },
    /// The namespace reported ready without naming its init.
    #[error("the keeper did not name the init")]
    NoInit,
    /// A step of the keeper or the init failed; `step` says which, and what usually
    /// refuses it.
    #[error("{step}: {source}")]
    Step {
        step: &'static str,
        #[source]
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_refused_step_names_it_and_keeps_the_errno_as_its_source() {
        let source = std::io::Error::from_raw_os_error(libc::EPERM);
        let text = format!("cannot write the user namespace's uid_map: {source}");
        let error = StartError::Step {
            step: super::super::describe_step(super::super::STEP_UID_MAP),
            source,
        };
        assert_eq!(error.to_string(), text);
        let errno = error
            .source()
            .and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            errno.and_then(std::io::Error::raw_os_error),
            Some(libc::EPERM)
        );
    }
}
