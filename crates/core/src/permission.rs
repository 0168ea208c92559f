//! Station 4, filtering by permission (seed 003 §9): allow / ask / deny rules by tool name,
//! by permission action and by namespace glob.
//!
//! A rule pattern is read by its shape: one with a `.` is a permission action (`fs.write`;
//! tool names never contain dots), one with `*` or `?` is a name glob (`mcp__github__*`),
//! anything else is an exact tool name. The most specific matching rule wins — exact name,
//! then globs by their count of literal characters, then actions, then `*` — and at equal
//! specificity deny beats ask beats allow. No rule means allow: in server mode the client in
//! front does its own asking (SPEC "Permissions").

use futures::future::BoxFuture;
use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

/// What a rule says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask a human first; where nobody can be asked this acts as deny.
    Ask,
    /// Never run it.
    Deny,
}

/// A policy's answer for one call, with the rule that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The decision.
    pub decision: Decision,
    /// The deciding rule as written in config (`deny = ["mcp__github__*"]`), if any.
    pub rule: Option<String>,
    /// The rule set the deciding rule belongs to when it is a tightening one (`project
    /// config`); `None` for the policy's own rules and when no rule decided.
    pub source: Option<String>,
}

/// A rule pattern that could not be read.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "permission rule `{pattern}` is not valid: {reason}; use a tool name, a glob such as `mcp__github__*`, or an action such as `fs.write`"
)]
pub struct PolicyError {
    /// The pattern.
    pub pattern: String,
    /// Why.
    pub reason: String,
}

#[derive(Debug, Clone)]
enum Pattern {
    Exact(String),
    Glob(GlobMatcher, usize),
    Action(String),
}

impl Pattern {
    fn parse(text: &str) -> Result<Self, PolicyError> {
        let err = |reason: &str| PolicyError {
            pattern: text.to_owned(),
            reason: reason.to_owned(),
        };
        if text.is_empty() {
            return Err(err("it is empty"));
        }
        if text.contains('.') {
            if text.contains(['*', '?']) {
                return Err(err("actions cannot contain wildcards"));
            }
            return Ok(Self::Action(text.to_owned()));
        }
        if text.contains(['*', '?', '[']) {
            let glob = Glob::new(text).map_err(|e| err(&e.to_string()))?;
            let literal = text
                .chars()
                .filter(|c| !matches!(c, '*' | '?' | '[' | ']'))
                .count();
            return Ok(Self::Glob(glob.compile_matcher(), literal));
        }
        Ok(Self::Exact(text.to_owned()))
    }

    /// Specificity rank when the pattern matches, or `None`.
    fn matches(&self, tool: &str, action: &str) -> Option<(u8, usize)> {
        match self {
            Self::Exact(name) => (name == tool).then_some((3, name.len())),
            Self::Glob(m, literal) if *literal > 0 => m.is_match(tool).then_some((2, *literal)),
            Self::Glob(m, _) => m.is_match(tool).then_some((0, 0)),
            Self::Action(a) => (a == action).then_some((1, a.len())),
        }
    }
}

#[derive(Debug, Clone)]
struct Rule {
    pattern: Pattern,
    text: String,
    decision: Decision,
}

/// A set of allow / ask / deny rules, optionally tightened by further sets.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// Rule sets that can only make a decision stricter (a project's config layer), with
    /// the name shown beside their deciding rule.
    tighter: Vec<(String, Policy)>,
}

impl Policy {
    /// The default policy: everything allowed.
    pub fn allow_all() -> Self {
        Self::default()
    }

    /// A policy from the three rule lists of config.
    ///
    /// ```
    /// use toolgate_core::{Decision, Policy};
    ///
    /// let deny = ["mcp__github__*".to_owned(), "fs.write".to_owned()];
    /// let policy = Policy::from_lists(&[], &[], &deny).unwrap();
    /// // A glob matches tool names, a dotted word the tool's permission action.
    /// assert_eq!(policy.decide("mcp__github__create_issue", "mcp.write").decision, Decision::Deny);
    /// assert_eq!(policy.decide("write_file", "fs.write").decision, Decision::Deny);
    /// assert_eq!(policy.decide("read_file", "fs.read").decision, Decision::Allow);
    /// // The verdict names the rule that decided, as written in config.
    /// assert_eq!(
    ///     policy.decide("write_file", "fs.write").rule.as_deref(),
    ///     Some(r#"deny = ["fs.write"]"#)
    /// );
    /// ```
    pub fn from_lists(
        allow: &[String],
        ask: &[String],
        deny: &[String],
    ) -> Result<Self, PolicyError> {
        let mut policy = Self::default();
        for (list, decision) in [
            (allow, Decision::Allow),
            (ask, Decision::Ask),
            (deny, Decision::Deny),
        ] {
            for text in list {
                policy.add(text, decision)?;
            }
        }
        Ok(policy)
    }

    /// Adds one rule.
    pub fn add(&mut self, pattern: &str, decision: Decision) -> Result<(), PolicyError> {
        let parsed = Pattern::parse(pattern)?;
        self.rules.push(Rule {
            pattern: parsed,
            text: pattern.to_owned(),
            decision,
        });
        Ok(())
    }

    /// This policy, tightened by `other` (named `label` in verdicts): each call gets the
    /// stricter of the two decisions, so nothing in `other` — an `allow`, a missing `deny` —
    /// can loosen what this policy decides.
    pub fn tightened_by(mut self, label: &str, other: Policy) -> Self {
        self.tighter.push((label.to_owned(), other));
        self
    }

    /// Decides a call of `tool`, whose permission action is `action`.
    pub fn decide(&self, tool: &str, action: &str) -> Verdict {
        let mut verdict = self.decide_own(tool, action);
        for (label, other) in &self.tighter {
            let theirs = other.decide(tool, action);
            if theirs.decision > verdict.decision {
                verdict = Verdict {
                    decision: theirs.decision,
                    rule: theirs.rule.map(|r| format!("{r} in the {label}")),
                    source: Some(label.clone()),
                };
            }
        }
        verdict
    }

    /// The decision of this policy's own rules.
    fn decide_own(&self, tool: &str, action: &str) -> Verdict {
        let best = self
            .rules
            .iter()
            .filter_map(|r| {
                r.pattern
                    .matches(tool, action)
                    .map(|rank| (rank, r.decision, r))
            })
            .max_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        match best {
            Some((_, decision, rule)) => {
                let list = match decision {
                    Decision::Allow => "allow",
                    Decision::Ask => "ask",
                    Decision::Deny => "deny",
                };
                Verdict {
                    decision,
                    rule: Some(format!("{list} = [\"{}\"]", rule.text)),
                    source: None,
                }
            }
            None => Verdict {
                decision: Decision::Allow,
                rule: None,
                source: None,
            },
        }
    }
}

/// A call an `ask` rule holds until a human answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The tool (the target, for a call through `run_tool`).
    pub tool: String,
    /// Its permission action (`fs.write`).
    pub action: String,
    /// The rule that asks, as written in config.
    pub rule: String,
    /// The call's arguments.
    pub args: serde_json::Value,
}

/// Someone who can answer `ask` rules (the agent CLI's user on a terminal). Remembering
/// "always, for this session" is the approver's business.
pub trait Approver: Send + Sync {
    /// Whether the call may run.
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'static, bool>;
}
