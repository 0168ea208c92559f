//! One root's entries → skills or problems.
//!
//! An entry of a root is a folder with a `SKILL.md` (its other files are the skill's
//! bundled files) or a flat `*.md` file. Nothing deeper is discovered: a `SKILL.md` one
//! level further down is reported as a problem that says to move it up, so a skill never
//! vanishes without a word. Hidden entries (`.name`) and other files are not skills.
//!
//! Files are opened without blocking (a FIFO named `SKILL.md` cannot hang the scan), must be
//! regular files and are read up to [`MAX_SKILL_BYTES`].

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::parse::parse_skill;
use crate::roots::SkillRoot;

/// Largest skill file read, in bytes. A skill's body goes into the model's context whole.
pub const MAX_SKILL_BYTES: u64 = 512 * 1024;
/// Most entries read from one root; past it the root reports a problem.
pub const MAX_ENTRIES: usize = 2_000;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// Why a skill file cannot be read (when it is listed, and by [`crate::load_skill`]). The
/// text follows the file's path ("`…/SKILL.md` is not UTF-8 text; …") and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The path has no folder or no file name.
    #[error("is not a file path")]
    NotAPath,
    /// A symlink was swapped in since the skill was listed; nothing was read.
    #[error(
        "was replaced by a symlink (or a folder on its way was) since it was listed; nothing was read — if the change is yours, wait for the skill list to update or restart toolgate"
    )]
    Swapped,
    /// Opening, inspecting or reading it failed.
    #[error("cannot be read: {0}")]
    Io(std::io::ErrorKind),
    /// It is a folder, a FIFO, a device….
    #[error("is not a regular file; a skill must be a plain Markdown file")]
    NotAFile,
    /// It is larger than [`MAX_SKILL_BYTES`].
    #[error(
        "is {kib} KiB; a skill file may be at most {} KiB, because the model reads it whole — move reference material into bundled files beside it",
        MAX_SKILL_BYTES / 1024
    )]
    TooLarge {
        /// Its size in KiB (rounded down).
        kib: u64,
    },
    /// It is not UTF-8.
    #[error("is not UTF-8 text; save it as UTF-8")]
    NotUtf8,
}

/// A discovered skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (from the frontmatter).
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// The skill file: `<dir>/SKILL.md` or a flat `<root>/<name>.md`.
    pub file: PathBuf,
    /// The skill file's real path when it was found (symlinks resolved then). Loading reads
    /// it through its folder's descriptor without following any symlink, so one swapped in
    /// since (for the file or a folder on its way) makes the load fail instead of leading
    /// to another file.
    pub real_file: PathBuf,
    /// The skill's folder, for folder skills: its other files are bundled with it.
    pub dir: Option<PathBuf>,
    /// The root it was found in.
    pub root: SkillRoot,
    /// Whether the model may load it.
    pub model_invocable: bool,
    /// Whether the user may invoke it (an MCP prompt).
    pub user_invocable: bool,
    /// What to pass after the skill's name.
    pub argument_hint: Option<String>,
}

impl Skill {
    /// The visibility flags as words: `model`, `user`, both, or `hidden`.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if self.model_invocable {
            flags.push("model");
        }
        if self.user_invocable {
            flags.push("user");
        }
        if flags.is_empty() {
            flags.push("hidden");
        }
        flags
    }
}

/// A skill that could not be loaded: where, and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file or folder at fault.
    pub path: PathBuf,
    /// The root it is in.
    pub root: SkillRoot,
    /// What is wrong and what to do.
    pub reason: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// What one entry of a root is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A skill.
    Skill(Arc<Skill>),
    /// Something meant as a skill that cannot be loaded.
    Problem(Problem),
}

/// A root's entries by file name (the incremental state the watcher keeps).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RootScan {
    /// Entries that are skills or problems, by their name in the root.
    pub entries: BTreeMap<OsString, Entry>,
    /// A problem of the root itself (unreadable, too many entries).
    pub problem: Option<Problem>,
}

/// Reads every entry of `root`. A missing root is empty.
pub fn scan_root(root: &SkillRoot) -> RootScan {
    let mut scan = RootScan::default();
    let names = match list_names(&root.path) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return scan,
        Err(e) => {
            scan.problem = Some(Problem {
                path: root.path.clone(),
                root: root.clone(),
                reason: format!("the skills folder cannot be read: {e}"),
            });
            return scan;
        }
    };
    let total = names.len();
    for name in names.into_iter().take(MAX_ENTRIES) {
        if let Some(entry) = scan_entry(root, &name) {
            scan.entries.insert(name, entry);
        }
    }
    if total > MAX_ENTRIES {
        scan.problem = Some(Problem {
            path: root.path.clone(),
            root: root.clone(),
            reason: format!(
                "the folder has {total} entries; only the first {MAX_ENTRIES} (by name) were read — move the rest to another skills folder"
            ),
        });
    }
    scan
}

/// The entry names of `dir`, sorted.
fn list_names(dir: &Path) -> std::io::Result<Vec<OsString>> {
    let mut names: Vec<OsString> = fs_err::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    names.sort();
    Ok(names)
}

/// What the entry `name` of `root` is now; `None` when it is not a skill (or is gone).
pub fn scan_entry(root: &SkillRoot, name: &OsStr) -> Option<Entry> {
    if name.as_encoded_bytes().first() == Some(&b'.') {
        return None;
    }
    let path = root.path.join(name);
    // Follows a symlinked entry (a user's `~/.claude/skills/x -> ~/dotfiles/x`).
    let meta = fs_err::metadata(&path).ok()?;
    let problem = |path: &Path, reason: String| {
        Some(Entry::Problem(Problem {
            path: path.to_path_buf(),
            root: root.clone(),
            reason,
        }))
    };
    if meta.is_dir() {
        let file = path.join(SKILL_FILE);
        match fs_err::symlink_metadata(&file) {
            Ok(_) => {}
            Err(_) => {
                return nested_skill(&path).and_then(|nested| {
                    problem(
                        &nested,
                        format!(
                            "nested skills are not discovered: move `{}` up so that it is `<skills folder>/<name>/{SKILL_FILE}`",
                            nested.display()
                        ),
                    )
                });
            }
        }
        if let Err(reason) = confined(root, &file) {
            return problem(&file, reason.to_string());
        }
        return Some(match load(root, &file, Some(&path)) {
            Ok(skill) => Entry::Skill(Arc::new(skill)),
            Err(reason) => Entry::Problem(Problem {
                path: file,
                root: root.clone(),
                reason: reason.to_string(),
            }),
        });
    }
    let is_md = Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"));
    if !is_md {
        return None;
    }
    if let Err(reason) = confined(root, &path) {
        return problem(&path, reason.to_string());
    }
    Some(match load(root, &path, None) {
        Ok(skill) => Entry::Skill(Arc::new(skill)),
        Err(reason) => Entry::Problem(Problem {
            path,
            root: root.clone(),
            reason: reason.to_string(),
        }),
    })
}

/// A `SKILL.md` one level below `dir` (a nested skill), if any.
fn nested_skill(dir: &Path) -> Option<PathBuf> {
    let names = list_names(dir).ok()?;
    names
        .into_iter()
        .take(MAX_ENTRIES)
        .filter(|n| n.as_encoded_bytes().first() != Some(&b'.'))
        .map(|n| dir.join(n).join(SKILL_FILE))
        .find(|f| f.is_file())
}

/// Why an entry is not a skill; the text follows the file's path, like [`ReadError`]'s.
#[derive(Debug, thiserror::Error)]
enum EntryError {
    /// The file's real path cannot be had (checking a project root's confinement).
    #[error("cannot be resolved: {0}")]
    Unresolved(#[source] std::io::Error),
    /// The file's real path cannot be had (loading it): only the kind is said.
    #[error("cannot be resolved: {}", .0.kind())]
    Unresolvable(#[source] std::io::Error),
    /// A project skill whose real path is outside the project.
    #[error(
        "leads outside the project (to `{}`) through a symlink; a project's skills must live inside it — copy the skill into the project, or put it in ~/.claude/skills",
        .0.display()
    )]
    Outside(PathBuf),
    /// The file cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Its frontmatter is refused.
    #[error(transparent)]
    Frontmatter(#[from] crate::parse::FrontmatterError),
}

/// For a project root: refuses a file whose real path leaves the project.
fn confined(root: &SkillRoot, file: &Path) -> Result<(), EntryError> {
    let Some(project) = &root.confine else {
        return Ok(());
    };
    let real = fs_err::canonicalize(file).map_err(EntryError::Unresolved)?;
    if real.starts_with(project) {
        Ok(())
    } else {
        Err(EntryError::Outside(real))
    }
}

/// Reads and checks one skill file.
fn load(root: &SkillRoot, file: &Path, dir: Option<&Path>) -> Result<Skill, EntryError> {
    let real_file = fs_err::canonicalize(file).map_err(EntryError::Unresolvable)?;
    let text = read_skill_file(&real_file)?;
    let (fm, _body) = parse_skill(&text)?;
    Ok(Skill {
        name: fm.name,
        description: fm.description,
        file: file.to_path_buf(),
        real_file,
        dir: dir.map(Path::to_path_buf),
        root: root.clone(),
        model_invocable: fm.model_invocable,
        user_invocable: fm.user_invocable,
        argument_hint: fm.argument_hint,
    })
}

/// A skill file's text, by its real path: a regular file of at most [`MAX_SKILL_BYTES`],
/// UTF-8. Opened through its folder's descriptor like every file a tool reads
/// ([`toolgate_fs::open_file_no_symlinks`]): no symlink is followed on the way or for the
/// file itself, so a symlink swapped in after the skill was listed cannot lead the read to
/// another file; and without blocking, so a FIFO put in its place cannot hang the caller.
pub(crate) fn read_skill_file(real_file: &Path) -> Result<String, ReadError> {
    let (Some(dir), Some(name)) = (real_file.parent(), real_file.file_name()) else {
        return Err(ReadError::NotAPath);
    };
    let opened = toolgate_fs::open_file_no_symlinks(dir, Path::new(name));
    let mut handle = opened.map_err(|e| {
        if toolgate_fs::is_swapped(&e) {
            ReadError::Swapped
        } else {
            ReadError::Io(e.kind())
        }
    })?;
    let meta = handle.metadata().map_err(|e| ReadError::Io(e.kind()))?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(ReadError::TooLarge {
            kib: meta.len() / 1024,
        });
    }
    let mut bytes = Vec::new();
    (&mut handle)
        .take(MAX_SKILL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Io(e.kind()))?;
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::RootKind;

    fn root(dir: &Path) -> SkillRoot {
        SkillRoot {
            path: dir.to_path_buf(),
            kind: RootKind::User,
            confine: None,
        }
    }

    fn write(path: &Path, text: &str) {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }

    fn skill_md(name: &str) -> String {
        format!("---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n")
    }

    #[test]
    fn folder_and_flat_skills_are_found_and_other_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("deploy/SKILL.md"), &skill_md("deploy"));
        write(&dir.path().join("deploy/reference.md"), "ref");
        write(&dir.path().join("lint.md"), &skill_md("lint"));
        write(&dir.path().join("notes.txt"), "not a skill");
        write(&dir.path().join(".hidden.md"), "not a skill");
        fs_err::create_dir(dir.path().join("empty")).unwrap();
        let scan = scan_root(&root(dir.path()));
        let names: Vec<_> = scan.entries.keys().cloned().collect();
        assert_eq!(
            names,
            vec![OsString::from("deploy"), OsString::from("lint.md")]
        );
        let Entry::Skill(deploy) = &scan.entries[OsStr::new("deploy")] else {
            panic!("deploy is a skill")
        };
        assert_eq!(
            deploy.dir.as_deref(),
            Some(dir.path().join("deploy").as_path())
        );
        let Entry::Skill(lint) = &scan.entries[OsStr::new("lint.md")] else {
            panic!("lint is a skill")
        };
        assert_eq!(lint.dir, None);
        assert!(scan.problem.is_none());
    }

    #[test]
    fn nested_skills_are_not_discovered_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join("team/deploy/SKILL.md"),
            &skill_md("deploy"),
        );
        let scan = scan_root(&root(dir.path()));
        let Entry::Problem(p) = &scan.entries[OsStr::new("team")] else {
            panic!("a nested skill is a problem, not a skill")
        };
        assert!(
            p.reason.starts_with("nested skills are not discovered"),
            "{p}"
        );
        assert!(p.path.ends_with("team/deploy/SKILL.md"));
    }

    #[test]
    fn a_fifo_named_skill_md_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::create_dir(dir.path().join("pipe")).unwrap();
        let fifo = dir.path().join("pipe/SKILL.md");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let scan = scan_root(&root(dir.path()));
        let Entry::Problem(p) = &scan.entries[OsStr::new("pipe")] else {
            panic!("a FIFO is not a skill")
        };
        assert!(p.reason.contains("not a regular file"), "{p}");
    }

    #[test]
    fn a_project_skill_may_not_lead_outside_the_project() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(&outside.path().join("evil/SKILL.md"), &skill_md("evil"));
        let skills = project.path().join(".claude/skills");
        fs_err::create_dir_all(&skills).unwrap();
        std::os::unix::fs::symlink(outside.path().join("evil"), skills.join("evil")).unwrap();
        let root = SkillRoot {
            path: skills.canonicalize().unwrap(),
            kind: RootKind::Project,
            confine: Some(project.path().canonicalize().unwrap()),
        };
        let scan = scan_root(&root);
        let Entry::Problem(p) = &scan.entries[OsStr::new("evil")] else {
            panic!("a symlink out of the project is refused")
        };
        assert!(p.reason.contains("leads outside the project"), "{p}");
    }

    #[test]
    fn a_too_large_skill_file_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = skill_md("big");
        text.push_str(&"x".repeat(MAX_SKILL_BYTES as usize));
        write(&dir.path().join("big.md"), &text);
        let scan = scan_root(&root(dir.path()));
        let Entry::Problem(p) = &scan.entries[OsStr::new("big.md")] else {
            panic!("too large")
        };
        assert!(p.reason.contains("at most 512 KiB"), "{p}");
    }
}
