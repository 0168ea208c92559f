//! The user's folders (home, config, cache, data, state), computed once for every crate.
//!
//! Follows the XDG base-directory spec: `$XDG_CONFIG_HOME`, `$XDG_CACHE_HOME`,
//! `$XDG_DATA_HOME` and `$XDG_STATE_HOME` count only when they hold an absolute path — "if
//! an implementation encounters a relative path in any of these variables it should consider
//! the path invalid and ignore it", and an empty one means the default. The defaults hang off
//! `$HOME` (`~/.config`, `~/.cache`, `~/.local/share`, `~/.local/state`), and `HOME` counts
//! only when it is absolute too: an empty or relative value would put the *user's* config and
//! trust store inside whatever folder toolgate runs in, where a repository could ship them.
//! Without a usable value the folder is missing, and whoever needs it says so
//! ([`UserDirs::require`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// One of the user's folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserDir {
    /// `$HOME`.
    Home,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    Config,
    /// `$XDG_CACHE_HOME`, else `~/.cache`.
    Cache,
    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    Data,
    /// `$XDG_STATE_HOME`, else `~/.local/state`.
    State,
}

impl UserDir {
    /// The variable that sets it.
    pub fn variable(self) -> &'static str {
        match self {
            Self::Home => "HOME",
            Self::Config => "XDG_CONFIG_HOME",
            Self::Cache => "XDG_CACHE_HOME",
            Self::Data => "XDG_DATA_HOME",
            Self::State => "XDG_STATE_HOME",
        }
    }

    /// Where it is below the home folder when its variable is not usable.
    fn below_home(self) -> &'static str {
        match self {
            Self::Home => "",
            Self::Config => ".config",
            Self::Cache => ".cache",
            Self::Data => ".local/share",
            Self::State => ".local/state",
        }
    }

    /// How it is named in messages.
    fn what(self) -> &'static str {
        match self {
            Self::Home => "home folder",
            Self::Config => "config folder",
            Self::Cache => "cache folder",
            Self::Data => "data folder",
            Self::State => "state folder",
        }
    }
}

/// A user folder that is needed but cannot be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", missing_message(*.0))]
pub struct MissingUserDir(pub UserDir);

fn missing_message(dir: UserDir) -> String {
    match dir {
        UserDir::Home => {
            "no user home folder: HOME is unset, empty or not an absolute path; set HOME to your home folder".to_owned()
        }
        other => format!(
            "no user {}: neither {} nor HOME is set to an absolute path (an empty or relative value is ignored, as the XDG base-directory spec says); set HOME, or {} to an absolute folder",
            other.what(),
            other.variable(),
            other.variable()
        ),
    }
}

/// The user's folders, as found in the environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserDirs {
    home: Option<PathBuf>,
    config: Option<PathBuf>,
    cache: Option<PathBuf>,
    data: Option<PathBuf>,
    state: Option<PathBuf>,
}

impl UserDirs {
    /// From this process's environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// From `lookup`, which gives a variable's value (tests, embedders).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let absolute = |name: &str| lookup(name).map(PathBuf::from).filter(|p| p.is_absolute());
        let home = absolute(UserDir::Home.variable());
        let pick = |dir: UserDir| {
            absolute(dir.variable()).or_else(|| home.as_ref().map(|h| h.join(dir.below_home())))
        };
        Self {
            config: pick(UserDir::Config),
            cache: pick(UserDir::Cache),
            data: pick(UserDir::Data),
            state: pick(UserDir::State),
            home,
        }
    }

    /// The folder, when it can be found.
    pub fn get(&self, dir: UserDir) -> Option<&Path> {
        match dir {
            UserDir::Home => self.home.as_deref(),
            UserDir::Config => self.config.as_deref(),
            UserDir::Cache => self.cache.as_deref(),
            UserDir::Data => self.data.as_deref(),
            UserDir::State => self.state.as_deref(),
        }
    }

    /// The folder, or an error that says which variable to set.
    pub fn require(&self, dir: UserDir) -> Result<&Path, MissingUserDir> {
        self.get(dir).ok_or(MissingUserDir(dir))
    }

    /// `$HOME`, when absolute.
    pub fn home(&self) -> Option<&Path> {
        self.get(UserDir::Home)
    }

    /// The config folder (`$XDG_CONFIG_HOME`, else `~/.config`).
    pub fn config(&self) -> Option<&Path> {
        self.get(UserDir::Config)
    }

    /// The cache folder (`$XDG_CACHE_HOME`, else `~/.cache`).
    pub fn cache(&self) -> Option<&Path> {
        self.get(UserDir::Cache)
    }

    /// The data folder (`$XDG_DATA_HOME`, else `~/.local/share`).
    pub fn data(&self) -> Option<&Path> {
        self.get(UserDir::Data)
    }

    /// The state folder (`$XDG_STATE_HOME`, else `~/.local/state`).
    pub fn state(&self) -> Option<&Path> {
        self.get(UserDir::State)
    }

    /// `path` with a leading `~` (alone or `~/…`) replaced by the home folder; other paths,
    /// and every path when there is no home folder, unchanged.
    pub fn expand_tilde(&self, path: &Path) -> PathBuf {
        match (path.strip_prefix("~"), self.home()) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn dirs(vars: &[(&str, &str)]) -> UserDirs {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        UserDirs::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn empty_or_relative_xdg_values_mean_the_default() {
        for bad in ["", "relative", "./x", "toolgate"] {
            let d = dirs(&[
                ("HOME", "/home/u"),
                ("XDG_CONFIG_HOME", bad),
                ("XDG_CACHE_HOME", bad),
                ("XDG_DATA_HOME", bad),
                ("XDG_STATE_HOME", bad),
            ]);
            assert_eq!(d.config(), Some(Path::new("/home/u/.config")), "{bad:?}");
            assert_eq!(d.cache(), Some(Path::new("/home/u/.cache")));
            assert_eq!(d.data(), Some(Path::new("/home/u/.local/share")));
            assert_eq!(d.state(), Some(Path::new("/home/u/.local/state")));
        }
    }

    #[test]
    fn absolute_xdg_values_win() {
        let d = dirs(&[
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/c"),
            ("XDG_CACHE_HOME", "/k"),
            ("XDG_DATA_HOME", "/d"),
            ("XDG_STATE_HOME", "/s"),
        ]);
        assert_eq!(d.config(), Some(Path::new("/c")));
        assert_eq!(d.cache(), Some(Path::new("/k")));
        assert_eq!(d.data(), Some(Path::new("/d")));
        assert_eq!(d.state(), Some(Path::new("/s")));
    }

    #[test]
    fn an_empty_or_relative_home_is_no_home() {
        for bad in [None, Some(""), Some("home"), Some("./u")] {
            let vars: Vec<(&str, &str)> = bad.map(|b| ("HOME", b)).into_iter().collect();
            let d = dirs(&vars);
            assert_eq!(d.home(), None, "{bad:?}");
            assert_eq!(d.config(), None);
            let err = d.require(UserDir::Config).unwrap_err().to_string();
            assert!(
                err.contains("XDG_CONFIG_HOME") && err.contains("HOME"),
                "{err}"
            );
            assert_eq!(d.expand_tilde(Path::new("~/x")), Path::new("~/x"));
        }
        // An absolute XDG value still counts without a home.
        let d = dirs(&[("HOME", ""), ("XDG_DATA_HOME", "/d")]);
        assert_eq!(d.require(UserDir::Data).unwrap(), Path::new("/d"));
    }

    #[test]
    fn a_tilde_means_the_home_folder() {
        let d = dirs(&[("HOME", "/home/u")]);
        assert_eq!(
            d.expand_tilde(Path::new("~/.cargo")),
            Path::new("/home/u/.cargo")
        );
        assert_eq!(d.expand_tilde(Path::new("~")), Path::new("/home/u"));
        assert_eq!(d.expand_tilde(Path::new("/opt/x")), Path::new("/opt/x"));
        assert_eq!(d.expand_tilde(Path::new("~other/x")), Path::new("~other/x"));
    }
}
