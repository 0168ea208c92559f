//! What a mount needs from the gateway that holds it, as a narrow trait: the gateway owns
//! its mounts and implements [`Host`]; a mount holds it weakly and never sees the gateway's
//! insides. Outside a gateway (the host gone) every answer is "none" and news goes nowhere.

use std::sync::Arc;

use toolgate_oauth::{TokenStore, WebLogins};

use crate::auth::LoginHandler;
use crate::catalog::CatalogCache;
use crate::limits::GatewayLimits;

/// The gateway as one of its mounts sees it.
pub(crate) trait Host: Send + Sync {
    /// The limits on what one server may bring in.
    fn limits(&self) -> GatewayLimits;
    /// Where each server's last tool list is kept between runs, when enabled.
    fn catalog(&self) -> Option<CatalogCache>;
    /// The OAuth token store, opened on first use (none when it cannot be opened).
    fn token_store(&self) -> Option<TokenStore>;
    /// Who logs a human in when a server needs it (none in `serve`).
    fn login_handler(&self) -> Option<Arc<dyn LoginHandler>>;
    /// Where logins per caller (`per_user`) meet their browser (only under
    /// `serve --http`).
    fn web_logins(&self) -> Option<Arc<WebLogins>>;
    /// A server's tool list changed: every tool is named again and the change announced.
    fn tools_changed(&self);
    /// A server answered with the tool list already shown (from the catalog cache or its
    /// last start): names are checked again (a `prefix = "never"` clash fails it only on
    /// its own answer), and a change announced only if there is one.
    fn answered(&self);
    /// Which tools can be listed changed (a server became ready, failed or stopped).
    fn availability_changed(&self);
    /// A server's prompts changed.
    fn prompts_changed(&self);
    /// A server's resources or resource templates changed.
    fn resources_changed(&self);
    /// Where a server's `notifications/resources/updated` go (the URIs).
    fn resource_updates(&self) -> tokio::sync::broadcast::Sender<String>;
}
