//! The output budget on the mounted servers' prompts and resource reads served over MCP
//! (`prompts/get`, `resources/read`), as on tool results (mounted servers are served under
//! toolgate's names, budgets and permissions): each text of one answer is a result of one
//! turn, so a 5 MB resource reaches the client as an excerpt and a spill pointer, not as
//! 5 MB. A binary content passes whole up to [`MAX_BLOB_CHARS`] (an image, a PDF); a larger
//! one is saved to a spill file and named instead ([`save_large_blobs`]).

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{ContentBlock, GetPromptResult, ResourceContents};
use toolgate_core::{ClientLimits, ResultBudget, ToolMeta, ToolNames, ToolOutput, TurnResult};

/// Largest binary content (its base64 characters) a `resources/read` answer passes on
/// whole: about 750 KB of bytes.
pub const MAX_BLOB_CHARS: usize = 1_000_000;

/// Saves a file of spilled bytes labelled so, and says where it is.
pub type SaveBlob = Arc<dyn Fn(&str, &[u8]) -> std::io::Result<PathBuf> + Send + Sync>;

/// Replaces each binary content of a `resources/read` answer over [`MAX_BLOB_CHARS`] by a
/// text naming the file `save` put its bytes in (or why it could not).
pub fn save_large_blobs(contents: &mut [ResourceContents], save: &SaveBlob) {
    for part in contents.iter_mut() {
        let ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } = part
        else {
            continue;
        };
        if blob.len() <= MAX_BLOB_CHARS {
            continue;
        }
        let bytes = BASE64
            .decode(blob.as_bytes())
            .unwrap_or_else(|_| blob.as_bytes().to_vec());
        let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
        let size = bytes.len();
        let text = match save("resource", &bytes) {
            Ok(path) => format!(
                "[binary resource `{uri}` ({mime}, {size} bytes) is too large to send whole; its bytes are saved to `{}`]",
                path.display()
            ),
            Err(e) => format!(
                "[binary resource `{uri}` ({mime}, {size} bytes) is too large to send whole, and saving it failed: {e}]"
            ),
        };
        *part = ResourceContents::text(text, uri.clone()).with_mime_type("text/plain");
    }
}

/// Fits the texts of a `resources/read` answer to `budget` for a client with `limits`, whose
/// model calls toolgate's tools by `names`.
pub fn fit_resource_contents(
    contents: &mut [ResourceContents],
    budget: &dyn ResultBudget,
    limits: ClientLimits,
    names: &ToolNames,
) {
    let texts = contents.iter_mut().filter_map(|part| match part {
        ResourceContents::TextResourceContents { text, .. } => Some(text),
        _ => None,
    });
    fit("resource", texts, budget, limits, names);
}

/// Fits the texts of a `prompts/get` answer (its messages' text and embedded text
/// resources) to `budget` for a client with `limits`, whose model calls toolgate's tools by
/// `names`.
pub fn fit_prompt(
    result: &mut GetPromptResult,
    budget: &dyn ResultBudget,
    limits: ClientLimits,
    names: &ToolNames,
) {
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
    fit("prompt", texts, budget, limits, names);
}

/// Passes `texts` through `budget` as one turn of results labelled `label` (the spill
/// file's name), each replaced by what the budget leaves of it.
fn fit<'a>(
    label: &str,
    texts: impl Iterator<Item = &'a mut String>,
    budget: &dyn ResultBudget,
    limits: ClientLimits,
    names: &ToolNames,
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
            names: names.clone(),
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

    #[test]
    fn a_large_blob_is_saved_and_named_a_small_one_passes() {
        let saved: Arc<std::sync::Mutex<Vec<Vec<u8>>>> = Arc::default();
        let into = Arc::clone(&saved);
        let save: SaveBlob = Arc::new(move |label, bytes| {
            into.lock().unwrap().push(bytes.to_vec());
            Ok(PathBuf::from(format!("/spill/{label}-1")))
        });
        let big = vec![7u8; MAX_BLOB_CHARS];
        let mut contents = vec![
            ResourceContents::blob(BASE64.encode([1u8, 2, 3]), "x://small"),
            ResourceContents::blob(BASE64.encode(&big), "x://big")
                .with_mime_type("application/zip"),
        ];
        save_large_blobs(&mut contents, &save);
        assert!(matches!(
            &contents[0],
            ResourceContents::BlobResourceContents { .. }
        ));
        let ResourceContents::TextResourceContents { text, uri, .. } = &contents[1] else {
            panic!("the large blob is not named: {:?}", contents[1]);
        };
        assert_eq!(uri, "x://big");
        assert_eq!(
            text,
            &format!(
                "[binary resource `x://big` (application/zip, {} bytes) is too large to send whole; its bytes are saved to `/spill/resource-1`]",
                big.len()
            )
        );
        assert_eq!(saved.lock().unwrap().as_slice(), &[big]);
    }

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
        fit_resource_contents(
            &mut contents,
            &Cut,
            ClientLimits::default(),
            &ToolNames::default(),
        );
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
        fit_prompt(
            &mut result,
            &Cut,
            ClientLimits::default(),
            &ToolNames::default(),
        );
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
