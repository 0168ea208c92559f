//! The live skill store: discovery, watch, rescan, and the discovery cache keyed by the
//! resolved scope chain.
//!
//! Each root keeps its entries (the incremental state). A file event names paths; only the
//! entries those paths fall in are read again, and an entry that is gone is removed — a
//! rename is a delete plus an add, and the delete half is the one most implementations
//! miss. A periodic full rescan is compared with the incremental state: any difference is
//! logged (it means an event was missed) and the rescan wins.
//!
//! Roots are watched one level deep (the root and each skill folder, not bundled files,
//! which are listed when a skill is loaded): nested skills are not discovered, so deeper
//! changes cannot change the catalog, and a skill with a `node_modules` costs one watch. A
//! root that does not exist yet is noticed through its nearest existing parent.
//!
//! Every change bumps a generation and drops the merged views; listeners (the `skill`
//! tool's provider, the MCP prompt source) refetch, as the registry's consumers do.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use crate::catalog::Catalog;
use crate::config::SkillsConfig;
use crate::roots::{ScopeChain, SkillRoot};
use crate::scan::{Entry, RootScan, scan_entry, scan_root};
use watcher::{Armed, Msg, worker};

/// A callback run after each change, with the new generation.
type Listener = Box<dyn Fn(u64) + Send + Sync>;

/// What a full rescan found that the incremental state did not have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RescanReport {
    /// One line per entry that differed: a ghost (deleted but still listed), a missed
    /// addition, or a stale skill.
    pub differences: Vec<String>,
}

impl RescanReport {
    /// Whether the incremental state matched the disk.
    pub fn is_clean(&self) -> bool {
        self.differences.is_empty()
    }
}

/// The skill store: one per runtime, shared by every front end.
pub struct Skills {
    shared: Arc<Shared>,
    worker: Option<(mpsc::Sender<Msg>, JoinHandle<()>)>,
}

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skills")
            .field("chain", &self.shared.chain)
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}

struct Shared {
    config: SkillsConfig,
    /// The runtime's own chain.
    chain: ScopeChain,
    state: Mutex<State>,
    /// Held for a whole update, so two updates never interleave their reads and writes.
    updating: Mutex<()>,
    generation: watch::Sender<u64>,
    listeners: Mutex<Vec<Listener>>,
    watcher: Mutex<Option<Armed>>,
    /// Set when watching failed (no watcher, or a folder that could not be watched): the
    /// watch thread then rescans every [`watcher::FALLBACK_RESCAN`] at least.
    degraded: AtomicBool,
}

#[derive(Default)]
struct State {
    generation: u64,
    /// The incremental state: every tracked root's entries.
    roots: BTreeMap<SkillRoot, RootScan>,
    /// Chains asked for, whose roots are tracked.
    chains: Vec<ScopeChain>,
    /// Merged views of this generation: the discovery cache, keyed by the resolved chain.
    views: HashMap<ScopeChain, Arc<Catalog>>,
}

impl Skills {
    /// Discovers the skills of `chain` now, then (as `config` says) watches its roots and
    /// rescans them periodically on a thread of its own.
    pub fn new(config: SkillsConfig, chain: ScopeChain) -> Self {
        let chain = if config.enabled {
            chain
        } else {
            ScopeChain::default()
        };
        let shared = Arc::new(Shared {
            config,
            chain: chain.clone(),
            state: Mutex::new(State::default()),
            updating: Mutex::new(()),
            generation: watch::channel(0).0,
            listeners: Mutex::new(Vec::new()),
            watcher: Mutex::new(None),
            degraded: AtomicBool::new(false),
        });
        shared.track(&chain);
        let mut skills = Self {
            shared,
            worker: None,
        };
        if !chain.is_empty() {
            skills.start();
        }
        skills
    }

    /// A store with no roots: no skills, nothing watched.
    pub fn disabled() -> Self {
        let config = SkillsConfig {
            enabled: false,
            ..SkillsConfig::default()
        };
        Self::new(config, ScopeChain::default())
    }

    fn start(&mut self) {
        let (tx, rx) = mpsc::channel();
        let watcher = self.shared.config.watch.then(|| {
            let events = tx.clone();
            notify::recommended_watcher(move |event| {
                let _ = events.send(Msg::Event(event));
            })
        });
        self.run(tx, rx, watcher);
    }

    /// Arms `watcher` (when watching) and starts the watch thread: debounced events, and
    /// the periodic rescan — also when the watcher could not be made.
    fn run(
        &mut self,
        tx: mpsc::Sender<Msg>,
        rx: mpsc::Receiver<Msg>,
        watcher: Option<notify::Result<notify::RecommendedWatcher>>,
    ) {
        let config = &self.shared.config;
        let rescan = (config.rescan_secs > 0).then(|| Duration::from_secs(config.rescan_secs));
        match watcher {
            None if rescan.is_none() => return,
            None => {}
            Some(Ok(watcher)) => {
                *lock(&self.shared.watcher) = Some(Armed::new(watcher));
                self.shared.arm();
            }
            // Many toolgate processes at once can run out of inotify instances ("Too many
            // open files"): the periodic rescan stands in, with this one warning.
            Some(Err(e)) => {
                self.shared.degraded.store(true, Ordering::Relaxed);
                tracing::warn!(
                    error = %e,
                    "skills: cannot watch the skill folders; changes are picked up by a rescan every {} s instead",
                    watcher::fallback_every(rescan).as_secs()
                );
            }
        }
        let shared = Arc::clone(&self.shared);
        let debounce = Duration::from_millis(config.debounce_ms);
        let spawned = std::thread::Builder::new()
            .name("toolgate-skills".to_owned())
            .spawn(move || worker(&shared, &rx, debounce, rescan));
        match spawned {
            Ok(handle) => self.worker = Some((tx, handle)),
            Err(e) => tracing::warn!(error = %e, "skills: cannot start the watch thread"),
        }
    }

    /// The runtime's scope chain.
    pub fn chain(&self) -> &ScopeChain {
        &self.shared.chain
    }

    /// The settings it was built with.
    pub fn config(&self) -> &SkillsConfig {
        &self.shared.config
    }

    /// The skills of the runtime's chain.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared.view(&self.shared.chain)
    }

    /// The skills of another chain (another project): its roots are discovered now and
    /// watched from then on. Views are cached by chain, so two projects never share one.
    pub fn catalog_for(&self, chain: &ScopeChain) -> Arc<Catalog> {
        if !self.shared.config.enabled {
            return self.catalog();
        }
        if self.shared.track(chain) {
            self.shared.arm();
        }
        self.shared.view(chain)
    }

    /// The current generation (bumped on every change).
    pub fn generation(&self) -> u64 {
        lock(&self.shared.state).generation
    }

    /// A receiver that wakes on every change (no diff: refetch the catalog).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.generation.subscribe()
    }

    /// Runs `listener` after every change, on the thread that made it.
    pub fn on_change(&self, listener: impl Fn(u64) + Send + Sync + 'static) {
        lock(&self.shared.listeners).push(Box::new(listener));
    }

    /// What the watcher does with a batch of changed paths: re-reads the entries they fall
    /// in (or a whole root, for the root or a parent of it). Returns whether the catalog
    /// changed. Embedders without a watcher may call it.
    pub fn notice_changes(&self, paths: &[PathBuf]) -> bool {
        self.shared.apply(paths)
    }

    /// Rescans every root in full, compares with the incremental state, logs and returns
    /// the differences, and keeps the rescan.
    pub fn rescan(&self) -> RescanReport {
        self.shared.rescan()
    }
}

impl Drop for Skills {
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.worker.take() {
            let _ = tx.send(Msg::Stop);
            // A listener on the watch thread may hold the last reference (a provider it
            // upgraded): that thread cannot join itself, and ends on the Stop anyway.
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
        // The watcher's own thread ends when it is dropped.
        lock(&self.shared.watcher).take();
    }
}

impl Shared {
    /// Starts tracking `chain`'s roots (scanning those not tracked yet). Returns whether
    /// a root was added.
    fn track(&self, chain: &ScopeChain) -> bool {
        let _updating = lock(&self.updating);
        let new_roots: Vec<SkillRoot> = {
            let mut state = lock(&self.state);
            if !state.chains.contains(chain) {
                state.chains.push(chain.clone());
            }
            chain
                .roots()
                .iter()
                .filter(|r| !state.roots.contains_key(*r))
                .cloned()
                .collect()
        };
        if new_roots.is_empty() {
            return false;
        }
        let scans: Vec<(SkillRoot, RootScan)> = new_roots
            .into_iter()
            .map(|r| (r.clone(), scan_root(&r)))
            .collect();
        let mut state = lock(&self.state);
        for (root, scan) in scans {
            state.roots.insert(root, scan);
        }
        // New roots change no existing chain's view (a chain's roots are all tracked
        // when it is first asked for), so no generation bump.
        true
    }

    /// The merged view of `chain`, from the cache when this generation has one.
    fn view(&self, chain: &ScopeChain) -> Arc<Catalog> {
        let mut state = lock(&self.state);
        if let Some(view) = state.views.get(chain) {
            return Arc::clone(view);
        }
        let view = Arc::new(Catalog::merge(state.generation, chain, |root| {
            state.roots.get(root)
        }));
        state.views.insert(chain.clone(), Arc::clone(&view));
        view
    }

    /// Re-reads the entries `paths` fall in; returns whether anything changed.
    fn apply(&self, paths: &[PathBuf]) -> bool {
        let changed = {
            let _updating = lock(&self.updating);
            let roots: Vec<SkillRoot> = lock(&self.state).roots.keys().cloned().collect();
            let mut work: Vec<(SkillRoot, Touched)> = Vec::new();
            for root in roots {
                let touched = touched(&root.path, paths);
                if touched.whole || !touched.entries.is_empty() {
                    work.push((root, touched));
                }
            }
            // Events beside a root (a busy parent watched until the root exists) touch
            // nothing: no reads, no re-arming.
            if work.is_empty() && !self.watches_any(paths) {
                return false;
            }
            // Watches first, reads second: whatever changes after a folder is watched
            // sends an event, and whatever changed before it is in the read. Reading first
            // lost a SKILL.md written into a new folder between the read and the watch (the
            // skills-watch tests failed that way on a loaded machine).
            self.forget_watches(paths);
            self.arm();
            // Read outside the state lock: readers never wait for the disk.
            let mut results: Vec<(SkillRoot, Update)> = Vec::new();
            for (root, touched) in work {
                let update = if touched.whole {
                    Update::Whole(scan_root(&root))
                } else {
                    Update::Entries(
                        touched
                            .entries
                            .into_iter()
                            .map(|name| {
                                let entry = scan_entry(&root, &name);
                                (name, entry)
                            })
                            .collect(),
                    )
                };
                results.push((root, update));
            }
            let mut state = lock(&self.state);
            let mut changed = false;
            for (root, update) in results {
                let Some(scan) = state.roots.get_mut(&root) else {
                    continue;
                };
                match update {
                    Update::Whole(new) => {
                        if *scan != new {
                            *scan = new;
                            changed = true;
                        }
                    }
                    Update::Entries(entries) => {
                        for (name, entry) in entries {
                            if scan.entries.get(&name) == entry.as_ref() {
                                continue;
                            }
                            changed = true;
                            match entry {
                                Some(entry) => {
                                    scan.entries.insert(name, entry);
                                }
                                // Gone, or no longer a skill: the delete half of a rename.
                                None => {
                                    scan.entries.remove(&name);
                                }
                            }
                        }
                    }
                }
            }
            if changed {
                bump(&mut state, &self.generation);
            }
            changed
        };
        if changed {
            self.announce();
        }
        changed
    }

    /// Rescans every tracked root and compares with the incremental state.
    fn rescan(&self) -> RescanReport {
        let report = {
            let _updating = lock(&self.updating);
            let roots: Vec<SkillRoot> = lock(&self.state).roots.keys().cloned().collect();
            let fresh: Vec<(SkillRoot, RootScan)> = roots
                .into_iter()
                .map(|r| (r.clone(), scan_root(&r)))
                .collect();
            let mut state = lock(&self.state);
            let mut report = RescanReport::default();
            for (root, new) in fresh {
                let Some(old) = state.roots.get_mut(&root) else {
                    continue;
                };
                if *old != new {
                    differences(&root, old, &new, &mut report.differences);
                    *old = new;
                }
            }
            if !report.is_clean() {
                // Without watches every change shows up here: that was warned about once.
                if self.degraded.load(Ordering::Relaxed) {
                    tracing::debug!(
                        differences = %report.differences.join("; "),
                        "skills: the rescan picked up changes"
                    );
                } else {
                    tracing::warn!(
                        count = report.differences.len(),
                        differences = %report.differences.join("; "),
                        "skills: the full rescan differs from the watched state (a change was missed); the rescan is kept"
                    );
                }
                bump(&mut state, &self.generation);
            }
            report
        };
        self.arm();
        if !report.is_clean() {
            self.announce();
        }
        report
    }

    fn announce(&self) {
        let generation = lock(&self.state).generation;
        for listener in lock(&self.listeners).iter() {
            listener(generation);
        }
    }
}

/// What a batch of paths touches in one root.
#[derive(Default)]
struct Touched {
    whole: bool,
    entries: BTreeSet<OsString>,
}

enum Update {
    Whole(RootScan),
    Entries(Vec<(OsString, Option<Entry>)>),
}

/// Which entries of `root` the `paths` fall in; the root itself or a parent of it means
/// the whole root.
fn touched(root: &Path, paths: &[PathBuf]) -> Touched {
    let mut touched = Touched::default();
    for path in paths {
        if root.starts_with(path) {
            touched.whole = true;
        } else if let Ok(rel) = path.strip_prefix(root)
            && let Some(Component::Normal(first)) = rel.components().next()
        {
            touched.entries.insert(first.to_os_string());
        }
    }
    touched
}

/// The differences between the incremental state `old` and the rescan `new` of `root`.
fn differences(root: &SkillRoot, old: &RootScan, new: &RootScan, out: &mut Vec<String>) {
    let names: BTreeSet<&OsString> = old.entries.keys().chain(new.entries.keys()).collect();
    for name in names {
        let path = root.path.join(name);
        match (old.entries.get(name), new.entries.get(name)) {
            (Some(_), None) => out.push(format!(
                "ghost: `{}` was still listed after it was deleted",
                path.display()
            )),
            (None, Some(_)) => out.push(format!(
                "missed: `{}` was not listed though it exists",
                path.display()
            )),
            (Some(a), Some(b)) if a != b => {
                out.push(format!("stale: `{}` had changed", path.display()));
            }
            _ => {}
        }
    }
    if old.problem != new.problem {
        out.push(format!(
            "stale: the state of `{}` had changed",
            root.path.display()
        ));
    }
}

fn bump(state: &mut State, generation: &watch::Sender<u64>) {
    state.generation += 1;
    state.views.clear();
    generation.send_replace(state.generation);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

mod watcher;

#[cfg(test)]
mod tests;
