//! The output budget on the mounted servers' prompts and resource reads served over MCP
//! (`prompts/get`, `resources/read`), as on tool results (SPEC "MCP": "under toolgate's
//! names, budgets and permissions"): each text of one answer is a result of one turn, so a
//! 5 MB resource reaches the client as an excerpt and a spill pointer, not as 5 MB. Binary
//! contents pass unchanged (the budget counts text).

use rmcp::model::{ContentBlock, GetPromptResult, ResourceContents};
use toolgate_core::{ClientLimits, ResultBudget, ToolMeta, ToolOutput, TurnResult};

/// Fits the texts of a `resources/read` answer to `budget` for a client with `limits`.
pub fn fit_resource_contents(
    contents: &mut [ResourceContents],
    budget: &dyn ResultBudget,
    limits: ClientLimits,
) {
    let texts = contents.iter_mut().filter_map(|part| match part {
        ResourceContents::TextResourceContents { text, .. } => Some(text),
        _ => None,
    });
    fit("resource", texts, budget, limits);
}

/// Fits the texts of a `prompts/get` answer (its messages' text and embedded text
/// resources) to `budget` for a client with `limits`.
pub fn fit_prompt(result: &mut GetPromptResult, budget: &dyn ResultBudget, limits: ClientLimits) {
    let texts = result
        .messages
        .iter_mut()
        .filter_map(|message| match &mut message.content {
            ContentBlock::Text(t) => Some(&mut t.text),
            ContentBlock::Resource(r) => match &mut r.resource {
                ResourceContents::TextResourceContents { text, .. } => Some(text),
                _ => None,
            },
            _ => None,
        });
    fit("prompt", texts, budget, limits);
}

/// Passes `texts` through `budget` as one turn of results labelled `label` (the spill
/// file's name), each replaced by what the budget leaves of it.
fn fit<'a>(
    label: &str,
    texts: impl Iterator<Item = &'a mut String>,
    budget: &dyn ResultBudget,
    limits: ClientLimits,
) {
    let meta = ToolMeta {
        spillable: true,
        ..ToolMeta::default()
    };
    let mut texts: Vec<&mut String> = texts.collect();
    let mut outputs: Vec<ToolOutput> = texts
        .iter_mut()
        .map(|t| ToolOutput::text(std::mem::take(*t)))
        .collect();
    let mut turn: Vec<TurnResult<'_>> = outputs
        .iter_mut()
        .map(|output| TurnResult {
            tool: label,
            meta: &meta,
            output,
            limits,
        })
        .collect();
    budget.apply(&mut turn);
    for (text, output) in texts.into_iter().zip(outputs) {
        *text = output.text;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cuts every text over 10 characters to its first 10 and a marker.
    struct Cut;

    impl ResultBudget for Cut {
        fn apply(&self, turn: &mut [TurnResult<'_>]) {
            for item in turn {
                assert!(item.meta.spillable);
                if item.output.text.len() > 10 {
                    item.output.text = format!("{}[cut]", &item.output.text[..10]);
                }
            }
        }
    }

    #[test]
    fn resource_texts_pass_the_budget_and_blobs_stay() {
        let mut contents = vec![
            ResourceContents::text("x".repeat(100), "test://big"),
            ResourceContents::text("small", "test://small"),
            ResourceContents::blob("Y".repeat(100), "test://blob"),
        ];
        fit_resource_contents(&mut contents, &Cut, ClientLimits::default());
        let texts: Vec<&str> = contents
            .iter()
            .map(|c| match c {
                ResourceContents::TextResourceContents { text, .. } => text.as_str(),
                ResourceContents::BlobResourceContents { blob, .. } => blob.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(texts[0], "xxxxxxxxxx[cut]");
        assert_eq!(texts[1], "small");
        assert_eq!(texts[2].len(), 100);
    }

    #[test]
    fn prompt_messages_pass_the_budget() {
        use rmcp::model::{PromptMessage, Role};
        let mut result = GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, "y".repeat(50)),
            PromptMessage::new_text(Role::Assistant, "ok"),
        ]);
        fit_prompt(&mut result, &Cut, ClientLimits::default());
        let texts: Vec<String> = result
            .messages
            .iter()
            .map(|m| match &m.content {
                ContentBlock::Text(t) => t.text.clone(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(texts, ["yyyyyyyyyy[cut]", "ok"]);
    }
}
