//! Which tools are direct and which deferred, and the catalog of deferred tools that
//! `search_tool`'s description carries.

use std::collections::BTreeSet;

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::index::split_server;
use super::{DisclosureMode, DisclosureSettings, PromotionCondition};
use crate::spec::DisclosureHint;

/// Names of the two disclosure tools.
pub const SEARCH_TOOL: &str = "search_tool";
/// See [`SEARCH_TOOL`].
pub const RUN_TOOL: &str = "run_tool";

/// Facts that hold for a whole session and may promote deferred tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFacts {
    /// The model provider the session talks to, as named in config (e.g. `deepseek`).
    pub provider: Option<String>,
}

/// A pattern of a `direct`/`deferred` list: exact name or glob.
#[derive(Debug, Clone)]
struct Pattern {
    glob: Option<GlobMatcher>,
    text: String,
    /// Exact names beat globs; among globs, more literal characters win.
    rank: (u8, usize),
}

impl Pattern {
    fn parse(text: &str) -> Result<Self, PlanError> {
        if text.contains(['*', '?', '[']) {
            let glob = Glob::new(text).map_err(|source| PlanError {
                pattern: text.to_owned(),
                source,
            })?;
            let literal = text
                .chars()
                .filter(|c| !matches!(c, '*' | '?' | '[' | ']'))
                .count();
            Ok(Self {
                glob: Some(glob.compile_matcher()),
                text: text.to_owned(),
                rank: (1, literal),
            })
        } else {
            Ok(Self {
                glob: None,
                text: text.to_owned(),
                rank: (2, text.len()),
            })
        }
    }

    fn matches(&self, name: &str) -> bool {
        match &self.glob {
            Some(g) => g.is_match(name),
            None => self.text == name,
        }
    }
}

/// Why a disclosure setting could not be used: a pattern that is not a glob.
#[derive(Debug, Clone, thiserror::Error)]
#[error("disclosure: `{pattern}`: {source}")]
pub struct PlanError {
    /// The pattern as configured.
    pub pattern: String,
    /// Why it does not parse.
    #[source]
    pub source: globset::Error,
}

/// The compiled rules: settings and session facts, applied to a tool set.
#[derive(Debug, Clone)]
pub struct Rules {
    mode: DisclosureMode,
    direct: Vec<Pattern>,
    deferred: Vec<Pattern>,
    promoted: Vec<Pattern>,
    catalog_budget: usize,
    promotion_servers: Vec<(String, Vec<Pattern>)>,
}

impl Rules {
    /// Compiles `settings` for a session with `facts`. Promotions on a provider are decided
    /// here, once; promotions on a server being present are decided per tool set.
    pub fn new(settings: &DisclosureSettings, facts: &SessionFacts) -> Result<Self, PlanError> {
        let parse = |list: &[String]| -> Result<Vec<Pattern>, PlanError> {
            list.iter().map(|p| Pattern::parse(p)).collect()
        };
        let mut promoted = Vec::new();
        let mut promotion_servers = Vec::new();
        for promotion in &settings.promote {
            let tools = parse(&promotion.tools)?;
            match &promotion.when {
                PromotionCondition::Provider(provider) => {
                    if facts
                        .provider
                        .as_deref()
                        .is_some_and(|p| p.eq_ignore_ascii_case(provider))
                    {
                        promoted.extend(tools);
                    }
                }
                PromotionCondition::Server(server) => {
                    promotion_servers.push((server.clone(), tools));
                }
            }
        }
        Ok(Self {
            mode: settings.mode,
            direct: parse(&settings.direct)?,
            deferred: parse(&settings.deferred)?,
            promoted,
            catalog_budget: settings.catalog_budget,
            promotion_servers,
        })
    }

    /// Splits tools of no particular hint into direct and deferred; see [`Rules::plan_with`].
    pub fn plan<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Plan {
        self.plan_with(names.into_iter().map(|n| (n, DisclosureHint::Auto)))
    }

    /// Splits tools (sorted by name, each with its own [`DisclosureHint`]) into direct and
    /// deferred; the disclosure entry points themselves are left out.
    pub fn plan_with<'a>(
        &self,
        tools: impl IntoIterator<Item = (&'a str, DisclosureHint)>,
    ) -> Plan {
        let tools: Vec<(&str, DisclosureHint)> = tools
            .into_iter()
            .filter(|(_, hint)| *hint != DisclosureHint::EntryPoint)
            .collect();
        let names: Vec<&str> = tools.iter().map(|(n, _)| *n).collect();
        let threshold_met = match self.mode {
            DisclosureMode::Off => false,
            DisclosureMode::On => true,
            DisclosureMode::Auto(n) => names.len() > n,
        };
        let servers: BTreeSet<&str> = names.iter().filter_map(|n| split_server(n).0).collect();
        let promoted: Vec<&Pattern> = self
            .promoted
            .iter()
            .chain(
                self.promotion_servers
                    .iter()
                    .filter(|(server, _)| servers.contains(server.as_str()))
                    .flat_map(|(_, tools)| tools),
            )
            .collect();
        let mut direct = Vec::new();
        let mut deferred = Vec::new();
        for (name, hint) in &tools {
            let is_direct = !threshold_met
                || promoted.iter().any(|p| p.matches(name))
                || self.default_direct(name, *hint);
            if is_direct {
                direct.push((*name).to_owned());
            } else {
                deferred.push((*name).to_owned());
            }
        }
        let active = threshold_met && !deferred.is_empty();
        if !active {
            direct.append(&mut deferred);
            direct.sort();
        }
        Plan {
            active,
            direct,
            deferred,
            catalog_budget: self.catalog_budget,
        }
    }

    /// Config's most specific `direct`/`deferred` pattern decides; without one, tools that
    /// say they are core ([`DisclosureHint::Direct`]) are direct and everything else
    /// deferred. Ties go to `direct`.
    fn default_direct(&self, name: &str, hint: DisclosureHint) -> bool {
        let best = |list: &[Pattern]| {
            list.iter()
                .filter(|p| p.matches(name))
                .map(|p| p.rank)
                .max()
        };
        match (best(&self.direct), best(&self.deferred)) {
            (Some(d), Some(f)) => d >= f,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => hint == DisclosureHint::Direct,
        }
    }
}

/// Direct and deferred tools of one tool set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Whether disclosure is on: some tools are deferred, `search_tool`/`run_tool` are shown.
    pub active: bool,
    /// Tools always in the array, sorted.
    pub direct: Vec<String>,
    /// Tools only in the catalog, sorted.
    pub deferred: Vec<String>,
    catalog_budget: usize,
}

impl Plan {
    /// Whether `name` is deferred.
    pub fn is_deferred(&self, name: &str) -> bool {
        self.deferred
            .binary_search_by(|n| n.as_str().cmp(name))
            .is_ok()
    }

    /// The catalog of deferred tools for `search_tool`'s description, at most
    /// `catalog_budget` characters. `summary` gives a tool's one-line summary. It degrades
    /// in steps so that it always fits: name + summary per tool, then names grouped by
    /// server, then tool counts per server.
    pub fn catalog(&self, summary: impl Fn(&str) -> String) -> String {
        let budget = self.catalog_budget;
        let full: String = self
            .deferred
            .iter()
            .map(|n| format!("- {n}: {}\n", summary(n)))
            .collect();
        if full.chars().count() <= budget {
            return full;
        }
        let groups = self.groups();
        let names: String = groups
            .iter()
            .map(|(server, tools)| match server {
                Some(s) => format!("- mcp__{s}__: {}\n", tools.join(", ")),
                None => format!("- {}\n", tools.join(", ")),
            })
            .collect();
        if names.chars().count() <= budget {
            return names;
        }
        let mut out = String::new();
        let mut shown = 0;
        for (server, tools) in &groups {
            let line = match server {
                Some(s) => format!("- mcp__{s}__*: {} tools\n", tools.len()),
                None => format!("- {} other tools\n", tools.len()),
            };
            // Keep room for the closing line.
            if out.chars().count() + line.chars().count() + 60 > budget {
                break;
            }
            out.push_str(&line);
            shown += tools.len();
        }
        let rest = self.deferred.len() - shown;
        if rest > 0 {
            out.push_str(&format!("- …and {rest} more tools; search to find them\n"));
        }
        out
    }

    fn groups(&self) -> Vec<(Option<String>, Vec<String>)> {
        let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
        for name in &self.deferred {
            let (server, short) = split_server(name);
            let server = server.map(str::to_owned);
            let shown = if server.is_some() {
                short
            } else {
                name.as_str()
            };
            match groups.iter_mut().find(|(s, _)| *s == server) {
                Some((_, tools)) => tools.push(shown.to_owned()),
                None => groups.push((server, vec![shown.to_owned()])),
            }
        }
        groups
    }
}

/// The first sentence of `description`, at most 100 characters.
pub fn summary_line(description: &str) -> String {
    let line = description
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    let sentence = match line.find(". ") {
        Some(i) => &line[..i],
        None => line.trim_end_matches('.'),
    };
    if sentence.chars().count() <= 100 {
        sentence.to_owned()
    } else {
        let cut: String = sentence.chars().take(99).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disclosure::Promotion;

    fn settings(mode: DisclosureMode) -> DisclosureSettings {
        DisclosureSettings {
            mode,
            ..DisclosureSettings::default()
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("mcp__srv__tool_{i:02}")).collect()
    }

    #[test]
    fn auto_n_boundary_counts_all_tools() {
        let rules = Rules::new(
            &settings(DisclosureMode::Auto(15)),
            &SessionFacts::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let at = names(15);
        let plan = rules.plan(at.iter().map(String::as_str));
        assert!(!plan.active);
        assert_eq!(plan.direct.len(), 15);
        let above = names(16);
        let plan = rules.plan(above.iter().map(String::as_str));
        assert!(plan.active);
        assert_eq!(plan.deferred.len(), 16);
    }

    #[test]
    fn most_specific_pattern_wins_and_core_tools_stay_direct() {
        let mut s = settings(DisclosureMode::On);
        s.direct = vec!["mcp__github__*".into()];
        s.deferred = vec!["mcp__github__delete_*".into(), "grep".into()];
        let rules = Rules::new(&s, &SessionFacts::default()).unwrap_or_else(|e| panic!("{e}"));
        let core = DisclosureHint::Direct;
        let auto = DisclosureHint::Auto;
        let plan = rules.plan_with([
            ("grep", core),
            ("mcp__github__create_issue", auto),
            ("mcp__github__delete_file", auto),
            ("mcp__slack__post", auto),
            ("read_file", core),
            ("search_tool", DisclosureHint::EntryPoint),
        ]);
        assert_eq!(plan.direct, ["mcp__github__create_issue", "read_file"]);
        assert_eq!(
            plan.deferred,
            ["grep", "mcp__github__delete_file", "mcp__slack__post"]
        );
    }

    #[test]
    fn promotion_follows_session_facts_not_vendor_names() {
        let mut s = settings(DisclosureMode::On);
        s.promote = vec![
            Promotion {
                tools: vec!["web_search".into()],
                when: PromotionCondition::Provider("acme".into()),
            },
            Promotion {
                tools: vec!["mcp__github__create_issue".into()],
                when: PromotionCondition::Server("github".into()),
            },
        ];
        let tools = ["mcp__github__create_issue", "mcp__github__x", "web_search"];
        let plain = Rules::new(&s, &SessionFacts::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plain.plan(tools).direct, ["mcp__github__create_issue"]);
        let acme = SessionFacts {
            provider: Some("ACME".into()),
        };
        let rules = Rules::new(&s, &acme).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rules.plan(tools).direct,
            ["mcp__github__create_issue", "web_search"]
        );
    }

    #[test]
    fn catalog_degrades_to_fit_its_budget() {
        let mut s = settings(DisclosureMode::On);
        s.catalog_budget = 200;
        let rules = Rules::new(&s, &SessionFacts::default()).unwrap_or_else(|e| panic!("{e}"));
        let few = rules.plan(["mcp__a__x", "mcp__a__y"]);
        assert_eq!(
            few.catalog(|n| format!("does {n}")),
            "- mcp__a__x: does mcp__a__x\n- mcp__a__y: does mcp__a__y\n"
        );
        let many: Vec<String> = (0..500)
            .map(|i| format!("mcp__s{}__tool_{i}", i % 7))
            .collect();
        let plan = rules.plan(many.iter().map(String::as_str));
        let catalog = plan.catalog(|_| "a long summary of what the tool does".into());
        assert!(catalog.chars().count() <= 200, "{catalog}");
        assert!(catalog.contains("tools"), "{catalog}");
    }

    #[test]
    fn summary_is_the_first_sentence() {
        assert_eq!(summary_line("Read a file. Returns lines."), "Read a file");
        assert_eq!(summary_line("\nList things."), "List things");
    }
}
