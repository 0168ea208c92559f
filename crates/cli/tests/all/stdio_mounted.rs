//! The MCP server over stdio with mounted servers that are slow to start: the first list
//! never waits, a call or a search waits only for the server it needs.

use serde_json::{Value, json};

use crate::stdio::Server;
use crate::{project, user_config};

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
