//! Names of mounted tools: `mcp__<server>__<tool>`, as Claude Code names them.
//!
//! Names are sanitised to `[A-Za-z0-9_-]` and kept to 64 characters, the limit of the
//! OpenAI and Anthropic tool arrays. A name that had to be changed (characters replaced or
//! cut) and that is too long or collides with another gets a suffix `_` + 8 hex digits of a
//! stable hash (FNV-1a) of the original server and tool names, so the same tool gets the
//! same name in every run and on every machine.
//!
//! A server with `prefix = "never"` keeps its own names instead ([`name_all`]). Such a name
//! may clash with one toolgate already has; the server is then not mounted at all, and the
//! reason names every clash and the fix. What already has a name, first wins: toolgate's own
//! tools and the skills' prompts, then every `prefix = "always"` server (their names cannot
//! clash with each other), then the `never` servers in config order.

use std::collections::HashMap;

use crate::config::Prefix;

/// Most characters of a tool name (OpenAI and Anthropic limits).
pub const MAX_NAME_LEN: usize = 64;

/// Prefix of every mounted tool.
const PREFIX: &str = "mcp__";

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
///
/// ```
/// assert_eq!(toolgate_gateway::sanitize("my server.v2"), "my_server_v2");
/// ```
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The plain name `mcp__<server>__<tool>`, before any cut or suffix.
fn plain(server: &str, tool: &str) -> String {
    format!("{PREFIX}{}__{}", sanitize(server), sanitize(tool))
}

/// The tool-name prefix of one server, `mcp__<server>__`: a permission glob such as
/// `mcp__github__*` matches every tool of that server.
pub fn server_prefix(server: &str) -> String {
    format!("{PREFIX}{}__", sanitize(server))
}

/// 32 bits of FNV-1a 64 over `server NUL tool`, as 8 hex digits. FNV is fixed by its
/// definition, so names never change between versions of toolgate or Rust.
fn stable_hash(server: &str, tool: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in server.bytes().chain([0u8]).chain(tool.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", (h >> 32) ^ (h & 0xffff_ffff))
}

/// The name with a hash suffix, cut so the whole fits in [`MAX_NAME_LEN`].
fn hashed(server: &str, tool: &str) -> String {
    let suffix = stable_hash(server, tool);
    let base = plain(server, tool);
    let keep = MAX_NAME_LEN - suffix.len() - 1;
    // `base` is ASCII after sanitising, so byte indices are character indices.
    let cut = &base[..base.len().min(keep)];
    format!("{cut}_{suffix}")
}

/// Names for `(server, tool)` pairs, in the same order. A pair whose plain name is unchanged,
/// short enough and unique keeps it; every other pair gets a hashed name.
///
/// ```
/// use toolgate_gateway::{MAX_NAME_LEN, assign_names};
///
/// let long = "describe_".repeat(10);
/// let names = assign_names(&[("github", "create_issue"), ("docs", &long)]);
/// assert_eq!(names[0], "mcp__github__create_issue");
/// // Too long for the model APIs: cut to 64 characters, with a stable hash at the end,
/// // so the same tool has the same name in every run.
/// assert_eq!(names[1].len(), MAX_NAME_LEN);
/// assert!(names[1].starts_with("mcp__docs__describe_"));
/// assert_eq!(names[1], assign_names(&[("docs", &long)])[0]);
/// ```
pub fn assign_names(pairs: &[(&str, &str)]) -> Vec<String> {
    let plains: Vec<String> = pairs.iter().map(|(s, t)| plain(s, t)).collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for name in &plains {
        *count.entry(name.as_str()).or_default() += 1;
    }
    // Within a collision group, the one pair that needed no change keeps the plain name
    // (adding a server never renames the tools of another whose names were already clean).
    let mut exact_in_group: HashMap<&str, usize> = HashMap::new();
    for ((server, tool), name) in pairs.iter().zip(&plains) {
        if is_exact(server, tool, name) {
            *exact_in_group.entry(name.as_str()).or_default() += 1;
        }
    }
    pairs
        .iter()
        .zip(&plains)
        .map(|((server, tool), name)| {
            let fits = name.len() <= MAX_NAME_LEN;
            let unique = count.get(name.as_str()) == Some(&1);
            let sole_exact =
                is_exact(server, tool, name) && exact_in_group.get(name.as_str()) == Some(&1);
            if fits && (unique || sole_exact) {
                name.clone()
            } else {
                hashed(server, tool)
            }
        })
        .collect()
}

/// Whether sanitising left the name as written.
fn is_exact(server: &str, tool: &str, name: &str) -> bool {
    name.len() == PREFIX.len() + server.len() + 2 + tool.len()
        && name == format!("{PREFIX}{server}__{tool}")
}

/// Who already has a name, for the clash message.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Holder {
    /// A tool toolgate has without the gateway (built-ins, `skill`, `search_tool`).
    Toolgate,
    /// A skill offered as a prompt.
    Skill,
    /// Another mounted server.
    Server(String),
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Toolgate => f.write_str("toolgate's own"),
            Self::Skill => f.write_str("a skill's"),
            Self::Server(name) => write!(f, "MCP server `{name}`'s"),
        }
    }
}

/// Names toolgate has before any server is mounted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reserved {
    /// Tool names of the registry's other providers.
    pub(crate) tools: Vec<String>,
    /// Prompt names of the skills.
    pub(crate) prompts: Vec<String>,
}

/// What one server offers, as [`name_all`] reads it.
pub(crate) struct Offer<'a> {
    /// The server's config name.
    pub(crate) server: &'a str,
    /// Its `prefix` setting.
    pub(crate) prefix: Prefix,
    /// Its tools' own names, in its order.
    pub(crate) tools: Vec<&'a str>,
    /// Its prompts' own names, in its order.
    pub(crate) prompts: Vec<&'a str>,
    /// Whether it already failed for a clash (it keeps offering nothing).
    pub(crate) clashed: bool,
}

/// The names one server's tools and prompts get, or why it gets none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Named {
    /// One name per offered tool (empty when the server is not mounted).
    pub(crate) tools: Vec<String>,
    /// One name per offered prompt (empty when the server is not mounted).
    pub(crate) prompts: Vec<String>,
    /// A new clash: the server's names clash and it must not be mounted.
    pub(crate) clash: Option<String>,
}

/// Names every server's tools and prompts, in the order given (config order). A `never`
/// server whose own names clash gets none and the reason in [`Named::clash`].
pub(crate) fn name_all(offers: &[Offer<'_>], reserved: &Reserved) -> Vec<Named> {
    let mut tools: HashMap<String, Holder> = HashMap::new();
    let mut prompts: HashMap<String, Holder> = HashMap::new();
    for name in &reserved.tools {
        tools.insert(name.clone(), Holder::Toolgate);
    }
    for name in &reserved.prompts {
        prompts.insert(name.clone(), Holder::Skill);
    }
    let always = |o: &&Offer<'_>| o.prefix == Prefix::Always;
    let pairs: Vec<(&str, &str)> = offers
        .iter()
        .filter(always)
        .flat_map(|o| o.tools.iter().map(|t| (o.server, *t)))
        .collect();
    let mut prefixed = assign_names(&pairs).into_iter();
    let mut named: Vec<Named> = offers
        .iter()
        .map(|o| match o.prefix {
            Prefix::Never => Named::default(),
            Prefix::Always => {
                let holder = || Holder::Server(o.server.to_owned());
                let named = Named {
                    tools: prefixed.by_ref().take(o.tools.len()).collect(),
                    prompts: o
                        .prompts
                        .iter()
                        .map(|p| format!("{}{p}", server_prefix(o.server)))
                        .collect(),
                    clash: None,
                };
                for name in &named.tools {
                    tools.entry(name.clone()).or_insert_with(holder);
                }
                for name in &named.prompts {
                    prompts.entry(name.clone()).or_insert_with(holder);
                }
                named
            }
        })
        .collect();
    for (offer, named) in offers.iter().zip(&mut named) {
        if offer.prefix != Prefix::Never || offer.clashed {
            continue;
        }
        let mut clashes = Vec::new();
        for tool in &offer.tools {
            if let Some(holder) = tools.get(*tool) {
                clashes.push(format!("tool `{tool}` is {holder} tool"));
            }
        }
        for prompt in &offer.prompts {
            if let Some(holder) = prompts.get(*prompt) {
                clashes.push(format!("prompt `{prompt}` is {holder} prompt"));
            }
        }
        if !clashes.is_empty() {
            named.clash = Some(clash_reason(offer, &clashes, &tools));
            continue;
        }
        let holder = || Holder::Server(offer.server.to_owned());
        for tool in &offer.tools {
            tools.entry((*tool).to_owned()).or_insert_with(holder);
        }
        for prompt in &offer.prompts {
            prompts.entry((*prompt).to_owned()).or_insert_with(holder);
        }
        named.tools = offer.tools.iter().map(|t| (*t).to_owned()).collect();
        named.prompts = offer.prompts.iter().map(|p| (*p).to_owned()).collect();
    }
    named
}

/// What `toolgate mcp list` says about a `never` server whose names clash: each clash (the
/// first five), then the ways out.
fn clash_reason(offer: &Offer<'_>, clashes: &[String], tools: &HashMap<String, Holder>) -> String {
    const SHOWN: usize = 5;
    let server = offer.server;
    let mut text = format!(
        "with prefix = \"never\" its names clash with names toolgate already has: {}",
        clashes
            .iter()
            .take(SHOWN)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    );
    if clashes.len() > SHOWN {
        text.push_str(&format!(" (+{} more)", clashes.len() - SHOWN));
    }
    let example = offer
        .tools
        .iter()
        .chain(&offer.prompts)
        .find(|n| tools.contains_key(**n))
        .or(offer.tools.first())
        .or(offer.prompts.first())
        .copied()
        .unwrap_or("NAME");
    text.push_str(&format!(
        "; so it is not mounted. Set `prefix = \"always\"` in [mcp_servers.{server}] (its names become `{}{example}`, …), or rename the clashing tools or prompts (on the server or the other side; `disabled_tools` hides a tool)",
        server_prefix(server)
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer<'a>(server: &'a str, prefix: Prefix, tools: &[&'a str]) -> Offer<'a> {
        Offer {
            server,
            prefix,
            tools: tools.to_vec(),
            prompts: Vec::new(),
            clashed: false,
        }
    }

    #[test]
    fn never_servers_keep_their_names_and_always_servers_are_prefixed() {
        let mut docs = offer("docs", Prefix::Never, &["search"]);
        docs.prompts = vec!["summarize"];
        let named = name_all(
            &[docs, offer("github", Prefix::Always, &["search"])],
            &Reserved::default(),
        );
        assert_eq!(named[0].tools, ["search"]);
        assert_eq!(named[0].prompts, ["summarize"]);
        assert_eq!(named[0].clash, None);
        assert_eq!(named[1].tools, ["mcp__github__search"]);
    }

    #[test]
    fn a_never_server_that_clashes_gets_no_names_and_the_reason() {
        let reserved = Reserved {
            tools: vec!["read_file".to_owned()],
            prompts: vec!["deploy".to_owned()],
        };
        let mut fs = offer("fs", Prefix::Never, &["read_file", "tree"]);
        fs.prompts = vec!["deploy"];
        let named = name_all(&[fs, offer("other", Prefix::Never, &["tree"])], &reserved);
        assert!(named[0].tools.is_empty() && named[0].prompts.is_empty());
        let reason = named[0].clash.as_deref().unwrap();
        assert!(
            reason.contains("tool `read_file` is toolgate's own tool"),
            "{reason}"
        );
        assert!(
            reason.contains("prompt `deploy` is a skill's prompt"),
            "{reason}"
        );
        assert!(reason.contains("`prefix = \"always\"` in [mcp_servers.fs]"));
        assert!(reason.contains("`mcp__fs__read_file`"), "{reason}");
        // The clashing server takes nothing: the next one keeps `tree`.
        assert_eq!(named[1].tools, ["tree"]);
    }

    #[test]
    fn the_later_of_two_never_servers_and_a_never_server_under_an_always_name_clash() {
        let named = name_all(
            &[
                offer("a", Prefix::Never, &["search", "mcp__b__x"]),
                offer("b", Prefix::Always, &["x"]),
                offer("c", Prefix::Never, &["search"]),
            ],
            &Reserved::default(),
        );
        let a = named[0].clash.as_deref().unwrap();
        assert!(
            a.contains("tool `mcp__b__x` is MCP server `b`'s tool"),
            "{a}"
        );
        // `a` offers nothing, so `c` has `search` to itself.
        assert_eq!(named[2].tools, ["search"]);
        let named = name_all(
            &[
                offer("a", Prefix::Never, &["search"]),
                offer("c", Prefix::Never, &["search"]),
            ],
            &Reserved::default(),
        );
        assert_eq!(named[0].tools, ["search"]);
        let c = named[1].clash.as_deref().unwrap();
        assert!(c.contains("tool `search` is MCP server `a`'s tool"), "{c}");
    }

    #[test]
    fn a_server_that_already_clashed_stays_unmounted_without_news() {
        let mut a = offer("a", Prefix::Never, &["read_file"]);
        a.clashed = true;
        let named = name_all(&[a], &Reserved::default());
        assert_eq!(named[0], Named::default());
    }

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(
            assign_names(&[("github", "create_issue")]),
            ["mcp__github__create_issue"]
        );
    }

    #[test]
    fn odd_characters_are_replaced() {
        assert_eq!(
            assign_names(&[("my server", "get.value/x")]),
            ["mcp__my_server__get_value_x"]
        );
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let tool = "a".repeat(80);
        let names = assign_names(&[("srv", &tool)]);
        assert_eq!(names[0].len(), MAX_NAME_LEN);
        assert!(names[0].starts_with("mcp__srv__aaaa"));
        assert_eq!(
            names,
            assign_names(&[("srv", &tool)]),
            "stable across calls"
        );
        let suffix = &names[0][MAX_NAME_LEN - 9..];
        assert!(suffix.starts_with('_'));
        assert!(suffix[1..].chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn collisions_get_distinct_names_and_the_clean_one_keeps_its_name() {
        let names = assign_names(&[("a.b", "x"), ("a_b", "x"), ("a b", "x")]);
        assert_eq!(names[1], "mcp__a_b__x");
        assert_ne!(names[0], names[2]);
        assert!(names[0].starts_with("mcp__a_b__x_"));
        assert!(names.iter().all(|n| n.len() <= MAX_NAME_LEN));
    }

    #[test]
    fn two_clean_names_that_collide_are_both_hashed() {
        let names = assign_names(&[("a__b", "c"), ("a", "b__c")]);
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| n.starts_with("mcp__a__b__c_")));
    }

    #[test]
    fn hash_is_pinned() {
        // A regression guard: renaming tools breaks users' permission rules.
        assert_eq!(stable_hash("github", "create_issue").len(), 8);
        assert_eq!(stable_hash("", ""), stable_hash("", ""));
        assert_ne!(stable_hash("a", "bc"), stable_hash("ab", "c"));
    }
}
