//! Who answers `ask` rules: the [`Approver`] a session may hold and the [`ApprovalRequest`] it
//! is shown. Kept apart from the rules (`permission.rs`) so that the session, which holds an
//! approver, and the rules, which read the session's caller, do not depend on each other.

use futures::future::BoxFuture;

/// A call an `ask` rule holds until a human answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The tool (the target, for a call through `run_tool`).
    pub tool: String,
    /// Its permission action (`fs.write`).
    pub action: String,
    /// The rule that asks, as written in config.
    pub rule: String,
    /// The call's arguments.
    pub args: serde_json::Value,
}

/// Someone who can answer `ask` rules (the agent CLI's user on a terminal). Remembering
/// "always, for this session" is the approver's business.
pub trait Approver: Send + Sync {
    /// Whether the call may run.
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, bool>;
}
