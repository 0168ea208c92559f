//! `toolgate tools`, `toolgate call`, `toolgate config show`.

use std::io::Write;
use std::process::Stdio;

use crate::{project, toolgate};

#[test]
fn tools_lists_builtins_with_summaries() {
    let dir = project();
    let out = toolgate(dir.path()).arg("tools").output().unwrap();
    assert!(out.status.success());
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap());
}

#[test]
fn tools_json_is_the_mcp_list_and_is_deterministic() {
    let dir = project();
    let run = || {
        toolgate(dir.path())
            .args(["tools", "--json"])
            .output()
            .unwrap()
            .stdout
    };
    let first = run();
    assert_eq!(first, run(), "same registry, same bytes");
    let value: serde_json::Value = serde_json::from_slice(&first).unwrap();
    let tools = value["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "sorted by name: {names:?}"
    );
    for builtin in ["list_dir", "read_file"] {
        assert!(names.contains(&builtin), "{names:?}");
    }
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert_eq!(tool["outputSchema"]["type"], "object");
    }
    insta::assert_snapshot!(String::from_utf8(first).unwrap());
}

#[test]
fn tools_json_other_protocols_carry_no_host_fields() {
    let dir = project();
    for (format, outer, inner) in [
        (
            "openai",
            vec!["function", "type"],
            vec!["description", "name", "parameters"],
        ),
        (
            "anthropic",
            vec!["description", "input_schema", "name"],
            vec![],
        ),
    ] {
        let out = toolgate(dir.path())
            .args(["tools", "--json", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success());
        let tools: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert!(!tools.is_empty());
        for tool in &tools {
            let keys: Vec<&str> = tool
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys, outer, "{format}: only model-facing fields: {tool}");
            if let Some(function) = tool.get("function") {
                let keys: Vec<&str> = function
                    .as_object()
                    .unwrap()
                    .keys()
                    .map(String::as_str)
                    .collect();
                assert_eq!(keys, inner, "{format}: {tool}");
            }
        }
        let text = String::from_utf8(out.stdout).unwrap();
        for leak in [
            "outputSchema",
            "annotations",
            "readOnlyHint",
            "spillable",
            "log_like",
        ] {
            assert!(!text.contains(leak), "{format} rendering leaks {leak}");
        }
    }
}

#[test]
fn call_prints_model_text_and_exits_zero() {
    let dir = project();
    let out = toolgate(dir.path())
        .args(["call", "read_file", r#"{"path":"README.md"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "     1\t# demo\n     2\t\n     3\thello\n"
    );
}

#[test]
fn call_json_prints_content_structured_content_and_is_error() {
    let dir = project();
    let out = toolgate(dir.path())
        .args(["call", "list_dir", "{}", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["isError"], false);
    assert_eq!(v["content"][0]["text"], v["structuredContent"]["text"]);
    assert_eq!(v["structuredContent"]["total"], 2);
    assert_eq!(v["structuredContent"]["truncated"], false);
    assert!(
        v["structuredContent"].get("next_offset").is_none(),
        "no pagination fields when not cut"
    );
}

#[test]
fn call_reads_arguments_from_stdin_with_dash() {
    let dir = project();
    let mut child = toolgate(dir.path())
        .args(["call", "read_file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"path": "src/main.rs", "offset": 2, "limit": 1}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("     2\t    println!(\"hi\");\n"),
        "{text}"
    );
    assert!(text.contains("continue with offset=3"), "{text}");
}

#[test]
fn tool_errors_exit_one_with_a_message_on_stderr() {
    let dir = project();
    let cases = [
        (vec!["call", "red_file", "{}"], "did you mean `read_file`"),
        (vec!["call", "read_file", "{oops"], "not valid JSON"),
        (vec!["call", "read_file", r#"{"path": 7}"#], "field `path`"),
        (
            vec!["call", "read_file", r#"{"path": "../outside"}"#],
            "outside the allowed roots",
        ),
        (
            vec![
                "call",
                "read_file",
                r#"{"path": "README.md", "offset": 99}"#,
            ],
            "has 3 lines",
        ),
    ];
    for (args, expected) in cases {
        let out = toolgate(dir.path()).args(&args).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn usage_and_config_errors_exit_two() {
    let dir = project();
    let out = toolgate(dir.path()).args(["frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));

    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        "[read]\nmax_lines = -3\n",
    )
    .unwrap();
    let out = toolgate(dir.path())
        .args(["call", "list_dir"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("max_lines") && err.contains("config.toml"),
        "{err}"
    );
}

#[test]
fn deny_rule_in_project_config_blocks_the_tool_and_names_the_rule() {
    let dir = project();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        "[permissions]\ndeny = [\"fs.read\"]\nask = [\"list_dir\"]\n",
    )
    .unwrap();
    let out = toolgate(dir.path())
        .args(["call", "read_file", r#"{"path":"README.md"}"#])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("deny = [\"fs.read\"]"), "{err}");
    // `ask` where nobody can answer acts as deny and names the rule to change.
    let out = toolgate(dir.path())
        .args(["call", "list_dir"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("ask = [\"list_dir\"]") && err.contains("allow"),
        "{err}"
    );
}

#[test]
fn root_flag_changes_the_project_root() {
    let dir = project();
    let out = toolgate(dir.path())
        .args(["--root", "src", "call", "list_dir"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .starts_with("main.rs  (34 bytes)")
    );
}

#[test]
fn config_show_names_the_source_of_each_value() {
    let dir = project();
    std::fs::create_dir(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        "[read]\nmax_lines = 10\n",
    )
    .unwrap();
    let out = toolgate(dir.path())
        .args(["--log-level", "debug", "config", "show"])
        .env("TOOLGATE_DISPATCH__DEFAULT_TIMEOUT_MS", "5000")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} =")))
            .unwrap()
            .to_owned()
    };
    assert!(
        line("read.max_lines").contains("= 10")
            && line("read.max_lines").contains(".toolgate/config.toml")
    );
    assert!(line("read.max_bytes").ends_with("# default"));
    assert!(
        line("dispatch.default_timeout_ms").contains("5000")
            && line("dispatch.default_timeout_ms").contains("TOOLGATE_")
    );
    assert!(line("server.log_level").contains("--log-level flag"));
}

#[test]
fn a_closed_stdout_ends_the_command_quietly_instead_of_a_panic() {
    // Regression: `toolgate tools | head` panicked in println! once head had gone.
    let dir = project();
    for args in [
        vec!["tools", "--json"],
        vec!["call", "read_file", r#"{"path": "README.md"}"#],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = toolgate(dir.path())
            .args(&args)
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
    }
}

#[test]
fn a_run_shell_timeout_is_reported_as_given() {
    // Regression: `timeout_ms: 1000` came back as "timeout_ms 999" (3000 as 2999): the
    // result printed the milliseconds left of the call's deadline, not the number given.
    let dir = project();
    for ms in [1000, 1234] {
        let args = format!(r#"{{"command": "sleep 120", "timeout_ms": {ms}}}"#);
        let out = toolgate(dir.path())
            .args(["call", "run_shell", &args])
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{err}");
        // `(timeout_ms 1000); ` — or, when dispatch took notably long on a loaded machine,
        // `(timeout_ms 1000, 0.12 s of it spent waiting …); `.
        let given = format!("(timeout_ms {ms}");
        let after = err.find(&given).map(|i| &err[i + given.len()..]);
        assert!(
            after.is_some_and(|rest| rest.starts_with(')') || rest.starts_with(',')),
            "timeout_ms {ms}: {err}"
        );
    }
}

#[test]
fn an_unknown_tool_suggests_only_tools_that_tools_lists() {
    // Regression: `call nope` offered run_tool and search_tool, which `toolgate tools` does
    // not show while disclosure is off.
    let dir = project();
    let listed = toolgate(dir.path()).args(["tools"]).output().unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(!listed.contains("run_tool"), "{listed}");
    let out = toolgate(dir.path())
        .args(["call", "nope", "{}"])
        .output()
        .unwrap();
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(said.contains("unknown tool `nope`"), "{said}");
    assert!(
        !said.contains("run_tool") && !said.contains("search_tool"),
        "{said}"
    );
}

#[test]
fn argument_errors_name_json_types_not_rust_ones() {
    // Regression: "invalid type: string \"x\", expected u64" reached the user.
    let dir = project();
    let out = toolgate(dir.path())
        .args([
            "call",
            "read_file",
            r#"{"path": "README.md", "offset": "x"}"#,
        ])
        .output()
        .unwrap();
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(
        said.contains("field `offset`") && said.contains("expected a non-negative integer"),
        "{said}"
    );
    assert!(!said.contains("u64"), "{said}");
}

/// `toolgate call` builds its session with `--client`'s profile: results are sized for
/// that client (a page of read_file fits Codex's 11,500-character cut) and whole without it.
#[test]
fn call_sizes_results_for_the_client_it_is_told_of() {
    let dir = project();
    let line = "0123456789 abcdefghij klmnopqrst uvwxyz ABCDEFGHIJ KLMNOPQRST UVWXYZ\n";
    std::fs::write(dir.path().join("big.txt"), line.repeat(500)).unwrap();
    let read = |client: Option<&str>| {
        let mut cmd = toolgate(dir.path());
        cmd.args(["call", "read_file", r#"{"path":"big.txt"}"#]);
        if let Some(client) = client {
            cmd.args(["--client", client]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let whole = read(None);
    let codex = read(Some("codex"));
    assert!(whole.chars().count() > 30_000, "{}", whole.len());
    assert!(codex.chars().count() <= 11_500, "{}", codex.len());
    assert!(
        codex.contains("offset"),
        "a page says how to go on: {codex}"
    );
}
