//! A mounted server that needs a human to log in: `needs login` until tokens for it appear
//! in the store (from `toolgate mcp login NAME` in another process, or a login handler in
//! this one), then it starts by itself; `serve` never waits for the login.

use std::sync::Arc;
use std::time::Duration;

use super::{Mount, Phase};
use toolgate_oauth::TokenStore;

use crate::config::Transport;
use crate::failure::NeedsLogin;

/// How often a `needs login` server checks the token store for a login.
const LOGIN_POLL: Duration = Duration::from_secs(2);
/// Most logins one call may run through a login handler (a server that keeps asking for
/// more scopes must not loop forever).
pub(crate) const MAX_LOGINS_PER_CALL: u32 = 3;

impl Mount {
    /// The gateway's token store (none outside a gateway).
    pub(crate) fn token_store(&self) -> Option<TokenStore> {
        self.host.upgrade().and_then(|h| h.token_store())
    }

    /// The OAuth client for a remote server, unless its config authenticates it already
    /// (`bearer_token_env` or an `Authorization` header).
    pub(super) async fn oauth_client(
        &self,
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
        bearer: bool,
    ) -> Result<Option<toolgate_oauth::Authorized<reqwest::Client>>, super::Failure> {
        let fixed = bearer
            || headers
                .keys()
                .any(|h| h.eq_ignore_ascii_case("authorization"));
        match self.token_store() {
            Some(store) if !fixed => crate::auth::authorized_client(&store, &self.spec, url).await,
            _ => Ok(None),
        }
    }

    fn url(&self) -> Option<&str> {
        match &self.spec.transport {
            Transport::Http { url, .. } => Some(url),
            _ => None,
        }
    }

    /// Marks the server `needs login` and watches the store for a login.
    pub(crate) fn needs_login(self: &Arc<Self>, needs: NeedsLogin) {
        tracing::warn!(server = %self.spec.name, reason = %needs.reason, "MCP server needs a login: run `toolgate mcp login {}`", self.spec.name);
        let stamp = match (self.token_store(), self.url()) {
            (Some(store), Some(url)) => store.stamp(url),
            _ => None,
        };
        self.state().login_stamp = stamp;
        self.set_phase(Phase::NeedsLogin(needs));
        let spawn = !std::mem::replace(&mut self.state().login_watch, true);
        if spawn {
            let mount = Arc::clone(self);
            tokio::spawn(async move { mount.watch_for_login().await });
        }
    }

    /// Whether tokens changed since the server was found to need a login.
    pub(crate) fn logged_in_since(&self) -> bool {
        let (Some(store), Some(url)) = (self.token_store(), self.url()) else {
            return false;
        };
        let now = store.stamp(url);
        now.is_some() && now != self.state().login_stamp
    }

    /// Leaves `needs login` for `Idle`, so the next start connects with the new tokens.
    pub(crate) fn login_arrived(&self) -> bool {
        let mut st = self.state();
        if !matches!(st.phase, Phase::NeedsLogin(_)) {
            return false;
        }
        st.phase = Phase::Idle;
        st.failures = 0;
        drop(st);
        self.changed.send_modify(|g| *g += 1);
        true
    }

    /// Polls the token store while the server needs a login (a login is made by another
    /// process, which cannot tell this one); starts the server when tokens appear.
    async fn watch_for_login(self: Arc<Self>) {
        loop {
            tokio::select! {
                () = self.shutdown.cancelled() => break,
                () = tokio::time::sleep(LOGIN_POLL) => {}
            }
            {
                let mut st = self.state();
                if !matches!(st.phase, Phase::NeedsLogin(_)) {
                    st.login_watch = false;
                    return;
                }
            }
            let mount = Arc::clone(&self);
            let arrived = tokio::task::spawn_blocking(move || mount.logged_in_since())
                .await
                .unwrap_or(false);
            if arrived && self.login_arrived() {
                tracing::info!(server = %self.spec.name, "login found; starting the MCP server");
                self.state().login_watch = false;
                self.start().await;
                return;
            }
        }
        self.state().login_watch = false;
    }

    /// Runs the gateway's login handler, if it has one; whether a login happened.
    pub(crate) async fn interactive_login(
        &self,
        challenge: Option<&str>,
    ) -> Result<bool, toolgate_oauth::LoginError> {
        let Some(handler) = self.host.upgrade().and_then(|h| h.login_handler()) else {
            return Ok(false);
        };
        handler.login(&self.spec, challenge).await?;
        Ok(true)
    }
}
