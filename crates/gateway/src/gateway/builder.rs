//! How a [`Gateway`] is put together: the servers, their limits and the registry they mount
//! into are required; the catalog cache, the token store, a login handler, the browser
//! logins of `serve --http` and the prompt names toolgate keeps are optional, and all are
//! given before the gateway exists, so none can be set too late.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use toolgate_core::{Registry, RegistryError};
use toolgate_oauth::{TokenStore, WebLogins};

use super::resource_tools::{self, LIST_RESOURCES, READ_RESOURCE};
use super::{Gateway, Inner, UPDATES_BUFFER, log_if_untrusted, register, taken_tools};
use crate::auth::LoginHandler;
use crate::catalog::CatalogCache;
use crate::config::CredentialStoreMode;
use crate::import::Discovered;
use crate::limits::GatewayLimits;
use crate::mount::{Host, Mount};
use crate::naming::Reserved;

/// A [`Gateway`] being configured, from [`Gateway::builder`].
#[must_use = "a builder does nothing until `build`"]
pub struct GatewayBuilder<'r> {
    discovered: Discovered,
    limits: GatewayLimits,
    registry: &'r Arc<Registry>,
    catalog: Option<CatalogCache>,
    tokens: Option<TokenStore>,
    token_mode: CredentialStoreMode,
    login: Option<Arc<dyn LoginHandler>>,
    web_logins: Option<Arc<WebLogins>>,
    prompts: Vec<String>,
}

impl std::fmt::Debug for GatewayBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayBuilder")
            .field("servers", &self.discovered.servers.len())
            .finish_non_exhaustive()
    }
}

impl<'r> GatewayBuilder<'r> {
    pub(super) fn new(
        discovered: Discovered,
        limits: GatewayLimits,
        registry: &'r Arc<Registry>,
    ) -> Self {
        Self {
            discovered,
            limits,
            registry,
            catalog: None,
            tokens: None,
            token_mode: CredentialStoreMode::Auto,
            login: None,
            web_logins: None,
            prompts: Vec::new(),
        }
    }

    /// Uses `cache` for every server: tools it holds for a server's exact launch config are
    /// listed at once, before the server starts, so a client's first `tools/list` is
    /// complete; each server's own list replaces them when it answers (announced with
    /// `list_changed` only if it differs) and is saved back. How many servers it answered:
    /// [`Gateway::cached_servers`].
    pub fn catalog(mut self, cache: CatalogCache) -> Self {
        self.catalog = Some(cache);
        self
    }

    /// Keeps and reads OAuth tokens in `store`, instead of the standard store.
    pub fn token_store(mut self, store: TokenStore) -> Self {
        self.tokens = Some(store);
        self
    }

    /// Opens the standard token store in `mode` (`[mcp] oauth_credentials_store`) when a
    /// server first needs it, unless [`GatewayBuilder::token_store`] gave one. Default
    /// `auto`.
    pub fn token_store_mode(mut self, mode: CredentialStoreMode) -> Self {
        self.token_mode = mode;
        self
    }

    /// Lets servers that need a login ask `handler` to log a human in, instead of waiting
    /// for `toolgate mcp login` (for terminal commands and test harnesses; `serve` has
    /// none).
    pub fn login_handler(mut self, handler: Arc<dyn LoginHandler>) -> Self {
        self.login = Some(handler);
        self
    }

    /// Where logins per caller (`per_user` servers) meet their browser: the table
    /// `serve --http` serves `/oauth/start` and `/oauth/callback` from. Without it such a
    /// server's callers are told a login needs `serve --http`.
    pub fn web_logins(mut self, logins: Arc<WebLogins>) -> Self {
        self.web_logins = Some(logins);
        self
    }

    /// Reserves `names` for prompts toolgate offers itself (the skills a user may invoke): a
    /// `prefix = "never"` server with a prompt of one of these names is not mounted.
    pub fn reserve_prompts(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.prompts.extend(names);
        self
    }

    /// Registers one provider per discovered server (named `mcp:<server>`) in the global
    /// layer of the registry. Nothing starts yet: see [`Gateway::start`]. The tool names
    /// the registry already has (built-ins, `skill`, `search_tool`) are taken: a
    /// `prefix = "never"` server that offers one is not mounted.
    pub fn build(self) -> Result<Gateway, RegistryError> {
        let Self {
            discovered: Discovered { servers, problems },
            limits,
            registry,
            catalog,
            tokens,
            token_mode,
            login,
            web_logins,
            prompts,
        } = self;
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| Inner {
            mounts: Mutex::new(
                servers
                    .into_iter()
                    .map(|spec| Arc::new(Mount::new(spec, weak.clone() as Weak<dyn Host>)))
                    .collect(),
            ),
            started: AtomicBool::new(false),
            registry: Arc::downgrade(registry),
            limits,
            naming: Mutex::new(()),
            reserved: Mutex::new(Reserved {
                // `list_resources` and `read_resource` are toolgate's own, offered or not.
                tools: taken_tools(registry)
                    .into_iter()
                    .chain([LIST_RESOURCES.to_owned(), READ_RESOURCE.to_owned()])
                    .collect(),
                prompts,
            }),
            catalog,
            prompt_changes: tokio::sync::watch::channel(0).0,
            resource_changes: tokio::sync::watch::channel(0).0,
            updates: tokio::sync::broadcast::channel(UPDATES_BUFFER).0,
            tokens: Mutex::new(tokens),
            token_mode,
            login,
            web_logins,
            resource_tools: AtomicBool::new(false),
            budget: Mutex::new(None),
            save_blob: Mutex::new(None),
        });
        let mounts = inner.mounts();
        for mount in mounts.iter() {
            register(registry, mount)?;
        }
        // A read may take as long as the slowest server allows its calls.
        let slowest = mounts
            .iter()
            .map(|m| m.spec.tool_timeout)
            .max()
            .unwrap_or_default();
        let resource_tools = resource_tools::ResourceTools::new(Arc::downgrade(&inner), slowest);
        registry.register(None, Arc::new(resource_tools), 0)?;
        let loaded = match &inner.catalog {
            Some(cache) => mounts.iter().filter(|m| m.load_catalog(cache)).count(),
            None => 0,
        };
        inner
            .resource_tools
            .store(inner.offers_resources(), Ordering::Release);
        // Cached tools are named (a reserved prompt name may unmount a server) and shown.
        if inner.publish() || loaded > 0 {
            inner.invalidate();
        }
        for problem in &problems {
            tracing::warn!(%problem, "MCP server config skipped");
        }
        for mount in mounts.iter() {
            log_if_untrusted(mount);
        }
        Ok(Gateway {
            inner,
            problems: Mutex::new(problems),
        })
    }
}
