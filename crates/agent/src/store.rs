//! Where transcripts live: in the user's data folder, one folder per project, written only
//! by toolgate and readable only by the user.
//!
//! A transcript holds the whole conversation, tool results included, so it belongs where
//! only the user writes and reads: `$XDG_DATA_HOME/toolgate/sessions/<project-key>/`
//! (default `~/.local/share/…`), folders mode 0700 and files 0600. The key is a readable
//! name (the project folder's) and a hash of the project's canonical path, so two checkouts
//! with one name never share transcripts. A repository cannot plant a session there, and a
//! project file cannot move the folder (`agent.sessions_dir` is refused in project files).
//!
//! `--resume last` takes the newest transcript this store's index names — the index is
//! appended by toolgate each time it starts a transcript, with the time it did so — never
//! "the file whose name sorts last": a file put into the folder by anything else is not in
//! the index and is never picked.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use fs_err::os::unix::fs::OpenOptionsExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use toolgate_core::{MissingUserDir, UserDir, UserDirs};

/// The index of transcripts toolgate started in a sessions folder.
const INDEX: &str = "index.jsonl";

/// Folders: the user's only.
const DIR_MODE: u32 = 0o700;

/// Transcripts and the index: the user's only.
pub(crate) const FILE_MODE: u32 = 0o600;

/// One line of the index.
#[derive(Debug, Serialize, Deserialize)]
struct IndexEntry {
    /// Session id (the file name without `.jsonl`).
    id: String,
    /// When toolgate started it, in milliseconds since the Unix epoch.
    created_ms: u64,
}

/// The sessions folder of `project` in the user's data folder:
/// `<data>/toolgate/sessions/<project-key>`.
pub fn project_sessions_dir(project: &Path, dirs: &UserDirs) -> Result<PathBuf, MissingUserDir> {
    let data = dirs.require(UserDir::Data)?;
    Ok(data
        .join("toolgate")
        .join("sessions")
        .join(project_key(project)))
}

/// `<name>-<hash>`: the project folder's name (letters, digits, `.`, `-`, `_`; at most 40)
/// and the first 16 hex digits of the SHA-256 of its canonical path.
///
/// ```
/// let key = toolgate_agent::project_key(std::path::Path::new("/nowhere/my-app"));
/// assert!(key.starts_with("my-app-"));
/// assert_eq!(key.len(), "my-app-".len() + 16);
/// // The same folder always gets the same key.
/// assert_eq!(key, toolgate_agent::project_key(std::path::Path::new("/nowhere/my-app")));
/// ```
pub fn project_key(project: &Path) -> String {
    let real = fs_err::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    let name: String = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let digest = Sha256::digest(real.as_os_str().as_encoded_bytes());
    let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let name = name.trim_start_matches('.');
    if name.is_empty() {
        hash
    } else {
        format!("{name}-{hash}")
    }
}

/// Creates `dir` (and missing parents) with mode 0700, and makes `dir` itself 0700.
pub(crate) fn prepare(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    fs_err::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
}

/// Opens `path` for appending with mode 0600 (`new`: it must not exist yet).
pub(crate) fn open_private(path: &Path, new: New) -> std::io::Result<fs_err::File> {
    let mut options = fs_err::OpenOptions::new();
    options.append(true).mode(FILE_MODE);
    match new {
        New::Yes => options.create_new(true),
        New::No => options.create(false),
    };
    let file = options.open(path)?;
    // An older file (before 0600) is tightened too.
    file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Whether [`open_private`] creates the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum New {
    /// Create it; it must not exist.
    Yes,
    /// It must exist.
    No,
}

/// Notes in `dir`'s index that toolgate started session `id` at `created_ms`.
pub(crate) fn remember(dir: &Path, id: &str, created_ms: u64) -> std::io::Result<()> {
    let path = dir.join(INDEX);
    let mut file = match open_private(&path, New::Yes) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => open_private(&path, New::No)?,
        other => other?,
    };
    let mut line = serde_json::to_vec(&IndexEntry {
        id: id.to_owned(),
        created_ms,
    })
    .map_err(std::io::Error::other)?;
    line.push(b'\n');
    file.write_all(&line)
}

/// Whether `id` can be a session id (and so a file name in the sessions folder).
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The newest session toolgate started in `dir` (by the time in its index) whose
/// transcript is still there.
pub(crate) fn newest(dir: &Path) -> Option<String> {
    let text = fs_err::read_to_string(dir.join(INDEX)).ok()?;
    let mut entries: Vec<(u64, usize, String)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let e: IndexEntry = serde_json::from_str(l).ok()?;
            Some((e.created_ms, i, e.id))
        })
        .filter(|(_, _, id)| valid_id(id))
        .collect();
    entries.sort();
    entries
        .into_iter()
        .rev()
        .map(|(_, _, id)| id)
        .find(|id| dir.join(format!("{id}.jsonl")).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_readable_and_differ_by_path() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for dir in [a.path(), b.path()] {
            fs_err::create_dir_all(dir.join("My Project")).unwrap();
        }
        let ka = project_key(&a.path().join("My Project"));
        let kb = project_key(&b.path().join("My Project"));
        assert!(ka.starts_with("My_Project-"), "{ka}");
        assert_ne!(ka, kb);
        assert_eq!(ka, project_key(&a.path().join("My Project/.")));
    }

    #[test]
    fn the_store_is_in_the_data_folder_and_needs_one() {
        let dirs = UserDirs::from_lookup(|k| (k == "XDG_DATA_HOME").then(|| "/d".into()));
        let dir = project_sessions_dir(Path::new("/p/app"), &dirs).unwrap();
        assert!(dir.starts_with("/d/toolgate/sessions/"), "{dir:?}");
        let none = UserDirs::from_lookup(|k| (k == "HOME").then(|| "".into()));
        let err = project_sessions_dir(Path::new("/p/app"), &none).unwrap_err();
        assert!(err.to_string().contains("XDG_DATA_HOME"), "{err}");
    }

    #[test]
    fn newest_follows_the_index_not_file_names() {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path()).unwrap();
        for (id, at) in [
            ("20250101-000000-aaaaaa", 2_000),
            ("20240101-000000-bbbbbb", 3_000),
        ] {
            fs_err::write(dir.path().join(format!("{id}.jsonl")), "").unwrap();
            remember(dir.path(), id, at).unwrap();
        }
        // Planted: sorts last by name, not in the index.
        fs_err::write(dir.path().join("99999999-999999-ffffff.jsonl"), "").unwrap();
        assert_eq!(newest(dir.path()).unwrap(), "20240101-000000-bbbbbb");
        let mode = |p: &Path| fs_err::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.path()), 0o700);
        assert_eq!(mode(&dir.path().join(INDEX)), 0o600);
    }
}
