//! Names of mounted tools: `mcp__<server>__<tool>` (seed 000 "MCP", SPEC "MCP").
//!
//! Names are sanitised to `[A-Za-z0-9_-]` and kept to 64 characters, the limit of the
//! OpenAI and Anthropic tool arrays. A name that had to be changed (characters replaced or
//! cut) and that is too long or collides with another gets a suffix `_` + 8 hex digits of a
//! stable hash (FNV-1a) of the original server and tool names, so the same tool gets the
//! same name in every run and on every machine.

use std::collections::HashMap;

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

#[cfg(test)]
mod tests {
    use super::*;

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
