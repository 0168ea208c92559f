//! Mixed lifecycles over Streamable HTTP: stateless requests and an `initialize`d session
//! side by side, each request judged by what it carries.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{project, toolgate};

struct Server {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Self {
        let dir = project();
        let mut child = toolgate(dir.path())
            .args(["serve", "--http", "127.0.0.1:0", "--log-level", "info"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(at) = line.find("http://") {
                    let url = line[at + "http://".len()..]
                        .split_whitespace()
                        .next()
                        .unwrap()
                        .to_owned();
                    let _ = tx.send(url.split('/').next().unwrap().to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server says where it listens");
        Self {
            child,
            addr,
            _dir: dir,
        }
    }

    /// POSTs `body` to `/mcp` (with `session` as `Mcp-Session-Id`); the reply's JSON-RPC
    /// message (from a JSON or an SSE body) and session id.
    fn post(&self, body: &Value, session: Option<&str>) -> (Value, Option<String>) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let body = body.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.addr,
            body.len()
        );
        if let Some(id) = session {
            head.push_str(&format!(
                "Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-11-25\r\n"
            ));
        }
        // A stateless request names its version in a header too.
        if let Some(version) = body_version(body.as_str()) {
            let method = serde_json::from_str::<Value>(&body).unwrap()["method"]
                .as_str()
                .unwrap()
                .to_owned();
            head.push_str(&format!(
                "Mcp-Protocol-Version: {version}\r\nMcp-Method: {method}\r\n"
            ));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (headers, body) = text.split_once("\r\n\r\n").unwrap();
        let session = headers.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_owned())
        });
        let body = if headers
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_owned()
        };
        let message = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .chain(std::iter::once(body.trim()))
            .find_map(|l| {
                serde_json::from_str::<Value>(l)
                    .ok()
                    .filter(|v| v.get("id").is_some())
            })
            .unwrap_or_else(|| panic!("no JSON-RPC reply in {text}"));
        (message, session)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The protocol version a request's `_meta` names.
fn body_version(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    value["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .map(str::to_owned)
}

/// A chunked HTTP body, joined.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn stateless_requests_and_an_initialized_session_mix_over_http() {
    let server = Server::start();
    let (listed, _) = server.post(
        &request(1, "tools/list", json!({"_meta": stateless_meta()})),
        None,
    );
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let (init, session) = server.post(
        &request(
            2,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
        ),
        None,
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let session = session.expect("initialize opens a session");
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{note}",
        server.addr,
        note.len()
    )
    .unwrap();
    let mut ignored = Vec::new();
    stream.read_to_end(&mut ignored).unwrap();
    for id in 3..6 {
        let (plain, _) = server.post(&request(id, "tools/list", json!({})), Some(&session));
        assert!(plain["result"]["tools"].is_array(), "{plain}");
        let (stateless, _) = server.post(
            &request(id + 100, "tools/list", json!({"_meta": stateless_meta()})),
            None,
        );
        assert!(stateless["result"]["tools"].is_array(), "{stateless}");
    }
}

/// A wrong `[server.auth]` stops `serve --http` with what to set; a project file may not set
/// it at all (it decides who can connect).
#[test]
fn a_wrong_or_project_server_auth_is_refused_with_what_to_set() {
    let dir = project();
    let user = dir.path().join(".no-user-config/toolgate");
    std::fs::create_dir_all(&user).unwrap();
    let serve = |dir: &std::path::Path| {
        toolgate(dir)
            .args(["serve", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for (config, says) in [
        (
            "[server.auth]\nissuer = \"http://login.example.com\"\naudience = \"a\"\n",
            "must be an https:// URL (http:// only on loopback)",
        ),
        (
            "[server.auth]\nissuer = \"https://login.example.com\"\n",
            "set `audience = \"…\"`",
        ),
        (
            "[server.auth]\naudience = \"a\"\n",
            "set `issuer = \"https://…\"`",
        ),
    ] {
        std::fs::write(user.join("config.toml"), config).unwrap();
        let out = serve(dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {stderr}");
        assert!(stderr.contains(says), "{config}: {stderr}");
    }
    std::fs::remove_file(user.join("config.toml")).unwrap();
    std::fs::create_dir_all(dir.path().join(".toolgate")).unwrap();
    std::fs::write(
        dir.path().join(".toolgate/config.toml"),
        "[server.auth]\nissuer = \"https://evil.example\"\naudience = \"a\"\n",
    )
    .unwrap();
    let out = serve(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("server.auth"), "{stderr}");
}
