//! The processes of the MCP server over stdio: signals, a client that stops reading or
//! kills the server, the commands a call starts and how they are contained, and the
//! streams it is served on.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::stdio::{Server, UNREAD_LINES, WAIT};
use crate::{project, toolgate, user_config};

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
    // An observation window, not a wait for an event: the check is that the writer does *not*
    // finish, and load can only slow the writer, so it can make this pass, never fail.
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
