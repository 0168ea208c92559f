//! `list_resources` and `read_resource`: every mounted server's resources and resource
//! templates for clients that only call tools, so that they reach resources through tools.
//!
//! They are offered only while a mounted server the permission rules let through offers a
//! resource or a template, so a gateway without resources adds nothing to the tools array.
//! They are ordinary registry tools (`mcp.read`): deferred when disclosure is on, and their
//! results pass the output budget like any tool's, so a 5 MB resource reaches the model as
//! an excerpt and a spill pointer. A server's resources obey the rules for the server
//! (`mcp__NAME__*`, decided as for its requests to the client): denied, they are neither
//! listed nor read; `ask`, a read asks the session's approver.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::{Resource, ResourceContents, ResourceTemplate};
use schemars::JsonSchema;
use serde::Deserialize;
use toolgate_core::{
    Approval, ApprovalRequest, CallContext, Concurrency, Decision, DynTool, ProviderError, Tool,
    ToolError, ToolMeta, ToolOutput, ToolProvider, TypedTool, Verdict,
};

use super::Inner;
use crate::mount::Mount;
use crate::mount::resources::Fit;
use crate::naming::server_prefix;
use toolgate_core::Identity;

/// Name of the tool that lists resources.
pub const LIST_RESOURCES: &str = "list_resources";
/// Name of the tool that reads one.
pub const READ_RESOURCE: &str = "read_resource";

/// Limits of the two tools. Their own numbers: what a page of a listing shows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResourceToolLimits {
    /// Entries (resources and templates) on one page of `list_resources` by default.
    pub(crate) page: usize,
    /// Most entries on one page, whatever `limit` asks for.
    pub(crate) max_page: usize,
    /// Longest URI `read_resource` accepts (and longest `query`): far past any real URI, so
    /// only a runaway argument is refused.
    pub(crate) max_uri_chars: usize,
    /// Characters of a description shown in a listing.
    pub(crate) description_chars: usize,
}

impl Default for ResourceToolLimits {
    fn default() -> Self {
        Self {
            page: 50,
            max_page: 200,
            max_uri_chars: 8_192,
            description_chars: 120,
        }
    }
}

/// The registry provider of the two tools.
pub(crate) struct ResourceTools {
    inner: Weak<Inner>,
    tools: Vec<Arc<dyn DynTool>>,
}

impl ResourceTools {
    /// The tools over `inner`'s servers; a read may take as long as the slowest server's
    /// `tool_timeout_sec`.
    pub(crate) fn new(inner: Weak<Inner>, timeout: Duration) -> Self {
        let limits = ResourceToolLimits::default();
        let tools = vec![
            TypedTool::erased(ListResources {
                inner: inner.clone(),
                limits,
            }),
            TypedTool::erased(ReadResource {
                inner: inner.clone(),
                limits,
                timeout,
            }),
        ];
        Self { inner, tools }
    }
}

impl ToolProvider for ResourceTools {
    fn name(&self) -> &str {
        "mcp-resources"
    }

    fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, ProviderError> {
        let offered = self.inner.upgrade().is_some_and(|i| i.offers_resources());
        Ok(if offered {
            self.tools.clone()
        } else {
            Vec::new()
        })
    }
}

fn meta(timeout: Option<Duration>) -> ToolMeta {
    ToolMeta {
        timeout,
        concurrency: Concurrency::ReadOnly,
        action: "mcp.read".to_owned(),
        spillable: true,
        idempotent: true,
        destructive: false,
        ..ToolMeta::default()
    }
}

impl Inner {
    /// The rules' verdict on reading `mount`'s resources: the rules for the server
    /// (`mcp__NAME__*`) and the `mcp.read` action.
    /// How the rules treat a client's use of the mounted prompt `name` (its toolgate name):
    /// by the name, or the action `mcp.prompt`.
    /// `caller` is the identity `serve --http` authenticated (`None`: none, as in lists and
    /// on stdio), for rules with a condition on the caller.
    pub(super) fn prompt_verdict(&self, name: &str, caller: Option<&Identity>) -> Verdict {
        self.limits.policy.decide_for(name, "mcp.prompt", caller)
    }

    pub(super) fn resource_verdict(&self, mount: &Mount, caller: Option<&Identity>) -> Verdict {
        self.limits
            .policy
            .decide_for(&server_prefix(&mount.spec.name), "mcp.read", caller)
    }

    /// The servers whose resources may be listed: mounted, and not denied.
    pub(super) fn readable(&self) -> Vec<Arc<Mount>> {
        self.readable_by(None)
    }

    /// The servers whose resources `caller` may read: mounted, and not denied to them.
    pub(super) fn readable_by(&self, caller: Option<&Identity>) -> Vec<Arc<Mount>> {
        self.mounts()
            .iter()
            .filter(|m| m.clash().is_none())
            .filter(|m| self.resource_verdict(m, caller).decision != Decision::Deny)
            .cloned()
            .collect()
    }

    /// The servers not kept from mounting by a name clash.
    pub(super) fn mounted(&self) -> Vec<Arc<Mount>> {
        self.mounts()
            .iter()
            .filter(|m| m.clash().is_none())
            .cloned()
            .collect()
    }

    /// What a listing or a failed lookup adds about servers the rules let through that are
    /// still starting (their resources are not known yet); empty when none is.
    fn starting_note(&self) -> String {
        let starting: Vec<String> = self
            .readable()
            .into_iter()
            .filter(|m| m.is_settling() && m.resources().is_empty())
            .map(|m| format!("`{}`", m.spec.name))
            .collect();
        if starting.is_empty() {
            return String::new();
        }
        format!(
            " (still starting, so their resources are not known yet: {}; call again once they are ready)",
            starting.join(", ")
        )
    }

    /// Waits for the servers the rules let through whose resources the catalog cache
    /// promised and that are still starting, as a call of one of their tools would, until
    /// a second before the call's deadline.
    async fn await_cached(&self, ctx: &CallContext) {
        let coming: Vec<Arc<Mount>> = self
            .readable()
            .into_iter()
            .filter(|m| m.resources_coming())
            .collect();
        if coming.is_empty() {
            return;
        }
        let limit = ctx.remaining().map_or(Duration::from_secs(60), |r| {
            r.saturating_sub(Duration::from_secs(1))
        });
        let all = futures::future::join_all(coming.iter().map(|m| m.settled()));
        let _ = tokio::time::timeout(limit, all).await;
    }

    /// Whether a server the rules let through offers any resource or template.
    pub(super) fn offers_resources(&self) -> bool {
        self.readable().iter().any(|m| m.offers_resources())
    }

    /// The server a read of `uri` goes to among `mounts`: the first that listed it, else
    /// the first with a template it fits (config order breaks ties).
    pub(super) fn owner(mounts: &[Arc<Mount>], uri: &str) -> Option<Arc<Mount>> {
        let mut best: Option<(Fit, &Arc<Mount>)> = None;
        for mount in mounts {
            if let Some(fit) = mount.serves(uri)
                && best.is_none_or(|(b, _)| fit > b)
            {
                best = Some((fit, mount));
            }
        }
        best.map(|(_, m)| Arc::clone(m))
    }
}

/// Arguments of `list_resources`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Only this server's resources (its name as shown in the listing).
    server: Option<String>,
    /// Only entries whose URI, name, title or description contain this text (any case).
    query: Option<String>,
    /// Entries to skip: the `offset` a cut page names.
    offset: Option<usize>,
    /// Entries per page (default 50, at most 200).
    limit: Option<usize>,
}

struct ListResources {
    inner: Weak<Inner>,
    limits: ResourceToolLimits,
}

/// One line of a listing.
enum Entry<'a> {
    /// A resource of a server, and the other server reads of its URI go to, if any.
    Resource(&'a str, &'a Resource, Option<&'a str>),
    Template(&'a str, &'a ResourceTemplate),
}

impl Entry<'_> {
    fn matches(&self, query: &str) -> bool {
        let fields: [Option<&str>; 4] = match self {
            Entry::Resource(_, r, _) => [
                Some(r.uri.as_str()),
                Some(r.name.as_str()),
                r.title.as_deref(),
                r.description.as_deref(),
            ],
            Entry::Template(_, t) => [
                Some(t.uri_template.as_str()),
                Some(t.name.as_str()),
                t.title.as_deref(),
                t.description.as_deref(),
            ],
        };
        fields
            .into_iter()
            .flatten()
            .any(|f| f.to_lowercase().contains(query))
    }

    /// `- URI · name · server · type · size — description`.
    fn line(&self, description_chars: usize) -> String {
        let (uri, name, title, server, mime, size, description) = match self {
            Entry::Resource(server, r, _) => (
                r.uri.as_str(),
                r.name.as_str(),
                r.title.as_deref(),
                *server,
                r.mime_type.as_deref(),
                r.size,
                r.description.as_deref(),
            ),
            Entry::Template(server, t) => (
                t.uri_template.as_str(),
                t.name.as_str(),
                t.title.as_deref(),
                *server,
                t.mime_type.as_deref(),
                None,
                t.description.as_deref(),
            ),
        };
        let mut line = format!("- {} · {}", one_line(uri), one_line(title.unwrap_or(name)));
        line.push_str(&format!(" · {server}"));
        if let Some(mime) = mime {
            line.push_str(&format!(" · {}", one_line(mime)));
        }
        if let Some(size) = size {
            line.push_str(&format!(" · {} bytes", group(size)));
        }
        if let Entry::Resource(_, _, Some(owner)) = self {
            line.push_str(&format!(" · read from `{owner}`, which lists it first"));
        }
        if let Some(d) = description.map(one_line).filter(|d| !d.is_empty()) {
            line.push_str(" — ");
            line.push_str(&cut(&d, description_chars));
        }
        line
    }
}

impl Tool for ListResources {
    type Args = ListArgs;
    type Output = ();

    fn name(&self) -> &str {
        LIST_RESOURCES
    }

    fn description(&self) -> &str {
        "List the resources (files, records, documents) the mounted MCP servers offer, and their URI templates. Each line: URI · name · server · MIME type · size. Read one with read_resource {\"uri\": …}; for a template, fill in each {…} first. Filter with `server` or `query`; a long listing comes in pages (`offset`)."
    }

    fn meta(&self) -> ToolMeta {
        meta(None)
    }

    async fn call(&self, args: ListArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let inner = self.inner.upgrade().ok_or_else(gone)?;
        let limits = self.limits;
        let query = match args.query.as_deref().map(str::trim) {
            Some(q) if q.chars().count() > limits.max_uri_chars => {
                return Err(ToolError::InvalidArguments(format!(
                    "`query` is {} characters long; send a word or two of the URI or name (at most {})",
                    group(q.chars().count() as u64),
                    group(limits.max_uri_chars as u64)
                )));
            }
            Some(q) if !q.is_empty() => Some(q.to_lowercase()),
            _ => None,
        };
        inner.await_cached(&ctx).await;
        let caller = ctx.session.identity();
        let readable = inner.readable_by(caller);
        let with_resources: Vec<&Arc<Mount>> = readable
            .iter()
            .filter(|m| !m.resources().is_empty())
            .collect();
        let names = |ms: &[&Arc<Mount>]| -> String {
            if ms.is_empty() {
                return "none".to_owned();
            }
            ms.iter()
                .map(|m| format!("`{}`", m.spec.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let all = inner.mounts();
        let chosen: Vec<&Arc<Mount>> = match args.server.as_deref() {
            None => with_resources.clone(),
            Some(server) => {
                let Some(mount) = all.iter().find(|m| m.spec.name == server) else {
                    return Err(ToolError::recoverable(format!(
                        "no mounted MCP server is named `{}`; servers with resources: {} (or leave `server` out to list them all)",
                        cut(&one_line(server), 100),
                        names(&with_resources)
                    )));
                };
                let verdict = inner.resource_verdict(mount, caller);
                if verdict.decision == Decision::Deny {
                    return Err(denied(&mount.spec.name, &verdict));
                }
                if let Some(reason) = mount.clash() {
                    return Err(ToolError::recoverable(format!(
                        "MCP server `{server}` is not mounted: {reason}"
                    )));
                }
                vec![mount]
            }
        };
        let offered: Vec<_> = chosen.iter().map(|m| (m, m.resources())).collect();
        // Where reads of each listed URI go: the first server that lists it.
        let every: Vec<_> = readable.iter().map(|m| m.resources()).collect();
        let mut first: HashMap<&str, &str> = HashMap::new();
        for (mount, offer) in readable.iter().zip(&every) {
            for r in &offer.resources {
                first
                    .entry(r.uri.as_str())
                    .or_insert(mount.spec.name.as_str());
            }
        }
        let mut resources = Vec::new();
        let mut templates = Vec::new();
        let mut seen = HashSet::new();
        for (mount, offer) in &offered {
            let server = mount.spec.name.as_str();
            resources.extend(
                offer
                    .resources
                    .iter()
                    // A URI two servers list is read from the first: list it once, there
                    // (and, listing one server, say where a read of it goes).
                    .filter(|r| seen.insert(r.uri.as_str()))
                    .map(|r| {
                        let owner = first.get(r.uri.as_str()).filter(|o| **o != server);
                        Entry::Resource(server, r, owner.copied())
                    }),
            );
            templates.extend(offer.templates.iter().map(|t| Entry::Template(server, t)));
        }
        if let Some(q) = &query {
            resources.retain(|e| e.matches(q));
            templates.retain(|e| e.matches(q));
        }
        let total = resources.len() + templates.len();
        let offset = args.offset.unwrap_or(0);
        let limit = args.limit.unwrap_or(limits.page).clamp(1, limits.max_page);
        if total == 0 {
            let text = match (&query, args.server.as_deref()) {
                (Some(q), _) => format!(
                    "No resource or template matches `{}`; try a shorter query, or leave `query` out to list everything.",
                    cut(q, 100)
                ),
                (None, Some(server)) => {
                    format!("MCP server `{server}` offers no resources or templates (now).")
                }
                (None, None) => "No mounted MCP server offers resources (now).".to_owned(),
            };
            return Ok(ToolOutput::text(format!("{text}{}", inner.starting_note())));
        }
        if offset >= total {
            return Err(ToolError::recoverable(format!(
                "`offset` {offset} is past the end: there are {total} entries; use an offset below {total} (0 for the first page)"
            )));
        }
        let end = (offset + limit).min(total);
        let (n_res, n_tpl) = (resources.len(), templates.len());
        let mut text = format!(
            "{} resource{} and {} template{} from {}",
            group(n_res as u64),
            if n_res == 1 { "" } else { "s" },
            group(n_tpl as u64),
            if n_tpl == 1 { "" } else { "s" },
            names(&chosen),
        );
        if let Some(q) = &query {
            text.push_str(&format!(" matching `{}`", cut(q, 100)));
        }
        if offset > 0 || end < total {
            text.push_str(&format!("; entries {}-{end} of {total}", offset + 1));
        }
        if args.server.is_none() {
            text.push_str(&inner.starting_note());
        }
        text.push_str(".\n");
        let all = resources.iter().chain(templates.iter()).enumerate();
        let mut heading = None;
        for (i, entry) in all.skip(offset).take(end - offset) {
            let section = i >= n_res;
            if heading != Some(section) {
                heading = Some(section);
                text.push_str(if section {
                    "Templates (fill in each {…}, then read_resource the URI):\n"
                } else {
                    "Resources (URI · name · server · type · size):\n"
                });
            }
            text.push_str(&entry.line(limits.description_chars));
            text.push('\n');
        }
        if end < total {
            let mut next = serde_json::Map::new();
            if let Some(server) = &args.server {
                next.insert("server".to_owned(), server.clone().into());
            }
            if let Some(q) = &args.query {
                next.insert("query".to_owned(), q.clone().into());
            }
            next.insert("offset".to_owned(), end.into());
            text.push_str(&format!(
                "[{} more; next page: list_resources {}]\n",
                total - end,
                serde_json::Value::Object(next)
            ));
        }
        Ok(ToolOutput::text(text))
    }
}

/// Arguments of `read_resource`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// The resource's URI, exactly as list_resources shows it (or a template filled in).
    uri: String,
}

struct ReadResource {
    inner: Weak<Inner>,
    limits: ResourceToolLimits,
    timeout: Duration,
}

impl Tool for ReadResource {
    type Args = ReadArgs;
    type Output = ();

    fn name(&self) -> &str {
        READ_RESOURCE
    }

    fn description(&self) -> &str {
        "Read a resource of a mounted MCP server by its URI (from list_resources, or one of its templates filled in). Returns the text; binary contents are described, not shown. A large resource comes back as an excerpt with the path of a file holding all of it."
    }

    fn meta(&self) -> ToolMeta {
        meta(Some(self.timeout))
    }

    async fn call(&self, args: ReadArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let inner = self.inner.upgrade().ok_or_else(gone)?;
        let uri = args.uri;
        let chars = uri.chars().count();
        if uri.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "`uri` is empty; send a URI from list_resources".to_owned(),
            ));
        }
        if chars > self.limits.max_uri_chars {
            return Err(ToolError::InvalidArguments(format!(
                "`uri` is {} characters long, past the {} any resource here could have; copy the URI from list_resources",
                group(chars as u64),
                group(self.limits.max_uri_chars as u64)
            )));
        }
        if uri.chars().any(char::is_control) {
            return Err(ToolError::InvalidArguments(format!(
                "`uri` contains control characters (`{}`); copy the URI from list_resources exactly",
                cut(&uri.escape_debug().to_string(), 200)
            )));
        }
        let caller = ctx.session.identity();
        if Inner::owner(&inner.readable_by(caller), &uri).is_none() {
            inner.await_cached(&ctx).await;
        }
        let Some(mount) = Inner::owner(&inner.readable_by(caller), &uri) else {
            if let Some(hidden) = Inner::owner(&inner.mounted(), &uri) {
                return Err(denied(
                    &hidden.spec.name,
                    &inner.resource_verdict(&hidden, caller),
                ));
            }
            return Err(ToolError::recoverable(format!(
                "no mounted MCP server offers the resource `{}`; call list_resources to see the URIs and templates there are{}",
                cut(&uri, 200),
                inner.starting_note()
            )));
        };
        let verdict = inner.resource_verdict(&mount, caller);
        // An `ask` the dispatcher asked already (an `mcp.read` rule) is not asked twice.
        let asked = inner
            .limits
            .policy
            .decide_for(READ_RESOURCE, "mcp.read", caller)
            == verdict;
        if verdict.decision == Decision::Ask && !asked {
            approve(&mount.spec.name, &uri, &verdict, &ctx).await?;
        }
        read(&mount, &uri, &ctx).await
    }
}

/// Asks the session's approver for a read an `ask` rule holds.
async fn approve(
    server: &str,
    uri: &str,
    verdict: &Verdict,
    ctx: &CallContext,
) -> Result<(), ToolError> {
    let rule = verdict.rule.clone().unwrap_or_default();
    let approver = match ctx.session.approval() {
        Approval::By(approver) => Arc::clone(approver),
        Approval::Nobody => {
            return Err(ToolError::recoverable(format!(
                "permission needed: reading resources of MCP server `{server}` requires approval by the rule {rule}, and nobody can approve it here; ask the user to move it to `allow` in the [permissions] config"
            )));
        }
    };
    let request = ApprovalRequest {
        tool: READ_RESOURCE.to_owned(),
        action: "mcp.read".to_owned(),
        rule: rule.clone(),
        args: serde_json::json!({ "uri": uri, "server": server }),
    };
    let approved = tokio::select! {
        approved = approver.approve(request) => approved,
        () = ctx.cancel.cancelled() => false,
    };
    if approved {
        Ok(())
    } else {
        Err(ToolError::recoverable(format!(
            "the user declined reading `{}` from MCP server `{server}` (rule {rule}); do not retry it: ask the user how to go on",
            cut(uri, 200)
        )))
    }
}

/// Reads `uri` from `mount` and shows its contents as text; a server that asks for input
/// to read it asks the call's client.
async fn read(mount: &Arc<Mount>, uri: &str, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
    let server = &mount.spec.name;
    let contents = mount
        .read_resource(uri, ctx.client().cloned())
        .await
        .map_err(|e| ToolError::recoverable(e.to_string()))?;
    Ok(ToolOutput::text(show_contents(server, uri, &contents)))
}

/// The contents of a read as the model sees them: each part under a header naming its URI
/// and type, text as it is, binary described.
pub(crate) fn show_contents(server: &str, uri: &str, contents: &[ResourceContents]) -> String {
    if contents.is_empty() {
        return format!("Resource `{uri}` of MCP server `{server}` is empty (no contents).\n");
    }
    let mut text = String::new();
    for (i, part) in contents.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        match part {
            ResourceContents::TextResourceContents {
                uri: at,
                mime_type,
                text: body,
                ..
            } => {
                text.push_str(&format!(
                    "[resource {}{} from MCP server `{server}`]\n",
                    one_line(at),
                    mime_type
                        .as_deref()
                        .map(|m| format!(" ({})", one_line(m)))
                        .unwrap_or_default()
                ));
                text.push_str(body);
                if !body.ends_with('\n') {
                    text.push('\n');
                }
            }
            ResourceContents::BlobResourceContents {
                uri: at,
                mime_type,
                blob,
                ..
            } => {
                text.push_str(&format!(
                    "[resource {} from MCP server `{server}`: binary, {}, {} bytes; not shown — binary contents do not reach the model as text]\n",
                    one_line(at),
                    mime_type
                        .as_deref()
                        .map(one_line)
                        .unwrap_or_else(|| "type not given".to_owned()),
                    group(base64_len(blob))
                ));
            }
            _ => text.push_str("[a part of a kind toolgate does not know; not shown]\n"),
        }
    }
    text
}

/// Bytes a base64 text decodes to.
fn base64_len(blob: &str) -> u64 {
    let digits = blob.bytes().filter(|b| !b.is_ascii_whitespace()).count() as u64;
    let padding = blob.bytes().rev().take_while(|b| *b == b'=').count() as u64;
    (digits / 4 * 3 + (digits % 4).saturating_sub(1)).saturating_sub(padding.min(2))
}

fn denied(server: &str, verdict: &Verdict) -> ToolError {
    ToolError::recoverable(match &verdict.rule {
        Some(rule) => format!(
            "permission denied: resources of MCP server `{server}` are blocked by the rule {rule}; use another source, or ask the user to change that rule"
        ),
        None => format!("permission denied for the resources of MCP server `{server}`"),
    })
}

fn gone() -> ToolError {
    ToolError::Fatal("the MCP gateway has shut down".to_owned())
}

/// Newlines and tabs as spaces: a server's text on one listing line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `max` characters, with an ellipsis.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// `1234567` → `1,234,567`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_lengths_decode_exactly() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("YQ=="), 1);
        assert_eq!(base64_len("YWI="), 2);
        assert_eq!(base64_len("YWJj"), 3);
        assert_eq!(base64_len("YWJjZA=="), 4);
    }

    #[test]
    fn binary_contents_are_described_not_dumped() {
        let blob = "A".repeat(4_000);
        let contents = vec![
            ResourceContents::text("hello", "test://a"),
            ResourceContents::blob(blob.clone(), "test://b").with_mime_type("image/png"),
        ];
        let shown = show_contents("srv", "test://a", &contents);
        assert!(shown.contains("[resource test://a (text/plain) from MCP server `srv`]\nhello\n"));
        assert!(shown.contains("binary, image/png, 3,000 bytes; not shown"));
        assert!(!shown.contains(&blob));
    }

    #[test]
    fn an_empty_read_says_so() {
        assert!(show_contents("srv", "test://x", &[]).contains("is empty"));
    }

    #[test]
    fn listing_lines_stay_on_one_line() {
        let r = Resource::new("test://a", "a\nname")
            .with_description("line one\nline two")
            .with_mime_type("text/plain")
            .with_size(12_345);
        let line = Entry::Resource("srv", &r, None).line(120);
        assert_eq!(
            line,
            "- test://a · a name · srv · text/plain · 12,345 bytes — line one line two"
        );
    }
}
