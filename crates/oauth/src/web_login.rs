//! Logins a remote user completes in their own browser through `serve --http`: a mounted
//! server with `[mcp_servers.NAME.oauth] per_user = true` sends each caller to its
//! authorization server with toolgate's `/oauth/callback` as the redirect URI, and the
//! browser comes back there. The gateway (which starts the login) and the HTTP listener
//! (which receives the redirect) meet in one [`WebLogins`], which `serve --http` builds and
//! hands to both, keyed by the login's OAuth `state`.
//!
//! A login is bound to the browser that opened it (RFC 6749 §10.12, login CSRF). The link a
//! caller gets is toolgate's own `/oauth/start?state=…`, a page that names who asked for the
//! login and on which server; the first browser to open it gets a cookie for this login
//! only, and no other browser can open it again. The redirect back is taken only from a
//! browser with that cookie, so a "Continue" link copied from the start page and sent to
//! someone else ends at a refusal, not in their account being kept for the sender. Nothing
//! is kept until the browser confirms on the callback page, which names again whose login it
//! is and offers to cancel. What remains: someone who forwards the start link itself,
//! unopened, shows the other person a page naming someone else; continuing past it and
//! confirming is that person's choice.
//!
//! One table per listener, and the `state` of a login is a random value nobody else can
//! guess. The redirect reaches the process that started the login only (behind a load
//! balancer, route `/oauth/` by its `state`, or run one replica for logins).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

/// The path of the redirect URI on the HTTP listener (`GET`), and of its confirmation
/// form (`POST`).
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// The path of the page a caller's link opens, before the authorization server.
pub const START_PATH: &str = "/oauth/start";

/// How long the browser keeps a login's cookie: as long as a login waits in the gateway.
const COOKIE_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// A login waiting for its browser, as its start page shows it.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The authorization server's URL the page sends the browser to.
    pub auth_url: String,
    /// Who asked for it (the caller's subject and issuer), shown to whoever opens it.
    pub asked_by: String,
    /// The mounted server the login is for.
    pub server: String,
}

/// Most logins waiting for their browser at once (each is dropped after its timeout); a
/// flood of calls cannot grow the table without bound.
const MAX_PENDING: usize = 1024;

/// What the authorization server sent back to the redirect URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The authorization code.
    pub code: String,
    /// The `state` the login was started with.
    pub state: String,
    /// The `iss` parameter (RFC 9207), when the server sends it.
    pub issuer: Option<String>,
}

/// Why a login came back from its browser without a code to exchange.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoCode {
    /// The authorization server sent `error` (and `error_description`) back instead of a
    /// code: the texts as it sent them (the message makes them safe to print).
    #[error("{}", refusal_words(error.as_deref(), description.as_deref()))]
    Refused {
        /// The `error` parameter, if any.
        error: Option<String>,
        /// The `error_description` parameter, if any.
        description: Option<String>,
    },
    /// The user cancelled on the callback page.
    #[error("the login was cancelled in the browser; nothing was kept")]
    Cancelled,
}

impl NoCode {
    /// The authorization server's refusal, from its `error` and `error_description`.
    pub fn refused(error: Option<&str>, description: Option<&str>) -> Self {
        Self::Refused {
            error: error.map(str::to_owned),
            description: description.map(str::to_owned),
        }
    }
}

/// How a login ended, for its browser's page: what to say, or why it failed.
pub type Finished = Result<String, Box<dyn std::error::Error + Send + Sync>>;

/// What a waiting login gets: the redirect (or why there is none), and where to say how
/// the login ended, for the browser's page.
pub type Arrival = (Result<Redirect, NoCode>, oneshot::Sender<Finished>);

/// Too many logins wait for their browser to start one more ([`WebLogins::expect`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{MAX_PENDING} logins are waiting for their browser already; try again in a few minutes")]
pub struct TooManyLogins;

/// A page for the browser: its status, its HTML, and a cookie to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The HTTP status.
    pub status: u16,
    /// A `Set-Cookie` header value, when the page binds the login to this browser.
    pub set_cookie: Option<String>,
    /// The page, HTML.
    pub html: String,
}

/// The cookie that binds a login to one browser: its name (one per login, so logins to two
/// servers from one browser do not clash) and secret value.
struct Binding {
    name: String,
    value: String,
}

/// One login waiting for its browser.
struct Entry {
    pending: Pending,
    waiter: oneshot::Sender<Arrival>,
    /// Set by the first browser to open the start page.
    binding: Option<Binding>,
    /// The code that browser came back with, until it confirms.
    redirect: Option<Redirect>,
}

/// The logins waiting for their browser, and where browsers reach the listener that serves
/// their pages: built once by whoever serves HTTP, shared (in an `Arc`) by the gateway that
/// starts logins and the listener that serves [`START_PATH`] and [`CALLBACK_PATH`].
pub struct WebLogins {
    /// `http(s)://host[:port][/path]` under which browsers reach the listener, without a
    /// trailing `/`.
    base: String,
    pending: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for WebLogins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebLogins")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl WebLogins {
    /// No login waiting yet; browsers reach the listener at `base_url` (`[server]
    /// public_url`, else the listener's address): the redirect URI is this plus
    /// [`CALLBACK_PATH`].
    pub fn new(base_url: &str) -> Self {
        Self {
            base: base_url.trim_end_matches('/').to_owned(),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// The redirect URI of logins in the browser.
    pub fn redirect_uri(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.base)
    }

    /// The link a caller opens for the login started with `state`.
    pub fn start_url(&self, state: &str) -> String {
        let state: String = url::form_urlencoded::byte_serialize(state.as_bytes()).collect();
        format!("{}{START_PATH}?state={state}", self.base)
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The start page of the login whose `state` the query names: who asked, for which
    /// server, and the link onward. The first browser to open it is the login's; any other
    /// is refused.
    pub fn start_page(&self, query: &str, cookies: Option<&str>) -> Page {
        let Some(state) = param(query, "state") else {
            return refusal(
                404,
                "The link has no `state`: call the tool again for a new link.",
            );
        };
        let secure = self.base.starts_with("https:");
        // Behind a proxy `public_url` may carry a path (`https://host/toolgate`): the cookie
        // must reach that path's `/oauth/…`.
        let prefix = url::Url::parse(&self.base)
            .map(|u| u.path().trim_end_matches('/').to_owned())
            .unwrap_or_default();
        let mut table = self.pending();
        let Some(entry) = table.get_mut(&state).filter(|e| !e.waiter.is_closed()) else {
            return refusal(
                404,
                "No login is waiting for this link (it timed out or finished already): call the tool again for a new link.",
            );
        };
        let mut set_cookie = None;
        match &entry.binding {
            Some(binding) if !carries(cookies, binding) => return refusal(403, NOT_THIS_BROWSER),
            Some(_) => {}
            None => {
                let (Some(id), Some(value)) = (random_hex(), random_hex()) else {
                    return refusal(
                        500,
                        "toolgate has no OS randomness to bind this login to your browser; ask its operator to restart it on a system with getrandom(2).",
                    );
                };
                let binding = Binding {
                    name: format!("toolgate_login_{}", &id[..16]),
                    value,
                };
                set_cookie = Some(format!(
                    "{}={}; Path={prefix}/oauth; Max-Age={}; HttpOnly; SameSite=Lax{}",
                    binding.name,
                    binding.value,
                    COOKIE_LIFETIME.as_secs(),
                    if secure { "; Secure" } else { "" }
                ));
                entry.binding = Some(binding);
            }
        }
        let pending = &entry.pending;
        let mut page = page(
            200,
            &format!("log in to {}", html(&pending.server)),
            &[
                format!(
                    "The toolgate user <b>{who}</b> asked to use the MCP server <b>{server}</b> with \
                     their own account there. Continue only if that is you: whoever continues here \
                     logs in with their own account, and it is kept for {who}.",
                    server = html(&pending.server),
                    who = html(&pending.asked_by),
                ),
                format!(
                    "<a id=\"continue\" href=\"{}\">Continue to sign in</a>",
                    html(&pending.auth_url)
                ),
            ],
        );
        page.set_cookie = set_cookie;
        page
    }

    /// Waits for the browser of the login started with `state`. `Err` when too many logins
    /// are pending already.
    pub fn expect(
        &self,
        state: &str,
        pending: Pending,
    ) -> Result<oneshot::Receiver<Arrival>, TooManyLogins> {
        let mut table = self.pending();
        table.retain(|_, entry| !entry.waiter.is_closed());
        if table.len() >= MAX_PENDING {
            return Err(TooManyLogins);
        }
        let (tx, rx) = oneshot::channel();
        table.insert(
            state.to_owned(),
            Entry {
                pending,
                waiter: tx,
                binding: None,
                redirect: None,
            },
        );
        Ok(rx)
    }

    /// The redirect back from the authorization server (`GET` [`CALLBACK_PATH`]). From the
    /// browser the login is bound to: a refusal ends the login at once; a code is held, and
    /// the page asks to confirm whose login it is. From any other browser: refused, and the
    /// login goes on waiting for its own.
    pub async fn callback(&self, query: &str, cookies: Option<&str>) -> Page {
        let Some(state) = param(query, "state") else {
            return refusal(
                400,
                "The redirect has no `state`: start the login again from your client.",
            );
        };
        // The guard is not held across the `.await` below: what to do is decided under it.
        let held = self.bound(&state, cookies, |entry| {
            Ok(match param(query, "code") {
                Some(code) => {
                    entry.redirect = Some(Redirect {
                        code,
                        state: state.clone(),
                        issuer: param(query, "iss"),
                    });
                    Ok((html(&entry.pending.server), html(&entry.pending.asked_by)))
                }
                None => Err(NoCode::refused(
                    param(query, "error").as_deref(),
                    param(query, "error_description").as_deref(),
                )),
            })
        });
        let (server, who) = match held {
            Ok(Ok(names)) => names,
            Ok(Err(why)) => return self.finish(&state, Err(why)).await,
            Err(page) => return page,
        };
        let state = html(&state);
        page(
            200,
            &format!("finish logging in to {server}"),
            &[
                format!(
                    "You signed in at <b>{server}</b>. Your account there will be used by the \
                     toolgate user <b>{who}</b> whenever they call its tools. Finish only if \
                     <b>{who}</b> is you."
                ),
                format!(
                    "<form method=\"post\" action=\"callback\">\
                     <input type=\"hidden\" name=\"state\" value=\"{state}\">\
                     <button id=\"finish\" name=\"decision\" value=\"finish\">Finish: I am {who}</button> \
                     <button id=\"cancel\" name=\"decision\" value=\"cancel\">Cancel: keep nothing</button>\
                     </form>"
                ),
            ],
        )
    }

    /// The browser's answer to the callback page (`POST` [`CALLBACK_PATH`], a form): finish
    /// the login with the code it came back with, or cancel it. Only from the browser the
    /// login is bound to.
    pub async fn decide(&self, form: &str, cookies: Option<&str>) -> Page {
        let Some(state) = param(form, "state") else {
            return refusal(
                400,
                "The form has no `state`: start the login again from your client.",
            );
        };
        let redirect = self.bound(&state, cookies, |entry| {
            entry.redirect.take().ok_or_else(|| {
                refusal(
                    400,
                    "This login has not come back from the authorization server yet: continue from the start page.",
                )
            })
        });
        let redirect = match redirect {
            Ok(redirect) => redirect,
            Err(page) => return page,
        };
        match param(form, "decision").as_deref() {
            Some("finish") => self.finish(&state, Ok(redirect)).await,
            _ => self.finish(&state, Err(NoCode::Cancelled)).await,
        }
    }

    /// Runs `then` on the login `state` names, when this request comes from the browser it is
    /// bound to (its cookie); else the page that refuses it.
    fn bound<T>(
        &self,
        state: &str,
        cookies: Option<&str>,
        then: impl FnOnce(&mut Entry) -> Result<T, Page>,
    ) -> Result<T, Page> {
        let mut table = self.pending();
        let Some(entry) = table.get_mut(state) else {
            return Err(refusal(
                400,
                "No login is waiting for this (it timed out, finished already, or was started by another toolgate): call the tool again for a new link.",
            ));
        };
        if !entry.binding.as_ref().is_some_and(|b| carries(cookies, b)) {
            return Err(refusal(403, NOT_THIS_BROWSER));
        }
        then(entry)
    }

    /// Hands the outcome to the login of `state` and waits for it to finish (the code
    /// exchanged and the tokens kept); the page says how it ended.
    async fn finish(&self, state: &str, outcome: Result<Redirect, NoCode>) -> Page {
        let Some(entry) = self.pending().remove(state) else {
            return refusal(
                400,
                "No login is waiting for this redirect any more: call the tool again for a new link.",
            );
        };
        let gone = || {
            refusal(
                410,
                "The login gave up waiting: call the tool again for a new link.",
            )
        };
        let (tx, rx) = oneshot::channel();
        if entry.waiter.send((outcome, tx)).is_err() {
            return gone();
        }
        match rx.await {
            Ok(Ok(said)) => page(
                200,
                "logged in",
                &[format!(
                    "{}. You can close this tab and go back to your client.",
                    html(&said)
                )],
            ),
            Ok(Err(why)) => page(
                400,
                "login failed",
                &[html(&format!("Login failed: {why}"))],
            ),
            Err(_) => gone(),
        }
    }
}

/// The value of `name` in `pairs` (a query or a form body).
fn param(pairs: &str, name: &str) -> Option<String> {
    url::form_urlencoded::parse(pairs.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A page with `status` whose body is `title` and `paragraphs` (HTML already).
fn page(status: u16, title: &str, paragraphs: &[String]) -> Page {
    let mut html = format!(
        "<!doctype html>\n<meta charset=\"utf-8\"><title>toolgate: {title}</title>\n<h1>{title}</h1>\n"
    );
    for p in paragraphs {
        html.push_str(&format!("<p>{p}</p>\n"));
    }
    Page {
        status,
        set_cookie: None,
        html,
    }
}

/// A refusal page: what happened and what to do.
fn refusal(status: u16, why: &str) -> Page {
    page(status, "login refused", &[html(why)])
}

/// 32 random bytes, hex; `None` when the OS gives no randomness (then no login is bound,
/// and none is taken: a guessable cookie would bind nothing).
fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether the request's `Cookie` header carries the login's binding. Compared in time
/// that does not depend on where the values differ.
fn carries(cookies: Option<&str>, binding: &Binding) -> bool {
    cookies
        .into_iter()
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == binding.name)
        .any(|(_, value)| {
            value.len() == binding.value.len()
                && value
                    .bytes()
                    .zip(binding.value.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        })
}

/// What a browser that did not open this login's link reads.
const NOT_THIS_BROWSER: &str = "This login was started in another browser. If someone sent you this link, close this tab: continuing would let them use your account. If you asked for this login yourself, open the link your client gave you in this browser, or call the tool again for a new link.";

/// Most characters of an authorization server's `error` or `error_description` kept.
const MAX_PROVIDER_TEXT: usize = 300;

/// Text an authorization server sent back (`error`, `error_description`), fit for a
/// terminal, a log or a model: control characters escaped (no ANSI sequence or forged line
/// reaches a terminal) and cut at a few hundred characters.
pub fn provider_text(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_PROVIDER_TEXT {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` safe inside HTML text and attribute values.
fn html(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// What the login's caller reads when the authorization server sent `error` (and
/// `error_description`) back instead of a code; the provider's text made safe to print.
fn refusal_words(error: Option<&str>, description: Option<&str>) -> String {
    format!(
        "the authorization server refused the login: {}{}",
        error.map_or_else(|| "no code".to_owned(), provider_text),
        description
            .map(|d| format!(" ({})", provider_text(d)))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logins() -> WebLogins {
        WebLogins::new("http://127.0.0.1:9/")
    }

    fn pending() -> Pending {
        Pending {
            auth_url: "https://as/auth?a=1&b=<2>".to_owned(),
            asked_by: "eve <eve@x>".to_owned(),
            server: "github".to_owned(),
        }
    }

    /// The `name=value` of the cookie a page sets.
    fn cookie(page: &Page) -> String {
        let set = page
            .set_cookie
            .as_deref()
            .expect("the page binds the browser");
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Lax"),
            "{set}"
        );
        set.split(';').next().unwrap().to_owned()
    }

    #[test]
    fn the_start_page_names_who_asked_escaped_and_links_on() {
        let logins = logins();
        let _rx = logins.expect("s4", pending()).unwrap();
        let page = logins.start_page("state=s4", None);
        assert_eq!(page.status, 200);
        assert!(
            page.html.contains("<b>eve &lt;eve@x&gt;</b>"),
            "{}",
            page.html
        );
        assert!(
            page.html
                .contains("href=\"https://as/auth?a=1&amp;b=&lt;2&gt;\""),
            "{}",
            page.html
        );
        assert_eq!(logins.start_page("state=nope", None).status, 404);
        assert_eq!(
            logins.start_url("a b"),
            "http://127.0.0.1:9/oauth/start?state=a+b"
        );
        assert_eq!(logins.redirect_uri(), "http://127.0.0.1:9/oauth/callback");
    }

    /// Regression (login CSRF): the "Continue" link copied from the start page and sent to
    /// someone else put that person's account in the sender's record.
    #[tokio::test]
    async fn only_the_browser_that_opened_the_link_finishes_the_login() {
        let logins = logins();
        let rx = logins.expect("s1", pending()).unwrap();
        let mallory = cookie(&logins.start_page("state=s1", None));
        // The same browser may open the page again; another browser may not.
        let again = logins.start_page("state=s1", Some(&format!("other=1; {mallory}")));
        assert_eq!((again.status, again.set_cookie), (200, None));
        assert_eq!(logins.start_page("state=s1", None).status, 403);
        assert_eq!(
            logins
                .start_page("state=s1", Some("toolgate_login_x=y"))
                .status,
            403
        );
        // Alice's browser comes back from the provider with her code: refused, and the
        // login still waits for its own browser.
        let alice = logins.callback("code=alice&state=s1", None).await;
        assert_eq!(alice.status, 403);
        assert!(
            alice.html.contains("started in another browser"),
            "{}",
            alice.html
        );
        let (name, _) = mallory.split_once('=').unwrap();
        let forged = format!("{name}={}", "0".repeat(64));
        assert_eq!(
            logins
                .callback("code=alice&state=s1", Some(&forged))
                .await
                .status,
            403
        );
        assert_eq!(
            logins.decide("state=s1&decision=finish", None).await.status,
            403
        );

        let login = tokio::spawn(async move {
            let (redirect, done) = rx.await.unwrap();
            let redirect = redirect.unwrap();
            assert_eq!(redirect.code, "c1");
            assert_eq!(redirect.issuer.as_deref(), Some("https://as"));
            done.send(Ok("Logged in to `github` as eve".to_owned()))
                .unwrap();
        });
        let confirm = logins
            .callback("code=c1&state=s1&iss=https%3A%2F%2Fas", Some(&mallory))
            .await;
        assert_eq!(confirm.status, 200);
        assert!(
            confirm.html.contains("<b>eve &lt;eve@x&gt;</b>"),
            "{}",
            confirm.html
        );
        assert!(
            confirm.html.contains("name=\"decision\" value=\"cancel\""),
            "{}",
            confirm.html
        );
        assert!(
            !login.is_finished(),
            "nothing is exchanged before the browser confirms"
        );
        let done = logins
            .decide("state=s1&decision=finish", Some(&mallory))
            .await;
        assert_eq!(done.status, 200);
        assert!(
            done.html.contains("Logged in to `github` as eve"),
            "{}",
            done.html
        );
        login.await.unwrap();
        assert_eq!(
            logins
                .callback("code=c1&state=s1", Some(&mallory))
                .await
                .status,
            400
        );
        assert_eq!(logins.callback("code=c1", None).await.status, 400);
    }

    #[tokio::test]
    async fn a_refusal_or_a_cancel_reaches_the_login_and_a_login_that_gave_up_is_said_so() {
        let logins = logins();
        let rx = logins.expect("s2", pending()).unwrap();
        let browser = cookie(&logins.start_page("state=s2", None));
        let login = tokio::spawn(async move {
            let (redirect, done) = rx.await.unwrap();
            let why = redirect.unwrap_err();
            assert!(why.to_string().contains("access_denied\\u{1b}[2J"), "{why}");
            done.send(Err(why.into())).unwrap();
        });
        let said = logins
            .callback("error=access_denied%1B%5B2J&state=s2", Some(&browser))
            .await;
        assert_eq!(said.status, 400);
        assert!(said.html.contains("access_denied"), "{}", said.html);
        login.await.unwrap();

        let rx = logins.expect("s5", pending()).unwrap();
        let browser = cookie(&logins.start_page("state=s5", None));
        let login = tokio::spawn(async move {
            let (redirect, done) = rx.await.unwrap();
            let why = redirect.unwrap_err();
            assert_eq!(why, NoCode::Cancelled);
            done.send(Err(why.into())).unwrap();
        });
        assert_eq!(
            logins
                .callback("code=c&state=s5", Some(&browser))
                .await
                .status,
            200
        );
        let said = logins
            .decide("state=s5&decision=cancel", Some(&browser))
            .await;
        assert!(said.html.contains("nothing was kept"), "{}", said.html);
        login.await.unwrap();

        drop(logins.expect("s3", pending()).unwrap());
        assert_eq!(logins.start_page("state=s3", None).status, 404);
    }

    #[test]
    fn provider_text_escapes_control_characters_and_is_cut() {
        assert_eq!(
            provider_text("a\x1b[31mb\r\nc"),
            "a\\u{1b}[31mb\\u{d}\\u{a}c"
        );
        assert_eq!(
            provider_text(&"x".repeat(1000)).chars().count(),
            MAX_PROVIDER_TEXT + 1
        );
    }
}
