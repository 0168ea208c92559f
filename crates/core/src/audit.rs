//! The audit hook: what the dispatcher tells an [`AuditSink`] about every call it answers.
//!
//! The dispatcher is the one place every front end's calls pass (`serve` on stdio and HTTP,
//! `toolgate call`, the agent loop, batches, `run_tool` and mounted servers' tools), so it
//! reports each call once, when its result is final (after the budget): who called, what was
//! called, how the permission stage decided and how the call ended. Writing the record
//! somewhere (a JSON line in a rotated file, in `toolgate-runtime`) is the sink's business;
//! the dispatcher owns no I/O.

use std::time::Duration;

use serde_json::Value;

use crate::session::Session;

/// One answered call, as the dispatcher saw it.
#[derive(Debug)]
pub struct AuditRecord<'a> {
    /// The session the call belongs to (its id, client name and identity).
    pub session: &'a Session,
    /// The tool name as the caller wrote it (`run_tool`, a misspelling, `mcp__github__x`).
    pub called: &'a str,
    /// The tool that ran or was refused: the target of a `run_tool` call, else `called`;
    /// `None` when no such tool was found (or `run_tool`'s own arguments were unreadable).
    pub tool: Option<&'a str>,
    /// The parsed arguments (of the target, for `run_tool`); `None` when the call was
    /// refused before they were read (unknown tool, arguments that are not JSON).
    pub args: Option<&'a Value>,
    /// What the permission stage decided.
    pub decision: &'a AuditDecision,
    /// How the call ended.
    pub outcome: AuditOutcome,
    /// From the call's arrival to its final result (waiting for its turn and for an
    /// approval included).
    pub duration: Duration,
    /// The size of what the caller got back.
    pub result: ResultSize,
}

/// The permission stage's decision on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditDecision {
    /// The call never reached the permission stage: unknown tool or unreadable arguments.
    Unchecked,
    /// The policy let it run; `rule` is the `allow` rule that did, if one did.
    Allowed {
        /// The deciding rule as written in config.
        rule: Option<String>,
        /// Which config layer the rule came from.
        source: Option<String>,
    },
    /// A `deny` rule refused it.
    Denied {
        /// The deciding rule as written in config.
        rule: Option<String>,
        /// Which config layer the rule came from.
        source: Option<String>,
    },
    /// An `ask` rule held it for a human's answer.
    Asked {
        /// The deciding rule as written in config.
        rule: Option<String>,
        /// Which config layer the rule came from.
        source: Option<String>,
        /// What came of the question.
        answer: AskAnswer,
    },
}

/// What came of an `ask` rule's question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskAnswer {
    /// The user approved the call.
    Approved,
    /// The user declined it.
    Declined,
    /// Nobody could be asked (an MCP server, a script): the call did not run.
    Nobody,
    /// The call was cancelled while the question was open.
    Cancelled,
}

impl AskAnswer {
    /// The answer's name in an audit line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::Declined => "declined",
            Self::Nobody => "nobody",
            Self::Cancelled => "cancelled",
        }
    }
}

impl AuditDecision {
    /// The decision's name in an audit line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Unchecked => "unchecked",
            Self::Allowed { .. } => "allowed",
            Self::Denied { .. } => "denied",
            Self::Asked { .. } => "asked",
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditOutcome {
    /// The tool ran and returned a result.
    Ok,
    /// The tool ran (or started) and reported a failure.
    ToolError,
    /// The call ran out of time.
    Timeout,
    /// The caller cancelled it (or its session ended).
    Cancelled,
    /// It never ran: unknown tool, bad arguments, denied, declined or nobody to ask.
    Refused,
    /// It never ran: the caller was over a `[rate_limits]` limit.
    RateLimited,
}

impl AuditOutcome {
    /// The outcome's name in an audit line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::Refused => "refused",
            Self::RateLimited => "rate_limited",
        }
    }
}

/// The size of a final result's text, and what the budget did to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResultSize {
    /// Bytes of the text the caller got.
    pub bytes: u64,
    /// Bytes of the text before the budget; `None` when the budget left it alone.
    pub bytes_before_budget: Option<u64>,
    /// Whether the budget saved the whole result to a spill file.
    pub spilled: bool,
}

/// Where the dispatcher reports answered calls.
pub trait AuditSink: Send + Sync {
    /// Records one call. Never fails the call: a sink that cannot write says so itself.
    fn record(&self, record: &AuditRecord<'_>);
}
