//! The persistent catalog cache: each mounted server's last tool list, kept in the user's
//! cache folder (`$XDG_CACHE_HOME/toolgate/catalog`, else `~/.cache/toolgate/catalog`) and
//! keyed by how the server is launched, so the first `tools/list` of a new session is
//! complete at once instead of waiting for every server to start.
//!
//! An entry is used only for the exact launch config it was written for (command, args,
//! env, cwd or url, headers, token variable, tool filters): changing any of them is a cache
//! miss. The file holds the key itself, so a hash collision can never serve another
//! server's tools. Writes are atomic (temporary file + rename); an unreadable or malformed
//! entry is a miss, never an error.
//!
//! The Redis cache of replicas is in builds with the `redis` feature (part of `team`).

#[cfg_attr(feature = "redis", path = "catalog/shared.rs")]
#[cfg_attr(not(feature = "redis"), path = "catalog/shared_off.rs")]
mod shared;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::{ServerSpec, Transport};

/// Bumped when the file format or what the key covers changes.
const FORMAT: u32 = 1;

/// Where the catalog entries live: files in a folder, or keys in a Redis server shared by
/// replicas (`[mcp] shared_store`).
#[derive(Debug, Clone)]
pub struct CatalogCache {
    dir: PathBuf,
    redis: Option<shared::Client>,
    /// Set when the Redis server did not answer: the other servers' loads at start-up do
    /// not wait for it again (one warning, not one delay per server); a save that succeeds
    /// clears it.
    redis_down: Arc<AtomicBool>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    format: u32,
    server: String,
    key: String,
    tools: Vec<Tool>,
    /// The server's `instructions`, if it gave any (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    /// Whether it offered resources or templates (absent in older files: no).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    resources: bool,
    /// Its prompts (absent in older files: none known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    prompts: Vec<rmcp::model::Prompt>,
    /// Its resources and templates, when not too many (absent in older files: not known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    resource_list: Vec<rmcp::model::Resource>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    templates: Vec<rmcp::model::ResourceTemplate>,
}

/// Most resources and templates kept for one server: a server listing more (a file server
/// over a large tree) is remembered as offering resources, and lists them when it answers.
pub const MAX_CACHED_RESOURCES: usize = 2_000;

/// What the cache holds for one server.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedCatalog {
    /// Its tools, after `enabled_tools` / `disabled_tools`.
    pub tools: Vec<Tool>,
    /// Its `instructions`, if it gave any.
    pub instructions: Option<String>,
    /// Whether it offered resources or resource templates, so `list_resources` and
    /// `read_resource` are in a session's first tool list.
    pub resources: bool,
    /// Its prompts, so a client that reads the prompt list once at its start (Claude Code's
    /// slash commands) finds them before the server answers.
    pub prompts: Vec<rmcp::model::Prompt>,
    /// Its resources and resource templates, so a session's first `resources/list` has
    /// them; empty when it offered more than [`MAX_CACHED_RESOURCES`] (or none).
    pub resource_list: Vec<rmcp::model::Resource>,
    /// Its resource templates (see `resource_list`).
    pub templates: Vec<rmcp::model::ResourceTemplate>,
}

impl CatalogCache {
    /// A cache in `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            redis: None,
            redis_down: Arc::default(),
        }
    }

    /// A cache in the Redis server at `url` (`redis://HOST[:PORT][/DB]`, `rediss://` for
    /// TLS), shared by every toolgate using it. `Err` says what is wrong with the URL; an
    /// unreachable server is found (and logged) at the first read or write.
    pub fn redis(url: &str) -> Result<Self, toolgate_oauth::SharedStoreUrlError> {
        let client = shared::open(url)?;
        Ok(Self {
            dir: PathBuf::new(),
            redis: Some(client),
            redis_down: Arc::default(),
        })
    }

    /// The user's cache folder for catalogs: `$XDG_CACHE_HOME/toolgate/catalog`, else
    /// `$HOME/.cache/toolgate/catalog`; `None` when neither is an absolute path.
    pub fn user_dir() -> Option<PathBuf> {
        toolgate_core::UserDirs::from_env()
            .cache()
            .map(|dir| dir.join("toolgate").join("catalog"))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tools (and instructions) last listed by the server launched as `spec`, if cached.
    pub fn load(&self, spec: &ServerSpec) -> Option<CachedCatalog> {
        let key = launch_key(spec)?;
        let text = match &self.redis {
            Some(_) if self.redis_down.load(Ordering::Relaxed) => return None,
            Some(client) => shared::get(client, &redis_key(&key))
                .map_err(|e| {
                    self.redis_down.store(true, Ordering::Relaxed);
                    tracing::warn!(
                        "could not read the shared tool catalog ({e}); mounted servers' tools are listed when they answer — check `[mcp] shared_store`"
                    );
                })
                .ok()??,
            None => fs_err::read_to_string(self.path(&key)).ok()?,
        };
        let entry: Entry = serde_json::from_str(&text).ok()?;
        (entry.format == FORMAT && entry.key == key).then_some(CachedCatalog {
            tools: entry.tools,
            instructions: entry.instructions,
            resources: entry.resources,
            prompts: entry.prompts,
            resource_list: entry.resource_list,
            templates: entry.templates,
        })
    }

    /// Records `catalog` as what the server launched as `spec` offers. Failures are
    /// logged: the cache only speeds up the next start.
    pub fn store(&self, spec: &ServerSpec, catalog: &CachedCatalog) {
        let Some(key) = launch_key(spec) else { return };
        let listed = catalog.resource_list.len() + catalog.templates.len();
        let keep = listed <= MAX_CACHED_RESOURCES;
        let entry = Entry {
            format: FORMAT,
            server: spec.name.clone(),
            key: key.clone(),
            tools: catalog.tools.clone(),
            instructions: catalog.instructions.clone(),
            resources: catalog.resources,
            prompts: catalog.prompts.clone(),
            resource_list: if keep {
                catalog.resource_list.clone()
            } else {
                Vec::new()
            },
            templates: if keep {
                catalog.templates.clone()
            } else {
                Vec::new()
            },
        };
        if let Some(client) = &self.redis {
            let bytes = match serde_json::to_vec(&entry) {
                Ok(bytes) => bytes,
                Err(e) => {
                    return tracing::warn!(server = %spec.name, %e, "could not encode the tool catalog");
                }
            };
            let down = Arc::clone(&self.redis_down);
            return shared::save(client, redis_key(&key), bytes, spec.name.clone(), down);
        }
        let path = self.path(&key);
        let write = || -> std::io::Result<()> {
            fs_err::create_dir_all(&self.dir)?;
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            let bytes = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
            fs_err::write(&tmp, bytes)?;
            fs_err::rename(&tmp, &path)
        };
        if let Err(e) = write() {
            tracing::warn!(server = %spec.name, %e, "could not save the tool catalog cache");
        }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir
            .join(format!("{:016x}.json", fnv1a(key.as_bytes())))
    }
}

/// The Redis key of the entry for launch key `key`.
fn redis_key(key: &str) -> String {
    format!("toolgate:catalog:{FORMAT}:{:016x}", fnv1a(key.as_bytes()))
}

/// Everything that decides which tools a server lists, as one canonical string; `None` for
/// a server that cannot be started.
fn launch_key(spec: &ServerSpec) -> Option<String> {
    let transport = match &spec.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => json!({"command": command, "args": args, "env": env, "cwd": cwd}),
        Transport::Http {
            url,
            headers,
            bearer_token_env,
        } => json!({"url": url, "headers": headers, "bearer_token_env": bearer_token_env}),
        Transport::Invalid(_) => return None,
    };
    let key: Value = json!({
        "name": spec.name,
        "transport": transport,
        "enabled_tools": spec.enabled_tools,
        "disabled_tools": spec.disabled_tools,
    });
    Some(key.to_string())
}

/// 64-bit FNV-1a: a stable file name for a key (the file holds the key itself).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;

    fn spec(command: &str) -> ServerSpec {
        ServerSpec {
            name: "probe".to_owned(),
            transport: Transport::Stdio {
                command: command.to_owned(),
                args: vec!["serve".to_owned()],
                env: BTreeMap::new(),
                cwd: PathBuf::from("/p"),
            },
            enabled: true,
            startup_timeout: Duration::from_secs(15),
            tool_timeout: Duration::from_secs(60),
            enabled_tools: None,
            disabled_tools: Vec::new(),
            log_like: false,
            oauth: Default::default(),
            prefix: Default::default(),
            opening: crate::config::Opening::Initialize,
            source: "test".to_owned(),
            trust: crate::verdict::Trust::User,
            launch: None,
        }
    }

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    }

    #[test]
    fn a_stored_catalog_comes_back_for_the_same_launch_config_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CatalogCache::new(dir.path().join("catalog"));
        assert!(cache.load(&spec("srv")).is_none(), "empty cache: a miss");
        let stored = CachedCatalog {
            tools: vec![tool("a"), tool("b")],
            instructions: Some("Use a before b.".to_owned()),
            resources: true,
            prompts: vec![rmcp::model::Prompt::new("plan", Some("A plan"), None)],
            resource_list: vec![rmcp::model::Resource::new("notes://readme", "readme")],
            templates: Vec::new(),
        };
        cache.store(&spec("srv"), &stored);
        let cached = cache.load(&spec("srv")).unwrap();
        assert_eq!(cached, stored);
        assert!(
            cache.load(&spec("other")).is_none(),
            "another command: a miss"
        );
        let mut filtered = spec("srv");
        filtered.disabled_tools = vec!["a".to_owned()];
        assert!(cache.load(&filtered).is_none(), "other filters: a miss");
    }

    #[cfg(feature = "redis")]
    #[test]
    fn an_unreachable_shared_store_is_a_miss_and_is_not_waited_for_again() {
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cache = CatalogCache::redis(&format!("redis://127.0.0.1:{port}/0")).unwrap();
        assert!(cache.load(&spec("one")).is_none());
        assert!(
            cache.redis_down.load(Ordering::Relaxed),
            "the failure is remembered"
        );
        assert!(cache.load(&spec("two")).is_none());
        assert!(CatalogCache::redis("http://not-redis").is_err());
    }

    #[test]
    fn a_corrupt_entry_is_a_miss_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CatalogCache::new(dir.path().to_path_buf());
        let catalog = CachedCatalog {
            tools: vec![tool("a")],
            instructions: None,
            resources: false,
            prompts: Vec::new(),
            resource_list: Vec::new(),
            templates: Vec::new(),
        };
        cache.store(&spec("srv"), &catalog);
        let file = fs_err::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        fs_err::write(&file, "{not json").unwrap();
        assert!(cache.load(&spec("srv")).is_none());
    }
}
