//! Config changes applied live (invalidation, see ARCHITECTURE.md): while `serve` runs, a
//! change to any file the MCP servers come from — toolgate's user, project and `--config`
//! files, the imported Claude and Codex files, the trust file — reads the config again and
//! mounts, unmounts or restarts only the servers that changed ([`Gateway::reconcile`]).
//! Clients hear of it through `list_changed`. Other settings apply at the next start.

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use toolgate_config::{Config, ConfigError};
use toolgate_fs::Roots;
use toolgate_gateway::{Gateway, ImportOptions, Reconciled, source_files};

use crate::Runtime;
use crate::assemble::{discover_servers, launch_files};

/// How long the files must be quiet before they are read again: an editor's save and a
/// `claude mcp add` are bursts of writes.
const QUIET: Duration = Duration::from_millis(250);
/// Longest a burst of writes may hold a reload back.
const MAX_HOLD: Duration = Duration::from_secs(2);

/// Reads the whole configuration again (the same layers, flags and environment as at start).
pub type LoadConfig = Box<dyn FnMut() -> Result<Config, ConfigError> + Send>;

/// What a config change is applied to: the running gateway and the roots that guard the
/// files trusted servers run.
pub struct ServerReload {
    gateway: Arc<Gateway>,
    roots: Arc<Roots>,
    /// The configuration the servers were last mounted from.
    running: Config,
    /// toolgate's own config files outside the project (user file, `--config`).
    own_files: Vec<PathBuf>,
    /// What the watched files held at the last reload, to skip writes that change nothing
    /// (Claude Code rewrites `~/.claude.json` often).
    seen: u64,
}

impl std::fmt::Debug for ServerReload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerReload")
            .field("own_files", &self.own_files)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// What [`watch_config`] applies changes to. `own_files` are toolgate's config files
    /// outside the project (the user file, `--config FILE`); the project's
    /// `.toolgate/config.toml`, the imported files and the trust file are found from the
    /// config.
    pub fn server_reload(&self, own_files: Vec<PathBuf>) -> ServerReload {
        let mut reload = ServerReload {
            gateway: Arc::clone(&self.gateway),
            roots: Arc::clone(&self.roots),
            running: self.config.clone(),
            own_files,
            seen: 0,
        };
        reload.seen = contents_digest(&reload.files());
        reload
    }
}

impl ServerReload {
    /// Every file whose change may change the servers, whether it exists or not.
    pub fn files(&self) -> Vec<PathBuf> {
        let config = &self.running;
        let mut files = self.own_files.clone();
        let project = config
            .project_dir
            .clone()
            .unwrap_or_else(|| self.roots.primary().to_path_buf());
        files.push(project.join(".toolgate").join("config.toml"));
        files.extend(source_files(&ImportOptions::standard(
            project,
            config.mcp.import,
        )));
        files.extend(config.trust_file.clone());
        let mut seen = BTreeSet::new();
        files.retain(|f| seen.insert(f.clone()));
        files
    }

    /// Applies `config`: its servers are discovered (imports and trust as at start) and the
    /// gateway mounts, unmounts or restarts the ones that differ. A config file that could
    /// not be read now but could before leaves every server as it is (a file saved half
    /// written must not stop its servers). Returns what changed.
    pub fn apply(&mut self, config: Config) -> Result<Reconciled, ConfigError> {
        let discovered = discover_servers(&config, &self.roots)?;
        let known: BTreeSet<PathBuf> = self
            .gateway
            .problems()
            .into_iter()
            .map(|p| p.path)
            .collect();
        if let Some(problem) = discovered
            .problems
            .iter()
            .find(|p| !known.contains(&p.path))
        {
            return Err(ConfigError::Invalid(format!(
                "{problem}; the MCP servers keep running as they were until the file reads again"
            )));
        }
        if differs_beyond_servers(&self.running, &config) {
            tracing::warn!(
                "config changed: only MCP server changes apply while toolgate runs; restart it for the rest"
            );
        }
        self.roots.set_launch_files(launch_files(&discovered));
        let report = self.gateway.reconcile(discovered);
        self.running = config;
        Ok(report)
    }

    /// Reads the config with `load` and applies it when the watched files hold something
    /// new; a config that does not load is reported and changes nothing.
    fn reload(&mut self, load: &mut LoadConfig) {
        let digest = contents_digest(&self.files());
        if digest == self.seen {
            return;
        }
        self.seen = digest;
        let applied = load().and_then(|config| self.apply(config));
        match applied {
            Ok(report) if report.is_empty() => {
                tracing::debug!("config files changed; no MCP server did");
            }
            Ok(report) => tracing::info!("config changed: MCP servers {report}"),
            Err(e) => tracing::warn!(
                "config changed but was not applied: {e}; fix it and save again (the servers keep running as they were)"
            ),
        }
    }
}

/// Whether two configs differ in anything but their MCP servers.
fn differs_beyond_servers(a: &Config, b: &Config) -> bool {
    let strip = |c: &Config| {
        let mut c = c.clone();
        c.mcp_servers.clear();
        c.mcp_sources.clear();
        c.project_servers.clear();
        c
    };
    strip(a) != strip(b)
}

/// A digest of what `files` hold (a missing file counts as such).
fn contents_digest(files: &[PathBuf]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for file in files {
        file.hash(&mut hasher);
        fs_err::read(file).ok().hash(&mut hasher);
    }
    hasher.finish()
}

/// Watches the config files while it lives.
#[derive(Debug)]
pub struct ConfigWatch {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ConfigWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches `reload`'s files and applies each change with a config read by `load`, until
/// the returned watch is dropped. `None` (with a warning) when the system gives no file
/// watch (inotify limits): the servers then stay as they started. Must be called inside a
/// tokio runtime.
pub fn watch_config(mut reload: ServerReload, mut load: LoadConfig) -> Option<ConfigWatch> {
    let (tx, mut rx) = mpsc::unbounded_channel::<notify::Result<notify::Event>>();
    let watcher = notify::recommended_watcher(move |event| {
        let _ = tx.send(event);
    });
    let mut watcher = match watcher {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the config files; MCP server changes apply when toolgate restarts");
            return None;
        }
    };
    let mut armed = Armed::default();
    armed.arm(&mut watcher, &reload.files());
    let task = tokio::spawn(async move {
        // The watcher lives as long as the task.
        let mut watcher = watcher;
        loop {
            let Some(event) = rx.recv().await else { return };
            if !armed.concerns(&event) {
                continue;
            }
            // Wait for the burst to end (quiet for QUIET), at most MAX_HOLD in all.
            let hold = tokio::time::sleep(MAX_HOLD);
            tokio::pin!(hold);
            loop {
                tokio::select! {
                    _ = &mut hold => break,
                    next = tokio::time::timeout(QUIET, rx.recv()) => match next {
                        Err(_) => break,
                        Ok(None) => return,
                        Ok(Some(_)) => {}
                    },
                }
            }
            reload.reload(&mut load);
            // Folders may have appeared (`.claude/`) or files moved: watch what is there now.
            armed.arm(&mut watcher, &reload.files());
        }
    });
    Some(ConfigWatch { task })
}

/// The folders watched (each file's nearest existing folder, not recursive) and the files
/// that matter in them.
#[derive(Default)]
struct Armed {
    /// Watched folder → whether the watch is in place.
    folders: HashMap<PathBuf, bool>,
    files: Vec<PathBuf>,
    warned: bool,
}

impl Armed {
    fn arm(&mut self, watcher: &mut notify::RecommendedWatcher, files: &[PathBuf]) {
        self.files = files.to_vec();
        let wanted: BTreeSet<PathBuf> = files.iter().filter_map(|f| nearest_folder(f)).collect();
        self.folders.retain(|folder, _| {
            let keep = wanted.contains(folder);
            if !keep {
                let _ = watcher.unwatch(folder);
            }
            keep
        });
        for folder in wanted {
            if self.folders.get(&folder) == Some(&true) {
                continue;
            }
            let ok = match watcher.watch(&folder, RecursiveMode::NonRecursive) {
                Ok(()) => true,
                Err(e) => {
                    if !self.warned {
                        self.warned = true;
                        tracing::warn!(folder = %folder.display(), error = %e, "cannot watch a config folder; changes there apply when toolgate restarts");
                    }
                    false
                }
            };
            self.folders.insert(folder, ok);
        }
    }

    /// Whether `event` may change one of the files: it names one of them or a folder on the
    /// way to one (created, removed, renamed).
    fn concerns(&self, event: &notify::Result<notify::Event>) -> bool {
        let Ok(event) = event else {
            // A watch error (events lost): read everything again.
            return true;
        };
        if event.need_rescan() {
            return true;
        }
        if matches!(event.kind, notify::EventKind::Access(_)) {
            return false;
        }
        event
            .paths
            .iter()
            .any(|p| self.files.iter().any(|f| f.starts_with(p)))
    }
}

/// The folder of `file` if it exists, else its nearest existing ancestor.
fn nearest_folder(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .skip(1)
        .find(|a| a.is_dir())
        .map(Path::to_path_buf)
}
