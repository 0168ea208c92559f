//! The last hop (client profiles): what the client in front of toolgate does to a result
//! before the model reads it.
//!
//! Each MCP session gets a [`ClientProfile`] at `initialize`, chosen from `clientInfo` by
//! [`ClientProfiles::choose`] (built-in measured profiles, `[clients.NAME]` in config, a
//! conservative one for unknown clients), and keeps it in its [`crate::Session`]. Tools that
//! page (read_file, list_dir, grep, search_files, job_output, search_tool) and the result
//! budget read the session's [`crate::Session::limits`] and size every
//! result so that the client passes it on whole: no client-side cut, so every footer and
//! truncation field stays true.
//!
//! Sizes are counted in UTF-8 bytes of the text, which is never less than its characters:
//! a result that fits in bytes fits whatever a client counts.
//!
//! A profile also says what the client adds to every call's arguments for its own use
//! ([`ClientProfile::injected_args`], dropped by the dispatcher) and how it names toolgate's
//! tools to its model ([`ToolNames`], for result text that tells the model which tool to call).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// What one client does with tool results, as measured (see `tests/interop/clients`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientProfile {
    /// Profile name (`claude-code`, `codex`, `gemini`, `default`, or a `[clients.NAME]` key).
    pub name: String,
    /// Largest successful result, in bytes of text, the client hands the model untouched.
    pub max_result_chars: usize,
    /// Largest error result (`isError`) the client hands the model untouched.
    pub max_error_chars: usize,
    /// Whether the client shows the model `structuredContent` instead of the text content.
    /// Such sessions declare no `outputSchema` and get text only.
    pub shows_structured: bool,
    /// Argument fields the client adds to every tool's schema for its own use, and so to every
    /// call: dropped from this client's calls of a tool whose schema does not declare them.
    #[serde(default)]
    pub injected_args: Vec<String>,
    /// How the client names a server's tools to its model, `{server}` standing for the key
    /// toolgate has in the client's MCP settings and `{tool}` for the tool's own name;
    /// `None`: by their own names (see [`ToolNames`]).
    #[serde(default)]
    pub tool_names: Option<String>,
}

impl ClientProfile {
    /// Claude Code 2.1.328 (`clientInfo.name` `claude-code`), measured with
    /// `tests/interop/clients/measure.py claude`: a successful result of 50,000 characters
    /// reached the model whole and one of 50,312 was saved to a file (the model saw a 2 KB
    /// preview); an error result of 11,015 characters arrived whole and one of 11,093 was cut
    /// to 5,000 head + 5,000 tail characters; with `structuredContent` the model saw its
    /// JSON instead of the text. Claude Code counts characters; toolgate counts bytes, so
    /// multi-byte text gets smaller pages than it could (never cut ones).
    /// Its model calls an MCP tool `mcp__<server>__<tool>`.
    pub fn claude_code() -> Self {
        Self {
            name: "claude-code".to_owned(),
            max_result_chars: 49_000,
            max_error_chars: 10_500,
            shows_structured: true,
            injected_args: Vec::new(),
            tool_names: Some("mcp__{server}__{tool}".to_owned()),
        }
    }

    /// Codex CLI 0.169.0 (`clientInfo.name` `codex-mcp-client`), measured with
    /// `tests/interop/clients/measure.py codex`: any MCP result over about 12,000 bytes
    /// (11,953 passed, 12,031 did not; with 2-byte characters the cut came at 6,000
    /// characters, so Codex counts bytes) loses its middle to Codex's own `…N tokens
    /// truncated…` marker, success and error alike; Codex prefixes `Wall time: … Output:`;
    /// `structuredContent`, when present, is what the model sees. Its model calls an MCP tool
    /// by its own name inside the server's tool group, so toolgate's names stand as they are.
    pub fn codex() -> Self {
        Self {
            name: "codex".to_owned(),
            max_result_chars: 11_500,
            max_error_chars: 11_500,
            shows_structured: true,
            injected_args: Vec::new(),
            tool_names: None,
        }
    }

    /// Gemini CLI 0.61.0 (`clientInfo.name` `gemini-cli-mcp-client`), measured with
    /// `tests/interop/clients/measure.py gemini`: a successful result of 39,687 characters
    /// reached the model whole and one of 40,000 was saved to a file, the model seeing
    /// "Output too large" with its first 20 % and last 80 % of 40,000 characters (Gemini CLI
    /// cuts an MCP text over 40,000 characters, its `<untrusted_context>` wrapping of 41
    /// included, or over four times the tokens left in the model's context when that is
    /// less); error results arrived whole up to 160,000 characters, but JSON-escaped inside
    /// Gemini CLI's own "MCP tool … reported tool error" message, so they are held to the
    /// same size; `structuredContent` was not shown, the text was.
    ///
    /// It adds `wait_for_previous` (a boolean: run after the calls before it in the turn) to
    /// every tool's schema and forwards it to the server with the call; its system prompt
    /// tells Gemini 3 models they must set it. Its model calls an MCP tool
    /// `mcp_<server>_<tool>`, beside its own `read_file`, `grep_search` and
    /// `run_shell_command`, so a bare `read_file` in a result leads the model to Gemini's tool.
    pub fn gemini() -> Self {
        Self {
            name: "gemini".to_owned(),
            max_result_chars: 39_000,
            max_error_chars: 39_000,
            shows_structured: false,
            injected_args: vec!["wait_for_previous".to_owned()],
            tool_names: Some("mcp_{server}_{tool}".to_owned()),
        }
    }

    /// Unknown clients: sized like the strictest measured client, keeping `outputSchema` and
    /// `structuredContent` (the spec's form, which SDK clients read; it always carries the
    /// whole text too).
    pub fn conservative() -> Self {
        Self {
            name: "default".to_owned(),
            max_result_chars: 10_500,
            max_error_chars: 10_500,
            shows_structured: false,
            injected_args: Vec::new(),
            tool_names: None,
        }
    }

    /// The largest result of this kind that passes untouched.
    pub fn cap(&self, failed: bool) -> usize {
        if failed {
            self.max_error_chars
        } else {
            self.max_result_chars
        }
    }
}

/// `[clients.NAME]`: a client profile override, or a new profile for other clients.
///
/// ```toml
/// [clients.codex]            # adjust a built-in profile (claude-code, codex, gemini, default)
/// max_result_chars = 8000
///
/// [clients.gemini]           # toolgate is `toolgate` in Gemini CLI's mcpServers
/// tool_names = "mcp_toolgate_{tool}"
///
/// [clients.my-ide]           # a new one, chosen for these clientInfo names
/// match = ["my-ide", "my-ide-mcp"]
/// max_result_chars = 30000
/// max_error_chars = 30000
/// shows_structured = false
/// injected_args = ["ide_trace_id"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ClientProfileConfig {
    /// `clientInfo.name` values (case-insensitive) this profile is for; default: the key.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    #[schemars(example = &["my-ide"])]
    pub names: Option<Vec<String>>,
    /// Largest successful result passed untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = 30_000)]
    pub max_result_chars: Option<usize>,
    /// Largest error result passed untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = 30_000)]
    pub max_error_chars: Option<usize>,
    /// Whether the client shows `structuredContent` instead of the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = false)]
    pub shows_structured: Option<bool>,
    /// Argument fields the client adds to every call for its own use: dropped from its calls
    /// of a tool whose schema does not declare them (replaces the built-in list).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = &["wait_for_previous"])]
    pub injected_args: Option<Vec<String>>,
    /// How the client names toolgate's tools to its model, for result text that names one:
    /// `{tool}` is the tool's name, `{server}` toolgate's key in the client's MCP settings
    /// (write the key in when you know it); `""`: by their own names.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = "mcp_toolgate_{tool}")]
    pub tool_names: Option<String>,
}

/// Smallest cap a profile may set: below it a spill pointer and a footer no longer fit.
pub const MIN_CLIENT_CHARS: usize = 4_000;

/// The profiles a server chooses from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientProfiles {
    /// (clientInfo names, profile), checked in order.
    known: Vec<(Vec<String>, ClientProfile)>,
    fallback: ClientProfile,
}

impl Default for ClientProfiles {
    fn default() -> Self {
        Self {
            known: vec![
                (
                    vec!["claude-code".to_owned(), "claude code".to_owned()],
                    ClientProfile::claude_code(),
                ),
                (
                    vec!["codex-mcp-client".to_owned(), "codex".to_owned()],
                    ClientProfile::codex(),
                ),
                (
                    vec!["gemini-cli-mcp-client".to_owned(), "gemini-cli".to_owned()],
                    ClientProfile::gemini(),
                ),
            ],
            fallback: ClientProfile::conservative(),
        }
    }
}

impl ClientProfiles {
    /// The built-in profiles with `[clients.NAME]` applied (`default` adjusts the profile for
    /// unknown clients). Caps below [`MIN_CLIENT_CHARS`] are raised to it.
    pub fn with_config(config: &BTreeMap<String, ClientProfileConfig>) -> Self {
        let mut profiles = Self::default();
        for (key, entry) in config {
            let apply = |p: &mut ClientProfile| {
                if let Some(n) = entry.max_result_chars {
                    p.max_result_chars = n.max(MIN_CLIENT_CHARS);
                }
                if let Some(n) = entry.max_error_chars {
                    p.max_error_chars = n.max(MIN_CLIENT_CHARS);
                }
                if let Some(s) = entry.shows_structured {
                    p.shows_structured = s;
                }
                if let Some(fields) = &entry.injected_args {
                    p.injected_args.clone_from(fields);
                }
                if let Some(template) = &entry.tool_names {
                    p.tool_names = (!template.is_empty()).then(|| template.clone());
                }
            };
            let names: Vec<String> = entry
                .names
                .clone()
                .unwrap_or_else(|| vec![key.clone()])
                .iter()
                .map(|n| n.to_lowercase())
                .collect();
            if key == "default" {
                apply(&mut profiles.fallback);
                continue;
            }
            if let Some((known_names, profile)) =
                profiles.known.iter_mut().find(|(_, p)| p.name == *key)
            {
                apply(profile);
                if entry.names.is_some() {
                    *known_names = names;
                }
                continue;
            }
            let mut profile = ClientProfile {
                name: key.clone(),
                ..profiles.fallback.clone()
            };
            apply(&mut profile);
            // Config entries are checked before the built-ins, so they can claim a name.
            profiles.known.insert(0, (names, profile));
        }
        profiles
    }

    /// The profile for a client that called itself `name` at `initialize`.
    pub fn choose(&self, name: &str) -> ClientProfile {
        let name = name.trim().to_lowercase();
        self.known
            .iter()
            .find(|(names, _)| names.contains(&name))
            .map_or_else(|| self.fallback.clone(), |(_, p)| p.clone())
    }

    /// Every profile, the fallback last.
    pub fn all(&self) -> impl Iterator<Item = &ClientProfile> {
        self.known
            .iter()
            .map(|(_, p)| p)
            .chain(std::iter::once(&self.fallback))
    }
}

/// How a session's client names toolgate's tools to its model: what result text uses when it
/// tells the model to call one (a spill pointer's `read_file`, a job's `job_output`).
///
/// toolgate does not know the key it has in the client's MCP settings, so a template that
/// still holds `{server}` names the tool `mcp_<server>_read_file`: the form the model sees in
/// its tool list, never another tool's name (Gemini CLI has its own `read_file`). A user who
/// writes the key into `[clients.NAME] tool_names` gets the exact name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolNames {
    template: Option<Arc<str>>,
}

impl ToolNames {
    /// The names a profile's `tool_names` template gives.
    pub fn from_profile(profile: &ClientProfile) -> Self {
        Self {
            template: profile.tool_names.as_deref().map(Arc::from),
        }
    }

    /// The name the client's model calls toolgate's `tool` by.
    pub fn of<'a>(&self, tool: &'a str) -> Cow<'a, str> {
        match &self.template {
            None => Cow::Borrowed(tool),
            Some(template) => Cow::Owned(
                template
                    .replace("{server}", "<server>")
                    .replace("{tool}", tool),
            ),
        }
    }
}

/// The session's result-size limits: the one accessor every sizing decision reads (the
/// budget, the paging tools, shell excerpts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientLimits {
    /// Largest successful result that reaches the model whole; `None` = no client limit.
    pub result_chars: Option<usize>,
    /// Largest error result that reaches the model whole.
    pub error_chars: Option<usize>,
}

impl ClientLimits {
    /// Room kept for a footer, a spill pointer or a client's own wrapping ("Wall time: …",
    /// a system reminder) beside a page.
    pub const FOOTER_ROOM: usize = 600;

    /// The limits a profile sets.
    pub fn from_profile(profile: &ClientProfile) -> Self {
        Self {
            result_chars: Some(profile.max_result_chars),
            error_chars: Some(profile.max_error_chars),
        }
    }

    /// The cap for a result of this kind, when the client has one.
    pub fn cap(&self, failed: bool) -> Option<usize> {
        if failed {
            self.error_chars
        } else {
            self.result_chars
        }
    }

    /// Most bytes of content in one page of a paging tool (its footer not counted): `own`
    /// (the tool's configured limit) or less, so that page plus footer fits the client.
    pub fn page_bytes(&self, own: usize) -> usize {
        match self.result_chars {
            Some(cap) => own.min(cap.saturating_sub(Self::FOOTER_ROOM).max(1_000)),
            None => own,
        }
    }

    /// Most characters of a result of this kind before the budget spills it: `own` (the
    /// configured budget) or less. Shell excerpts and the budget read this.
    pub fn result_budget(&self, own: usize, failed: bool) -> usize {
        match self.cap(failed) {
            Some(cap) => own.min(cap.saturating_sub(Self::FOOTER_ROOM / 2)),
            None => own,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_clients_get_their_measured_profiles_and_others_the_conservative_one() {
        let profiles = ClientProfiles::default();
        assert_eq!(profiles.choose("claude-code").name, "claude-code");
        assert_eq!(profiles.choose("codex-mcp-client").name, "codex");
        assert_eq!(profiles.choose("Codex-MCP-Client").name, "codex");
        assert_eq!(profiles.choose("gemini-cli-mcp-client").name, "gemini");
        let other = profiles.choose("some-ide");
        assert_eq!(other, ClientProfile::conservative());
        assert!(!other.shows_structured);
        assert!(other.injected_args.is_empty());
    }

    #[test]
    fn tools_are_named_as_the_client_lists_them_with_the_key_written_in_when_known() {
        let named = |p: &ClientProfile| ToolNames::from_profile(p).of("read_file").into_owned();
        assert_eq!(named(&ClientProfile::conservative()), "read_file");
        assert_eq!(named(&ClientProfile::codex()), "read_file");
        assert_eq!(
            named(&ClientProfile::claude_code()),
            "mcp__<server>__read_file"
        );
        assert_eq!(named(&ClientProfile::gemini()), "mcp_<server>_read_file");
        let mut config = BTreeMap::new();
        config.insert(
            "gemini".to_owned(),
            ClientProfileConfig {
                tool_names: Some("mcp_toolgate_{tool}".to_owned()),
                injected_args: Some(vec!["trace".to_owned()]),
                ..Default::default()
            },
        );
        config.insert(
            "claude-code".to_owned(),
            ClientProfileConfig {
                tool_names: Some(String::new()),
                ..Default::default()
            },
        );
        let profiles = ClientProfiles::with_config(&config);
        let gemini = profiles.choose("gemini-cli-mcp-client");
        assert_eq!(named(&gemini), "mcp_toolgate_read_file");
        assert_eq!(gemini.injected_args, ["trace"]);
        assert_eq!(named(&profiles.choose("claude-code")), "read_file");
    }

    #[test]
    fn config_adjusts_built_ins_the_default_and_adds_new_clients() {
        let mut config = BTreeMap::new();
        config.insert(
            "codex".to_owned(),
            ClientProfileConfig {
                max_result_chars: Some(8_000),
                ..Default::default()
            },
        );
        config.insert(
            "default".to_owned(),
            ClientProfileConfig {
                shows_structured: Some(true),
                max_error_chars: Some(10), // raised to the floor
                ..Default::default()
            },
        );
        config.insert(
            "my-ide".to_owned(),
            ClientProfileConfig {
                names: Some(vec!["My-IDE".to_owned(), "my-ide-mcp".to_owned()]),
                max_result_chars: Some(30_000),
                ..Default::default()
            },
        );
        let profiles = ClientProfiles::with_config(&config);
        let codex = profiles.choose("codex-mcp-client");
        assert_eq!(codex.max_result_chars, 8_000);
        assert_eq!(
            codex.max_error_chars,
            ClientProfile::codex().max_error_chars
        );
        let unknown = profiles.choose("x");
        assert!(unknown.shows_structured);
        assert_eq!(unknown.max_error_chars, MIN_CLIENT_CHARS);
        let mine = profiles.choose("my-ide-mcp");
        assert_eq!(mine.name, "my-ide");
        assert_eq!(mine.max_result_chars, 30_000);
        assert_eq!(profiles.choose("my-ide").name, "my-ide");
    }

    #[test]
    fn limits_come_from_the_session_and_are_absent_without_a_client() {
        let session = crate::Session::unattended();
        assert_eq!(session.limits(), ClientLimits::default());
        assert_eq!(session.limits().page_bytes(50_000), 50_000);
        session.adopt_profile(ClientProfile::codex());
        let limits = session.limits();
        assert_eq!(limits.cap(false), Some(11_500));
        assert!(limits.page_bytes(50 * 1024) + ClientLimits::FOOTER_ROOM <= 11_500);
        assert!(limits.result_budget(50_000, true) <= 11_500);
        assert_eq!(limits.result_budget(5_000, false), 5_000);
    }
}
