//! Registration and invalidation: precedence, validation, incomplete snapshots, generations.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate_core::{DynTool, ProviderError, Registry, RegistryError, Scope, Snapshot, TypedTool};

use toolgate_test_support::FnTool;

use crate::fixtures::{Echo, Flaky, provider, raw_tool, stub};

/// The description of the tool `name` in `snap`, which says where the tool came from.
fn origin(snap: &Snapshot, name: &str) -> String {
    snap.get(name)
        .unwrap_or_else(|| panic!("`{name}` missing from {snap:?}"))
        .spec()
        .description
        .clone()
}

fn names(snap: &Snapshot) -> Vec<&str> {
    snap.tools.keys().map(String::as_str).collect()
}

#[test]
fn nearest_preset_layer_wins_a_name_clash() {
    let registry = Registry::new();
    registry
        .register(
            None,
            provider("builtins", vec![stub("grep", "global")]),
            100,
        )
        .unwrap();
    registry
        .register(
            Some("team"),
            provider("team_tools", vec![stub("grep", "team")]),
            0,
        )
        .unwrap();
    registry
        .register(
            Some("me"),
            provider("my_tools", vec![stub("grep", "me")]),
            0,
        )
        .unwrap();

    assert_eq!(
        origin(&registry.snapshot(&Scope::global()), "grep"),
        "global"
    );
    assert_eq!(
        origin(&registry.snapshot(&Scope::chain(["team"])), "grep"),
        "team"
    );
    // The last preset of the chain is the nearest.
    assert_eq!(
        origin(&registry.snapshot(&Scope::chain(["team", "me"])), "grep"),
        "me"
    );
    assert_eq!(
        origin(&registry.snapshot(&Scope::chain(["me", "team"])), "grep"),
        "team"
    );
    // A preset that does not exist adds nothing and hides nothing.
    assert_eq!(
        origin(&registry.snapshot(&Scope::chain(["nobody"])), "grep"),
        "global"
    );
}

#[test]
fn preset_tools_add_to_global_ones() {
    let registry = Registry::new();
    registry
        .register(None, provider("builtins", vec![stub("grep", "global")]), 0)
        .unwrap();
    registry
        .register(
            Some("team"),
            provider("team_tools", vec![stub("deploy", "team")]),
            0,
        )
        .unwrap();
    assert_eq!(
        names(&registry.snapshot(&Scope::chain(["team"]))),
        ["deploy", "grep"]
    );
    // A preset's tools stay out of scopes that do not include it.
    assert_eq!(names(&registry.snapshot(&Scope::global())), ["grep"]);
}

#[test]
fn within_a_layer_higher_priority_wins_even_when_registered_later() {
    let registry = Registry::new();
    registry
        .register(None, provider("low", vec![stub("fmt", "low")]), 0)
        .unwrap();
    registry
        .register(None, provider("high", vec![stub("fmt", "high")]), 10)
        .unwrap();
    assert_eq!(origin(&registry.snapshot(&Scope::global()), "fmt"), "high");
}

#[test]
fn within_a_layer_at_equal_priority_the_earlier_provider_wins() {
    let registry = Registry::new();
    registry
        .register(None, provider("first", vec![stub("fmt", "first")]), 5)
        .unwrap();
    registry
        .register(None, provider("second", vec![stub("fmt", "second")]), 5)
        .unwrap();
    assert_eq!(origin(&registry.snapshot(&Scope::global()), "fmt"), "first");
}

#[test]
fn within_a_provider_its_local_order_wins() {
    let registry = Registry::new();
    registry
        .register(
            None,
            provider(
                "twice",
                vec![stub("fmt", "listed first"), stub("fmt", "listed second")],
            ),
            0,
        )
        .unwrap();
    let snap = registry.snapshot(&Scope::global());
    assert_eq!(snap.tools.len(), 1);
    assert_eq!(origin(&snap, "fmt"), "listed first");
}

#[test]
fn snapshot_lists_tools_sorted_by_name() {
    let registry = Registry::new();
    registry
        .register(
            None,
            provider(
                "a",
                vec![stub("zeta", "a"), stub("alpha", "a"), stub("Mid", "a")],
            ),
            0,
        )
        .unwrap();
    registry
        .register(None, provider("b", vec![stub("beta", "b")]), 9)
        .unwrap();
    let snap = registry.snapshot(&Scope::global());
    assert_eq!(names(&snap), ["Mid", "alpha", "beta", "zeta"]);
    assert!(!snap.incomplete);
    assert!(snap.problems.is_empty());
}

#[test]
fn registering_a_provider_name_twice_in_one_layer_is_refused() {
    let registry = Registry::new();
    registry
        .register(None, provider("builtins", vec![stub("grep", "one")]), 0)
        .unwrap();
    let generation = registry.generation();
    let err = registry
        .register(None, provider("builtins", vec![stub("find", "two")]), 0)
        .unwrap_err();
    match &err {
        RegistryError::DuplicateProvider { layer, provider } => {
            assert_eq!(layer, "global");
            assert_eq!(provider, "builtins");
        }
        other => panic!("expected DuplicateProvider, got {other:?}"),
    }
    assert!(err.to_string().contains("unregister it first"), "{err}");
    // Nothing changed: no new tool, no generation bump.
    assert_eq!(registry.generation(), generation);
    assert_eq!(names(&registry.snapshot(&Scope::global())), ["grep"]);

    // The same name in other layers is fine, once per layer.
    registry
        .register(
            Some("team"),
            provider("builtins", vec![stub("find", "team")]),
            0,
        )
        .unwrap();
    registry
        .register(
            Some("me"),
            provider("builtins", vec![stub("find", "me")]),
            0,
        )
        .unwrap();
    let err = registry
        .register(Some("team"), provider("builtins", vec![]), 0)
        .unwrap_err();
    assert!(
        matches!(&err, RegistryError::DuplicateProvider { layer, .. } if layer == "team"),
        "{err:?}"
    );
}

fn assert_malformed(tool: FnTool, expected_tool: &str, reason_hint: &str) {
    let registry = Registry::new();
    let generation = registry.generation();
    let tool: Arc<dyn DynTool> = Arc::new(tool);
    let err = registry
        .register(
            None,
            provider("plugin_x", vec![TypedTool::erased(Echo), tool]),
            0,
        )
        .unwrap_err();
    match &err {
        RegistryError::Malformed(ProviderError::Malformed {
            provider,
            tool,
            reason,
            ..
        }) => {
            assert_eq!(provider, "plugin_x");
            assert_eq!(tool, expected_tool);
            assert!(reason.contains(reason_hint), "reason {reason:?}");
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("`plugin_x`"), "{text}");
    assert!(text.contains(&format!("`{expected_tool}`")), "{text}");
    // Refused as a whole: the provider's good tools are not half-registered.
    assert_eq!(registry.generation(), generation);
    assert!(registry.snapshot(&Scope::global()).tools.is_empty());
}

#[test]
fn malformed_tool_name_fails_at_register_time() {
    assert_malformed(
        raw_tool("has space", "Fine.", json!({"type": "object"})),
        "has space",
        "[A-Za-z0-9_-]",
    );
    assert_malformed(
        raw_tool("", "Fine.", json!({"type": "object"})),
        "",
        "[A-Za-z0-9_-]",
    );
    assert_malformed(
        raw_tool(&"n".repeat(65), "Fine.", json!({"type": "object"})),
        &"n".repeat(65),
        "1-64",
    );
    assert_malformed(
        raw_tool("dotted.name", "Fine.", json!({"type": "object"})),
        "dotted.name",
        "[A-Za-z0-9_-]",
    );
}

#[test]
fn empty_description_fails_at_register_time() {
    assert_malformed(
        raw_tool("blank", "  \n", json!({"type": "object"})),
        "blank",
        "description",
    );
}

#[test]
fn input_schema_without_object_type_fails_at_register_time() {
    assert_malformed(
        raw_tool("untyped", "Fine.", json!({"properties": {}})),
        "untyped",
        "\"type\": \"object\"",
    );
    assert_malformed(
        raw_tool("listy", "Fine.", json!({"type": "array"})),
        "listy",
        "\"type\": \"object\"",
    );
}

#[test]
fn failing_provider_is_omitted_and_the_snapshot_marked_incomplete_and_not_cached() {
    let registry = Registry::new();
    registry
        .register(None, provider("builtins", vec![TypedTool::erased(Echo)]), 0)
        .unwrap();
    let remote = Flaky::new("remote", vec![stub("remote_search", "remote")]);
    registry.register(None, remote.clone(), 0).unwrap();
    let listed_at_register = remote.listed();

    remote.set_failing(true);
    registry.invalidate();
    let snap = registry.snapshot(&Scope::global());
    assert!(snap.incomplete);
    assert_eq!(snap.problems.len(), 1, "{:?}", snap.problems);
    assert!(snap.problems[0].contains("remote"), "{:?}", snap.problems);
    assert!(
        snap.problems[0].contains("restarting"),
        "{:?}",
        snap.problems
    );
    assert_eq!(names(&snap), ["echo"]);
    assert_eq!(remote.listed(), listed_at_register + 1);

    // Not cached: the next snapshot asks the provider again.
    let again = registry.snapshot(&Scope::global());
    assert!(again.incomplete);
    assert_eq!(remote.listed(), listed_at_register + 2);

    // It recovers without anyone calling invalidate().
    remote.set_failing(false);
    let healed = registry.snapshot(&Scope::global());
    assert!(!healed.incomplete);
    assert!(healed.problems.is_empty());
    assert_eq!(names(&healed), ["echo", "remote_search"]);
    assert_eq!(remote.listed(), listed_at_register + 3);
}

#[test]
fn complete_snapshot_is_cached_until_invalidate() {
    let registry = Registry::new();
    let remote = Flaky::new("remote", vec![stub("remote_search", "remote")]);
    registry.register(None, remote.clone(), 0).unwrap();
    let base = remote.listed();

    let first = registry.snapshot(&Scope::global());
    assert_eq!(remote.listed(), base + 1);
    let second = registry.snapshot(&Scope::global());
    assert_eq!(
        remote.listed(),
        base + 1,
        "a complete snapshot must be cached"
    );
    assert!(Arc::ptr_eq(&first, &second));

    // Caches are per scope.
    registry.snapshot(&Scope::chain(["team"]));
    assert_eq!(remote.listed(), base + 2);

    registry.invalidate();
    let third = registry.snapshot(&Scope::global());
    assert_eq!(remote.listed(), base + 3);
    assert!(!Arc::ptr_eq(&first, &third));
    assert_eq!(third.generation, registry.generation());
}

#[test]
fn provider_that_cannot_list_at_register_time_is_accepted_and_validated_at_snapshot() {
    let registry = Registry::new();
    let bad: Arc<dyn DynTool> = Arc::new(raw_tool("bad name", "Fine.", json!({"type": "object"})));
    let remote = Flaky::new("remote", vec![bad, stub("good", "remote")]);
    remote.set_failing(true);
    registry.register(None, remote.clone(), 0).unwrap();
    registry
        .register(None, provider("builtins", vec![TypedTool::erased(Echo)]), 0)
        .unwrap();

    remote.set_failing(false);
    let snap = registry.snapshot(&Scope::global());
    assert!(snap.incomplete);
    assert!(
        snap.problems[0].contains("`remote`") && snap.problems[0].contains("`bad name`"),
        "{:?}",
        snap.problems
    );
    // A malformed candidate takes its whole provider out, never half of it.
    assert_eq!(names(&snap), ["echo"]);
}

#[tokio::test]
async fn generation_increments_on_every_change_and_subscribers_see_it() {
    let registry = Registry::new();
    assert_eq!(registry.generation(), 0);
    let mut rx = registry.subscribe();
    assert_eq!(*rx.borrow_and_update(), 0);

    registry
        .register(None, provider("builtins", vec![stub("grep", "g")]), 0)
        .unwrap();
    assert_eq!(registry.generation(), 1);
    tokio::time::timeout(Duration::from_secs(5), rx.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*rx.borrow_and_update(), 1);

    assert!(registry.unregister(None, "builtins"));
    assert_eq!(registry.generation(), 2);
    // Removing something that is not there changes nothing.
    assert!(!registry.unregister(None, "builtins"));
    assert!(!registry.unregister(Some("nowhere"), "builtins"));
    assert_eq!(registry.generation(), 2);

    registry.invalidate();
    assert_eq!(registry.generation(), 3);
    tokio::time::timeout(Duration::from_secs(5), rx.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*rx.borrow_and_update(), 3);
    assert_eq!(registry.snapshot(&Scope::global()).generation, 3);
}

#[test]
fn unregister_removes_the_tools_and_uncovers_what_they_shadowed() {
    let registry = Registry::new();
    registry
        .register(None, provider("builtins", vec![stub("grep", "global")]), 0)
        .unwrap();
    registry
        .register(
            Some("team"),
            provider(
                "team_tools",
                vec![stub("grep", "team"), stub("deploy", "team")],
            ),
            0,
        )
        .unwrap();
    let scope = Scope::chain(["team"]);
    let before = registry.snapshot(&scope);
    assert_eq!(origin(&before, "grep"), "team");

    assert!(registry.unregister(Some("team"), "team_tools"));
    let after = registry.snapshot(&scope);
    assert_eq!(names(&after), ["grep"], "no ghost of `deploy` may remain");
    assert_eq!(origin(&after, "grep"), "global");

    assert!(registry.unregister(None, "builtins"));
    assert!(registry.snapshot(&scope).tools.is_empty());
}
