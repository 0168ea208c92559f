//! Who answers `ask` rules in `toolgate run` and `toolgate chat`: the user, on the terminal.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use toolgate_core::{ApprovalRequest, Approver};

use super::terminal::{Input, Terminal};

/// Answers `ask` rules on the terminal: yes, no, or always (this tool, this session).
pub(super) struct TtyApprover {
    terminal: Terminal,
    input: Input,
    always: Arc<Mutex<BTreeSet<String>>>,
    /// One question at a time, however many calls of a turn ask.
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
}

impl TtyApprover {
    pub(super) fn new(terminal: Terminal, input: Input) -> Self {
        Self {
            terminal,
            input,
            always: Arc::default(),
            one_at_a_time: Arc::default(),
        }
    }
}

impl Approver for TtyApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, bool> {
        let terminal = self.terminal.clone();
        let input = self.input.clone();
        let always = Arc::clone(&self.always);
        let gate = Arc::clone(&self.one_at_a_time);
        Box::pin(async move {
            let _turn = gate.lock().await;
            if always
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&request.tool)
            {
                return true;
            }
            let _paused = terminal.pause();
            let args = request.args.to_string();
            let args: String = args.chars().take(300).collect();
            eprint!(
                "  ? allow {} {args} ({}, by the rule {})? [y]es / [n]o / [a]lways this session: ",
                request.tool, request.action, request.rule
            );
            let _ = std::io::stderr().flush();
            // End of input answers no.
            let answer = input.line().await.unwrap_or_default();
            match answer.trim().to_lowercase().as_str() {
                "y" | "yes" => true,
                "a" | "always" => {
                    always
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(request.tool.clone());
                    true
                }
                _ => false,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            tool: "run_shell".to_owned(),
            action: "shell.run".to_owned(),
            rule: "ask = [\"run_shell\"]".to_owned(),
            args: json!({"command": "true"}),
        }
    }

    #[tokio::test]
    async fn a_question_dropped_unanswered_takes_no_line_and_gives_back_the_spinner() {
        let terminal = Terminal::new(false);
        let (typed, lines) = tokio::sync::mpsc::channel(4);
        let input = Input::from(lines);
        let approver = TtyApprover::new(terminal.clone(), input.clone());
        let mut question = approver.approve(request());
        assert!(
            futures::poll!(&mut question).is_pending(),
            "it waits for a line"
        );
        assert!(terminal.lock().paused, "no spinner over the question");
        // Ctrl-C: the dispatcher drops the question.
        drop(question);
        assert!(!terminal.lock().paused, "the spinner may draw again");
        typed.send("next task\n".to_owned()).await.unwrap();
        assert_eq!(input.line().await.as_deref(), Some("next task\n"));
    }

    #[tokio::test]
    async fn always_approves_the_tool_for_the_rest_of_the_session_and_end_of_input_is_no() {
        let (typed, lines) = tokio::sync::mpsc::channel(4);
        let approver = TtyApprover::new(Terminal::new(false), Input::from(lines));
        typed.send("n\n".to_owned()).await.unwrap();
        assert!(!approver.approve(request()).await);
        typed.send("always\n".to_owned()).await.unwrap();
        assert!(approver.approve(request()).await);
        assert!(
            approver.approve(request()).await,
            "not asked: no line needed"
        );
        let other = ApprovalRequest {
            tool: "write_file".to_owned(),
            ..request()
        };
        drop(typed);
        assert!(!approver.approve(other).await, "end of input answers no");
    }
}
