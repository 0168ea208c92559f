//! Trust covers the project files a server runs, not only its command. A model that may
//! only write files must not get code running by rewriting a trusted server's script or
//! planting the `node_modules/.bin/X` an `npx -y X` server would take.
//!
//! The mounted server is toolgate itself (`serve --root src`), started from a project
//! script; the rewritten script first touches a marker file, so "the new code ran" is a file
//! that appears.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{project, toolgate};

/// Bounds a hang only; nothing waits this long when things work.
const DEADLINE: Duration = Duration::from_secs(60);

/// A script that serves `src` over MCP, running `before` first.
fn script(before: &str) -> String {
    format!(
        "#!/bin/sh\n{before}\nexec '{}' serve --root src\n",
        env!("CARGO_BIN_EXE_toolgate")
    )
}

fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A project whose `.mcp.json` mounts `srv` as `command args`.
fn project_with(command: &str, args: &[&str]) -> tempfile::TempDir {
    let dir = project();
    let body = json!({ "mcpServers": { "srv": { "command": command, "args": args } } });
    std::fs::write(dir.path().join(".mcp.json"), body.to_string()).unwrap();
    dir
}

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    toolgate(dir)
        .env("HOME", dir)
        .env_remove("CODEX_HOME")
        .args(args)
        .output()
        .unwrap()
}

fn trust(dir: &Path) -> String {
    let out = run(dir, &["mcp", "trust", "srv"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `srv` as `mcp list --json` shows it (which starts it if it may start).
fn listed(dir: &Path) -> Value {
    let out = run(dir, &["mcp", "list", "--json"]);
    assert!(out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    body["servers"][0].clone()
}

/// Trusts `srv`, checks it runs, lets `change` alter what it runs, and checks the change
/// is reported (naming `changed`) instead of run.
fn a_change_is_not_run(dir: &Path, change: impl FnOnce(), changed: &str) {
    let marker = dir.join("marker");
    trust(dir);
    let before = listed(dir);
    assert_eq!(before["status"], "ready", "{before}");
    change();
    let after = listed(dir);
    assert!(!marker.exists(), "the changed server ran: {after}");
    assert_eq!(after["status"], "untrusted", "{after}");
    let reason = after["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("`{changed}`")) && reason.contains("toolgate mcp trust srv"),
        "{reason}"
    );
    let out = run(dir, &["mcp", "list"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains(&format!(
            "not started: `{changed}` changed since it was trusted"
        )),
        "{table}"
    );
    // The user looks, agrees, trusts again: now it runs.
    trust(dir);
    assert_eq!(listed(dir)["status"], "ready");
    assert!(marker.exists());
}

#[test]
fn a_rewritten_command_script_asks_for_trust_again_instead_of_running() {
    let dir = project_with("./server.sh", &[]);
    let path = dir.path().join("server.sh");
    write_exec(&path, &script(""));
    a_change_is_not_run(
        dir.path(),
        || write_exec(&path, &script("touch marker")),
        "server.sh",
    );
    // What the fingerprint covers is shown by `mcp trust` and `mcp list`.
    let out = trust(dir.path());
    assert!(out.contains("covers: server.sh"), "{out}");
    assert_eq!(listed(dir.path())["files"], json!(["server.sh"]));
    let out = run(dir.path(), &["mcp", "list"]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("covers: server.sh"), "{table}");
}

#[test]
fn a_rewritten_script_argument_asks_for_trust_again_instead_of_running() {
    let dir = project_with("sh", &["bin/serve.sh"]);
    let path = dir.path().join("bin/serve.sh");
    write_exec(&path, &script(""));
    a_change_is_not_run(
        dir.path(),
        || write_exec(&path, &script("touch marker")),
        "bin/serve.sh",
    );
}

#[test]
fn a_local_bin_planted_for_an_npx_server_is_not_run() {
    // `npx -y X` runs the project's `node_modules/.bin/X` when there is one (no download).
    let dir = project_with("npx", &["-y", "tg-trust-probe"]);
    trust(dir.path());
    // Before the change the package would come from the registry; no network here, so the
    // server is not started before the bin appears.
    let bin = dir.path().join("node_modules/.bin/tg-trust-probe");
    write_exec(&bin, &script("touch marker"));
    let after = listed(dir.path());
    assert!(!dir.path().join("marker").exists(), "the planted bin ran");
    assert_eq!(after["status"], "untrusted", "{after}");
    let reason = after["reason"].as_str().unwrap();
    assert!(
        reason.contains("`node_modules/.bin/tg-trust-probe` appeared since it was trusted"),
        "{reason}"
    );
}

fn call(dir: &Path, tool: &str, args: Value) -> std::process::Output {
    run(dir, &["call", tool, &args.to_string()])
}

#[test]
fn write_and_edit_refuse_a_trusted_servers_files_and_run_shell_changes_ask_again() {
    let dir = project_with("sh", &["server.sh"]);
    let path = dir.path().join("server.sh");
    write_exec(&path, &script(""));
    trust(dir.path());
    let original = std::fs::read_to_string(&path).unwrap();
    let refused = |out: std::process::Output, given: &str| {
        assert_eq!(out.status.code(), Some(1));
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            text.contains(&format!("`{given}` is run by the MCP server `srv`"))
                && text.contains("toolgate mcp trust srv")
                && text.contains("allow_control_files"),
            "{text}"
        );
    };
    refused(
        call(
            dir.path(),
            "write_file",
            json!({"path": "server.sh", "content": script("touch marker")}),
        ),
        "server.sh",
    );
    refused(
        call(
            dir.path(),
            "edit_file",
            json!({"path": "./server.sh", "old_string": "exec", "new_string": "touch marker; exec"}),
        ),
        "./server.sh",
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    // The npx case: the bin a runner would take is refused before it exists.
    let npx = project_with("npx", &["-y", "tg-trust-probe"]);
    trust(npx.path());
    let out = call(
        npx.path(),
        "write_file",
        json!({"path": "node_modules/.bin/tg-trust-probe", "content": "x"}),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!npx.path().join("node_modules/.bin/tg-trust-probe").exists());

    // run_shell can still write it (no sandbox here): the fingerprint changes, so the
    // server asks for trust again rather than running it.
    let out = call(
        dir.path(),
        "run_shell",
        json!({"command": "sed -i 's/^exec/touch marker; exec/' server.sh"}),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(std::fs::read_to_string(&path).unwrap(), original);
    let after = listed(dir.path());
    assert_eq!(after["status"], "untrusted", "{after}");
    assert!(!dir.path().join("marker").exists());
}

/// `toolgate serve` over stdio, spoken to with raw JSON-RPC lines.
struct Serve {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    /// `notifications/tools/list_changed` received so far.
    list_changes: usize,
}

impl Serve {
    fn start(dir: &Path) -> Self {
        let mut child = toolgate(dir)
            .env("HOME", dir)
            .args(["serve", "--log-level", "warn"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        let mut serve = Self {
            child,
            stdin,
            lines,
            next_id: 0,
            list_changes: 0,
        };
        serve.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        serve.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message: a response or a notification.
    fn message(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(DEADLINE)
            .expect("toolgate serve said nothing within the deadline");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "notifications/tools/list_changed" {
            self.list_changes += 1;
        }
        message
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.message();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, tool: &str) -> (bool, String) {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": {}}));
        let result = &reply["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        (result["isError"] == true, text.to_owned())
    }

    /// Calls `tool` once its server has published it (its tools appear when it is ready,
    /// announced with `tools/list_changed`).
    fn call_when_listed(&mut self, tool: &str) -> (bool, String) {
        loop {
            let seen = self.list_changes;
            let (error, text) = self.call(tool);
            if !text.contains("unknown tool") {
                return (error, text);
            }
            while self.list_changes == seen {
                self.message();
            }
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Host pids of the mounted `toolgate serve --root src` started in `dir` (found through
/// `/proc`: inside its PID namespace the server cannot tell its own host pid).
fn mounted_servers(dir: &Path) -> Vec<String> {
    let dir = dir.canonicalize().unwrap();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cwd = std::fs::read_link(entry.path().join("cwd"));
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if cwd.is_ok_and(|c| c == dir) && cmdline.ends_with(b"serve\0--root\0src\0") {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn a_crashed_server_whose_script_changed_is_not_restarted_with_the_new_code() {
    let dir = project_with("sh", &["server.sh"]);
    let path = dir.path().join("server.sh");
    write_exec(&path, &script(""));
    trust(dir.path());
    let mut serve = Serve::start(dir.path());
    let (error, text) = serve.call_when_listed("mcp__srv__list_dir");
    assert!(!error && text.contains("main.rs"), "{text}");

    // Changed while `serve` runs (by `run_shell`, say), then the server crashes.
    write_exec(&path, &script("touch marker"));
    let pids = mounted_servers(dir.path());
    // The server, and the relay that waits for it outside its PID namespace.
    assert!(!pids.is_empty(), "the mounted server is not running");
    // One by one: the relay may exit on its own once the server is gone (then its kill
    // finds no process), so at least one kill must land, not every one.
    let killed = pids
        .iter()
        .filter(|pid| {
            std::process::Command::new("kill")
                .args(["-9", pid.as_str()])
                .status()
                .is_ok_and(|s| s.success())
        })
        .count();
    assert!(killed > 0, "none of {pids:?} could be killed");

    // The next calls find it gone and restart it: the restart checks its files first.
    let deadline = Instant::now() + DEADLINE;
    let text = loop {
        let (error, text) = serve.call("mcp__srv__list_dir");
        if !error || text.contains("server.sh") || dir.path().join("marker").exists() {
            break text;
        }
        assert!(Instant::now() < deadline, "no restart attempt: {text}");
    };
    assert!(
        !dir.path().join("marker").exists(),
        "the restart ran the changed script"
    );
    assert!(
        text.contains("`server.sh` changed since it was trusted")
            && text.contains("toolgate mcp trust srv"),
        "{text}"
    );
}
