//! What goes wrong when a configuration is loaded or assembled.

use std::path::PathBuf;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A file named with `--config` does not exist.
    #[error("config file `{0}` does not exist; check the --config path")]
    Missing(PathBuf),
    /// A value has the wrong type or a key is unknown.
    #[error(
        "invalid configuration: {0}; fix or remove that value (`toolgate doctor` lists every problem of every config file)"
    )]
    Invalid(String),
    /// The merged layers do not fit the config's types (every problem, `; `-separated).
    #[error(
        "invalid configuration: {}; fix or remove that value (`toolgate doctor` lists every problem of every config file)",
        describe(.0)
    )]
    Types(#[source] figment::Error),
    /// A project file (`.toolgate/config.toml`) that cannot be read, or whose text or one
    /// of its values does not parse.
    #[error(
        "invalid configuration: {}: {detail}; fix or remove that value (`toolgate doctor` lists every problem of every config file)",
        .path.display()
    )]
    Project {
        /// The project file.
        path: PathBuf,
        /// What is wrong, after the file's name: the value (when one is at fault) and the
        /// reader's or parser's words.
        detail: String,
        /// The reader's or parser's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A part of the configuration (`permissions`, `skills`, …) that its own checks refuse;
    /// `part` is named when the error's text does not name the setting itself.
    #[error(
        "invalid configuration: {}{source}; fix or remove that value (`toolgate doctor` lists every problem of every config file)",
        .part.map(|p| format!("{p}: ")).unwrap_or_default()
    )]
    Part {
        /// The part, when the error does not say.
        part: Option<&'static str>,
        /// Why it is refused.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ConfigError {
    /// `part` of the configuration (`permissions`, `skills`, …), refused by `source`.
    pub fn part(
        part: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Part {
            part: Some(part),
            source: source.into(),
        }
    }

    /// A setting refused by `source`, whose text names it.
    pub fn refused(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Part {
            part: None,
            source: source.into(),
        }
    }
}

/// figment's errors, one line each, with the file and key.
pub(crate) fn describe(err: &figment::Error) -> String {
    err.clone()
        .into_iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}
