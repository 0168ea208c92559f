//! Every problem of every config file at once (`toolgate doctor`), where [`crate::load`]
//! stops at the first.
//!
//! Each file is checked on its own, over the built-in defaults, one setting at a time (a
//! top-level value, or one key of a section; one whole `[mcp_servers.NAME]`, `[providers.NAME]`
//! or `[clients.NAME]` entry), so six wrong settings are six problems in one run. A project
//! file is also held to the project layer's rules (what it may not set, folders inside the
//! project).

use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::Serialized;

use crate::load::{Config, LoadOptions, layers, project_dir};
use crate::project::ProjectLayer;

/// Which layer a config file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// `~/.config/toolgate/config.toml`.
    User,
    /// `<project>/.toolgate/config.toml`: may only tighten.
    Project,
    /// `--config FILE`.
    Explicit,
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::User => "user config",
            Self::Project => "project config",
            Self::Explicit => "--config file",
        })
    }
}

/// What [`check_files`] found about one file.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// Which layer.
    pub kind: FileKind,
    /// Where it is (or would be).
    pub path: PathBuf,
    /// Whether it exists.
    pub present: bool,
    /// One line per wrong setting, each naming the key; empty when the file is fine.
    pub problems: Vec<String>,
}

/// Checks the user file, the project file and `--config` of `options`, each on its own.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use toolgate_config::{FileKind, Flags, LoadOptions, check_files};
///
/// let project = tempfile::tempdir()?;
/// std::fs::create_dir(project.path().join(".toolgate"))?;
/// std::fs::write(
///     project.path().join(".toolgate/config.toml"),
///     "[read]\nmax_lines = \"many\"\n\n[server]\nhttp = \"127.0.0.1:8765\"\n",
/// )?;
/// let options = LoadOptions {
///     user_file: None,
///     use_env: false,
///     ..LoadOptions::standard(project.path().to_path_buf(), None, Flags::default())
/// };
/// let reports = check_files(&options);
/// let project_file = reports.iter().find(|r| r.kind == FileKind::Project).unwrap();
/// // Both wrong settings are reported, not only the first.
/// assert_eq!(project_file.problems.len(), 2);
/// assert!(project_file.problems[0].contains("read.max_lines"));
/// assert!(project_file.problems[1].contains("server.http"));
/// # Ok(())
/// # }
/// ```
pub fn check_files(options: &LoadOptions) -> Vec<FileReport> {
    let mut reports = Vec::new();
    if let Some(user) = &options.user_file {
        reports.push(check_one(FileKind::User, user, None));
    }
    let user_side = layers(
        &LoadOptions {
            explicit_file: None,
            ..options.clone()
        },
        None,
    )
    .unwrap_or_else(|_| Figment::new());
    let project = project_dir(options, &user_side);
    let path = project.join(".toolgate").join("config.toml");
    reports.push(check_one(FileKind::Project, &path, Some(&project)));
    if let Some(explicit) = &options.explicit_file {
        reports.push(check_one(FileKind::Explicit, explicit, None));
    }
    reports
}

/// Checks one file; `project` is the project folder when the file is a project layer.
fn check_one(kind: FileKind, path: &Path, project: Option<&Path>) -> FileReport {
    let mut report = FileReport {
        kind,
        path: path.to_path_buf(),
        present: path.is_file(),
        problems: Vec::new(),
    };
    if !report.present {
        return report;
    }
    let shown = path.display().to_string();
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            report
                .problems
                .push(format!("cannot be read: {e}; check its permissions"));
            return report;
        }
    };
    let table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(e) => {
            let line = e
                .span()
                .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
            let at = line.map_or_else(String::new, |l| format!(" (line {l})"));
            report.problems.push(format!(
                "not valid TOML{at}: {}; fix the syntax",
                e.message().trim()
            ));
            return report;
        }
    };
    for (key, piece) in pieces(&table) {
        if let Some(problem) = check_piece(&key, piece, path, project) {
            report.problems.push(problem.replace(&shown, "this file"));
        }
    }
    report
}

/// The settings of `table`, one table each: `(dotted key, table holding only it)`.
fn pieces(table: &toml::Table) -> Vec<(String, toml::Table)> {
    // Maps of named entries: each entry is one setting (its keys belong together).
    const NAMED: [&str; 3] = ["mcp_servers", "providers", "clients"];
    let mut out = Vec::new();
    for (top, value) in table {
        match value.as_table() {
            Some(section) if !section.is_empty() => {
                for (key, inner) in section {
                    let mut sub = toml::Table::new();
                    sub.insert(key.clone(), inner.clone());
                    let mut whole = toml::Table::new();
                    whole.insert(top.clone(), toml::Value::Table(sub));
                    let shown = if NAMED.contains(&top.as_str()) {
                        format!("[{top}.{key}]")
                    } else {
                        format!("{top}.{key}")
                    };
                    out.push((shown, whole));
                }
            }
            _ => {
                let mut whole = toml::Table::new();
                whole.insert(top.clone(), value.clone());
                out.push((top.clone(), whole));
            }
        }
    }
    out
}

/// The problem with one setting, if any.
fn check_piece(
    key: &str,
    piece: toml::Table,
    path: &Path,
    project: Option<&Path>,
) -> Option<String> {
    let defaults = Figment::from(Serialized::defaults(Config::default()));
    let figment = match project {
        Some(dir) => match ProjectLayer::from_table(path.to_path_buf(), dir, piece) {
            Ok(layer) => defaults.merge(layer),
            Err(crate::ConfigError::Invalid(why)) => return Some(why),
            Err(crate::ConfigError::Project { path, detail, .. }) => {
                return Some(format!("{}: {detail}", path.display()));
            }
            Err(e) => return Some(e.to_string()),
        },
        None => defaults.merge(Serialized::defaults(piece)),
    };
    let err = figment.extract::<Config>().err()?;
    let detail = err
        .into_iter()
        .map(|e| {
            let at = e.path.join(".");
            if at.is_empty() {
                e.kind.to_string()
            } else {
                format!("`{at}`: {}", e.kind)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(format!(
        "{key}: {detail}; fix or remove it (docs/configuration.md lists every key with its default)"
    ))
}
