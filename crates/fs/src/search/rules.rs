//! ripgrep's ignore rules for the descriptor-based walk: `.ignore`, `.gitignore`,
//! `.git/info/exclude` and git's global excludes file, with the precedence of the `ignore`
//! crate's walker as toolgate configured it (`standard_filters`, `require_git(false)`,
//! hidden files shown): per kind of file the deepest folder's rule wins, and `.ignore`
//! beats `.gitignore`, which beats the exclude file, which beats the global file.
//!
//! The matchers are `ignore::gitignore` itself; only the reading of the files is ours, so
//! that files inside a root are read through its descriptor like everything else (files in
//! folders above the root, which the model cannot reach, are read by path as ripgrep does).

use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::listing::Listing;
use crate::confine::door::{self, Kind};

/// Largest ignore file read (a bigger one is skipped rather than held in memory).
const MAX_IGNORE_FILE: u64 = 4 * 1024 * 1024;

/// The rules of one folder.
#[derive(Debug, Default)]
struct Level {
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
}

/// The rules in force at one point of a walk: one level per folder from `/` down.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    levels: Vec<Level>,
}

impl Rules {
    /// The rules of every folder above `walk_root`; those at or below `base_path` are read
    /// through `base`.
    pub(crate) fn above(walk_root: &Path, base: BorrowedFd<'_>, base_path: &Path) -> Self {
        let mut rules = Self::default();
        let mut ancestors: Vec<&Path> = walk_root.ancestors().skip(1).collect();
        ancestors.reverse();
        for dir in ancestors {
            let level = match dir.strip_prefix(base_path) {
                Ok(rel) => {
                    let read =
                        |name: &str| door::read_small_file(base, &rel.join(name), MAX_IGNORE_FILE);
                    level_from(dir, read)
                }
                Err(_) => level_from(dir, |name: &str| read_by_path(&dir.join(name))),
            };
            rules.levels.push(level);
        }
        rules
    }

    /// Enters the folder `dir` (open as `fd`, holding `listing`).
    pub(crate) fn push(&mut self, dir: &Path, fd: BorrowedFd<'_>, listing: &Listing) {
        let wanted = listing.has(b".ignore", None)
            || listing.has(b".gitignore", None)
            || listing.has(b".git", Some(Kind::Dir));
        if !wanted {
            self.levels.push(Level::default());
            return;
        }
        let level = level_from(dir, |name: &str| {
            door::read_small_file(fd, Path::new(name), MAX_IGNORE_FILE)
        });
        self.levels.push(level);
    }

    /// Leaves the folder entered last.
    pub(crate) fn pop(&mut self) {
        self.levels.pop();
    }

    /// Whether `path` (a real path; `is_dir` when it is a folder) is ignored.
    pub(crate) fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let kinds: [fn(&Level) -> Option<&Gitignore>; 3] = [
            |l| l.ignore.as_ref(),
            |l| l.git.as_ref(),
            |l| l.exclude.as_ref(),
        ];
        for kind in kinds {
            for level in self.levels.iter().rev() {
                let Some(matcher) = kind(level) else { continue };
                match matcher.matched(path, is_dir) {
                    Match::None => {}
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                }
            }
        }
        global().matched(path, is_dir).is_ignore()
    }
}

/// The rules of the folder `dir`, whose files `read` returns by name.
fn level_from(dir: &Path, read: impl Fn(&str) -> Option<Vec<u8>>) -> Level {
    Level {
        ignore: read(".ignore").and_then(|text| matcher(dir, &dir.join(".ignore"), &text)),
        git: read(".gitignore").and_then(|text| matcher(dir, &dir.join(".gitignore"), &text)),
        exclude: read(".git/info/exclude")
            .and_then(|text| matcher(dir, &dir.join(".git/info/exclude"), &text)),
    }
}

/// A matcher from the text of one ignore file; lines that are not valid globs are skipped,
/// as ripgrep does.
fn matcher(dir: &Path, file: &Path, text: &[u8]) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    let text = String::from_utf8_lossy(text);
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

/// An ignore file above the roots, read by path (the model cannot reach these).
fn read_by_path(path: &PathBuf) -> Option<Vec<u8>> {
    let meta = fs_err::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_IGNORE_FILE {
        return None;
    }
    fs_err::read(path).ok()
}

/// git's global excludes file (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`),
/// read once per process.
fn global() -> &'static Gitignore {
    static GLOBAL: OnceLock<Gitignore> = OnceLock::new();
    GLOBAL.get_or_init(|| Gitignore::global().0)
}
