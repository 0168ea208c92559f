//! Context compaction near the model's window: the newest messages stay word for word,
//! older ones become a summary, and spill files referenced only by the summarized messages
//! may then be deleted.

use std::path::Path;

use tokio_util::sync::CancellationToken;
use toolgate_providers::{Message, Provider, Request};

/// Marks where the summary starts in the compacted head message.
const MARKER: &str = "\n\n[Earlier in this session (compacted to save context):]\n";

/// What every spill pointer says before its path (`toolgate_budget`'s pointers).
const POINTER: &str = "saved to `";

/// Characters of the older conversation sent to the model for summarizing.
const SUMMARY_INPUT_CHARS: usize = 60_000;

/// Characters kept of each piece in an extracted summary (when the model cannot write one).
const EXTRACT_PIECE_CHARS: usize = 300;

const SUMMARY_PROMPT: &str = "You compact a coding agent's conversation so it can go on within its context window. Summarize the conversation you are given: the user's goal, what was found (file names, facts, numbers), what was changed, what failed and why, and what is left to do. Keep every file path and every `saved to` pointer that may still matter, verbatim. Answer with the summary only, at most 400 words.";

/// Where the kept tail starts: the earliest assistant message (so tool calls and their
/// results stay together, and the tail follows the new head's user message) whose tail
/// fits in `keep_chars`; at least the last assistant message is kept. `None` when there is
/// nothing worth summarizing.
pub(crate) fn cut_point(messages: &[Message], keep_chars: usize) -> Option<usize> {
    let mut suffix = 0;
    let mut best = None;
    for i in (2..messages.len()).rev() {
        suffix += messages[i].chars();
        if matches!(messages[i], Message::Assistant { .. }) {
            if best.is_none() || suffix <= keep_chars {
                best = Some(i);
            }
            if suffix > keep_chars {
                break;
            }
        }
    }
    best
}

/// The first message after compaction: the original task and the summary.
pub(crate) fn head_message(messages: &[Message], summary: &str) -> Message {
    let task = match messages.first() {
        Some(Message::User { content }) => {
            content.split(MARKER).next().unwrap_or_default().to_owned()
        }
        _ => String::new(),
    };
    Message::user(format!("{task}{MARKER}{summary}"))
}

/// Whether any of `texts` names the spill file `path` (its file name is unique).
pub(crate) fn referenced(path: &Path, texts: &[&str]) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return true;
    };
    texts.iter().any(|t| t.contains(name))
}

/// A summary of `older`, written by the model; extracted from the messages when the
/// model cannot be asked.
pub(crate) async fn summarize(
    provider: &Provider,
    older: &[Message],
    cancel: &CancellationToken,
) -> String {
    let rendered = render(older, 2_000);
    let rendered = clip(&rendered, SUMMARY_INPUT_CHARS);
    let messages = [Message::user(rendered)];
    let request = Request {
        system: SUMMARY_PROMPT,
        tools: &[],
        stable_tools: 0,
        messages: &messages,
    };
    match provider.complete(&request, &mut |_| {}, cancel).await {
        Ok(response) if !response.text.trim().is_empty() => response.text.trim().to_owned(),
        Ok(_) => extract(older),
        Err(e) => {
            tracing::warn!(%e, "the model could not summarize; using an extract");
            extract(older)
        }
    }
}

/// An extract of the older conversation: each piece cut short, every spill pointer kept
/// (see [`clip`]).
fn extract(older: &[Message]) -> String {
    clip(&render(older, EXTRACT_PIECE_CHARS), 8_000)
}

fn render(messages: &[Message], piece: usize) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            Message::User { content } => {
                out.push_str(&format!("USER: {}\n", clip(content, piece)));
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    out.push_str(&format!("ASSISTANT: {}\n", clip(content, piece)));
                }
                for call in tool_calls {
                    out.push_str(&format!(
                        "ASSISTANT called {} {}\n",
                        call.name,
                        clip(&call.arguments, 200)
                    ));
                }
            }
            Message::Tool { results } => {
                for r in results {
                    let status = if r.is_error { " (error)" } else { "" };
                    out.push_str(&format!(
                        "RESULT of {}{status}: {}\n",
                        r.name,
                        clip(&r.content, piece)
                    ));
                }
            }
        }
    }
    out
}

/// `text` cut to `max` characters; the lines with a spill pointer are kept even when cut
/// (a summary must be able to keep them).
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    let mut out = format!("{head} […]");
    for line in text.lines().filter(|l| l.contains(POINTER)) {
        if !head.contains(line) {
            out.push('\n');
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use toolgate_providers::{ToolCall, ToolResult};

    use super::*;

    fn exchange(n: usize, size: usize) -> Vec<Message> {
        vec![
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: format!("c{n}"),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
            },
            Message::Tool {
                results: vec![ToolResult {
                    call_id: format!("c{n}"),
                    name: "read_file".into(),
                    content: "x".repeat(size),
                    is_error: false,
                }],
            },
        ]
    }

    #[test]
    fn the_cut_keeps_calls_with_their_results_and_what_fits() {
        let mut messages = vec![Message::user("task")];
        for n in 0..5 {
            messages.extend(exchange(n, 1000));
        }
        // Each exchange is 1002 characters: two fit in 2500.
        let cut = cut_point(&messages, 2500).unwrap();
        assert_eq!(cut, 7);
        assert!(matches!(messages[cut], Message::Assistant { .. }));
        // Nothing fits: the last exchange is kept anyway.
        assert_eq!(cut_point(&messages, 10), Some(9));
        // Too short to summarize.
        assert_eq!(cut_point(&messages[..3], 10), None);
    }

    #[test]
    fn the_head_keeps_the_task_once_across_compactions() {
        let first = head_message(&[Message::user("fix the bug")], "one");
        let second = head_message(&[first], "two");
        let Message::User { content } = second else {
            panic!()
        };
        assert!(content.starts_with("fix the bug"));
        assert!(content.ends_with("two"));
        assert!(!content.contains("one"));
    }

    #[test]
    fn references_are_found_by_file_name() {
        let p = Path::new("/p/.toolgate/spill/17-1-0-run_shell.txt");
        assert!(referenced(p, &["see .toolgate/spill/17-1-0-run_shell.txt"]));
        assert!(!referenced(p, &["nothing"]));
    }
}
