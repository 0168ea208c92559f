//! A remote server each caller uses as themselves (`[mcp_servers.NAME.oauth] per_user =
//! true`, team mode): a call from a session with an identity (`[server.auth]`) goes over a
//! connection of that caller's own, made with the tokens of their own login, so each user
//! reaches (say) GitHub as themselves. Their tokens are a record of their own in the token
//! store (the server URL plus the caller's issuer and subject), refreshed like any other.
//!
//! A caller with no login yet (or whose login the server refuses) logs in through a link:
//! toolgate's `/oauth/start` page for a login started for them (it names who asked, then
//! leads to the authorization server), whose redirect URI is toolgate's `/oauth/callback`
//! ([`toolgate_oauth::WebLogins`]); their browser comes back there, the code is exchanged and
//! their tokens kept. A client that takes URL elicitation (MCP 2025-11-25) is asked to open
//! the link, and the call waits for the login and goes on; any other gets the link in an
//! error result to show the user, and the next call works. One login waits per caller at a
//! time (the same link until it ends), for [`LOGIN_WAIT`].
//!
//! The server's tool list, prompts and resources, and calls from sessions without an
//! identity (stdio, the static token), use the shared connection and toolgate's own login
//! (`toolgate mcp login NAME`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use toolgate_core::{CallContext, ClientAsk, Identity};
use toolgate_oauth::{LoginOptions, Pending};

use super::{Live, Mount, lock};
use crate::config::Transport;
use crate::connect::http_transport_with;
use crate::error::{CallerLoginError, UpstreamError};
use crate::failure::{Failure, NeedsLogin};
use crate::handler::Handler;

/// How long a login started for a caller waits for their browser.
pub(crate) const LOGIN_WAIT: Duration = Duration::from_secs(600);
/// A caller's connection unused this long is closed (the next call dials again).
const IDLE: Duration = Duration::from_secs(900);

/// How a login ended: `None` while it waits.
type Outcome = Option<Result<(), CallerLoginError>>;

/// The connections and logins of a per-user server's callers.
#[derive(Default)]
pub(crate) struct PerUser {
    /// Open connections, by caller, with when each was last used.
    open: HashMap<String, (Arc<Live>, Instant)>,
    /// Logins waiting for a caller's browser, by caller.
    logins: HashMap<String, Login>,
    /// Taken while a caller's connection is dialed, by caller: one dial per caller at a
    /// time, and a slow one holds up nobody else.
    dialing: HashMap<String, Arc<tokio::sync::Mutex<()>>>,
}

/// A login waiting for its caller's browser.
#[derive(Clone)]
struct Login {
    /// The link the caller opens (toolgate's start page).
    link: String,
    /// The login's `state`, also the id of the URL elicitation that asks to open it.
    state: String,
    started: Instant,
    done: watch::Receiver<Outcome>,
}

/// Why a caller's connection could not be made.
enum Dial {
    /// Their login is missing or refused; the server's challenge, if it sent one.
    NeedsLogin(Option<String>),
    /// Anything else: what the model reads.
    Failed(UpstreamError),
}

/// The caller's key among the records and connections: issuer and subject.
fn caller_key(who: &Identity) -> String {
    format!("{}\n{}", who.issuer.as_deref().unwrap_or(""), who.subject)
}

/// The token store record of `caller` for the server at `url`: the URL and a digest of the
/// caller (a subject may hold any character; OS credential stores take the key as a name).
fn record_key(url: &str, caller: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(caller.as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("{url}#caller={hex}")
}

/// Who asked, as a start page shows it.
fn asked_by(who: &Identity) -> String {
    match &who.issuer {
        Some(issuer) => format!("{} (of {issuer})", who.subject),
        None => who.subject.clone(),
    }
}

impl Mount {
    /// The connection a call of `who` uses: their own, dialed with their tokens, after a
    /// login through their client when it can open a link; `Err` is what the model reads
    /// (with the login link when they have no login that works).
    pub(super) async fn caller_live(
        self: &Arc<Self>,
        who: &Identity,
        ctx: &CallContext,
    ) -> Result<Arc<Live>, UpstreamError> {
        let name = &self.spec.name;
        let server = || name.clone();
        let Transport::Http { url, .. } = &self.spec.transport else {
            return Err(UpstreamError::PerUserNotRemote { server: server() });
        };
        let record = record_key(url, &caller_key(who));
        let mut asked = false;
        loop {
            let challenge = match self.dial_as(who, &record).await {
                Ok(live) => return Ok(live),
                Err(Dial::Failed(message)) => return Err(message),
                Err(Dial::NeedsLogin(challenge)) => challenge,
            };
            let login = self.login_as(who, &record, challenge).await?;
            let message = || UpstreamError::LoginLink {
                server: server(),
                link: login.link.clone(),
            };
            let link = ctx
                .client()
                .filter(|c| c.can_ask(ClientAsk::UrlElicitation).is_ok());
            let Some(link) = link.filter(|_| !asked) else {
                return Err(message());
            };
            asked = true;
            let params = serde_json::json!({
                "mode": "url",
                "message": format!("Log in to `{name}` with your own account to continue."),
                "url": login.link,
                "elicitationId": login.state,
            });
            let reply = tokio::select! {
                reply = link.request(ClientAsk::UrlElicitation, params) => reply,
                () = ctx.cancel.cancelled() => return Err(message()),
            };
            match reply {
                Ok(answer) if answer.get("action").and_then(|a| a.as_str()) == Some("accept") => {}
                Ok(_) => return Err(UpstreamError::LoginDeclined { server: server() }),
                Err(e) => {
                    tracing::debug!(server = %name, error = %e, "URL elicitation failed; giving the link instead");
                    return Err(message());
                }
            }
            let mut done = login.done;
            let outcome = tokio::select! {
                outcome = done.wait_for(Option::is_some) => outcome.map(|o| o.clone()).ok().flatten(),
                () = ctx.cancel.cancelled() => return Err(message()),
            };
            match outcome {
                Some(Ok(())) => {}
                Some(Err(source)) => {
                    return Err(UpstreamError::CallerLogin {
                        server: server(),
                        source,
                    });
                }
                None => return Err(UpstreamError::LoginUnfinished { server: server() }),
            }
        }
    }

    /// Dials the caller's connection with the tokens of their `record`.
    async fn dial_as(self: &Arc<Self>, who: &Identity, record: &str) -> Result<Arc<Live>, Dial> {
        let name = &self.spec.name;
        let key = caller_key(who);
        if let Some(live) = self.open_for(&key) {
            return Ok(live);
        }
        let turn = {
            let mut per_user = lock(&self.per_user);
            // Forget the locks nobody holds or waits for.
            per_user.dialing.retain(|_, l| Arc::strong_count(l) > 1);
            Arc::clone(per_user.dialing.entry(key.clone()).or_default())
        };
        let _dialing = turn.lock().await;
        if let Some(live) = self.open_for(&key) {
            return Ok(live);
        }
        let server = || name.clone();
        let Transport::Http { url, headers, .. } = &self.spec.transport else {
            return Err(Dial::Failed(UpstreamError::NotRemote { server: server() }));
        };
        let Some(store) = self.token_store() else {
            return Err(Dial::Failed(UpstreamError::NoTokenStore {
                server: server(),
            }));
        };
        let client = match crate::auth::authorized_client(&store, &self.spec, record).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(Dial::NeedsLogin(None)),
            Err(Failure::NeedsLogin(needs)) => return Err(Dial::NeedsLogin(needs.challenge)),
            Err(Failure::Failed(reason)) => {
                return Err(Dial::Failed(UpstreamError::Unreachable {
                    server: server(),
                    reason,
                }));
            }
        };
        let limits = self.limits();
        let updates = self.host.upgrade().map(|h| h.resource_updates());
        let handler = Handler::new(name, &limits, updates);
        let transport = http_transport_with(client, url, headers, None).map_err(|source| {
            Dial::Failed(UpstreamError::Transport {
                server: server(),
                source,
            })
        })?;
        let stage = std::sync::Mutex::new("initialize");
        let handshake = self.handshake(&handler, transport, &stage, &limits, self.lifecycle());
        let service = match tokio::time::timeout(self.spec.startup_timeout, handshake).await {
            Ok(Ok((service, _, _))) => service,
            Ok(Err(Failure::NeedsLogin(NeedsLogin { challenge, .. }))) => {
                return Err(Dial::NeedsLogin(challenge));
            }
            Ok(Err(Failure::Failed(reason))) => {
                return Err(Dial::Failed(UpstreamError::CallerUnreachable {
                    server: server(),
                    reason,
                    url: url.clone(),
                }));
            }
            Err(_) => {
                return Err(Dial::Failed(UpstreamError::StartupTimeout {
                    server: server(),
                    stage: *lock(&stage),
                    timeout: self.spec.startup_timeout,
                    url: url.clone(),
                }));
            }
        };
        let live = Live::open(&handler, service.peer());
        lock(&self.per_user)
            .open
            .insert(key.clone(), (Arc::clone(&live), Instant::now()));
        let mount = Arc::clone(self);
        let watched = Arc::clone(&live);
        tokio::spawn(async move {
            let cancel = service.cancellation_token();
            let waiting = service.waiting();
            tokio::pin!(waiting);
            loop {
                tokio::select! {
                    _ = &mut waiting => break,
                    () = watched.abandon.cancelled() => {}
                    () = mount.shutdown.cancelled() => {}
                    () = tokio::time::sleep(IDLE / 4) => {
                        let idle = lock(&mount.per_user)
                            .open
                            .get(&key)
                            .is_none_or(|(_, used)| used.elapsed() >= IDLE);
                        // The map and this task hold it; a call in flight holds a third.
                        if !idle || Arc::strong_count(&watched) > 2 {
                            continue;
                        }
                        *lock(&watched.broken) = Some("closed after being unused".to_owned());
                    }
                }
                cancel.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                break;
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
                .is_some_and(|(l, _)| Arc::ptr_eq(l, &watched))
            {
                per_user.open.remove(&key);
            }
        });
        tracing::info!(server = %name, caller = %who.subject, "connected as the caller");
        Ok(live)
    }

    /// The caller's open connection, marked used now.
    fn open_for(&self, key: &str) -> Option<Arc<Live>> {
        let mut per_user = lock(&self.per_user);
        let (live, used) = per_user
            .open
            .get_mut(key)
            .filter(|(l, _)| !l.closed.is_cancelled() && !l.abandon.is_cancelled())?;
        *used = Instant::now();
        Some(Arc::clone(live))
    }

    /// Starts a login for `who` (or finds the one waiting); `Err` says why none can start.
    async fn login_as(
        self: &Arc<Self>,
        who: &Identity,
        record: &str,
        challenge: Option<String>,
    ) -> Result<Login, UpstreamError> {
        let name = self.spec.name.clone();
        let server = || name.clone();
        let key = caller_key(who);
        if let Some(login) = lock(&self.per_user)
            .logins
            .get(&key)
            .filter(|l| l.started.elapsed() < LOGIN_WAIT && l.done.borrow().is_none())
        {
            return Ok(login.clone());
        }
        let Some(logins) = self.host.upgrade().and_then(|h| h.web_logins()) else {
            return Err(UpstreamError::NoLoginListener { server: server() });
        };
        let redirect_uri = logins.redirect_uri();
        let Some(store) = self.token_store() else {
            return Err(UpstreamError::NoTokenStore { server: server() });
        };
        let options = LoginOptions {
            open_browser: false,
            timeout: LOGIN_WAIT,
            challenge,
            ..LoginOptions::default()
        };
        let started = crate::auth::start(&self.spec, &store, record, &redirect_uri, &options)
            .await
            .map_err(|source| UpstreamError::Login {
                server: server(),
                source,
            })?;
        let state = started
            .state()
            .ok_or_else(|| UpstreamError::NoLoginState { server: server() })?;
        let pending = Pending {
            auth_url: started.auth_url.clone(),
            asked_by: asked_by(who),
            server: name.clone(),
        };
        let arrival =
            logins
                .expect(&state, pending)
                .map_err(|source| UpstreamError::LoginsBusy {
                    server: server(),
                    source,
                })?;
        let link = logins.start_url(&state);
        let (tell, done) = watch::channel(None);
        let login = Login {
            link,
            state: state.clone(),
            started: Instant::now(),
            done,
        };
        lock(&self.per_user)
            .logins
            .insert(key.clone(), login.clone());
        let mount = Arc::clone(self);
        let subject = who.subject.clone();
        tokio::spawn(async move {
            let arrived = tokio::select! {
                arrived = tokio::time::timeout(LOGIN_WAIT, arrival) => arrived,
                () = mount.shutdown.cancelled() => return,
            };
            {
                let mut per_user = lock(&mount.per_user);
                if per_user.logins.get(&key).is_some_and(|l| l.state == state) {
                    per_user.logins.remove(&key);
                }
            }
            let Ok(Ok((redirect, page))) = arrived else {
                tell.send_replace(Some(Err(CallerLoginError::NoBrowser)));
                return;
            };
            let outcome = match redirect {
                Ok(r) => started
                    .finish(&r.code, &r.state, r.issuer.as_deref())
                    .await
                    .map_err(|e| CallerLoginError::Failed(Arc::new(e))),
                Err(why) => Err(CallerLoginError::from(why)),
            };
            match &outcome {
                Ok(()) => {
                    tracing::info!(server = %mount.spec.name, caller = %subject, "caller logged in")
                }
                Err(why) => {
                    tracing::warn!(server = %mount.spec.name, caller = %subject, %why, "caller's login failed")
                }
            }
            let _ = page.send(
                outcome
                    .clone()
                    .map(|()| format!("Logged in to `{}` as {subject}", mount.spec.name))
                    .map_err(Into::into),
            );
            tell.send_replace(Some(outcome));
        });
        Ok(login)
    }
}
