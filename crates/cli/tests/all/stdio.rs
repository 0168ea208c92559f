//! The MCP server over stdio, spoken to with raw JSON-RPC lines: the protocol edge cases.
//! The processes it runs are tested in `stdio_processes.rs`, the servers it mounts in
//! `stdio_mounted.rs`; both use this file's [`Server`].

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{project, toolgate};

/// How long a test waits for a reply or a process before it calls the wait a hang.
pub(crate) const WAIT: Duration = toolgate_test_support::HANG_GUARD;

/// Lines of the server's stdout read ahead of the test at most.
pub(crate) const UNREAD_LINES: usize = 1024;

pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) lines: Receiver<String>,
    _dir: tempfile::TempDir,
}

impl Server {
    pub(crate) fn start() -> Self {
        Self::start_in(project())
    }

    pub(crate) fn start_in(dir: tempfile::TempDir) -> Self {
        Self::start_with(dir, |_| {})
    }

    /// Started after `configure` had its say on the command (environment, say).
    pub(crate) fn start_with(
        dir: tempfile::TempDir,
        configure: impl FnOnce(&mut std::process::Command),
    ) -> Self {
        let mut command = toolgate(dir.path());
        configure(&mut command);
        let mut child = command
            .args(["serve", "--log-level", "warn"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        // Bounded: a test that stops taking lines stops the reading too, as a client that
        // does not read its replies would (the server must then stop reading as well).
        let (tx, lines) = sync_channel(UNREAD_LINES);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            _dir: dir,
        }
    }

    pub(crate) fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// The next message that is a response (not a notification).
    pub(crate) fn response(&mut self) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!("no response within {WAIT:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("server closed stdout"),
            };
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}"));
            if value.get("id").is_some() {
                return value;
            }
        }
    }

    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self.response();
        assert_eq!(response["id"], id, "{response}");
        response
    }

    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        let reply = self.request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
    }

    pub(crate) fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        let reply = self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        reply["result"].clone()
    }

    /// Closes stdin and waits for the process to exit.
    pub(crate) fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "server did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn negotiates_each_supported_protocol_version() {
    for version in ["2025-06-18", "2025-11-25"] {
        let mut server = Server::start();
        let reply = server.initialize(version);
        let result = &reply["result"];
        assert_eq!(result["protocolVersion"], version, "{reply}");
        assert_eq!(result["serverInfo"]["name"], "toolgate");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        assert!(server.close().success());
    }
}

#[test]
fn the_descriptor_table_is_grown_before_any_thread_starts() {
    // Grown later, each growth waits for an RCU grace period in a threaded process: ~20 ms
    // of a fresh grep on a deep tree. A child of this test starts with a small table.
    let mut server = Server::start();
    server.initialize("2025-11-25");
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let slots: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("FDSize:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(1024);
    assert!(slots >= limit.min(1024), "FDSize {slots}");
    assert!(server.close().success());
}

#[test]
fn lists_tools_with_schemas_and_annotations() {
    let mut server = Server::start();
    server.initialize("2025-06-18");
    let reply = server.request(1, "tools/list", json!({}));
    let tools = reply["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "sorted by name: {names:?}"
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
        assert!(tool["annotations"]["idempotentHint"].is_boolean(), "{tool}");
    }
    for read_only in ["read_file", "list_dir"] {
        let tool = tools.iter().find(|t| t["name"] == read_only).unwrap();
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
        assert_eq!(tool["annotations"]["idempotentHint"], true);
    }
}

#[test]
fn call_returns_text_and_structured_content_with_the_full_text() {
    let mut server = Server::start();
    server.initialize("2025-06-18");
    let result = server.call(1, "read_file", json!({"path": "README.md"}));
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "     1\t# demo\n     2\t\n     3\thello\n");
    assert_eq!(result["structuredContent"]["text"], text);
    assert_eq!(result["structuredContent"]["truncated"], false);
    assert_eq!(result["structuredContent"]["total"], 3);
}

#[test]
fn invalid_json_gets_a_parse_error_and_the_server_keeps_serving() {
    let mut server = Server::start();
    server.initialize("2025-06-18");
    server.send_raw("{this is not json");
    let reply = server.response();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    let result = server.call(2, "list_dir", json!({}));
    assert_eq!(result["isError"], false, "still serving: {result}");
}

#[test]
fn unknown_method_gets_method_not_found() {
    let mut server = Server::start();
    server.initialize("2025-06-18");
    let reply = server.request(3, "tools/frobnicate", json!({}));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    let result = server.call(4, "list_dir", json!({}));
    assert_eq!(result["isError"], false);
}

#[test]
fn a_message_over_the_size_limit_gets_an_error_and_the_server_keeps_serving() {
    let mut server = Server::start();
    server.initialize("2025-06-18");
    // rmcp's stdio limit is 16 MiB per line.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"{}"}}}}}}"#,
        "a".repeat(17 * 1024 * 1024)
    );
    server.send_raw(&huge);
    let reply = server.response();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{reply}"
    );
    let result = server.call(6, "list_dir", json!({}));
    assert_eq!(result["isError"], false, "{result}");
}

#[test]
fn unknown_tool_and_wrong_arguments_are_tool_errors_not_protocol_errors() {
    let mut server = Server::start();
    server.initialize("2025-06-18");
    let result = server.call(1, "read_fil", json!({}));
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did you mean `read_file`")
    );
    assert!(
        result.get("structuredContent").is_none(),
        "errors carry no structured fields"
    );

    let result = server.call(2, "read_file", json!({"path": ["a"]}));
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("field `path`") && text.contains("expected a string"),
        "{text}"
    );

    let result = server.call(
        3,
        "read_file",
        json!({"path": "README.md", "offset": "ten"}),
    );
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("field `offset`")
    );

    let result = server.call(4, "read_file", json!({"path": "README.md", "bogus": 1}));
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("bogus")
    );
}

#[test]
fn exits_promptly_when_the_client_disconnects() {
    let mut server = Server::start();
    server.initialize("2025-06-18");
    let _ = server.call(1, "list_dir", json!({}));
    let status = server.close();
    assert!(status.success(), "{status:?}");
}

#[test]
fn nothing_but_json_rpc_reaches_stdout() {
    let mut server = Server::start();
    server.initialize("2025-06-18");
    for id in 1..5 {
        server.call(id, "read_file", json!({"path": "missing.txt"}));
    }
    // `response()` panics on any non-JSON line; reaching here means stdout stayed clean.
}

/// `elapsed_ms`, durations in text and the project's own path vary from run to run; nothing
/// else may.
fn steady(mut value: Value, root: &std::path::Path) -> Value {
    let root = root.canonicalize().unwrap().display().to_string();
    steady_walk(&mut value, &root);
    value
}

fn steady_walk(v: &mut Value, root: &str) {
    match v {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "elapsed_ms" || k == "runtime_ms" {
                    *v = json!(0);
                } else {
                    steady_walk(v, root);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| steady_walk(v, root)),
        Value::String(s) => *s = regexless_times(&s.replace(root, "<root>")),
        _ => {}
    }
}

/// Replaces every `<number> ms` / `<number> s` with `N ms` / `N s`.
fn regexless_times(s: &str) -> String {
    let words: Vec<&str> = s.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    for (i, word) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let unit = next
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or("");
        let number = word.trim_start_matches('(');
        if (unit == "ms" || unit == "s")
            && !number.is_empty()
            && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        {
            out.push(word.replace(number, "N"));
        } else {
            out.push((*word).to_owned());
        }
    }
    out.join(" ")
}

#[test]
fn call_json_prints_exactly_what_serve_sends_for_every_builtin() {
    // One serializer: `toolgate call --json` used to re-render results by hand and could
    // differ from the server's `CallToolResult`.
    let cases = [
        ("read_file", json!({"path": "README.md"})),
        (
            "read_file",
            json!({"path": "README.md", "offset": 2, "limit": 1}),
        ),
        ("read_file", json!({"path": "missing.txt"})),
        ("read_file", json!({"path": "README.md", "offset": 99})),
        ("list_dir", json!({})),
        ("list_dir", json!({"path": "src", "limit": 1})),
        ("search_files", json!({"query": "*.rs"})),
        ("search_files", json!({"query": "["})),
        ("grep", json!({"pattern": "hello"})),
        ("grep", json!({"pattern": "("})),
        ("write_file", json!({"path": "new/a.txt", "content": "x\n"})),
        (
            "write_file",
            json!({"path": "../outside.txt", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"path": "README.md", "old_string": "nope", "new_string": "y"}),
        ),
        ("run_shell", json!({"command": "echo out; echo err >&2"})),
        ("run_shell", json!({"command": "exit 3"})),
        ("job_output", json!({"job_id": "job-missing"})),
        ("job_kill", json!({"job_id": "job-missing"})),
        ("no_such_tool", json!({})),
        ("read_file", json!({"path": 7})),
    ];
    let served_dir = project();
    let served_root = served_dir.path().to_path_buf();
    let cli_dir = project();
    let mut server = Server::start_in(served_dir);
    server.initialize("2025-06-18");
    for (i, (name, args)) in cases.iter().enumerate() {
        let served = server.call(i as u64 + 1, name, args.clone());
        let printed = toolgate(cli_dir.path())
            .args(["call", name, &args.to_string(), "--json"])
            .output()
            .unwrap();
        let printed: Value = serde_json::from_slice(&printed.stdout)
            .unwrap_or_else(|e| panic!("{name} {args}: not JSON ({e})"));
        assert_eq!(
            steady(printed, cli_dir.path()),
            steady(served, &served_root),
            "{name} {args}: `call --json` and `serve` differ"
        );
    }
}

#[test]
fn a_request_id_still_in_flight_is_refused_and_the_first_call_still_answers() {
    // Regression: three pipelined calls with the same id all ran but got one reply.
    let mut server = Server::start();
    server.initialize("2025-06-18");
    let slow = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "run_shell", "arguments": {"command": "sleep 1; echo first"}}});
    let again = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "run_shell", "arguments": {"command": "echo second > second.txt"}}});
    server.send(&slow);
    server.send(&again);
    let refused = server.response();
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still in flight")
    );
    let first = server.response();
    assert_eq!(first["id"], 7);
    assert!(
        first["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("first")
    );
    // Once answered, the id may be used again.
    let listed = server.call(7, "list_dir", json!({}));
    assert!(
        !listed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("second.txt"),
        "the refused call never ran"
    );
}

#[test]
fn malformed_params_of_a_known_method_get_invalid_params_with_the_id() {
    // Regression: `arguments` sent as a string got -32601 (method not found).
    let mut server = Server::start();
    server.initialize("2025-06-18");
    server.send_raw(r#"{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"read_file","arguments":"{\"path\":\"README.md\"}"}}"#);
    let reply = server.response();
    assert_eq!(reply["id"], "a1", "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("must be a JSON object"),
        "{reply}"
    );
}

#[test]
fn ids_are_echoed_exactly_even_beyond_64_bits() {
    // Regression: id 2^64 came back as the float 1.8446744073709552e19.
    let mut server = Server::start();
    server.initialize("2025-06-18");
    for raw in [
        "18446744073709551616",
        "123456789012345678901234567890",
        "1.5",
    ] {
        server.send_raw(&format!(
            r#"{{"jsonrpc":"2.0","id":{raw},"method":"tools/call","params":{{"name":"list_dir","arguments":{{}}}}}}"#
        ));
        let line = loop {
            let line = server.lines.recv_timeout(WAIT).unwrap();
            if line.contains("\"result\"") || line.contains("\"error\"") {
                break line;
            }
        };
        assert!(line.contains(&format!("\"id\":{raw}")), "{raw}: {line}");
        assert!(line.contains("\"isError\":false"), "{line}");
    }
}

#[test]
fn a_lone_surrogate_costs_one_character_not_the_request() {
    // Regression: a path with a lone surrogate got -32700 with `id: null`.
    let mut server = Server::start();
    server.initialize("2025-06-18");
    server.send_raw(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a\ud800b.txt"}}}"#);
    let reply = server.response();
    assert_eq!(reply["id"], 5, "{reply}");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("a\u{FFFD}b.txt"),
        "{reply}"
    );
    // Found by the stdio fuzz target: a backslash before a multi-byte character in a line
    // with a `\u` escape panicked the transport and ended the session.
    server.send_raw(r#"{"jsonrpc":"2.0","id":6,"method":"ping","x":"\é\u0041"}"#);
    let reply = server.response();
    assert_eq!(
        reply["error"]["code"], -32700,
        "not JSON (`\\é`), answered: {reply}"
    );
    let listed = server.call(7, "list_dir", json!({}));
    assert_eq!(listed["isError"], false, "still serving: {listed}");
}

/// The `_meta` a 2026-07-28 (stateless) request carries.
fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

#[test]
fn initialize_after_stateless_requests_serves_requests_without_meta() {
    // Regression: after one stateless request, a later `initialize` succeeded but every
    // following request without `_meta` got -32602.
    let mut server = Server::start();
    let listed = server.request(1, "tools/list", json!({"_meta": stateless_meta()}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    // Without `_meta` and before `initialize`, a stateless session still refuses it.
    let early = server.request(2, "tools/list", json!({}));
    assert_eq!(early["error"]["code"], -32602, "{early}");
    let init = server.initialize("2025-11-25");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let listed = server.request(3, "tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let pong = server.request(4, "ping", json!({}));
    assert!(pong.get("error").is_none(), "{pong}");
    let read = server.call(5, "read_file", json!({"path": "README.md"}));
    assert_eq!(read["isError"], false, "{read}");
    // Stateless requests still work on the same session, judged by their own `_meta`.
    let again = server.request(6, "tools/list", json!({"_meta": stateless_meta()}));
    assert!(again["result"]["tools"].is_array(), "{again}");
    let bad = server.request(
        7,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    // No extra message reached the client: the next response is the next request's.
    let last = server.request(8, "tools/list", json!({}));
    assert!(last["result"]["tools"].is_array(), "{last}");
}

#[test]
fn stateless_requests_after_initialize_are_judged_by_their_own_meta() {
    let mut server = Server::start();
    server.initialize("2025-11-25");
    let listed = server.request(1, "tools/list", json!({"_meta": stateless_meta()}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let plain = server.request(2, "tools/list", json!({}));
    assert!(plain["result"]["tools"].is_array(), "{plain}");
    let bad = server.request(
        3,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}
