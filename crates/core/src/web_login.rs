//! Logins a remote user completes in their own browser through `serve --http`: a mounted
//! server with `[mcp_servers.NAME.oauth] per_user = true` sends each caller to its
//! authorization server with toolgate's `/oauth/callback` as the redirect URI, and the
//! browser comes back there. The gateway (which starts the login) and the HTTP listener
//! (which receives the redirect) meet here, keyed by the login's OAuth `state`.
//!
//! The link a caller gets is toolgate's own `/oauth/start?state=…`, a page that names who
//! asked for the login and on which server before it sends the browser on: someone who
//! forwards their link to another person (to get that person's account kept under their own
//! name) shows that person a name that is not theirs.
//!
//! Process-wide: one `serve --http` per process, and the `state` of a login is a random
//! value nobody else can guess. The redirect reaches the process that started the login
//! only (behind a load balancer, route `/oauth/callback` by its `state`, or run one replica
//! for logins).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use tokio::sync::oneshot;

/// The path of the redirect URI on the HTTP listener.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// The path of the page a caller's link opens, before the authorization server.
pub const START_PATH: &str = "/oauth/start";

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

/// What a waiting login gets: the redirect (or the refusal), and where to say how the
/// login ended, for the browser's page.
pub type Arrival = (
    Result<Redirect, String>,
    oneshot::Sender<Result<String, String>>,
);

struct Table {
    /// `http(s)://host[:port]` under which clients reach the listener.
    base: Option<String>,
    pending: HashMap<String, (Pending, oneshot::Sender<Arrival>)>,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    Mutex::new(Table {
        base: None,
        pending: HashMap::new(),
    })
});

fn table() -> std::sync::MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sets the URL browsers reach the listener at (`[server] public_url`, else the bound
/// address): the redirect URI is this plus [`CALLBACK_PATH`].
pub fn set_base_url(base: &str) {
    table().base = Some(base.trim_end_matches('/').to_owned());
}

/// The redirect URI of logins in the browser; `None` outside `serve --http`.
pub fn redirect_uri() -> Option<String> {
    table().base.as_ref().map(|b| format!("{b}{CALLBACK_PATH}"))
}

/// The link a caller opens for the login started with `state`; `None` outside
/// `serve --http`.
pub fn start_url(state: &str) -> Option<String> {
    let state: String = url::form_urlencoded::byte_serialize(state.as_bytes()).collect();
    table()
        .base
        .as_ref()
        .map(|b| format!("{b}{START_PATH}?state={state}"))
}

/// The start page of the login whose `state` the query names: who asked, for which
/// server, and the link onward. `Err` when no such login waits.
pub fn start_page(query: &str) -> Result<String, String> {
    let state = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .ok_or("the link has no `state`: call the tool again for a new link")?;
    let table = table();
    let (pending, _) = table.pending.get(&state).filter(|(_, w)| !w.is_closed()).ok_or(
        "no login is waiting for this link (it timed out or finished already): call the tool again for a new link",
    )?;
    Ok(format!(
        "<!doctype html>\n<meta charset=\"utf-8\"><title>toolgate: log in to {server}</title>\n\
         <h1>Log in to {server}</h1>\n\
         <p>The toolgate user <b>{who}</b> asked to use the MCP server <b>{server}</b> with \
         their own account there. Continue only if that is you: whoever continues here logs in \
         with their own account, and it is kept for {who}.</p>\n\
         <p><a id=\"continue\" href=\"{url}\">Continue to sign in</a></p>\n",
        server = html(&pending.server),
        who = html(&pending.asked_by),
        url = html(&pending.auth_url),
    ))
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

/// Waits for the browser of the login started with `state`. `Err` when too many logins
/// are pending already.
pub fn expect(state: &str, pending: Pending) -> Result<oneshot::Receiver<Arrival>, String> {
    let mut table = table();
    table.pending.retain(|_, (_, waiter)| !waiter.is_closed());
    if table.pending.len() >= MAX_PENDING {
        return Err(format!(
            "{MAX_PENDING} logins are waiting for their browser already; try again in a few minutes"
        ));
    }
    let (tx, rx) = oneshot::channel();
    table.pending.insert(state.to_owned(), (pending, tx));
    Ok(rx)
}

/// Hands the redirect's query to the login it belongs to and waits for it to finish (the
/// code exchanged and the tokens kept); what the browser's user should read, `Err` when
/// the login failed (no such login, the authorization server's refusal, the exchange).
pub async fn complete(query: &str) -> Result<String, String> {
    let params: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let state = params
        .get("state")
        .ok_or("the redirect has no `state`: start the login again from your client")?;
    let (_, waiter) = table().pending.remove(state).ok_or(
        "no login is waiting for this redirect (it timed out, finished already, or was started by another toolgate): call the tool again for a new link",
    )?;
    let outcome = match (params.get("code"), params.get("error")) {
        (Some(code), _) => Ok(Redirect {
            code: code.clone(),
            state: state.clone(),
            issuer: params.get("iss").cloned(),
        }),
        (None, error) => Err(format!(
            "the authorization server refused the login: {}{}",
            error.map_or("no code", String::as_str),
            params
                .get("error_description")
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )),
    };
    let gone = || "the login gave up waiting: call the tool again for a new link".to_owned();
    let (tx, rx) = oneshot::channel();
    waiter.send((outcome, tx)).map_err(|_| gone())?;
    rx.await.map_err(|_| gone())?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> Pending {
        Pending {
            auth_url: "https://as/auth?a=1&b=<2>".to_owned(),
            asked_by: "eve <eve@x>".to_owned(),
            server: "github".to_owned(),
        }
    }

    #[test]
    fn the_start_page_names_who_asked_escaped_and_links_on() {
        let _rx = expect("s4", pending()).unwrap();
        let page = start_page("state=s4").unwrap();
        assert!(page.contains("<b>eve &lt;eve@x&gt;</b>"), "{page}");
        assert!(
            page.contains("href=\"https://as/auth?a=1&amp;b=&lt;2&gt;\""),
            "{page}"
        );
        assert!(start_page("state=nope").unwrap_err().contains("no login"));
        set_base_url("http://127.0.0.1:9/");
        assert_eq!(
            start_url("a b").as_deref(),
            Some("http://127.0.0.1:9/oauth/start?state=a+b")
        );
    }

    #[tokio::test]
    async fn a_redirect_reaches_the_login_of_its_state_once_and_the_page_says_how_it_ended() {
        let rx = expect("s1", pending()).unwrap();
        let login = tokio::spawn(async move {
            let (redirect, done) = rx.await.unwrap();
            let redirect = redirect.unwrap();
            assert_eq!(redirect.code, "c1");
            assert_eq!(redirect.issuer.as_deref(), Some("https://as"));
            done.send(Ok("logged in as ada".to_owned())).unwrap();
        });
        let page = complete("code=c1&state=s1&iss=https%3A%2F%2Fas").await;
        assert_eq!(page.as_deref(), Ok("logged in as ada"));
        login.await.unwrap();
        assert!(
            complete("code=c1&state=s1")
                .await
                .unwrap_err()
                .contains("no login")
        );
        assert!(
            complete("code=c1")
                .await
                .unwrap_err()
                .contains("no `state`")
        );
    }

    #[tokio::test]
    async fn a_refusal_reaches_the_login_and_a_login_that_gave_up_is_said_so() {
        let rx = expect("s2", pending()).unwrap();
        let login = tokio::spawn(async move {
            let (redirect, done) = rx.await.unwrap();
            let why = redirect.unwrap_err();
            assert!(why.contains("access_denied"), "{why}");
            done.send(Err(why)).unwrap();
        });
        let said = complete("error=access_denied&state=s2").await.unwrap_err();
        assert!(said.contains("access_denied"), "{said}");
        login.await.unwrap();
        drop(expect("s3", pending()).unwrap());
        assert!(
            complete("code=c&state=s3")
                .await
                .unwrap_err()
                .contains("gave up")
        );
    }
}
