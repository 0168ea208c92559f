//! A project folder with the shell tools over it, and /proc helpers that do not trust the
//! code under test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_budget::{Budget, BudgetLimits, SpillStore};
use toolgate_core::{CallContext, DynTool, Session, ToolOutput};
use toolgate_fs::Roots;
use toolgate_shell::{ShellLimits, builtin_shell_tools};
use toolgate_test_support::TempProject;

/// A temporary project with `run_shell`, `job_output` and `job_kill` over it.
pub struct Env {
    /// Shared by ordinary tests, exclusive for the one that measures the process's memory.
    _gate: Gate,
    pub project: TempProject,
    pub root: PathBuf,
    pub tools: BTreeMap<String, Arc<dyn DynTool>>,
    pub session: Arc<Session>,
}

enum Gate {
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Exclusive(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
}

static GATE: RwLock<()> = RwLock::new(());

impl Env {
    pub fn new() -> Self {
        let gate = Gate::Shared(GATE.read().unwrap_or_else(PoisonError::into_inner));
        Self::build(gate, ShellLimits::default())
    }

    /// An env with other limits.
    pub fn with_limits(limits: ShellLimits) -> Self {
        let gate = Gate::Shared(GATE.read().unwrap_or_else(PoisonError::into_inner));
        Self::build(gate, limits)
    }

    /// An env that runs alone in this test process (for memory measurements).
    pub fn alone() -> Self {
        let gate = Gate::Exclusive(GATE.write().unwrap_or_else(PoisonError::into_inner));
        Self::build(gate, ShellLimits::default())
    }

    fn build(gate: Gate, limits: ShellLimits) -> Self {
        let project = TempProject::new();
        let root = project.root().to_path_buf();
        fs_err::create_dir_all(root.join("sub")).unwrap();
        let spill_dir = root.join(".toolgate/spill");
        let roots = Arc::new(Roots::new([&root]).unwrap().with_read_only(&spill_dir));
        let store = Arc::new(SpillStore::new(spill_dir, 1 << 40));
        let budget = Arc::new(Budget::new(BudgetLimits::default(), store, root.clone()));
        let tools = builtin_shell_tools(roots, budget, limits)
            .into_iter()
            .map(|t| (t.spec().name.clone(), t))
            .collect();
        Self {
            _gate: gate,
            project,
            root,
            tools,
            session: Session::unattended(),
        }
    }

    pub fn ctx(&self) -> CallContext {
        CallContext::new(Arc::clone(&self.session))
    }

    /// Calls a tool in this env's session; a `ToolError` becomes an error output.
    pub async fn call(&self, name: &str, args: Value) -> ToolOutput {
        self.call_in(name, args, self.ctx()).await
    }

    pub async fn call_in(&self, name: &str, args: Value, ctx: CallContext) -> ToolOutput {
        match self.tools[name].call(args, ctx).await {
            Ok(out) => out,
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }

    pub async fn sh(&self, command: &str) -> ToolOutput {
        self.call("run_shell", json!({ "command": command })).await
    }
}

/// A structured field.
pub fn field(out: &ToolOutput, key: &str) -> Value {
    out.field(key)
        .unwrap_or_else(|| panic!("no `{key}` in {:#?}\n{}", out.structured, out.text))
}

/// The number after `word ` in `text` (for pids the commands print).
pub fn number_after(text: &str, word: &str) -> i32 {
    let start = text
        .find(word)
        .unwrap_or_else(|| panic!("no `{word}` in {text}"))
        + word.len();
    text[start..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// An argument for `sleep` (a duration of about 1,000 s) that no other test uses, so the
/// processes of one test can be found on the host whatever pid namespace they ran in.
pub fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("1000.{:05}{:04}", std::process::id() % 100_000, n % 10_000)
}

/// Live processes on the host whose command line contains `marker`.
pub fn with_marker(marker: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = fs_err::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) && alive(pid) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// The host process group of a running command whose shell prints `inner` as `$$` (its
/// pid inside toolgate's PID namespace, when there is one).
pub fn host_group(inner: i32) -> i32 {
    let host = toolgate_contain::host_pid(inner)
        .unwrap_or_else(|| panic!("no process {inner} in toolgate's namespace"));
    let stat = fs_err::read_to_string(format!("/proc/{host}/stat")).unwrap();
    stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap()
}

/// Live (not zombie) processes in process group `pgid`, read straight from /proc. Zombies
/// are dead; on this machine PID 1 does not reap orphans, so they may linger.
pub fn live_in_group(pgid: i32) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = fs_err::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let close = stat.rfind(')').unwrap();
        let name = stat[stat.find('(').unwrap() + 1..close].to_owned();
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let (state, pgrp) = (fields[0], fields[2].parse::<i32>().unwrap());
        if pgrp == pgid && state != "Z" && state != "X" {
            found.push((pid, format!("{name} ({state})")));
        }
    }
    found
}

/// Whether `pid` is alive (exists and is not a zombie).
pub fn alive(pid: i32) -> bool {
    match fs_err::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next();
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

/// Waits until `cond` holds, within the hang guard; returns whether it did. Used only where
/// the kernel finishes a kill asynchronously, never to assert on speed.
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < toolgate_test_support::HANG_GUARD {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

/// Waits (bounded) for a file a command writes when it has started.
pub async fn wait_for_file(path: &Path) -> String {
    assert!(
        eventually(|| fs_err::read_to_string(path).is_ok_and(|s| s.ends_with('\n'))).await,
        "{} never appeared",
        path.display()
    );
    fs_err::read_to_string(path).unwrap()
}
