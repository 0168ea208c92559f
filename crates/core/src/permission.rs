//! Filtering tools by permission: allow / ask / deny rules by tool name, by permission
//! action and by namespace glob.
//!
//! A rule pattern is read by its shape: one with a `.` is a permission action (`fs.write`;
//! tool names never contain dots), one with `*` or `?` is a name glob (`mcp__github__*`),
//! anything else is an exact tool name. The most specific matching rule wins — exact name,
//! then globs by their count of literal characters, then actions, then `*` — and at equal
//! specificity deny beats ask beats allow. No rule means allow: in server mode the client in
//! front does its own asking.
//!
//! A rule may say whom it is for (team mode): `PATTERN if CLAIM = "VALUE"` applies only to
//! callers whose token carries that claim, `PATTERN unless CLAIM = "VALUE"` only to the
//! others. `CLAIM` is `sub`, `iss`, `group` (one of the token's groups) or `scope` (one of
//! its scopes). A rule whose condition does not hold is skipped; the ordering above is
//! unchanged. A session without an identity (stdio, `toolgate call`, the static token)
//! holds no claim: it matches no `if` and every `unless`, so
//! `deny = ["run_shell unless group = \"eng\""]` denies it — the safe side for deny rules.

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use crate::identity::Identity;

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
    "permission rule `{pattern}` is not valid: {reason}; use a tool name, a glob such as `mcp__github__*`, or an action such as `fs.write`, optionally followed by one condition: `if CLAIM = \"VALUE\"` or `unless CLAIM = \"VALUE\"`, where CLAIM is sub, iss, group or scope"
)]
pub struct PolicyError {
    /// The pattern.
    pub pattern: String,
    /// Why.
    pub reason: String,
}

/// A claim of the caller's identity a condition reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    Sub,
    Iss,
    Group,
    Scope,
}

/// `if CLAIM = "VALUE"` (`holds_when` true) or `unless CLAIM = "VALUE"` (false).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Condition {
    holds_when: bool,
    claim: Claim,
    value: String,
}

/// Why a rule's condition cannot be read (the `reason` of a [`PolicyError`]).
#[derive(Debug, thiserror::Error)]
enum ConditionError {
    #[error("expected `if` or `unless` after the pattern `{0}`")]
    NoKeyword(String),
    #[error("the condition has no `=`")]
    NoEquals,
    #[error("`{0}` is not a claim a condition can read")]
    UnknownClaim(String),
    #[error("the value {0} is not one non-empty double-quoted string")]
    BadValue(String),
}

impl Condition {
    /// Reads ` if group = "eng"` off the end of a rule; returns the pattern part and the
    /// condition, if the rule has one. Strict: one condition, `=` only, a double-quoted value.
    fn split(text: &str) -> Result<(&str, Option<Self>), ConditionError> {
        let mut words = text.splitn(2, char::is_whitespace);
        let pattern = words.next().unwrap_or_default();
        let Some(rest) = words.next().map(str::trim) else {
            return Ok((pattern, None));
        };
        let (holds_when, rest) = if let Some(rest) = rest.strip_prefix("if ") {
            (true, rest)
        } else if let Some(rest) = rest.strip_prefix("unless ") {
            (false, rest)
        } else {
            return Err(ConditionError::NoKeyword(pattern.to_owned()));
        };
        let Some((claim, value)) = rest.split_once('=') else {
            return Err(ConditionError::NoEquals);
        };
        let claim = match claim.trim() {
            "sub" => Claim::Sub,
            "iss" => Claim::Iss,
            "group" => Claim::Group,
            "scope" => Claim::Scope,
            other => return Err(ConditionError::UnknownClaim(other.to_owned())),
        };
        let value = value.trim();
        let inner = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .filter(|v| !v.is_empty() && !v.contains('"'))
            .ok_or_else(|| ConditionError::BadValue(value.to_owned()))?;
        Ok((
            pattern,
            Some(Self {
                holds_when,
                claim,
                value: inner.to_owned(),
            }),
        ))
    }

    /// Whether the caller has the claim; nobody (no identity) has none.
    fn claimed_by(&self, who: Option<&Identity>) -> bool {
        let Some(who) = who else { return false };
        match self.claim {
            Claim::Sub => who.subject == self.value,
            Claim::Iss => who.issuer.as_deref() == Some(self.value.as_str()),
            Claim::Group => who.groups.contains(&self.value),
            Claim::Scope => who.scopes.contains(&self.value),
        }
    }

    fn holds_for(&self, who: Option<&Identity>) -> bool {
        self.claimed_by(who) == self.holds_when
    }
}

/// Whose claims a decision reads.
#[derive(Debug, Clone, Copy)]
enum Caller<'a> {
    /// This caller (or nobody, `None`).
    Is(Option<&'a Identity>),
    /// The most favourable caller one could be: `if`-allow and `if`-ask rules hold, no
    /// conditional deny does. What it is denied, everyone is.
    Best,
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
    condition: Option<Condition>,
    text: String,
    decision: Decision,
}

impl Rule {
    fn applies_to(&self, caller: Caller<'_>) -> bool {
        match (&self.condition, caller) {
            (None, _) => true,
            (Some(c), Caller::Is(who)) => c.holds_for(who),
            (Some(_), Caller::Best) => self.decision != Decision::Deny,
        }
    }
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

    /// Adds one rule: a pattern, optionally followed by `if CLAIM = "VALUE"` or
    /// `unless CLAIM = "VALUE"`.
    pub fn add(&mut self, rule: &str, decision: Decision) -> Result<(), PolicyError> {
        let (pattern, condition) = Condition::split(rule.trim()).map_err(|e| PolicyError {
            pattern: rule.to_owned(),
            reason: e.to_string(),
        })?;
        let parsed = Pattern::parse(pattern).map_err(|e| PolicyError {
            pattern: rule.to_owned(),
            reason: e.reason,
        })?;
        self.rules.push(Rule {
            pattern: parsed,
            condition,
            text: rule.to_owned(),
            decision,
        });
        Ok(())
    }

    /// Whether some rule (here or in a tightening set) has a condition on the caller, so
    /// that two callers may be decided differently.
    pub fn has_conditions(&self) -> bool {
        self.rules.iter().any(|r| r.condition.is_some())
            || self.tighter.iter().any(|(_, p)| p.has_conditions())
    }

    /// This policy, tightened by `other` (named `label` in verdicts): each call gets the
    /// stricter of the two decisions, so nothing in `other` — an `allow`, a missing `deny` —
    /// can loosen what this policy decides.
    pub fn tightened_by(mut self, label: &str, other: Policy) -> Self {
        self.tighter.push((label.to_owned(), other));
        self
    }

    /// Makes `registry`'s lists follow this policy (filtering is part of visibility): a
    /// tool denied to every caller leaves every snapshot's list, one denied only to some
    /// callers (a rule with a condition) leaves those callers' lists. A call by name still
    /// reaches the dispatcher, which answers with the denial.
    pub fn filter_lists_of(&self, registry: &crate::registry::Registry) {
        let everyone = self.clone();
        registry.set_visibility(std::sync::Arc::new(
            move |tool: &dyn crate::tool::DynTool| {
                !everyone.denies_everyone(&tool.spec().name, &tool.meta().action)
            },
        ));
        if self.has_conditions() {
            let per_caller = self.clone();
            registry.set_caller_visibility(std::sync::Arc::new(
                move |tool: &dyn crate::tool::DynTool, caller: Option<&Identity>| {
                    per_caller
                        .decide_for(&tool.spec().name, &tool.meta().action, caller)
                        .decision
                        != Decision::Deny
                },
            ));
        }
    }

    /// Decides a call of `tool`, whose permission action is `action`, by a caller without
    /// an identity (stdio, the command line): see [`Policy::decide_for`].
    pub fn decide(&self, tool: &str, action: &str) -> Verdict {
        self.decide_for(tool, action, None)
    }

    /// Decides a call of `tool`, whose permission action is `action`, by `caller` (`None`:
    /// no identity, which matches no `if` condition and every `unless` one).
    pub fn decide_for(&self, tool: &str, action: &str, caller: Option<&Identity>) -> Verdict {
        self.decide_as(tool, action, Caller::Is(caller))
    }

    /// Whether every caller, whatever their claims, is denied `tool`: such a tool is hidden
    /// from every list, while one only some callers are denied is filtered per session.
    pub fn denies_everyone(&self, tool: &str, action: &str) -> bool {
        self.decide_as(tool, action, Caller::Best).decision == Decision::Deny
    }

    fn decide_as(&self, tool: &str, action: &str, caller: Caller<'_>) -> Verdict {
        let mut verdict = self.decide_own(tool, action, caller);
        for (label, other) in &self.tighter {
            let theirs = other.decide_as(tool, action, caller);
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
    fn decide_own(&self, tool: &str, action: &str, caller: Caller<'_>) -> Verdict {
        let best = self
            .rules
            .iter()
            .filter(|r| r.applies_to(caller))
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
                    // As TOML writes it: a condition's quotes are escaped.
                    rule: Some(format!("{list} = [{:?}]", rule.text)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(groups: &[&str], scopes: &[&str]) -> Identity {
        Identity {
            subject: "alice".to_owned(),
            issuer: Some("https://issuer.example".to_owned()),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn policy(allow: &[&str], deny: &[&str]) -> Policy {
        let list = |l: &[&str]| l.iter().map(|r| (*r).to_owned()).collect::<Vec<_>>();
        Policy::from_lists(&list(allow), &[], &list(deny)).unwrap()
    }

    #[test]
    fn unless_group_denies_other_groups_and_callers_without_identity() {
        let p = policy(&[], &[r#"mcp__github__* unless group = "eng""#]);
        let tool = "mcp__github__create_issue";
        let eng = caller(&["eng"], &[]);
        let ops = caller(&["ops"], &[]);
        assert_eq!(
            p.decide_for(tool, "mcp.call", Some(&eng)).decision,
            Decision::Allow
        );
        assert_eq!(
            p.decide_for(tool, "mcp.call", Some(&ops)).decision,
            Decision::Deny
        );
        let nobody = p.decide_for(tool, "mcp.call", None);
        assert_eq!(nobody.decision, Decision::Deny);
        // The verdict names the rule as written, quotes escaped as TOML writes them.
        assert_eq!(
            nobody.rule.as_deref(),
            Some(r#"deny = ["mcp__github__* unless group = \"eng\""]"#)
        );
    }

    #[test]
    fn if_scope_allows_only_callers_with_the_scope() {
        let p = policy(&[r#"run_shell if scope = "tools:shell""#], &["shell.exec"]);
        let with = caller(&[], &["tools:shell"]);
        let without = caller(&[], &["tools:read"]);
        assert_eq!(
            p.decide_for("run_shell", "shell.exec", Some(&with))
                .decision,
            Decision::Allow
        );
        assert_eq!(
            p.decide_for("run_shell", "shell.exec", Some(&without))
                .decision,
            Decision::Deny
        );
        // No identity matches no `if`.
        assert_eq!(p.decide("run_shell", "shell.exec").decision, Decision::Deny);
    }

    #[test]
    fn sub_and_iss_conditions_compare_exactly() {
        let p = policy(
            &[],
            &[
                r#"* unless sub = "alice""#,
                r#"fs.write if iss = "https://other""#,
            ],
        );
        let alice = caller(&[], &[]);
        let bob = Identity {
            subject: "bob".to_owned(),
            ..caller(&[], &[])
        };
        assert_eq!(
            p.decide_for("grep", "fs.read", Some(&alice)).decision,
            Decision::Allow
        );
        assert_eq!(
            p.decide_for("grep", "fs.read", Some(&bob)).decision,
            Decision::Deny
        );
        assert_eq!(
            p.decide_for("write_file", "fs.write", Some(&alice))
                .decision,
            Decision::Allow
        );
        let other = Identity {
            issuer: Some("https://other".to_owned()),
            ..caller(&[], &[])
        };
        assert_eq!(
            p.decide_for("write_file", "fs.write", Some(&other))
                .decision,
            Decision::Deny
        );
    }

    #[test]
    fn a_rule_whose_condition_fails_does_not_apply_and_specificity_still_orders() {
        // The exact allow beats the glob deny only for eng; for others the glob decides.
        let p = policy(
            &[r#"mcp__github__get_issue if group = "eng""#],
            &["mcp__github__*"],
        );
        let eng = caller(&["eng"], &[]);
        let tool = "mcp__github__get_issue";
        assert_eq!(
            p.decide_for(tool, "mcp.call", Some(&eng)).decision,
            Decision::Allow
        );
        assert_eq!(
            p.decide_for(tool, "mcp.call", None).decision,
            Decision::Deny
        );
    }

    #[test]
    fn denies_everyone_only_when_no_caller_could_be_let_through() {
        let p = policy(
            &[r#"mcp__github__get_issue if group = "eng""#],
            &["mcp__github__*"],
        );
        assert!(!p.denies_everyone("mcp__github__get_issue", "mcp.call"));
        assert!(p.denies_everyone("mcp__github__delete_repo", "mcp.call"));
        let p = policy(&[], &[r#"run_shell unless group = "eng""#]);
        assert!(!p.denies_everyone("run_shell", "shell.exec"));
        // A tightening set's conditional deny does not hide from everyone either.
        let p = Policy::allow_all().tightened_by("project config", p);
        assert!(!p.denies_everyone("run_shell", "shell.exec"));
        assert!(p.has_conditions());
        assert!(!Policy::allow_all().has_conditions());
    }

    #[test]
    fn a_tightening_set_with_a_condition_still_only_tightens() {
        let user = policy(&[], &[]);
        let project = policy(&[], &[r#"run_shell unless group = "eng""#]);
        let p = user.tightened_by("project config", project);
        let ops = caller(&["ops"], &[]);
        let eng = caller(&["eng"], &[]);
        let verdict = p.decide_for("run_shell", "shell.exec", Some(&ops));
        assert_eq!(verdict.decision, Decision::Deny);
        assert_eq!(verdict.source.as_deref(), Some("project config"));
        assert_eq!(
            p.decide_for("run_shell", "shell.exec", Some(&eng)).decision,
            Decision::Allow
        );
    }

    #[test]
    fn the_rules_of_the_docs_parse() {
        // docs/security.md and docs/serving.md.
        let allow = [
            r#"run_shell if scope = "tools:shell""#.to_owned(),
            r#"mcp__github__merge_pull_request if sub = "alice""#.to_owned(),
        ];
        let deny = [
            r#"mcp__github__* unless group = "eng""#.to_owned(),
            "shell.exec".to_owned(),
            r#"deploy unless group = "release""#.to_owned(),
        ];
        let p = Policy::from_lists(&allow, &[], &deny).unwrap();
        let shell = caller(&[], &["tools:shell"]);
        assert_eq!(
            p.decide_for("run_shell", "shell.exec", Some(&shell))
                .decision,
            Decision::Allow
        );
        assert_eq!(p.decide("run_shell", "shell.exec").decision, Decision::Deny);
    }

    #[test]
    fn bad_conditions_are_refused_with_the_rule_and_the_accepted_forms() {
        for bad in [
            r#"run_shell when group = "eng""#,
            r#"run_shell if role = "eng""#,
            r#"run_shell if group == "eng""#,
            r#"run_shell if group = eng"#,
            r#"run_shell if group = """#,
            r#"run_shell if group"#,
            r#"run_shell if group = "a" and scope = "b""#,
        ] {
            let err = Policy::from_lists(&[], &[], &[bad.to_owned()]).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(&format!("`{bad}`")), "{text}");
            assert!(
                text.contains(r#"`if CLAIM = \"VALUE\"`"#)
                    || text.contains(r#"if CLAIM = "VALUE""#),
                "{text}"
            );
        }
    }
}
