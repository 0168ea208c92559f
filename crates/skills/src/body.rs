//! Loading one skill: its body, read fresh from disk, and its bundled files.
//!
//! The catalog only holds frontmatter; the body is read when a skill is invoked, so an
//! edited body is what the model gets even before the watcher reports the change. The
//! bundled files are listed, not read (the model reads what the instructions call for),
//! bounded in depth, count and entries scanned, skipping the heavy folders the search
//! tools skip.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::parse::{Frontmatter, FrontmatterError, parse_skill};
use crate::scan::{ReadError, SKILL_FILE, Skill, read_skill_file};

/// Why a skill cannot be loaded now ([`load_skill`]): what is wrong with its file today.
/// The text follows the file's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The file is no longer a valid skill.
    #[error(transparent)]
    Frontmatter(#[from] FrontmatterError),
}

/// Most bundled files listed.
pub const MAX_FILES: usize = 100;
/// Most entries looked at while listing them.
pub const MAX_SCANNED: usize = 5_000;
/// Deepest folder level listed below the skill's folder.
pub const MAX_DEPTH: usize = 6;

/// A skill's other files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BundledFiles {
    /// Their paths, sorted.
    pub paths: Vec<PathBuf>,
    /// Whether more exist than are listed.
    pub more: bool,
}

/// A skill read for use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSkill {
    /// The catalog entry it was loaded from.
    pub skill: Arc<Skill>,
    /// The frontmatter as it is on disk now.
    pub frontmatter: Frontmatter,
    /// The instructions: the file after its frontmatter.
    pub body: String,
    /// Files beside it (folder skills only).
    pub files: BundledFiles,
}

/// Reads `skill`'s file again and lists its bundled files. The error says what is wrong
/// with the file now.
pub fn load_skill(skill: &Arc<Skill>) -> Result<LoadedSkill, LoadError> {
    let text = read_skill_file(&skill.real_file)?;
    let (frontmatter, body) = parse_skill(&text)?;
    let body = body.trim().to_owned();
    let files = match &skill.dir {
        Some(dir) if still_confined(skill, dir) => bundled_files(dir, &skill.file),
        _ => BundledFiles::default(),
    };
    Ok(LoadedSkill {
        skill: Arc::clone(skill),
        frontmatter,
        body,
        files,
    })
}

impl LoadedSkill {
    /// The text a model or user reads: a header, the body with `$ARGUMENTS` filled in
    /// (or the arguments appended when the body has no placeholder), then the bundled
    /// files. `show` turns a real path into the form the reader should use.
    pub fn text(&self, arguments: Option<&str>, show: &dyn Fn(&Path) -> String) -> String {
        let mut out = format!(
            "Skill `{}` ({})\n",
            self.frontmatter.name,
            show(&self.skill.file)
        );
        if let Some(dir) = &self.skill.dir {
            out.push_str(&format!(
                "Base folder: {} (relative paths in the instructions are relative to it)\n",
                show(dir)
            ));
        }
        out.push('\n');
        let arguments = arguments.map(str::trim).filter(|a| !a.is_empty());
        match arguments {
            Some(args) if self.body.contains("$ARGUMENTS") => {
                out.push_str(&self.body.replace("$ARGUMENTS", args));
            }
            Some(args) => {
                out.push_str(&self.body);
                out.push_str(&format!("\n\nARGUMENTS: {args}"));
            }
            None => out.push_str(&self.body),
        }
        out.push('\n');
        if !self.files.paths.is_empty() {
            out.push_str(
                "\nBundled files (read them with read_file when the instructions call for them):\n",
            );
            for path in &self.files.paths {
                out.push_str(&format!("- {}\n", show(path)));
            }
            if self.files.more
                && let Some(dir) = &self.skill.dir
            {
                out.push_str(&format!(
                    "- … more files: list them with list_dir on {}\n",
                    show(dir)
                ));
            }
        }
        out
    }
}

/// Whether a project skill's folder still lies inside its project (a symlink swapped in
/// since the listing could point it anywhere; then its files are not listed).
fn still_confined(skill: &Skill, dir: &Path) -> bool {
    match &skill.root.confine {
        None => true,
        Some(project) => fs_err::canonicalize(dir).is_ok_and(|real| real.starts_with(project)),
    }
}

/// The files below `dir` other than `skill_file`, sorted, bounded.
fn bundled_files(dir: &Path, skill_file: &Path) -> BundledFiles {
    let mut walk = ignore::WalkBuilder::new(dir);
    walk.standard_filters(false)
        .hidden(true)
        .follow_links(false)
        .max_depth(Some(MAX_DEPTH))
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && entry.depth() > 0
                && toolgate_fs::SKIPPED_DIRS
                    .iter()
                    .any(|d| std::ffi::OsStr::new(d) == entry.file_name()))
        });
    let mut files = BundledFiles::default();
    for entry in walk.build().take(MAX_SCANNED).filter_map(Result::ok) {
        let is_file = entry.file_type().is_some_and(|t| t.is_file());
        if !is_file || entry.path() == skill_file {
            continue;
        }
        if entry.depth() == 1 && entry.file_name() == SKILL_FILE {
            continue;
        }
        if files.paths.len() == MAX_FILES {
            files.more = true;
            break;
        }
        files.paths.push(entry.into_path());
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::{RootKind, SkillRoot};

    fn skill(dir: &Path) -> Arc<Skill> {
        Arc::new(Skill {
            name: "deploy".into(),
            description: "d".into(),
            file: dir.join(SKILL_FILE),
            real_file: dir.join(SKILL_FILE),
            dir: Some(dir.to_path_buf()),
            root: SkillRoot {
                path: dir.parent().unwrap().to_path_buf(),
                kind: RootKind::User,
                confine: None,
            },
            model_invocable: true,
            user_invocable: true,
            argument_hint: None,
        })
    }

    fn write(path: &Path, text: &str) {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }

    #[test]
    fn body_is_read_fresh_and_bundled_files_are_listed_without_heavy_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("deploy");
        write(
            &dir.join(SKILL_FILE),
            "---\nname: deploy\ndescription: d\n---\n\nRun $ARGUMENTS.\n",
        );
        write(&dir.join("reference.md"), "ref");
        write(&dir.join("scripts/run.sh"), "echo");
        write(&dir.join("node_modules/x/index.js"), "skip");
        write(&dir.join(".secret"), "skip");
        let loaded = load_skill(&skill(&dir)).unwrap();
        assert_eq!(loaded.body, "Run $ARGUMENTS.");
        assert_eq!(
            loaded.files.paths,
            vec![dir.join("reference.md"), dir.join("scripts/run.sh")]
        );
        assert!(!loaded.files.more);
        let text = loaded.text(Some("prod"), &|p| p.display().to_string());
        assert!(text.contains("Run prod."), "{text}");
        assert!(text.contains(&format!("- {}", dir.join("scripts/run.sh").display())));
        // No placeholder: the arguments are appended.
        write(
            &dir.join(SKILL_FILE),
            "---\nname: deploy\ndescription: d\n---\nRun it.\n",
        );
        let loaded = load_skill(&skill(&dir)).unwrap();
        let text = loaded.text(Some("prod"), &|p| p.display().to_string());
        assert!(text.contains("Run it.\n\nARGUMENTS: prod"), "{text}");
    }

    #[test]
    fn bundled_files_are_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("deploy");
        write(
            &dir.join(SKILL_FILE),
            "---\nname: deploy\ndescription: d\n---\nx\n",
        );
        for i in 0..(MAX_FILES + 5) {
            write(&dir.join(format!("f{i:04}.txt")), "x");
        }
        let loaded = load_skill(&skill(&dir)).unwrap();
        assert_eq!(loaded.files.paths.len(), MAX_FILES);
        assert!(loaded.files.more);
        let text = loaded.text(None, &|p| p.display().to_string());
        assert!(
            text.contains("more files: list them with list_dir"),
            "{text}"
        );
    }

    #[test]
    fn a_skill_broken_since_discovery_says_what_is_wrong() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("deploy");
        write(&dir.join(SKILL_FILE), "no frontmatter any more\n");
        let err = load_skill(&skill(&dir)).unwrap_err().to_string();
        assert!(err.contains("there is no frontmatter"), "{err}");
    }
}
