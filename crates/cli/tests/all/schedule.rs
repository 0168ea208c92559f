//! Scheduling through the real server: sessions do not wait for each other, calls of one
//! session keep their arrival order (regressions of the process-wide lock).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use toolgate_test_support::{HANG_GUARD, wait_until};

use crate::{project, toolgate};

/// A command that says it started (creates `NAME.started`), then runs until the test creates
/// `NAME.go`, and prints `done`.
fn gated(name: &str) -> String {
    format!("touch {name}.started; while [ ! -e {name}.go ]; do sleep 0.05; done; echo done")
}

/// `toolgate serve --http` on a free loopback port.
struct HttpServer {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl HttpServer {
    fn start(dir: tempfile::TempDir) -> Self {
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
                    let url = line[at..].split_whitespace().next().unwrap().to_owned();
                    let _ = tx.send(url);
                }
            }
        });
        let url = rx
            .recv_timeout(HANG_GUARD)
            .expect("the server says where it listens");
        Self { child, url, dir }
    }

    async fn session(&self) -> RunningService<RoleClient, ()> {
        // reqwest is built without a default TLS provider (the gateway installs ring).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = StreamableHttpClientTransport::from_uri(self.url.clone());
        ().serve(transport).await.unwrap()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn call(session: &RunningService<RoleClient, ()>, name: &str, args: Value) -> Value {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
    let result = session.call_tool(params).await.unwrap();
    serde_json::to_value(result).unwrap()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_command_in_one_session_holds_up_nothing_in_another() {
    // Regression: while session A ran `sleep 8`, session B's read_file, job_kill and
    // run_shell all waited for it (one RwLock for the whole process).
    let server = HttpServer::start(project());
    let root = server.dir.path().to_owned();
    let a = server.session().await;
    let b = server.session().await;
    let long =
        tokio::spawn(async move { call(&a, "run_shell", json!({"command": gated("a")})).await });
    wait_until("A's command to start", || root.join("a.started").exists()).await;
    let job = call(
        &b,
        "run_shell",
        json!({"command": "sleep 60", "background": true}),
    )
    .await;
    assert_eq!(job["isError"], false, "{job}");
    let job_id = job["structuredContent"]["job_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (name, args) in [
        ("read_file", json!({"path": "README.md"})),
        ("grep", json!({"pattern": "hello"})),
        ("list_dir", json!({})),
        (
            "write_file",
            json!({"path": "b.txt", "content": "from b\n"}),
        ),
        ("job_output", json!({"job_id": job_id})),
        ("job_kill", json!({"job_id": job_id})),
        (
            "run_shell",
            json!({"command": "echo quick", "timeout_ms": 2000}),
        ),
    ] {
        let out = call(&b, name, args).await;
        assert_eq!(out["isError"], false, "{name}: {out}");
    }
    assert!(
        !long.is_finished(),
        "every call of session B answered while A's command still ran"
    );
    std::fs::write(root.join("a.go"), "").unwrap();
    let out = long.await.unwrap();
    assert_eq!(out["isError"], false, "{out}");
    assert!(text(&out).contains("done"));
    b.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_behind_its_own_session_times_out_and_never_runs() {
    let server = HttpServer::start(project());
    let root = server.dir.path().to_owned();
    let a = std::sync::Arc::new(server.session().await);
    let first = tokio::spawn({
        let a = std::sync::Arc::clone(&a);
        async move { call(&a, "run_shell", json!({"command": gated("first")})).await }
    });
    wait_until("the first command to start", || {
        root.join("first.started").exists()
    })
    .await;
    let started = Instant::now();
    let out = call(
        &a,
        "run_shell",
        json!({"command": "touch ran.txt", "timeout_ms": 1000}),
    )
    .await;
    let waited = started.elapsed();
    assert!(
        !first.is_finished(),
        "gave up while the first call still ran"
    );
    assert_eq!(out["isError"], true, "{out}");
    assert!(
        text(&out).contains("timed out after 1 s while waiting for this session's earlier `run_shell` call to finish; it did not run"),
        "{out}"
    );
    // A lower bound, which load only makes easier to meet: the wait is what is under test.
    assert!(waited >= Duration::from_secs(1), "waited its whole second");
    std::fs::write(root.join("first.go"), "").unwrap();
    assert_eq!(first.await.unwrap()["isError"], false);
    let ran = call(&a, "list_dir", json!({})).await;
    assert!(
        !text(&ran).contains("ran.txt"),
        "the timed-out call never ran"
    );
}

/// `toolgate serve` on stdio with every request written at once, before any reply is read.
fn pipelined(dir: &std::path::Path, requests: &[Value]) -> Vec<Value> {
    let mut child = toolgate(dir)
        .args(["serve", "--log-level", "warn"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = String::new();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}});
    input.push_str(&format!("{init}\n"));
    input.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for (i, params) in requests.iter().enumerate() {
        let request =
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": params});
        input.push_str(&format!("{request}\n"));
    }
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, input.as_bytes()).unwrap();
    let mut replies = vec![Value::Null; requests.len()];
    let mut got = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let value: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if let Some(id) = value["id"].as_u64().filter(|&id| id >= 1) {
            replies[id as usize - 1] = value["result"].clone();
            got += 1;
            if got == requests.len() {
                break;
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    replies
}

#[test]
fn a_hundred_pipelined_edits_of_one_file_apply_in_arrival_order() {
    // Regression: 5 pipelined write_file calls to one file left the wrong content in 25 of
    // 30 trials. Each edit here needs the previous one's text, so any reordering fails an
    // edit and breaks the chain.
    let dir = project();
    std::fs::write(dir.path().join("n.txt"), "n=0\n").unwrap();
    let mut requests = vec![json!({"name": "read_file", "arguments": {"path": "n.txt"}})];
    for i in 1..=100 {
        requests.push(json!({"name": "edit_file", "arguments": {
            "path": "n.txt", "old_string": format!("n={}\n", i - 1), "new_string": format!("n={i}\n"),
        }}));
    }
    requests.push(json!({"name": "read_file", "arguments": {"path": "n.txt"}}));
    let replies = pipelined(dir.path(), &requests);
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply["isError"], false, "call {i}: {reply}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("n.txt")).unwrap(),
        "n=100\n"
    );
    assert_eq!(
        replies.last().unwrap()["content"][0]["text"],
        "     1\tn=100\n"
    );
}
