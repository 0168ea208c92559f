//! Where skills are looked for, nearest first: project, custom, user.
//!
//! A [`ScopeChain`] is the resolved list of skill roots for one project: every path made
//! absolute and real (symlinks resolved as far as the path exists), duplicates dropped. It
//! is the key of the discovery cache, so a session that moves to another project (or a
//! runtime built for another folder) never reads the catalog of the last one.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

/// What kind of folder a skill root is; nearer kinds win a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootKind {
    /// Inside the project (`.toolgate/skills`, `.claude/skills`): travels with the
    /// repository, so its entries may not lead outside the project.
    Project,
    /// A folder named in `[skills] roots`.
    Custom,
    /// The user's own (`~/.config/toolgate/skills`, `~/.claude/skills`).
    User,
}

impl RootKind {
    /// `project`, `custom` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Custom => "custom",
            Self::User => "user",
        }
    }
}

/// One folder skills are discovered in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SkillRoot {
    /// The folder, absolute (real as far as it exists).
    pub path: PathBuf,
    /// What kind of root it is.
    pub kind: RootKind,
    /// For roots inside the project: the project folder that entries must stay inside, even
    /// through a symlink (a repository could otherwise point a "skill" at any file of the user's).
    pub confine: Option<PathBuf>,
}

/// The user's folders the user skill roots are found from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HomeDirs {
    /// The home folder (`$HOME`): `~/.claude/skills`.
    pub home: Option<PathBuf>,
    /// The config folder (`$XDG_CONFIG_HOME`, else `~/.config`): `toolgate/skills` in it.
    pub config: Option<PathBuf>,
}

impl HomeDirs {
    /// From `HOME` and `XDG_CONFIG_HOME`, as toolgate's own config file is found.
    pub fn from_env() -> Self {
        let dirs = toolgate_core::UserDirs::from_env();
        Self {
            home: dirs.home().map(Path::to_path_buf),
            config: dirs.config().map(Path::to_path_buf),
        }
    }
}

/// The resolved skill roots of one project, nearest first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ScopeChain {
    roots: Vec<SkillRoot>,
}

impl ScopeChain {
    /// The roots of `project`: its `.toolgate/skills` and `.claude/skills`, then `custom`
    /// (relative to the project, `~/` = home), then the user's
    /// `<config>/toolgate/skills` and `~/.claude/skills`.
    pub fn resolve(project: &Path, custom: &[PathBuf], homes: &HomeDirs) -> Self {
        let project = real_or_lexical(project);
        let mut roots = Vec::new();
        for rel in [".toolgate/skills", ".claude/skills"] {
            roots.push(SkillRoot {
                path: real_or_lexical(&project.join(rel)),
                kind: RootKind::Project,
                confine: Some(project.clone()),
            });
        }
        for given in custom {
            let path = match (given.strip_prefix("~"), &homes.home) {
                (Ok(rest), Some(home)) => home.join(rest),
                _ => project.join(given),
            };
            let path = real_or_lexical(&path);
            // A custom root inside the project is held to the project's rule.
            let confine = path.starts_with(&project).then(|| project.clone());
            roots.push(SkillRoot {
                path,
                kind: RootKind::Custom,
                confine,
            });
        }
        if let Some(config) = &homes.config {
            roots.push(SkillRoot {
                path: real_or_lexical(&config.join("toolgate/skills")),
                kind: RootKind::User,
                confine: None,
            });
        }
        if let Some(home) = &homes.home {
            roots.push(SkillRoot {
                path: real_or_lexical(&home.join(".claude/skills")),
                kind: RootKind::User,
                confine: None,
            });
        }
        // Run from the home folder, `~/.claude/skills` is a project root too: the nearer
        // kind keeps it.
        let mut seen = std::collections::HashSet::new();
        roots.retain(|r| seen.insert(r.path.clone()));
        Self { roots }
    }

    /// An explicit chain (tests, embedders), nearest first.
    pub fn from_roots(roots: Vec<SkillRoot>) -> Self {
        Self { roots }
    }

    /// The roots, nearest first.
    pub fn roots(&self) -> &[SkillRoot] {
        &self.roots
    }

    /// Whether there are no roots (skills are off).
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }
}

/// `path` made absolute and normal, with symlinks resolved in the part that exists: the
/// watcher reports real paths, and a root created later must still match its events.
pub(crate) fn real_or_lexical(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut normal = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    // The longest existing prefix, made real, plus the rest as given.
    let mut existing = normal.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return normal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_is_project_then_custom_then_user() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let homes = HomeDirs {
            home: Some(home.path().to_path_buf()),
            config: Some(home.path().join(".config")),
        };
        let chain = ScopeChain::resolve(
            project.path(),
            &[PathBuf::from("vendor/skills"), PathBuf::from("~/team")],
            &homes,
        );
        let project = project.path().canonicalize().unwrap();
        let home = home.path().canonicalize().unwrap();
        let got: Vec<(RootKind, PathBuf)> = chain
            .roots()
            .iter()
            .map(|r| (r.kind, r.path.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (RootKind::Project, project.join(".toolgate/skills")),
                (RootKind::Project, project.join(".claude/skills")),
                (RootKind::Custom, project.join("vendor/skills")),
                (RootKind::Custom, home.join("team")),
                (RootKind::User, home.join(".config/toolgate/skills")),
                (RootKind::User, home.join(".claude/skills")),
            ]
        );
        assert_eq!(chain.roots()[0].confine.as_deref(), Some(project.as_path()));
    }

    #[test]
    fn run_from_home_the_claude_folder_is_a_project_root_once() {
        let home = tempfile::tempdir().unwrap();
        let homes = HomeDirs {
            home: Some(home.path().to_path_buf()),
            config: None,
        };
        let chain = ScopeChain::resolve(home.path(), &[], &homes);
        let claude: Vec<_> = chain
            .roots()
            .iter()
            .filter(|r| r.path.ends_with(".claude/skills"))
            .collect();
        assert_eq!(claude.len(), 1);
        assert_eq!(claude[0].kind, RootKind::Project);
    }

    #[test]
    fn a_missing_root_keeps_the_real_path_of_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs_err::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let got = real_or_lexical(&dir.path().join("link/a/../b/skills"));
        assert_eq!(got, real.canonicalize().unwrap().join("b/skills"));
    }
}
