//! The audit bookkeeping of dispatch: what each call reports to the [`AuditSink`] (its
//! decision, outcome, arguments and result size before and after the budget), including a
//! call whose future is dropped before it is answered.
//!
//! [`AuditSink`]: crate::audit::AuditSink

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use super::Dispatcher;
use crate::audit::{AuditDecision, AuditOutcome, AuditRecord, ResultSize};
use crate::output::{SpillKind, ToolOutput};
use crate::session::Session;

impl Dispatcher {
    /// Tells the audit sink, if there is one, how a call went.
    pub(super) fn report(
        &self,
        session: &Session,
        called: &str,
        tool: Option<&str>,
        ran: &Ran,
        duration: Duration,
        before: BeforeBudget,
    ) {
        let Some(sink) = &self.audit else { return };
        sink.record(&AuditRecord {
            session,
            called,
            tool,
            args: ran.args.as_ref(),
            decision: &ran.decision,
            outcome: ran.outcome,
            duration,
            result: before.compared_with(&ran.output),
        });
    }
}

/// A call's result with what the audit reports of it.
pub(super) struct Ran {
    pub(super) output: ToolOutput,
    pub(super) decision: AuditDecision,
    pub(super) outcome: AuditOutcome,
    /// The parsed arguments, kept only for an audit sink.
    pub(super) args: Option<Value>,
}

impl Ran {
    /// A call refused at the entrance (unknown tool, unreadable arguments).
    pub(super) fn refused(output: ToolOutput) -> Self {
        Self {
            output,
            decision: AuditDecision::Unchecked,
            outcome: AuditOutcome::Refused,
            args: None,
        }
    }
}

/// What is settled of a running call: its tool, arguments and decision.
pub(super) type Known = Mutex<Option<(String, Option<Value>, AuditDecision)>>;

/// A single call on its way: dropped unanswered (the server stopping, a transport gone, a
/// caller that gave up without cancelling), it is still reported, as cancelled.
pub(super) struct Unanswered<'a> {
    pub(super) dispatcher: &'a Dispatcher,
    pub(super) session: Arc<Session>,
    pub(super) called: &'a str,
    pub(super) started: tokio::time::Instant,
    pub(super) known: Known,
    pub(super) answered: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.answered || self.dispatcher.audit.is_none() {
            return;
        }
        let known = self
            .known
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let (tool, args, decision) = match known {
            Some((tool, args, decision)) => (Some(tool), args, decision),
            None => (None, None, AuditDecision::Unchecked),
        };
        let ran = Ran {
            output: ToolOutput::default(),
            decision,
            outcome: AuditOutcome::Cancelled,
            args,
        };
        let before = BeforeBudget::of(&ran.output);
        self.dispatcher.report(
            &self.session,
            self.called,
            tool.as_deref(),
            &ran,
            self.started.elapsed(),
            before,
        );
    }
}

/// A result's size and spill files before the budget, to tell what the budget did.
#[derive(Clone, Copy)]
pub(super) struct BeforeBudget {
    bytes: usize,
    spills: usize,
}

impl BeforeBudget {
    pub(super) fn of(output: &ToolOutput) -> Self {
        Self {
            bytes: output.text.len(),
            spills: output.spills.len(),
        }
    }

    /// The final result's size, and the size before when the budget changed it.
    fn compared_with(self, output: &ToolOutput) -> ResultSize {
        let spilled = output
            .spills
            .iter()
            .skip(self.spills)
            .any(|s| s.kind == SpillKind::Spilled && s.stream.is_none());
        let changed = spilled || output.text.len() != self.bytes;
        ResultSize {
            bytes: output.text.len() as u64,
            bytes_before_budget: changed.then_some(self.bytes as u64),
            spilled,
        }
    }
}
