//! `toolgate doctor`: checks the setup and says what to do about each problem.
//!
//! Sections, in order: the config files (each on its own, every wrong setting listed), the
//! mounted MCP servers (trust, login, start, tools), process containment and the sandbox the
//! kernel allows, the spill store against its quota, the catalog cache. Exit 0 when nothing
//! is a problem (warnings allowed), 1 otherwise.

mod servers;

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use toolgate_config::{FileKind, Flags, LoadOptions, check_files};
use toolgate_runtime::Runtime;

use crate::GlobalArgs;

/// Arguments of `toolgate doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Do not start the mounted MCP servers: report their configuration and trust only.
    #[arg(long)]
    no_start: bool,
}

/// How bad one finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Ok,
    Warning,
    Problem,
}

/// The findings so far, printed as they come.
#[derive(Debug, Default)]
pub(crate) struct Report {
    warnings: usize,
    problems: usize,
}

impl Report {
    pub(crate) fn section(&self, title: &str) {
        outln!("{title}");
    }

    pub(crate) fn line(&mut self, level: Level, text: &str) {
        let word = match level {
            Level::Ok => "ok",
            Level::Warning => {
                self.warnings += 1;
                "warning"
            }
            Level::Problem => {
                self.problems += 1;
                "problem"
            }
        };
        outln!("  {word:<8} {text}");
    }

    pub(crate) fn ok(&mut self, text: &str) {
        self.line(Level::Ok, text);
    }

    pub(crate) fn warn(&mut self, text: &str) {
        self.line(Level::Warning, text);
    }

    pub(crate) fn problem(&mut self, text: &str) {
        self.line(Level::Problem, text);
    }

    fn finish(&self) -> ExitCode {
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("{n} {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        outln!(
            "\n{}, {}",
            plural(self.problems, "problem"),
            plural(self.warnings, "warning")
        );
        if self.problems > 0 {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }
}

pub(crate) fn run(global: &GlobalArgs, args: &DoctorArgs) -> ExitCode {
    let mut report = Report::default();
    outln!("toolgate {}", crate::VERSION);
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            report.problem(&format!(
                "cannot read the current directory: {e}; cd into your project and run again"
            ));
            return report.finish();
        }
    };
    let flags = Flags {
        roots: global.roots.clone(),
        log_level: global.log_level.clone(),
        ..Flags::default()
    };
    let options = LoadOptions::standard(cwd.clone(), global.config.clone(), flags);

    report.section("config");
    let files_ok = config_files(&mut report, &options);
    let loaded = match toolgate_config::load(&options) {
        Ok(loaded) => loaded,
        Err(e) => {
            // The files' own problems are listed above; this names what is left (an
            // environment variable, a flag, a missing --config file).
            if files_ok {
                report.problem(&e.to_string());
            }
            report.problem(
                "the remaining checks need a configuration that loads; fix the problems above and run `toolgate doctor` again",
            );
            return report.finish();
        }
    };
    // No log subscriber: what the libraries would log is reported here, once, with what to do.
    let runtime = match Runtime::new(loaded.config, &cwd) {
        Ok(runtime) => runtime,
        Err(e) => {
            report.problem(&format!("{e}"));
            report.problem(
                "the remaining checks need a configuration that starts; fix the problem above and run `toolgate doctor` again",
            );
            return report.finish();
        }
    };
    report.ok(&format!(
        "project root {} ({} tool folder{})",
        runtime.roots.primary().display(),
        runtime.roots.roots().len(),
        if runtime.roots.roots().len() == 1 {
            ""
        } else {
            "s"
        }
    ));

    let tokio = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            report.problem(&format!(
                "cannot start the async runtime: {e}; check the process and thread limits (ulimit -u)"
            ));
            return report.finish();
        }
    };
    tokio.block_on(servers::check(&mut report, &runtime, !args.no_start));
    isolation(&mut report, &runtime);
    spill(&mut report, &runtime);
    servers::catalog(&mut report, &runtime);
    tokio.shutdown_timeout(crate::SHUTDOWN_GRACE);
    report.finish()
}

/// Lists each config file and its problems; false when one has a problem.
fn config_files(report: &mut Report, options: &LoadOptions) -> bool {
    let mut all_ok = true;
    for file in check_files(options) {
        let path = file.path.display();
        if !file.present {
            let hint = match file.kind {
                FileKind::Project => "none (optional: `.toolgate/config.toml` in the project)",
                FileKind::User => "none (optional; defaults apply)",
                _ => "does not exist; check the --config path",
            };
            if file.kind == FileKind::Explicit {
                all_ok = false;
                report.problem(&format!("{} {path}: {hint}", file.kind));
            } else {
                report.ok(&format!("{} {path}: {hint}", file.kind));
            }
            continue;
        }
        if file.problems.is_empty() {
            report.ok(&format!("{} {path}", file.kind));
            continue;
        }
        all_ok = false;
        for problem in &file.problems {
            report.problem(&format!("{} {path}: {problem}", file.kind));
        }
    }
    all_ok
}

/// Containment and the sandboxes of `run_shell` and of mounted stdio servers.
fn isolation(report: &mut Report, runtime: &Runtime) {
    report.section("isolation");
    let containment = toolgate_contain::current();
    match containment {
        toolgate_contain::Containment::Namespace { .. } => {
            report.ok(&format!("process containment: {containment}"));
        }
        _ => report.warn(&format!(
            "process containment: {containment}; allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or run toolgate outside a container that forbids them) for full containment"
        )),
    }
    let landlock = toolgate_contain::landlock_abi().map_or_else(
        || "no Landlock".to_owned(),
        |abi| format!("Landlock ABI {abi}"),
    );
    let seccomp = if toolgate_contain::seccomp_available() {
        "seccomp filters"
    } else {
        "no seccomp filters"
    };
    report.ok(&format!("the kernel allows: {landlock}, {seccomp}"));
    let sandboxes = [
        (
            "run_shell",
            toolgate_runtime::shell_sandbox(&runtime.config, &runtime.roots),
        ),
        (
            "mounted stdio servers",
            toolgate_runtime::mcp_sandbox(&runtime.config, &runtime.roots),
        ),
    ];
    for (who, sandbox) in sandboxes {
        match sandbox.check() {
            Ok(()) => report.ok(&format!("{who} sandbox: {}", sandbox.describe())),
            Err(e) => report.problem(&format!("{who} sandbox: {e}")),
        }
    }
}

/// The spill store's use against its quota.
fn spill(report: &mut Report, runtime: &Runtime) {
    report.section("spill store");
    let store = &runtime.spill;
    let dir = store.dir();
    let used = store.used_bytes();
    let quota = store.quota_bytes();
    let shown = format!(
        "{}: {} of {} quota used",
        dir.display(),
        bytes(used),
        bytes(quota)
    );
    if quota > 0 && used.saturating_mul(10) >= quota.saturating_mul(9) {
        report.warn(&format!(
            "{shown}; the least recently read outputs are evicted first — delete the folder's files you no longer need or raise budget.spill_quota_bytes"
        ));
    } else {
        report.ok(&shown);
    }
    if let Some(problem) = unwritable(dir) {
        report.problem(&format!(
            "{}: {problem}; make it writable or set budget.spill_dir to a folder that is",
            dir.display()
        ));
    }
}

/// Why `dir` (or, when it does not exist yet, its nearest existing parent) cannot be written.
pub(crate) fn unwritable(dir: &Path) -> Option<String> {
    let existing = dir.ancestors().find(|p| p.exists())?;
    match fs_err::metadata(existing) {
        Ok(meta) if meta.permissions().readonly() => {
            Some(format!("`{}` is read-only", existing.display()))
        }
        Ok(meta) if !meta.is_dir() => Some(format!("`{}` is not a folder", existing.display())),
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// `1.5 MiB`, `12 KiB`, `300 B`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    #[allow(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() < 0.05 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
