//! Permission matching: specificity, deny over allow, namespaces, actions, bad patterns.

use toolgate_core::{Decision, Policy};

fn policy(allow: &[&str], ask: &[&str], deny: &[&str]) -> Policy {
    let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    Policy::from_lists(&owned(allow), &owned(ask), &owned(deny)).unwrap()
}

fn decide(policy: &Policy, tool: &str, action: &str) -> Decision {
    policy.decide(tool, action).decision
}

#[test]
fn no_rule_allows() {
    let verdict = Policy::allow_all().decide("write_file", "fs.write");
    assert_eq!(verdict.decision, Decision::Allow);
    assert_eq!(verdict.rule, None);
    // Rules that do not match leave the default in place.
    let p = policy(&[], &[], &["shell", "net"]);
    assert_eq!(decide(&p, "write_file", "fs.write"), Decision::Allow);
}

#[test]
fn exact_name_beats_glob_beats_action_beats_star() {
    let p = policy(&["write_file"], &["write_*"], &["fs.write"]);
    assert_eq!(decide(&p, "write_file", "fs.write"), Decision::Allow);
    assert_eq!(decide(&p, "write_note", "fs.write"), Decision::Ask);
    assert_eq!(decide(&p, "save", "fs.write"), Decision::Deny);

    let p = policy(&["*"], &[], &["fs.write"]);
    assert_eq!(decide(&p, "save", "fs.write"), Decision::Deny);
    assert_eq!(decide(&p, "save", "fs.read"), Decision::Allow);

    let p = policy(&["fs.write"], &[], &["*"]);
    assert_eq!(decide(&p, "save", "fs.write"), Decision::Allow);
    assert_eq!(decide(&p, "load", "fs.read"), Decision::Deny);

    let p = policy(&["save"], &[], &["*", "sa*"]);
    assert_eq!(decide(&p, "save", "fs.write"), Decision::Allow);
}

#[test]
fn the_verdict_names_the_deciding_rule_as_written_in_config() {
    let p = policy(&["write_file"], &["write_*"], &["fs.write"]);
    assert_eq!(
        p.decide("write_note", "fs.write").rule.as_deref(),
        Some("ask = [\"write_*\"]")
    );
    assert_eq!(
        p.decide("save", "fs.write").rule.as_deref(),
        Some("deny = [\"fs.write\"]")
    );
    assert_eq!(
        p.decide("write_file", "fs.write").rule.as_deref(),
        Some("allow = [\"write_file\"]")
    );
}

#[test]
fn deny_beats_allow_at_equal_specificity() {
    assert_eq!(
        decide(
            &policy(&["read_file"], &[], &["read_file"]),
            "read_file",
            "fs.read"
        ),
        Decision::Deny
    );
    assert_eq!(
        decide(
            &policy(&["fs.read"], &[], &["fs.read"]),
            "read_file",
            "fs.read"
        ),
        Decision::Deny
    );
    assert_eq!(
        decide(&policy(&["mcp__*"], &[], &["mcp__*"]), "mcp__a__b", "net"),
        Decision::Deny
    );
    assert_eq!(
        decide(&policy(&["*"], &[], &["*"]), "anything", "x.y"),
        Decision::Deny
    );
    assert_eq!(
        decide(&policy(&["*"], &["*"], &[]), "anything", "x.y"),
        Decision::Ask
    );
    assert_eq!(
        decide(&policy(&[], &["*"], &["*"]), "anything", "x.y"),
        Decision::Deny
    );
}

#[test]
fn namespace_glob_matches_only_its_namespace() {
    let p = policy(&[], &[], &["mcp__github__*"]);
    assert_eq!(
        decide(&p, "mcp__github__create_issue", "net"),
        Decision::Deny
    );
    assert_eq!(decide(&p, "mcp__gitlab__x", "net"), Decision::Allow);
    assert_eq!(decide(&p, "github__create_issue", "net"), Decision::Allow);
}

#[test]
fn longer_glob_is_more_specific() {
    let p = policy(&["mcp__github__get_*"], &[], &["mcp__github__*"]);
    assert_eq!(decide(&p, "mcp__github__get_issue", "net"), Decision::Allow);
    assert_eq!(
        decide(&p, "mcp__github__create_issue", "net"),
        Decision::Deny
    );
}

#[test]
fn action_rule_applies_to_tools_with_that_action() {
    let p = policy(&[], &[], &["fs.write"]);
    assert_eq!(decide(&p, "write_file", "fs.write"), Decision::Deny);
    assert_eq!(decide(&p, "edit", "fs.write"), Decision::Deny);
    assert_eq!(decide(&p, "read_file", "fs.read"), Decision::Allow);
    // An action rule never matches by tool name.
    assert_eq!(decide(&p, "fs.write", "fs.read"), Decision::Allow);
}

#[test]
fn invalid_patterns_are_errors_that_say_what_is_valid() {
    for bad in ["fs.*", "fs.wri?e", "", "mcp__[github"] {
        let err = Policy::from_lists(&[], &[], &[bad.to_owned()]).unwrap_err();
        assert_eq!(err.pattern, bad);
        let text = err.to_string();
        assert!(text.contains(&format!("`{bad}`")), "{text}");
        assert!(text.contains("such as `fs.write`"), "{text}");
    }
    let mut p = Policy::allow_all();
    assert!(p.add("fs.*", Decision::Deny).is_err());
    // A refused rule is not half-added.
    assert_eq!(decide(&p, "anything", "fs.read"), Decision::Allow);
}
