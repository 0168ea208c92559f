//! A remote server each caller uses as themselves (`[mcp_servers.NAME.oauth] per_user =
//! true`, team mode): a call from a session with an identity (`[server.auth]`) goes over a
//! connection of that caller's own, made with the tokens of their own login, so each user
//! reaches (say) GitHub as themselves. Their tokens are a record of their own in the token
//! store (the server URL plus the caller's issuer and subject), refreshed like any other.
//!
//! A caller with no login yet (or whose login the server refuses) gets a link: the
//! authorization URL of a login started for them, whose redirect URI is toolgate's own
//! `/oauth/callback` ([`toolgate_core::web_login`]); their browser comes back there, the
//! code is exchanged and their tokens kept, and the next call works. One login waits per
//! caller at a time (the same link until it ends), for [`LOGIN_WAIT`].
//!
//! The server's tool list, prompts and resources, and calls from sessions without an
//! identity (stdio, the static token), use the shared connection and toolgate's own login
//! (`toolgate mcp login NAME`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolgate_core::Identity;
use toolgate_core::web_login;

use super::{Live, Mount, lock};
use crate::auth::LoginOptions;
use crate::config::Transport;
use crate::connect::http_transport_with;
use crate::failure::{Failure, NeedsLogin};
use crate::handler::Handler;

/// How long a login started for a caller waits for their browser.
pub(crate) const LOGIN_WAIT: Duration = Duration::from_secs(600);

/// The connections and logins of a per-user server's callers.
#[derive(Default)]
pub(crate) struct PerUser {
    /// Open connections, by caller.
    open: HashMap<String, Arc<Live>>,
    /// Logins waiting for a caller's browser: the link and when it was made.
    logins: HashMap<String, (String, Instant)>,
}

/// The caller's key among the records and connections: issuer and subject.
fn caller_key(who: &Identity) -> String {
    format!("{}\n{}", who.issuer.as_deref().unwrap_or(""), who.subject)
}

/// The token store record of `caller` for the server at `url`.
fn record_key(url: &str, caller: &str) -> String {
    format!("{url}#caller={caller}")
}

impl Mount {
    /// The connection a call of `who` uses: their own, dialed with their tokens; `Err` is
    /// what the model reads (with the login link when they have none that works).
    pub(super) async fn caller_live(self: &Arc<Self>, who: &Identity) -> Result<Arc<Live>, String> {
        let name = &self.spec.name;
        let key = caller_key(who);
        if let Some(live) = self.open_for(&key) {
            return Ok(live);
        }
        let _dialing = self.dialing.lock().await;
        if let Some(live) = self.open_for(&key) {
            return Ok(live);
        }
        let Transport::Http { url, headers, .. } = &self.spec.transport else {
            return Err(format!(
                "MCP server `{name}` has `per_user = true` but is not a remote (url) server; only servers reached over HTTP take a login per user"
            ));
        };
        let Some(store) = self.token_store() else {
            return Err(format!("MCP server `{name}`: no OAuth token store"));
        };
        let record = record_key(url, &key);
        let client = match crate::auth::authorized_client(&store, &self.spec, url, &record).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(self.login_as(who, &record, None).await),
            Err(Failure::NeedsLogin(needs)) => {
                return Err(self.login_as(who, &record, needs.challenge).await);
            }
            Err(Failure::Failed(reason)) => {
                return Err(format!("MCP server `{name}` cannot be reached: {reason}"));
            }
        };
        let limits = self.limits();
        let updates = self.host.upgrade().map(|h| h.resource_updates());
        let handler = Handler::new(name, &limits, updates);
        let transport = http_transport_with(client, url, headers, None)
            .map_err(|e| format!("MCP server `{name}`: {e}"))?;
        let stage = std::sync::Mutex::new("initialize");
        let handshake = self.handshake(&handler, transport, &stage, &limits, self.lifecycle());
        let service = match tokio::time::timeout(self.spec.startup_timeout, handshake).await {
            Ok(Ok((service, _, _))) => service,
            Ok(Err(Failure::NeedsLogin(NeedsLogin { challenge, .. }))) => {
                return Err(self.login_as(who, &record, challenge).await);
            }
            Ok(Err(Failure::Failed(reason))) => {
                return Err(format!(
                    "MCP server `{name}` cannot be reached as you: {reason} (at {url})"
                ));
            }
            Err(_) => {
                return Err(format!(
                    "MCP server `{name}` did not finish `{}` within {} (startup_timeout_sec) at {url}",
                    lock(&stage),
                    super::secs(self.spec.startup_timeout)
                ));
            }
        };
        let live = Live::open(&handler, service.peer());
        lock(&self.per_user)
            .open
            .insert(key.clone(), Arc::clone(&live));
        let mount = Arc::clone(self);
        let watched = Arc::clone(&live);
        tokio::spawn(async move {
            let cancel = service.cancellation_token();
            let waiting = service.waiting();
            tokio::pin!(waiting);
            tokio::select! {
                _ = &mut waiting => {}
                () = watched.abandon.cancelled() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                }
                () = mount.shutdown.cancelled() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                }
            }
            let why = lock(&watched.broken)
                .clone()
                .unwrap_or_else(|| "the connection ended".to_owned());
            *lock(&watched.end) = Some(why);
            watched.closed.cancel();
            let mut per_user = lock(&mount.per_user);
            if per_user
                .open
                .get(&key)
                .is_some_and(|l| Arc::ptr_eq(l, &watched))
            {
                per_user.open.remove(&key);
            }
        });
        tracing::info!(server = %name, caller = %who.subject, "connected as the caller");
        Ok(live)
    }

    fn open_for(&self, key: &str) -> Option<Arc<Live>> {
        lock(&self.per_user)
            .open
            .get(key)
            .filter(|l| !l.closed.is_cancelled() && !l.abandon.is_cancelled())
            .cloned()
    }

    /// Starts a login for `who` (or finds the one waiting) and says where to complete it.
    async fn login_as(
        self: &Arc<Self>,
        who: &Identity,
        record: &str,
        challenge: Option<String>,
    ) -> String {
        let name = self.spec.name.clone();
        let key = caller_key(who);
        let ask = |link: &str| {
            format!(
                "MCP server `{name}` needs the user to log in to it as themselves (each user of this toolgate uses their own account there). Give the user this link to open in a browser and sign in, then call the tool again:\n\n{link}"
            )
        };
        if let Some((link, _)) = lock(&self.per_user)
            .logins
            .get(&key)
            .filter(|(_, at)| at.elapsed() < LOGIN_WAIT)
        {
            return ask(link);
        }
        let Some(redirect_uri) = web_login::redirect_uri() else {
            return format!(
                "MCP server `{name}` is used per user (`per_user = true`), which needs `toolgate serve --http` to receive the login's redirect; this toolgate does not serve HTTP"
            );
        };
        let Some(store) = self.token_store() else {
            return format!("MCP server `{name}`: no OAuth token store");
        };
        let options = LoginOptions {
            open_browser: false,
            timeout: LOGIN_WAIT,
            challenge,
            ..LoginOptions::default()
        };
        let started =
            match crate::auth::start(&self.spec, &store, record, &redirect_uri, &options).await {
                Ok(started) => started,
                Err(e) => return format!("logging in to MCP server `{name}` failed: {e}"),
            };
        let arrival = match started.state().map(|s| web_login::expect(&s)) {
            Some(Ok(arrival)) => arrival,
            Some(Err(busy)) => return format!("logging in to MCP server `{name}`: {busy}"),
            None => {
                return format!(
                    "logging in to MCP server `{name}` failed: its authorization URL has no `state`"
                );
            }
        };
        let link = started.auth_url.clone();
        lock(&self.per_user)
            .logins
            .insert(key.clone(), (link.clone(), Instant::now()));
        let mount = Arc::clone(self);
        let subject = who.subject.clone();
        let mine = link.clone();
        tokio::spawn(async move {
            let arrived = tokio::select! {
                arrived = tokio::time::timeout(LOGIN_WAIT, arrival) => arrived,
                () = mount.shutdown.cancelled() => return,
            };
            {
                let mut per_user = lock(&mount.per_user);
                if per_user.logins.get(&key).is_some_and(|(l, _)| *l == mine) {
                    per_user.logins.remove(&key);
                }
            }
            let Ok(Ok((redirect, done))) = arrived else {
                return;
            };
            let outcome = match redirect {
                Ok(r) => started
                    .finish(&r.code, &r.state, r.issuer.as_deref())
                    .await
                    .map(|()| format!("Logged in to `{}` as {subject}", mount.spec.name))
                    .map_err(|e| e.to_string()),
                Err(why) => Err(why),
            };
            match &outcome {
                Ok(_) => {
                    tracing::info!(server = %mount.spec.name, caller = %subject, "caller logged in")
                }
                Err(why) => {
                    tracing::warn!(server = %mount.spec.name, caller = %subject, %why, "caller's login failed")
                }
            }
            let _ = done.send(outcome);
        });
        ask(&link)
    }
}
