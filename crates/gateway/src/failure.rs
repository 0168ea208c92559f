//! Why a mounted server could not be started or reached: failed (the reason says why), or
//! waiting for a human to log in. Starting (`mount.rs`), listing (`list.rs`) and the OAuth
//! client (`toolgate-oauth`, through `auth.rs`) all end this way.

/// Why a start failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Failed; the reason says why.
    Failed(String),
    /// Needs a human to log in.
    NeedsLogin(NeedsLogin),
}

impl Failure {
    pub(crate) fn reason(&self) -> String {
        match self {
            Self::Failed(reason) => reason.clone(),
            Self::NeedsLogin(n) => n.reason.clone(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason())
    }
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Self::Failed(reason)
    }
}

/// A process or transport that could not be set up fails the start with its text.
impl From<crate::connect::ConnectError> for Failure {
    fn from(e: crate::connect::ConnectError) -> Self {
        Self::Failed(e.to_string())
    }
}

/// The OAuth client's failures: a changed authorization server needs a human; the rest
/// are failures, retried.
impl From<toolgate_oauth::ClientError> for Failure {
    fn from(e: toolgate_oauth::ClientError) -> Self {
        if e.needs_login() {
            Self::NeedsLogin(NeedsLogin {
                reason: e.to_string(),
                challenge: None,
            })
        } else {
            Self::Failed(e.to_string())
        }
    }
}

/// Why a server cannot be reached without a human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NeedsLogin {
    /// For `mcp list` and the model: what happened.
    pub(crate) reason: String,
    /// The server's `WWW-Authenticate`, when it sent one.
    pub(crate) challenge: Option<String>,
}
