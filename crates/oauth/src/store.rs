//! Where OAuth tokens live between runs: the OS credential store through `keyring` (the
//! Secret Service on Linux, the Keychain on macOS, the Credential Manager on Windows) where
//! one answers, else one 0600 file per server under the user config folder
//! (`~/.config/toolgate/mcp-oauth/`). Never in a project folder.
//!
//! One record per server URL holds an entry per authorization server (issuer): the tokens
//! of the issuer that minted them, so a server that moves to another authorization server
//! never gets the old one's tokens. Read-modify-write of a record is serialised across
//! processes by a lock file beside the records; a refresh holds a second lock across its
//! load, token request and save, so two processes never spend one refresh token twice.
//!
//! Replicas share one store in Redis (`[mcp] shared_store`): records are keys
//! (`toolgate:oauth:…`) and the locks are Redis locks (`SET NX PX`, released by their
//! holder only), so the guarantee holds across machines.
//!
//! The OS credential store is in builds with the `keyring` feature, the Redis store in
//! builds with `redis` (part of `team`); without them `oauth_credentials_store = "keyring"`
//! and `shared_store` are refused with how to get a build that has them, and `auto` keeps
//! tokens in the file.

#[cfg_attr(feature = "keyring", path = "store/os_keyring.rs")]
#[cfg_attr(not(feature = "keyring"), path = "store/os_keyring_off.rs")]
mod os_keyring;
#[cfg_attr(feature = "redis", path = "store/shared.rs")]
#[cfg_attr(not(feature = "redis"), path = "store/shared_off.rs")]
mod shared;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use oauth2::TokenResponse;
use rmcp::transport::auth::StoredCredentials;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::CredentialStoreMode;

/// Bumped when the record format changes.
const FORMAT: u32 = 1;

/// A token store failure, saying what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No user config folder to keep the file in.
    #[error(
        "no user config folder for OAuth tokens: set HOME or XDG_CONFIG_HOME (or use the OS credential store)"
    )]
    NoConfigFolder,
    /// The OS credential store failed.
    #[error(
        "the OS credential store failed: {0}; set `[mcp] oauth_credentials_store = \"file\"` to keep tokens in a 0600 file instead"
    )]
    Keyring(#[source] os_keyring::Error),
    /// The file could not be read or written.
    #[error("OAuth token file: {0}")]
    Io(#[from] std::io::Error),
    /// `[mcp] shared_store` is not a Redis URL.
    #[error(
        "the shared OAuth token store (Redis) failed: {0}; check that it runs and `[mcp] shared_store` names it"
    )]
    RedisUrl(#[source] SharedStoreUrlError),
    /// A command to the shared Redis store failed.
    #[error(
        "the shared OAuth token store (Redis) failed: {addr}: {source}; check that it runs and `[mcp] shared_store` names it"
    )]
    Redis {
        /// The Redis server's address.
        addr: String,
        /// Why the command failed.
        #[source]
        source: shared::Error,
    },
    /// A lock of the shared Redis store stayed taken past its lifetime.
    #[error(
        "the shared OAuth token store (Redis) failed: the shared OAuth lock `{key}` stayed taken for {secs} s; another toolgate may be stuck refreshing; check that it runs and `[mcp] shared_store` names it"
    )]
    RedisLockTaken {
        /// The lock's key.
        key: String,
        /// How long it was waited for, in seconds.
        secs: u64,
    },
    /// The record is not valid JSON.
    #[error(
        "OAuth token record for {url} is damaged ({source}); run `toolgate mcp logout` for it and log in again"
    )]
    Damaged {
        /// The server URL.
        url: String,
        /// The parse (or encoding) error.
        #[source]
        source: serde_json::Error,
    },
}

/// A `[mcp] shared_store` toolgate cannot use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SharedStoreUrlError {
    /// Not a Redis URL.
    #[cfg(feature = "redis")]
    #[error(
        "`[mcp] shared_store = \"{url}\"` is not a Redis URL ({source}); use redis://HOST:PORT/DB"
    )]
    NotRedis {
        /// The URL as configured.
        url: String,
        /// Why Redis refuses it.
        #[source]
        source: redis::RedisError,
    },
    /// This build has no shared store (the `redis` feature, part of `team`).
    #[cfg(not(feature = "redis"))]
    #[error(
        "`[mcp] shared_store = \"{url}\"`: this build of toolgate has no shared store; install one that has (`cargo install toolgate --features team`) or remove the setting"
    )]
    NotBuilt {
        /// The URL as configured.
        url: String,
    },
}

/// What one authorization server issued for one MCP server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IssuerEntry {
    /// rmcp's credentials (client id, token response, granted scopes, issuer).
    pub(crate) credentials: StoredCredentials,
    /// The client secret a dynamic registration issued, needed for refreshes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    /// Who logged in, for `mcp list` (from the ID token or a JWT access token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) subject: Option<String>,
}

/// Everything kept for one MCP server URL.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Record {
    #[serde(default)]
    format: u32,
    #[serde(default)]
    pub(crate) url: String,
    /// Entries by issuer (`""` when the authorization server published none).
    #[serde(default)]
    pub(crate) issuers: BTreeMap<String, IssuerEntry>,
    /// The issuer of the last login or refresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) current: Option<String>,
    /// Scopes a server asked for with `insufficient_scope`, for the next login (step-up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) pending_scopes: Vec<String>,
    /// The scopes of the server's last `401` challenge to a real request, for the next login.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) challenge_scopes: Vec<String>,
}

impl Record {
    /// The entry of the last login or refresh.
    pub(crate) fn current_entry(&self) -> Option<&IssuerEntry> {
        let key = self.current.as_deref().unwrap_or_default();
        self.issuers
            .get(key)
            .or_else(|| self.issuers.values().next())
    }
}

/// A server's login state, for `toolgate mcp list`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthStatus {
    /// Tokens are stored.
    LoggedIn {
        /// Who, when the tokens say.
        subject: Option<String>,
        /// When the access token expires (seconds since the epoch), when known.
        expires_at: Option<u64>,
        /// Whether a refresh token is kept (an expired access token is renewed).
        refreshable: bool,
    },
    /// No tokens: `toolgate mcp login NAME`.
    NeedsLogin,
}

#[derive(Debug, Clone)]
enum Backend {
    Keyring(KeyringKind),
    File,
    Redis(shared::Client),
}

/// Which keyring: the platform's default store, or (Linux) the kernel keyutils, which
/// works without a desktop session but forgets everything at reboot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyringKind {
    Platform,
    #[cfg(all(target_os = "linux", feature = "keyring"))]
    #[allow(dead_code)] // used by the tests, which prove the keyring path without a desktop
    Keyutils,
}

/// Where OAuth tokens are kept; cheap to clone.
#[derive(Debug, Clone)]
pub struct TokenStore {
    /// The folder of the files (always used for the lock files).
    dir: PathBuf,
    backend: Backend,
}

impl TokenStore {
    /// The store for `mode` under the user config folder (`$XDG_CONFIG_HOME/toolgate/
    /// mcp-oauth`, else `~/.config/toolgate/mcp-oauth`). `Auto` probes the OS credential
    /// store once and falls back to the file when it does not answer.
    pub fn standard(mode: CredentialStoreMode) -> Result<Self, StoreError> {
        let dir = Self::default_dir().ok_or(StoreError::NoConfigFolder)?;
        Self::in_dir(dir, mode)
    }

    /// `~/.config/toolgate/mcp-oauth`.
    pub fn default_dir() -> Option<PathBuf> {
        toolgate_core::UserDirs::from_env()
            .config()
            .map(|c| c.join("toolgate").join("mcp-oauth"))
    }

    /// A store whose files (and lock files) live in `dir`.
    pub fn in_dir(dir: PathBuf, mode: CredentialStoreMode) -> Result<Self, StoreError> {
        let backend = match mode {
            CredentialStoreMode::File => Backend::File,
            CredentialStoreMode::Keyring => {
                os_keyring::probe(KeyringKind::Platform).map_err(StoreError::Keyring)?;
                Backend::Keyring(KeyringKind::Platform)
            }
            CredentialStoreMode::Auto => match os_keyring::probe(KeyringKind::Platform) {
                Ok(()) => Backend::Keyring(KeyringKind::Platform),
                Err(reason) => {
                    tracing::debug!(%reason, "no OS credential store; OAuth tokens go to a 0600 file");
                    Backend::File
                }
            },
        };
        Ok(Self { dir, backend })
    }

    /// A store in the Redis server at `url`, shared by every toolgate using it (replicas).
    /// `Err` says what is wrong with the URL; an unreachable server fails each use with a
    /// message naming it.
    pub fn redis(url: &str) -> Result<Self, StoreError> {
        let client = shared::open(url).map_err(StoreError::RedisUrl)?;
        Ok(Self {
            dir: PathBuf::new(),
            backend: Backend::Redis(client),
        })
    }

    #[cfg(all(test, target_os = "linux", feature = "keyring"))]
    pub(crate) fn with_keyring(dir: PathBuf, kind: KeyringKind) -> Self {
        Self {
            dir,
            backend: Backend::Keyring(kind),
        }
    }

    /// `"the OS credential store"` or the file folder, for messages.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Keyring(_) => "the OS credential store".to_owned(),
            Backend::File => format!("{} (0600 files)", self.dir.display()),
            Backend::Redis(client) => format!("the shared Redis store {}", shared::addr(client)),
        }
    }

    fn key(url: &str) -> String {
        let digest = Sha256::digest(url.as_bytes());
        digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
    }

    fn file(&self, url: &str) -> PathBuf {
        self.dir.join(format!("{}.json", Self::key(url)))
    }

    fn lock_path(&self, url: &str, what: &str) -> PathBuf {
        self.dir.join(format!(".{}.{what}.lock", Self::key(url)))
    }

    /// The record of `url`, empty when there is none.
    pub(crate) fn load(&self, url: &str) -> Result<Record, StoreError> {
        let text = match &self.backend {
            Backend::File => match fs_err::read_to_string(self.file(url)) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e.into()),
            },
            Backend::Keyring(kind) => os_keyring::get(*kind, url).map_err(StoreError::Keyring)?,
            Backend::Redis(client) => shared::get(client, &redis_key(url, "record"))?,
        };
        let Some(text) = text else {
            return Ok(Record {
                url: url.to_owned(),
                ..Record::default()
            });
        };
        serde_json::from_str(&text).map_err(|source| StoreError::Damaged {
            url: url.to_owned(),
            source,
        })
    }

    /// Changes the record of `url` under the record lock; an emptied record is deleted.
    pub(crate) fn update<T>(
        &self,
        url: &str,
        change: impl FnOnce(&mut Record) -> T,
    ) -> Result<T, StoreError> {
        let _lock = self.lock(url, "record")?;
        let mut record = self.load(url)?;
        let out = change(&mut record);
        record.format = FORMAT;
        record.url = url.to_owned();
        if record.issuers.is_empty()
            && record.pending_scopes.is_empty()
            && record.challenge_scopes.is_empty()
        {
            self.delete(url)?;
        } else {
            self.write(url, &record)?;
        }
        Ok(out)
    }

    fn write(&self, url: &str, record: &Record) -> Result<(), StoreError> {
        let text = serde_json::to_string(record).map_err(|source| StoreError::Damaged {
            url: url.to_owned(),
            source,
        })?;
        match &self.backend {
            Backend::File => write_private(&self.dir, &self.file(url), &text),
            Backend::Keyring(kind) => {
                os_keyring::set(*kind, url, &text).map_err(StoreError::Keyring)
            }
            Backend::Redis(client) => shared::set(client, &redis_key(url, "record"), &text),
        }
    }

    fn delete(&self, url: &str) -> Result<(), StoreError> {
        match &self.backend {
            Backend::File => match fs_err::remove_file(self.file(url)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
                _ => Ok(()),
            },
            Backend::Keyring(kind) => os_keyring::delete(*kind, url).map_err(StoreError::Keyring),
            Backend::Redis(client) => shared::delete(client, &redis_key(url, "record")),
        }
    }

    /// Forgets every token and registration kept for `url`; whether there were any.
    pub fn forget(&self, url: &str) -> Result<bool, StoreError> {
        self.update(url, |record| {
            let had = !record.issuers.is_empty();
            record.issuers.clear();
            record.pending_scopes.clear();
            record.challenge_scopes.clear();
            had
        })
    }

    /// Whether `url` has tokens, who they are for and when they expire.
    pub fn status(&self, url: &str) -> Result<AuthStatus, StoreError> {
        let record = self.load(url)?;
        Ok(match record.current_entry() {
            Some(entry) if entry.credentials.token_response.is_some() => {
                let token = entry.credentials.token_response.as_ref();
                let expires_at = token
                    .and_then(|t| t.expires_in())
                    .zip(entry.credentials.token_received_at)
                    .map(|(d, at)| at + d.as_secs());
                AuthStatus::LoggedIn {
                    subject: entry.subject.clone(),
                    expires_at,
                    refreshable: token.is_some_and(|t| t.refresh_token().is_some()),
                }
            }
            _ => AuthStatus::NeedsLogin,
        })
    }

    /// A stamp that changes whenever the record of `url` does (cheap: a file's length and
    /// time, or the record itself), to notice a login made by another process.
    pub fn stamp(&self, url: &str) -> Option<String> {
        match &self.backend {
            Backend::File => fs_err::metadata(self.file(url)).ok().map(|m| {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map(|d| d.as_nanos())
                    .unwrap_or_default();
                format!("{}:{modified}", m.len())
            }),
            Backend::Keyring(kind) => os_keyring::get(*kind, url).ok().flatten(),
            Backend::Redis(client) => shared::get(client, &redis_key(url, "record"))
                .ok()
                .flatten(),
        }
    }

    /// An exclusive lock on `url`'s `what` lock (a lock file, or a Redis lock for a shared
    /// store), released when dropped.
    pub(crate) fn lock(&self, url: &str, what: &str) -> Result<FileLock, StoreError> {
        if let Backend::Redis(client) = &self.backend {
            return shared::lock(client, redis_key(url, &format!("{what}.lock")));
        }
        ensure_private_dir(&self.dir)?;
        let path = self.lock_path(url, what);
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        rustix::fs::flock(file.file(), rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| std::io::Error::other(format!("cannot lock {}: {e}", path.display())))?;
        Ok(FileLock::File(file))
    }
}

/// A held lock: a locked file, or a Redis lock this process holds.
#[derive(Debug)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) enum FileLock {
    File(#[allow(dead_code)] fs_err::File),
    Redis {
        client: shared::Client,
        key: String,
        token: String,
    },
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if let Self::Redis { client, key, token } = self {
            shared::release(client, key, token);
        }
    }
}

/// The Redis key of `url`'s `what` (`record`, `refresh.lock`, …).
fn redis_key(url: &str, what: &str) -> String {
    format!("toolgate:oauth:{}:{what}", TokenStore::key(url))
}

/// Runs a blocking store call on a thread of its own: the Secret Service backend drives
/// D-Bus with its own executor, and a Redis call blocks; neither may block (or nest in) a
/// runtime thread.
#[cfg(any(feature = "keyring", feature = "redis"))]
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn ensure_private_dir(dir: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::DirBuilderExt;
    if !dir.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    }
    Ok(())
}

/// Writes `text` to `path` atomically, readable by the owner only from the first byte.
fn write_private(dir: &Path, path: &Path, text: &str) -> Result<(), StoreError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    ensure_private_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".oauth-")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| {
        std::io::Error::new(e.error.kind(), format!("{}: {}", path.display(), e.error))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests;
