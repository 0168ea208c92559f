//! The MCP server over stdio, spoken to with raw JSON-RPC lines: the protocol edge cases.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{project, toolgate, user_config};

const WAIT: Duration = Duration::from_secs(20);

/// Lines of the server's stdout read ahead of the test at most.
const UNREAD_LINES: usize = 1024;

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Self {
        Self::start_in(project())
    }

    fn start_in(dir: tempfile::TempDir) -> Self {
        Self::start_with(dir, |_| {})
    }

    /// Started after `configure` had its say on the command (environment, say).
    fn start_with(
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

    fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// The next message that is a response (not a notification).
    fn response(&mut self) -> Value {
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

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self.response();
        assert_eq!(response["id"], id, "{response}");
        response
    }

    fn initialize(&mut self, version: &str) -> Value {
        let reply = self.request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
    }

    fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        let reply = self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        reply["result"].clone()
    }

    /// Closes stdin and waits for the process to exit.
    fn close(mut self) -> std::process::ExitStatus {
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

/// Pids of processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let mut cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        for b in &mut cmdline {
            if *b == 0 {
                *b = b' ';
            }
        }
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_signal_stops_the_server_and_its_commands_while_stdin_stays_open() {
    // Regression: on SIGTERM, SIGHUP or SIGINT `serve` logged "stopping" but exited only
    // when stdin closed (19 s later), leaving a terminal's Ctrl-C without effect.
    for (signal, marker) in [("TERM", "31.25"), ("HUP", "31.5"), ("INT", "31.75")] {
        let mut server = Server::start();
        server.initialize("2025-06-18");
        let job = server.call(
            1,
            "run_shell",
            json!({"command": format!("sleep {marker}1"), "background": true}),
        );
        assert_eq!(job["isError"], false, "{job}");
        server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "run_shell", "arguments": {"command": format!("sleep {marker}")}}}));
        let deadline = Instant::now() + WAIT;
        while processes_with(&format!("sleep {marker}")).len() < 2 {
            assert!(Instant::now() < deadline, "both commands start");
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &server.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        // stdin stays open: the server must exit by itself.
        let deadline = Instant::now() + WAIT;
        while server.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "SIG{signal}: still running");
            std::thread::sleep(Duration::from_millis(20));
        }
        let deadline = Instant::now() + WAIT;
        while !processes_with(&format!("sleep {marker}")).is_empty() {
            assert!(
                Instant::now() < deadline,
                "SIG{signal}: a command outlived the server"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
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

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
fn a_client_that_does_not_read_replies_is_not_read_from_either() {
    // Regression: 500,000 junk lines sent without reading replies raised RSS from 14 MB to
    // 434 MB (one queued reply each). Now replies wait in a bounded queue and the server
    // stops reading until the client reads. The test reads nothing until the check below
    // (its reader thread holds `UNREAD_LINES` at most), so a server that keeps to that
    // lets a few thousand of the 300,000 lines in, however fast it answers them.
    let mut server = Server::start();
    server.initialize("2025-06-18");
    let before = rss_kib(server.child.id());
    let mut stdin = server.stdin.take().unwrap();
    let total = 300_000;
    let writer = std::thread::spawn(move || {
        let line = b"this is not json at all, just noise to provoke error replies\n";
        let mut sent = 0;
        for _ in 0..total {
            if stdin.write_all(line).is_err() {
                break;
            }
            sent += 1;
        }
        (sent, stdin)
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !writer.is_finished(),
        "the server stopped reading while nobody read its replies"
    );
    let held = rss_kib(server.child.id());
    assert!(
        held < before + 32 * 1024,
        "RSS grew from {before} KiB to {held} KiB"
    );
    // Reading the replies lets everything through, each line answered.
    let mut answered = 0;
    while answered < total {
        let line = server.lines.recv_timeout(WAIT).unwrap();
        assert!(line.contains("-32700"), "{line}");
        answered += 1;
    }
    let (sent, stdin) = writer.join().unwrap();
    assert_eq!(sent, total);
    server.stdin = Some(stdin);
    let result = server.call(9, "list_dir", json!({}));
    assert_eq!(result["isError"], false);
}

#[test]
fn sigkill_of_the_server_leaves_no_process_behind() {
    // Regression: after kill -9 of `toolgate`, a background job's children, a foreground
    // command's `setsid` child, a `set -m` job and a mounted server's `setsid` grandchild
    // all lived on; only direct children got the kernel's parent-death signal. In the PID
    // namespace they die with its init.
    let marker = "41.0625";
    let dir = project();
    user_config(
        dir.path(),
        &format!(
            "[mcp_servers.spawner]\ncommand = \"sh\"\nargs = [\"-c\", \"setsid sleep {marker}5 & exec sleep {marker}6\"]\nstartup_timeout_sec = 60\n"
        ),
    );
    let mut server = Server::start_in(dir);
    server.initialize("2025-06-18");
    let job = server.call(
        1,
        "run_shell",
        json!({"command": format!("sleep {marker}1 & setsid sleep {marker}2 & (set -m; sleep {marker}3 &); wait"),
               "background": true}),
    );
    assert_eq!(job["isError"], false, "{job}");
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "run_shell", "arguments": {
            "command": format!("setsid sleep {marker}4 & set -m; sleep {marker}7 & wait")}}}));
    let sleeping = |n: u32| processes_with(&format!("sleep {marker}{n}"));
    let deadline = Instant::now() + WAIT;
    while !(1..=7).all(|n| !sleeping(n).is_empty()) {
        assert!(
            Instant::now() < deadline,
            "not every process started: {:?}",
            (1..=7).map(|n| (n, sleeping(n))).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let deadline = Instant::now() + WAIT;
    while !processes_with(&format!("sleep {marker}")).is_empty() {
        assert!(
            Instant::now() < deadline,
            "processes outlived a SIGKILLed server: {:?}",
            (1..=7).map(|n| (n, sleeping(n))).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// Live (non-zombie) processes whose command line contains `marker`.
fn alive_with(marker: &str) -> Vec<u32> {
    processes_with(marker)
        .into_iter()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.rfind(')')
                .is_some_and(|at| !stat[at + 1..].trim_start().starts_with(['Z', 'X']))
        })
        .collect()
}

#[test]
fn nothing_a_foreground_command_starts_outlives_it() {
    // Regression: 100 foreground `setsid -f sleep 600` left 100 processes running after
    // their commands returned (not jobs, no timeout, gone only when `serve` exited).
    let marker = "42.0625";
    let mut server = Server::start();
    server.initialize("2025-06-18");
    for id in 1..=20 {
        let result = server.call(
            id,
            "run_shell",
            json!({"command": format!("setsid -f sleep {marker}1 && echo started")}),
        );
        assert_eq!(result["isError"], false, "{result}");
    }
    // A double fork that leaves the group, and a command stopped by its timeout.
    let result = server.call(
        21,
        "run_shell",
        json!({"command": format!("(setsid sleep {marker}2 &); (set -m; sleep {marker}3 &); echo started")}),
    );
    assert_eq!(result["isError"], false, "{result}");
    let result = server.call(
        22,
        "run_shell",
        json!({"command": format!("setsid -f sleep {marker}4; sleep 1000"), "timeout_ms": 1000}),
    );
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("command failed (timeout)"),
        "{result}"
    );
    assert_eq!(
        alive_with(&format!("sleep {marker}")),
        Vec::<u32>::new(),
        "processes outlived their commands"
    );
}

#[test]
fn a_background_jobs_processes_end_with_the_job() {
    // Regression: a job's `setsid` child outlived `job_kill` and the job's end.
    let marker = "42.125";
    let mut server = Server::start();
    server.initialize("2025-06-18");
    let job = server.call(
        1,
        "run_shell",
        json!({"command": format!("setsid -f sleep {marker}1; sleep {marker}2"), "background": true}),
    );
    assert_eq!(job["isError"], false, "{job}");
    let id = job["structuredContent"]["job_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + WAIT;
    while alive_with(&format!("sleep {marker}")).len() < 2 {
        assert!(Instant::now() < deadline, "the job's processes start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = server.call(2, "job_kill", json!({"job_id": id}));
    assert_eq!(killed["isError"], false, "{killed}");
    assert_eq!(
        alive_with(&format!("sleep {marker}")),
        Vec::<u32>::new(),
        "{killed}"
    );

    // A job whose shell ends by itself: its setsid child goes with it.
    let job = server.call(
        3,
        "run_shell",
        json!({"command": format!("setsid -f sleep {marker}3; echo started"), "background": true}),
    );
    let id = job["structuredContent"]["job_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + WAIT;
    let mut n = 4;
    loop {
        let page = server.call(n, "job_output", json!({"job_id": id}));
        n += 1;
        if page["structuredContent"]["status"] != "running" {
            assert_eq!(page["structuredContent"]["status"], "exited", "{page}");
            break;
        }
        assert!(Instant::now() < deadline, "the job ends");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(alive_with(&format!("sleep {marker}")), Vec::<u32>::new());
}

/// A stdio MCP server (a shell script) that answers nothing until `gate` exists, then
/// offers `weather_report`.
fn gated_server(dir: &std::path::Path, gate: &std::path::Path) -> std::path::PathBuf {
    let script = dir.join("gated.sh");
    std::fs::write(
        &script,
        format!(
            r#"while [ ! -e '{gate}' ]; do sleep 0.02; done
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"gated","version":"1"}}}}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"tools":[{{"name":"weather_report","description":"Reports the weather of a city.","inputSchema":{{"type":"object"}}}}]}}}}\n' "$id" ;;
    *'"method":"tools/call"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"content":[{{"type":"text","text":"sunny"}}]}}}}\n' "$id" ;;
  esac
done
"#,
            gate = gate.display()
        ),
    )
    .unwrap();
    script
}

/// Serves `dir` with the user config `config` (a grace far longer than the tests' own wait:
/// a list that waited for a starting server would hang them).
fn serve_with_servers(dir: tempfile::TempDir, servers: &str) -> Server {
    user_config(
        dir.path(),
        &format!("[mcp]\nfirst_list_grace_ms = 600000\n\n{servers}"),
    );
    let mut server = Server::start_in(dir);
    server.initialize("2025-06-18");
    server
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Regression: with a cold catalog the first `tools/list` waited up to 5 s for starting
/// servers, and Codex sent its first model request without toolgate's tools. Now no list
/// waits: it offers search_tool and run_tool at once, and a call waits for its own server
/// only, not for one that hangs.
#[test]
fn the_first_list_never_waits_and_a_call_waits_only_for_its_own_server() {
    let dir = project();
    let gate = dir.path().join("go");
    let script = gated_server(dir.path(), &gate);
    let mut server = serve_with_servers(
        dir,
        &format!(
            "[mcp_servers.hangs]\ncommand = \"sleep\"\nargs = [\"600\"]\nstartup_timeout_sec = 600\n\n[mcp_servers.gated]\ncommand = \"sh\"\nargs = [\"{}\"]\nstartup_timeout_sec = 600\n",
            script.display()
        ),
    );
    let names = tool_names(&server.request(1, "tools/list", json!({})));
    for expected in ["search_tool", "run_tool", "read_file"] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    // Sent while its server is starting: waits for it, not for `hangs`.
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "run_tool", "arguments": {"name": "mcp__gated__weather_report", "input": {}}}}));
    std::fs::write(&gate, "").unwrap();
    let reply = server.response();
    assert_eq!(reply["id"], 2, "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], "sunny", "{reply}");
}

/// A search made while a server is starting waits for it (within the grace).
#[test]
fn a_search_made_while_a_server_starts_finds_its_tools() {
    let dir = project();
    let gate = dir.path().join("go");
    let script = gated_server(dir.path(), &gate);
    let mut server = serve_with_servers(
        dir,
        &format!(
            "[mcp_servers.gated]\ncommand = \"sh\"\nargs = [\"{}\"]\nstartup_timeout_sec = 600\n",
            script.display()
        ),
    );
    let names = tool_names(&server.request(1, "tools/list", json!({})));
    assert!(names.iter().any(|n| n == "search_tool"), "{names:?}");
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search_tool", "arguments": {"query": "weather of a city"}}}));
    std::fs::write(&gate, "").unwrap();
    let found = server.response();
    assert_eq!(found["id"], 2, "{found}");
    let text = found["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("mcp__gated__weather_report"), "{text}");
}

/// Text of a tool result.
fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn process_group_containment_starts_commands_like_a_fork_did() {
    // With process groups (no PID namespace) a command is started posix_spawn style,
    // sharing toolgate's memory until its exec; everything a forked start gave it must
    // still hold.
    starts_commands_like_a_fork_did(Some("process-group"), "43.1417");
}

#[test]
fn namespace_containment_starts_commands_through_the_spawner_like_a_fork_did() {
    // Inside the PID namespace the relay runs in toolgate's memory and the keeper starts
    // the supervisor and the command; the command must not tell.
    starts_commands_like_a_fork_did(None, "43.1418");
}

/// Runs the checks of a started command under `containment` (the default when `None`).
fn starts_commands_like_a_fork_did(containment: Option<&str>, marker: &str) {
    let dir = project();
    if let Some(containment) = containment {
        user_config(
            dir.path(),
            &format!("[shell]\ncontainment = \"{containment}\"\n"),
        );
    }
    let root = dir.path().canonicalize().unwrap();
    // The shell leads its group; inside the namespace the group is the relay's, outside
    // it, so its id reads as 0 there.
    let group = match containment {
        Some(_) => "$$",
        None => "0",
    };
    let mut server = Server::start_with(dir, |cmd| {
        cmd.env("TOOLGATE_LAUNCH_PROBE", "from-toolgate");
    });
    server.initialize("2025-06-18");

    let done = server.call(
        1,
        "run_shell",
        json!({"command": "echo out; echo err >&2; echo \"zero=$0\"; pwd; echo \"env=$TOOLGATE_LAUNCH_PROBE\"; exit 3"}),
    );
    let out = text(&done);
    assert_eq!(done["isError"], true, "{done}");
    for want in [
        "exit code 3",
        "out",
        "err",
        "zero=bash",
        "env=from-toolgate",
    ] {
        assert!(out.contains(want), "{want:?} missing: {out}");
    }
    assert!(out.contains(&root.display().to_string()), "{out}");

    // Its own process group, stdin /dev/null, none of toolgate's descriptors (its epoll, eventfds, pidfds,
    // sockets), no signal blocked and SIGPIPE not ignored.
    let state = server.call(
        2,
        "run_shell",
        json!({"command": format!("[ \"$(ps -o pgid= -p $$ | tr -d ' ')\" = \"{group}\" ] && echo own-group; \
                            echo \"stdin=$(readlink /proc/$$/fd/0)\"; ls -l /proc/$$/fd; \
                            grep -E '^Sig(Blk|Ign)' /proc/self/status")}),
    );
    let out = text(&state);
    assert_eq!(state["isError"], false, "{state}");
    assert!(out.contains("own-group"), "{out}");
    assert!(out.contains("stdin=/dev/null"), "{out}");
    for inner in ["anon_inode", "socket:"] {
        assert!(
            !out.contains(inner),
            "a toolgate descriptor reached the command: {out}"
        );
    }
    let mask = |name: &str| {
        let line = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{out}"));
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    assert_eq!(mask("SigBlk:"), 0, "{out}");
    assert_eq!(
        mask("SigIgn:") & (1 << (13 - 1)),
        0,
        "SIGPIPE ignored: {out}"
    );

    // A timeout stops the command's group.
    let timed = server.call(
        3,
        "run_shell",
        json!({"command": format!("sleep {marker}1 & sleep {marker}2"), "timeout_ms": 300}),
    );
    assert!(text(&timed).contains("timeout"), "{timed}");
    assert_eq!(alive_with(&format!("sleep {marker}")), Vec::<u32>::new());

    // The parent-death signal: a background command dies with the server.
    let job = server.call(
        4,
        "run_shell",
        json!({"command": format!("sleep {marker}3"), "background": true}),
    );
    assert_eq!(job["isError"], false, "{job}");
    let deadline = Instant::now() + WAIT;
    while alive_with(&format!("sleep {marker}3")).is_empty() {
        assert!(Instant::now() < deadline, "the job starts");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let deadline = Instant::now() + WAIT;
    while !alive_with(&format!("sleep {marker}3")).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the job outlived a SIGKILLed server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn process_group_containment_enters_the_sandbox_before_exec() {
    let dir = project();
    user_config(
        dir.path(),
        "[shell]\ncontainment = \"process-group\"\nsandbox = \"read-only\"\n",
    );
    let probe = dir.path().join("written");
    let mut server = Server::start_in(dir);
    server.initialize("2025-06-18");
    let done = server.call(
        1,
        "run_shell",
        json!({"command": "touch written; echo touch=$?; cat README.md"}),
    );
    let out = text(&done);
    assert!(out.contains("touch=1"), "{out}");
    assert!(out.contains("hello"), "reading still works: {out}");
    assert!(!probe.exists(), "the read-only sandbox let a write through");
}

/// How a client connects a server's stdin and stdout: Node's `child_process` gives it a
/// socket for each, Python and Rust pipes, and a shell `2>&1` makes stdout the log's pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Connection {
    Sockets,
    Pipes,
    StdoutIsStderr,
}

/// One stream to toolgate (`reads`: toolgate reads it) or from it: toolgate's end, the
/// test's end, and a copy of toolgate's (the same file description, so the same flags).
fn stream(connection: Connection, reads: bool) -> [std::os::fd::OwnedFd; 3] {
    use std::os::fd::OwnedFd;
    if connection == Connection::Sockets {
        let (theirs, ours) = std::os::unix::net::UnixStream::pair().unwrap();
        let copy = theirs.try_clone().unwrap();
        return [theirs.into(), ours.into(), copy.into()];
    }
    let (reader, writer) = std::io::pipe().unwrap();
    if reads {
        let copy = reader.try_clone().unwrap();
        [reader.into(), writer.into(), OwnedFd::from(copy)]
    } else {
        let copy = writer.try_clone().unwrap();
        [writer.into(), reader.into(), OwnedFd::from(copy)]
    }
}

fn non_blocking(fd: &std::os::fd::OwnedFd) -> bool {
    rustix::fs::fcntl_getfl(fd)
        .unwrap()
        .contains(rustix::fs::OFlags::NONBLOCK)
}

/// Over sockets and over pipes the server answers with its descriptors read and written by
/// the runtime itself (non-blocking while it serves), and leaves them blocking when it
/// ends, for whoever shares them; a stdout that is also stderr stays blocking throughout,
/// so a log line can never meet `EAGAIN`.
#[test]
fn sockets_and_pipes_are_served_non_blocking_and_left_blocking() {
    for connection in [
        Connection::Sockets,
        Connection::Pipes,
        Connection::StdoutIsStderr,
    ] {
        let dir = project();
        let [their_in, our_in, in_copy] = stream(connection, true);
        let [their_out, our_out, out_copy] = stream(connection, false);
        let stderr = match connection {
            Connection::StdoutIsStderr => Stdio::from(their_out.try_clone().unwrap()),
            _ => Stdio::null(),
        };
        let mut child = toolgate(dir.path())
            .args(["serve", "--log-level", "warn"])
            .stdin(Stdio::from(their_in))
            .stdout(Stdio::from(their_out))
            .stderr(stderr)
            .spawn()
            .unwrap();
        // read(2) and write(2) work on sockets too.
        let mut input = std::io::PipeWriter::from(our_in);
        let output = BufReader::new(std::io::PipeReader::from(our_out));
        let (tx, lines) = sync_channel(UNREAD_LINES);
        std::thread::spawn(move || {
            for line in output.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut exchange = |message: Value| -> Value {
            writeln!(input, "{message}").unwrap();
            loop {
                let line = match lines.recv_timeout(WAIT) {
                    Ok(line) => line,
                    Err(e) => panic!("{connection:?}: no reply within {WAIT:?} ({e})"),
                };
                let value: Value = serde_json::from_str(&line).unwrap();
                if value.get("id").is_some() {
                    return value;
                }
            }
        };
        let init = exchange(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        );
        assert_eq!(init["id"], 1, "{connection:?}: {init}");
        let read = exchange(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "README.md"}}}),
        );
        let text = read["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("hello"), "{connection:?}: {read}");
        assert!(
            non_blocking(&in_copy),
            "{connection:?}: stdin is read by the runtime"
        );
        assert_eq!(
            non_blocking(&out_copy),
            connection != Connection::StdoutIsStderr,
            "{connection:?}: stdout"
        );
        drop(input);
        let status = child.wait().unwrap();
        assert!(status.success(), "{connection:?}: {status:?}");
        assert!(
            !non_blocking(&in_copy),
            "{connection:?}: stdin left non-blocking"
        );
        assert!(
            !non_blocking(&out_copy),
            "{connection:?}: stdout left non-blocking"
        );
    }
}
