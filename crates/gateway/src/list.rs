//! Reading a server's whole tool list: `tools/list` pages followed to the end, bounded by
//! [`GatewayLimits`] so a server that keeps answering with a cursor, or offers a million
//! tools, cannot hold the gateway.

use std::collections::HashSet;

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::{Peer, RoleClient};

use crate::config::ServerSpec;
use crate::failure::{Failure, NeedsLogin};
use crate::limits::GatewayLimits;

/// Every tool of the server that `spec` mounts, plus notes on anything left out.
pub(crate) async fn list_all(
    peer: &Peer<RoleClient>,
    spec: &ServerSpec,
    limits: &GatewayLimits,
) -> Result<(Vec<Tool>, Vec<String>), Failure> {
    let mut tools: Vec<Tool> = Vec::new();
    let mut notes = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    let mut pages = 0usize;
    loop {
        let params = cursor.take().map(|c| {
            let mut p = PaginatedRequestParams::default();
            p.cursor = Some(c);
            p
        });
        let page = peer
            .list_tools(params)
            .await
            .map_err(|e| match e.auth_challenge() {
                // A server that answers `initialize` without a login and wants one for
                // everything else.
                Some(challenge) => Failure::NeedsLogin(NeedsLogin {
                    reason: "the server requires a login to list its tools".to_owned(),
                    challenge: Some(challenge.to_owned()),
                }),
                None => Failure::Failed(format!("`tools/list` failed: {e}")),
            })?;
        pages += 1;
        tools.extend(page.tools);
        if tools.len() >= limits.max_tools_per_server {
            if tools.len() > limits.max_tools_per_server || page.next_cursor.is_some() {
                notes.push(format!(
                    "only the first {} tools are mounted (max_tools_per_server)",
                    limits.max_tools_per_server
                ));
            }
            tools.truncate(limits.max_tools_per_server);
            break;
        }
        match page.next_cursor {
            None => break,
            Some(next) if pages >= limits.max_list_pages => {
                let _ = next;
                notes.push(format!(
                    "stopped after {pages} pages of tools/list (max_list_pages); later tools are not mounted"
                ));
                break;
            }
            Some(next) if !seen.insert(next.clone()) => {
                notes.push(format!(
                    "the server repeated the cursor `{next}`; listing stopped there"
                ));
                break;
            }
            Some(next) => cursor = Some(next),
        }
    }
    let mut names = HashSet::new();
    let before = tools.len();
    tools.retain(|t| names.insert(t.name.to_string()));
    if tools.len() < before {
        notes.push(format!(
            "{} duplicate tool name(s) ignored",
            before - tools.len()
        ));
    }
    tools.retain(|t| spec.mounts(&t.name));
    Ok((tools, notes))
}
