//! The spill store: full outputs on disk, pointed to from the conversation; with a shared
//! store ([`SharedSpills`]), also in object storage for the other replicas.

mod name;
mod shared;

pub use name::is_spill_name;
pub use shared::{SharedError, SharedSpills};

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// A file in the spill store, with the sizes a pointer needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillFile {
    /// Absolute path.
    pub path: PathBuf,
    /// Size in bytes.
    pub bytes: u64,
    /// Size in characters.
    pub chars: u64,
    /// Number of lines.
    pub lines: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    bytes: u64,
    /// Logical clock of the last write or read; the smallest is evicted first.
    last_used: u64,
    /// Open for writing (a running command's output): never evicted.
    pinned: bool,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<String, Entry>,
    total: u64,
    clock: u64,
    evicted: HashMap<String, u64>,
    evicted_order: VecDeque<String>,
    scanned: bool,
}

/// How many evicted names are remembered for the "evicted" message.
const EVICTED_MEMORY: usize = 10_000;

/// File in the spill folder listing evicted names, one per line.
const TOMBSTONES: &str = ".evicted";

/// Where spilled outputs live. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct SpillStore {
    dir: PathBuf,
    quota_bytes: u64,
    state: Mutex<State>,
    seq: AtomicU64,
    shared: Option<Arc<SharedSpills>>,
}

impl SpillStore {
    /// A store in `dir` (created on first write) that keeps at most `quota_bytes` on disk.
    pub fn new(dir: impl Into<PathBuf>, quota_bytes: u64) -> Self {
        Self {
            dir: dir.into(),
            quota_bytes,
            state: Mutex::new(State::default()),
            seq: AtomicU64::new(0),
            shared: None,
        }
    }

    /// Shares this store's spill files with other replicas through `shared`: each finished
    /// file is copied up, and [`SpillStore::fetch_shared`] copies another replica's down.
    pub fn with_shared(mut self, shared: SharedSpills) -> Self {
        self.shared = Some(Arc::new(shared));
        self
    }

    /// The shared store, when there is one.
    pub fn shared(&self) -> Option<&SharedSpills> {
        self.shared.as_deref()
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The disk quota in bytes.
    pub fn quota_bytes(&self) -> u64 {
        self.quota_bytes
    }

    /// Writes `content` verbatim as a new spill file (temp file + rename).
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// use toolgate_budget::SpillStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = SpillStore::new(dir.path().join("spill"), 1024 * 1024);
    /// let file = store.write("run_shell", b"line one\nline two\n")?;
    /// assert_eq!((file.bytes, file.lines), (18, 2));
    /// assert!(store.contains(&file.path));
    /// assert_eq!(std::fs::read_to_string(&file.path)?, "line one\nline two\n");
    /// assert_eq!(store.used_bytes(), 18);
    /// # Ok(())
    /// # }
    /// ```
    pub fn write(&self, label: &str, content: &[u8]) -> std::io::Result<SpillFile> {
        let path = self.new_path(label)?;
        let tmp = path.with_extension("partial");
        {
            let mut file = fs_err::File::create(&tmp)?;
            file.write_all(content)?;
        }
        fs_err::rename(&tmp, &path)?;
        let file = SpillFile {
            path: path.clone(),
            bytes: content.len() as u64,
            chars: count_chars(content),
            lines: count_lines(content),
        };
        self.register(&path, file.bytes, false);
        self.share(&path);
        self.enforce_quota();
        Ok(file)
    }

    /// Opens a new spill file for streaming (a command's output as it arrives). It is
    /// readable at once and never evicted while the stream is open.
    pub fn stream(self: &Arc<Self>, label: &str) -> std::io::Result<SpillStream> {
        let path = self.new_path(label)?;
        let file = fs_err::File::create(&path)?;
        self.register(&path, 0, true);
        Ok(SpillStream {
            store: Arc::clone(self),
            file: Some(file),
            path,
            bytes: 0,
            chars: 0,
            lines: 0,
            last: None,
        })
    }

    /// Notes that `path` was read (keeps recently read files from eviction).
    pub fn note_read(&self, path: &Path) {
        let Some(name) = self.name_of(path) else {
            return;
        };
        let mut state = self.lock();
        state.clock += 1;
        let clock = state.clock;
        if let Some(entry) = state.entries.get_mut(&name) {
            entry.last_used = clock;
        }
    }

    /// When `path` is a spill file that was evicted, the message to show instead of
    /// "not found".
    pub fn evicted_message(&self, path: &Path) -> Option<String> {
        let name = self.name_of(path)?;
        let known = self.lock().evicted.contains_key(&name);
        // Another process (an earlier `toolgate call`, a restarted server) may have evicted it.
        let known = known
            || fs_err::read_to_string(self.dir.join(TOMBSTONES))
                .is_ok_and(|list| list.lines().any(|l| l == name));
        known.then(|| {
            format!(
                "evicted: `{}` was removed from the spill store to stay under its {} byte disk quota; rerun the command to regenerate it",
                path.display(),
                self.quota_bytes
            )
        })
    }

    /// Appends `name` to the tombstone list on disk, keeping it bounded.
    fn remember_evicted(&self, name: &str) {
        let path = self.dir.join(TOMBSTONES);
        let mut list: Vec<String> = fs_err::read_to_string(&path)
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        list.push(name.to_owned());
        let keep = list.len().saturating_sub(EVICTED_MEMORY);
        let text = list[keep..].join("\n") + "\n";
        let tmp = self.dir.join(".evicted.partial");
        if fs_err::write(&tmp, text)
            .and_then(|()| fs_err::rename(&tmp, &path))
            .is_err()
        {
            tracing::warn!("could not record an evicted spill file");
        }
    }

    /// Whether `path` lies in this store's folder.
    pub fn contains(&self, path: &Path) -> bool {
        self.name_of(path).is_some()
    }

    /// Deletes every spill file not in `live` (the pointers still referenced by a
    /// conversation — agent mode, at compaction and at session close). Returns the deleted
    /// paths. Files open for writing are kept.
    pub fn retain_referenced(&self, live: &HashSet<PathBuf>) -> std::io::Result<Vec<PathBuf>> {
        self.scan_existing();
        let live: HashSet<String> = live.iter().filter_map(|p| self.name_of(p)).collect();
        let doomed: Vec<String> = {
            let state = self.lock();
            state
                .entries
                .iter()
                .filter(|(name, e)| !e.pinned && !live.contains(*name))
                .map(|(name, _)| name.clone())
                .collect()
        };
        let mut deleted = Vec::new();
        for name in doomed {
            let path = self.dir.join(&name);
            match fs_err::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            let mut state = self.lock();
            if let Some(entry) = state.entries.remove(&name) {
                state.total = state.total.saturating_sub(entry.bytes);
            }
            deleted.push(path);
        }
        Ok(deleted)
    }

    /// Deletes these files of the store (agent mode: one session's own spill files that no
    /// live message references any more — other sessions' files are not its to judge, so
    /// [`SpillStore::retain_referenced`] would be too broad). Paths outside the store and
    /// files open for writing are left alone. Returns the deleted paths.
    pub fn release<'a>(
        &self,
        paths: impl IntoIterator<Item = &'a Path>,
    ) -> std::io::Result<Vec<PathBuf>> {
        self.scan_existing();
        let mut deleted = Vec::new();
        for path in paths {
            let Some(name) = self.name_of(path).filter(|n| is_spill_name(n)) else {
                continue;
            };
            if self.lock().entries.get(&name).is_some_and(|e| e.pinned) {
                continue;
            }
            let path = self.dir.join(&name);
            match fs_err::remove_file(&path) {
                Ok(()) => deleted.push(path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            let mut state = self.lock();
            if let Some(entry) = state.entries.remove(&name) {
                state.total = state.total.saturating_sub(entry.bytes);
            }
        }
        Ok(deleted)
    }

    /// Bytes currently on disk (as accounted).
    pub fn used_bytes(&self) -> u64 {
        self.scan_existing();
        self.lock().total
    }

    fn ensure_dir(&self) -> std::io::Result<()> {
        if !self.dir.is_dir() {
            fs_err::create_dir_all(&self.dir)?;
            // Keep spilled outputs out of the user's `git status`.
            fs_err::write(self.dir.join(".gitignore"), "*\n")?;
        }
        Ok(())
    }

    fn new_path(&self, label: &str) -> std::io::Result<PathBuf> {
        self.ensure_dir()?;
        self.scan_existing();
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        Ok(self.dir.join(name::make(
            millis,
            std::process::id(),
            seq,
            name::nonce(),
            label,
        )))
    }

    fn register(&self, path: &Path, bytes: u64, pinned: bool) {
        let Some(name) = self.name_of(path) else {
            return;
        };
        let mut state = self.lock();
        state.clock += 1;
        let clock = state.clock;
        let old = state.entries.insert(
            name,
            Entry {
                bytes,
                last_used: clock,
                pinned,
            },
        );
        state.total = state.total - old.map_or(0, |e| e.bytes) + bytes;
    }

    fn finish_stream(&self, path: &Path, bytes: u64) {
        if let Some(name) = self.name_of(path) {
            let mut state = self.lock();
            if let Some(entry) = state.entries.get_mut(&name) {
                let old = entry.bytes;
                entry.bytes = bytes;
                entry.pinned = false;
                state.total = state.total - old + bytes;
            }
        }
        self.share(path);
        self.enforce_quota();
    }

    /// Copies the finished spill file at `path` to the shared store, if any (background).
    fn share(&self, path: &Path) {
        if let (Some(shared), Some(name)) = (&self.shared, self.name_of(path)) {
            shared.upload(&name, path.to_owned());
        }
    }

    /// When `path` names a spill file of this folder that is not on disk here, copies it
    /// from the shared store (temp file + rename) so it can be read as usual. `Ok(true)`
    /// when it was copied; `Ok(false)` when there is nothing to fetch (no shared store, a
    /// path that is not a spill file of this folder, or a file already here).
    ///
    /// Blocks until the copy is done: call it from a blocking thread (`read_file` runs in
    /// one), never from an async task.
    pub fn fetch_shared(&self, path: &Path) -> Result<bool, SharedError> {
        let Some(shared) = &self.shared else {
            return Ok(false);
        };
        let Some(name) = self.name_of(path).filter(|n| is_spill_name(n)) else {
            return Ok(false);
        };
        let local = self.dir.join(&name);
        if fs_err::symlink_metadata(&local).is_ok() {
            return Ok(false);
        }
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| SharedError::Fetch {
            path: local.clone(),
            url: shared.url().to_owned(),
            endpoint: shared.endpoint().to_owned(),
            source,
        };
        self.ensure_dir().map_err(|e| failed(e.into()))?;
        let runtime = shared
            .runtime()
            .ok_or_else(|| failed("no async runtime to fetch it on".into()))?;
        // The copy runs on the runtime (it drives the HTTP client); this thread only waits.
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        let fetch = Arc::clone(shared).fetch(name, self.dir.clone());
        runtime.spawn(async move {
            let result = tokio::time::timeout(shared::FETCH_TIMEOUT, fetch).await;
            let _ = done.send(result);
        });
        let bytes = match wait.recv() {
            Ok(Ok(result)) => result?,
            Ok(Err(_)) => {
                return Err(failed(
                    format!("no answer in {:?}", shared::FETCH_TIMEOUT).into(),
                ));
            }
            Err(_) => return Err(failed("toolgate is shutting down".into())),
        };
        self.register(&local, bytes, false);
        self.enforce_quota();
        Ok(true)
    }

    /// Evicts least-recently-used files until the store fits its quota. The newest file is
    /// never evicted by its own write, so one output larger than the quota still survives
    /// until the next spill.
    fn enforce_quota(&self) {
        loop {
            let victim = {
                let state = self.lock();
                if state.total <= self.quota_bytes {
                    return;
                }
                let newest = state
                    .entries
                    .values()
                    .map(|e| e.last_used)
                    .max()
                    .unwrap_or(0);
                state
                    .entries
                    .iter()
                    .filter(|(_, e)| !e.pinned && e.last_used != newest)
                    .min_by_key(|(_, e)| e.last_used)
                    .map(|(n, _)| n.clone())
            };
            let Some(name) = victim else { return };
            let path = self.dir.join(&name);
            if let Err(e) = fs_err::remove_file(&path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(%e, "could not evict spill file");
                return;
            }
            self.remember_evicted(&name);
            let mut state = self.lock();
            if let Some(entry) = state.entries.remove(&name) {
                state.total = state.total.saturating_sub(entry.bytes);
                state.evicted.insert(name.clone(), entry.bytes);
                state.evicted_order.push_back(name);
                while state.evicted_order.len() > EVICTED_MEMORY {
                    if let Some(old) = state.evicted_order.pop_front() {
                        state.evicted.remove(&old);
                    }
                }
            }
        }
    }

    /// Accounts for files left by earlier processes (once), oldest first.
    fn scan_existing(&self) {
        if self.lock().scanned {
            return;
        }
        let mut found: Vec<(String, u64)> = Vec::new();
        if let Ok(entries) = fs_err::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                // Only toolgate's own files: a folder shared with others (a spill folder
                // set to a cache folder) must never lose their files to eviction.
                if !name::is_spill_name(&name) {
                    continue;
                }
                if let Ok(meta) = entry.metadata()
                    && meta.is_file()
                {
                    found.push((name, meta.len()));
                }
            }
        }
        // Names start with the creation time, so sorting by name is sorting by age.
        found.sort();
        let mut state = self.lock();
        if state.scanned {
            return;
        }
        state.scanned = true;
        for (name, bytes) in found {
            if state.entries.contains_key(&name) {
                continue;
            }
            state.clock += 1;
            let clock = state.clock;
            state.entries.insert(
                name,
                Entry {
                    bytes,
                    last_used: clock,
                    pinned: false,
                },
            );
            state.total += bytes;
        }
    }

    fn name_of(&self, path: &Path) -> Option<String> {
        let parent = path.parent()?;
        let same_dir = parent == self.dir
            || std::fs::canonicalize(parent)
                .ok()
                .zip(std::fs::canonicalize(&self.dir).ok())
                .is_some_and(|(a, b)| a == b);
        same_dir
            .then(|| path.file_name().map(|n| n.to_string_lossy().into_owned()))
            .flatten()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A spill file being written as output arrives. Dropping it finishes it.
#[derive(Debug)]
pub struct SpillStream {
    store: Arc<SpillStore>,
    file: Option<fs_err::File>,
    path: PathBuf,
    bytes: u64,
    chars: u64,
    lines: u64,
    last: Option<u8>,
}

impl SpillStream {
    /// The file's path (readable while writing).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends raw bytes.
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if let Some(file) = self.file.as_mut() {
            file.write_all(bytes)?;
        }
        self.bytes += bytes.len() as u64;
        self.chars += count_chars(bytes);
        self.lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        if let Some(&b) = bytes.last() {
            self.last = Some(b);
        }
        Ok(())
    }

    /// Closes the file and returns its sizes.
    pub fn finish(mut self) -> SpillFile {
        self.close()
    }

    fn close(&mut self) -> SpillFile {
        if let Some(mut file) = self.file.take() {
            let _ = file.flush();
            self.store.finish_stream(&self.path, self.bytes);
        }
        let lines = self.lines + u64::from(self.last.is_some_and(|b| b != b'\n'));
        SpillFile {
            path: self.path.clone(),
            bytes: self.bytes,
            chars: self.chars,
            lines,
        }
    }
}

impl Drop for SpillStream {
    fn drop(&mut self) {
        self.close();
    }
}

fn count_chars(bytes: &[u8]) -> u64 {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.chars().count() as u64,
        Err(_) => String::from_utf8_lossy(bytes).chars().count() as u64,
    }
}

fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    newlines + u64::from(bytes.last().is_some_and(|&b| b != b'\n'))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read files back with std::fs
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_creation_and_never_collide() {
        let dir = tempfile::tempdir().unwrap();
        let store = SpillStore::new(dir.path().join("s"), 1 << 30);
        let a = store.write("run shell/x", b"a").unwrap();
        let b = store.write("run shell/x", b"b").unwrap();
        assert_ne!(a.path, b.path);
        assert!(a.path < b.path, "sortable by time");
        let name = a.path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.ends_with("-run_shell_x.txt"), "{name}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("s/.gitignore")).unwrap(),
            "*\n"
        );
    }

    #[test]
    fn quota_evicts_least_recently_read_and_the_evicted_file_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let store = SpillStore::new(dir.path().join("s"), 250);
        let first = store.write("a", &[b'1'; 100]).unwrap();
        let second = store.write("b", &[b'2'; 100]).unwrap();
        store.note_read(&first.path); // first is now the most recently used
        let third = store.write("c", &[b'3'; 100]).unwrap();
        assert!(first.path.exists(), "recently read survives");
        assert!(!second.path.exists(), "least recently used goes");
        assert!(third.path.exists());
        let message = store.evicted_message(&second.path).unwrap();
        assert!(
            message.starts_with("evicted: ") && message.contains("rerun the command"),
            "{message}"
        );
        assert!(store.evicted_message(&first.path).is_none());
        // Another process (a new store on the same folder) still knows.
        let again = SpillStore::new(dir.path().join("s"), 250);
        assert!(again.evicted_message(&second.path).is_some());
        assert!(store.used_bytes() <= 250);
    }

    #[test]
    fn nothing_is_deleted_by_age_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = SpillStore::new(dir.path().join("s"), 1 << 30);
        let files: Vec<_> = (0..20)
            .map(|i| store.write("x", format!("{i}").as_bytes()).unwrap())
            .collect();
        let reopened = SpillStore::new(dir.path().join("s"), 1 << 30);
        reopened.write("y", b"new").unwrap();
        assert!(files.iter().all(|f| f.path.exists()));
    }

    #[test]
    fn reference_cleanup_deletes_only_unreferenced_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = SpillStore::new(dir.path().join("s"), 1 << 30);
        let kept = store.write("kept", b"keep me").unwrap();
        let dropped = store.write("dropped", b"drop me").unwrap();
        let live: HashSet<PathBuf> = [kept.path.clone()].into_iter().collect();
        let deleted = store.retain_referenced(&live).unwrap();
        assert_eq!(deleted, vec![dropped.path.clone()]);
        assert!(kept.path.exists() && !dropped.path.exists());
    }

    #[test]
    fn a_stream_is_readable_while_open_and_never_evicted_while_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SpillStore::new(dir.path().join("s"), 10));
        let mut stream = store.stream("job").unwrap();
        stream.write(b"partial output\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(stream.path()).unwrap(),
            "partial output\n"
        );
        store.write("other", &[b'x'; 50]).unwrap();
        assert!(stream.path().exists(), "open stream survives the quota");
        stream.write(b"more").unwrap();
        let file = stream.finish();
        assert_eq!((file.bytes, file.lines, file.chars), (19, 2, 19));
    }
}
