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
}
