//! Many commands started at once from many threads: each comes back with its own status and
//! output, and nothing is left behind (no descriptor, no zombie).
//!
//! Descriptors are counted per process and the other tests of this binary open their own
//! meanwhile, so the test runs itself again in a process of its own.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::Barrier;

/// Set in the copy of this binary that runs [`alone`].
const ALONE: &str = "TOOLGATE_CONTAIN_STRESS_ALONE";
const THREADS: usize = 8;
const PER_THREAD: usize = 4;

#[test]
fn concurrent_starts_get_their_own_status_and_output_and_leave_nothing_behind() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stress::alone", "--ignored", "--test-threads=1"])
        .env(ALONE, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("1 passed"),
        "the stress test did not run: {text}"
    );
}

/// What one start reports: its status and everything it wrote.
#[derive(Debug, PartialEq, Eq)]
struct Report {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
}

fn expected(n: usize) -> Report {
    Report {
        code: Some(i32::try_from(n).unwrap() + 1),
        signal: None,
        stdout: format!("out {n}\n"),
        stderr: format!("err {n}\n"),
    }
}

fn script(n: usize) -> String {
    format!("echo out {n}; echo err {n} >&2; exit {}", n + 1)
}

fn drain(fd: OwnedFd) -> String {
    let mut text = String::new();
    std::io::PipeReader::from(fd)
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// A started command, not waited for yet.
enum Running {
    /// Through [`toolgate_contain::launch`] (the spawner inside the namespace), its output
    /// read by a thread of its own.
    Launched(
        toolgate_contain::Started,
        std::thread::JoinHandle<(String, String)>,
    ),
    /// Through [`toolgate_contain::contain`] and a `Command` (the relay).
    Contained(tokio::process::Child),
}

/// Starts `sh -c script(n)`: even `n` through the spawner, odd through the relay. Call it
/// within the runtime.
fn start(n: usize) -> Running {
    let script = script(n);
    if n.is_multiple_of(2) {
        let argv = ["sh", "-c", &script].map(std::ffi::OsStr::new);
        let sandbox = toolgate_contain::Sandbox::default();
        let (started, stdout, stderr) =
            toolgate_contain::launch(Path::new("/bin/sh"), &argv, Path::new("/"), &sandbox)
                .expect("no launch here")
                .unwrap();
        let output = std::thread::spawn(move || (drain(stdout), drain(stderr)));
        return Running::Launched(started, output);
    }
    let mut cmd = super::command(&script);
    toolgate_contain::contain(&mut cmd);
    Running::Contained(cmd.spawn().unwrap())
}

/// Waits for a started command and everything it wrote.
async fn finish(running: Running) -> Report {
    match running {
        Running::Launched(mut started, output) => {
            let status = started.wait().await.unwrap();
            let (stdout, stderr) = output.join().unwrap();
            Report {
                code: status.code(),
                signal: status.signal(),
                stdout,
                stderr,
            }
        }
        Running::Contained(child) => {
            let out = child.wait_with_output().await.unwrap();
            Report {
                code: out.status.code(),
                signal: out.status.signal(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        }
    }
}

/// This process's open descriptors.
fn descriptors() -> Vec<String> {
    let mut fds: Vec<String> = fs_err::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|entry| {
            let target = fs_err::read_link(entry.path())
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            format!("{} -> {target}", entry.file_name().to_string_lossy())
        })
        .collect();
    fds.sort();
    fds
}

/// Zombie children of this process (children that were never reaped).
fn zombies() -> Vec<String> {
    let me = std::process::id().to_string();
    fs_err::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| fs_err::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            let Some(at) = stat.rfind(')') else {
                return false;
            };
            let mut fields = stat[at + 1..].split_ascii_whitespace();
            let state = fields.next();
            state == Some("Z") && fields.next() == Some(me.as_str())
        })
        .collect()
}

#[test]
#[ignore = "run alone by concurrent_starts_get_their_own_status_and_output_and_leave_nothing_behind"]
fn alone() {
    if std::env::var_os(ALONE).is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // One start each way first: the namespace, its spawner and the runtime's process
    // machinery open what they keep for good.
    for n in [0, 1] {
        let running = runtime.block_on(async { start(n) });
        assert_eq!(runtime.block_on(finish(running)), expected(n));
    }
    let before = descriptors();
    let start_line = Barrier::new(THREADS);
    let reports: Vec<(usize, Report)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (runtime, start_line) = (&runtime, &start_line);
                // Each thread waits for its own commands: their parent-death signal follows
                // the thread that started them.
                scope.spawn(move || {
                    let _runtime = runtime.enter();
                    start_line.wait();
                    let running: Vec<(usize, Running)> = (0..PER_THREAD)
                        .map(|i| thread * PER_THREAD + i)
                        .map(|n| (n, start(n)))
                        .collect();
                    runtime.block_on(async {
                        let mut reports = Vec::new();
                        for (n, running) in running {
                            reports.push((n, finish(running).await));
                        }
                        reports
                    })
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    assert_eq!(reports.len(), THREADS * PER_THREAD);
    for (n, report) in reports {
        assert_eq!(report, expected(n), "start {n}");
    }
    assert_eq!(descriptors(), before, "descriptors left open");
    assert_eq!(zombies(), Vec::<String>::new(), "children left unreaped");
}
