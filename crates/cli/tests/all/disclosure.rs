//! `toolgate disclosure simulate|plan|search` and `serve --disclosure` (see docs/disclosure.md).

use std::path::PathBuf;

use crate::{project, toolgate};

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/disclosure/scripts")
        .join(format!("{name}.json"))
}

fn simulate(name: &str) -> serde_json::Value {
    let dir = project();
    let out = toolgate(dir.path())
        .args(["disclosure", "simulate", "--mode", "on", "--json"])
        .arg(script(name))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn simulate_reproduces_the_seed_demo_numbers() {
    let append = simulate("seed_append");
    assert_eq!(append["breaks"], 3, "{append}");
    assert_eq!(simulate("seed_proxy")["breaks"], 0);
    let strict = simulate("seed_strict_backfill");
    assert_eq!(strict["breaks"], 1, "{strict}");
    assert_eq!(strict["turns"][1]["changed"], true);
    assert_eq!(strict["rejected"], 0);
}

#[test]
fn simulate_prints_the_break_count() {
    let dir = project();
    let out = toolgate(dir.path())
        .args(["disclosure", "simulate", "--mode", "on"])
        .arg(script("seed_append"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("3 prefix breaks in 4 turns"), "{text}");
}

#[test]
fn plan_and_search_on_the_builtins() {
    let dir = project();
    let out = toolgate(dir.path())
        .args(["disclosure", "plan"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("disclosure off (auto:15,"), "{text}");
    let out = toolgate(dir.path())
        .args(["disclosure", "search", "readFile", "--limit", "2"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.trim_start().starts_with("1. read_file"), "{text}");
}

#[test]
fn disclosure_on_lists_search_and_run_tool_and_run_tool_calls_the_target() {
    let dir = project();
    let out = toolgate(dir.path())
        .env("TOOLGATE_DISCLOSURE__MODE", "on")
        .env("TOOLGATE_DISCLOSURE__DEFERRED", "[\"list_dir\"]")
        .args(["tools"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("search_tool") && text.contains("run_tool"),
        "{text}"
    );
    assert!(!text.contains("list_dir"), "deferred: {text}");
    let out = toolgate(dir.path())
        .args([
            "call",
            "run_tool",
            r#"{"name": "list_dir", "input": {"path": "src"}}"#,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8(out.stdout).unwrap().contains("main.rs"));
    // A deny rule on the target holds through run_tool.
    let out = toolgate(dir.path())
        .env("TOOLGATE_PERMISSIONS__DENY", "[\"list_dir\"]")
        .args(["call", "run_tool", r#"{"name": "list_dir", "input": {}}"#])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("permission denied")
    );
}
