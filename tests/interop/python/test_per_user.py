"""A mounted server used by each caller as themselves (`[mcp_servers.NAME.oauth] per_user =
true`): `toolgate serve --http` takes OAuth access tokens of a real OpenID provider
(`[server.auth]`, fixture `jwt_provider`), and mounts the provider's guarded MCP server, whose
`whoami` answers `hello ACCOUNT` for the account of the token it gets.

Two users log in to toolgate with the Python MCP SDK (each with a JWT of their own). The
first call of each to `whoami` answers with a link: toolgate's start page (naming who asked)
of a login started for them with toolgate's `/oauth/callback` as its redirect URI. Their
"browser" (an HTTP client with its own cookies) opens it and continues, the provider approves
that user, the browser comes back to toolgate and confirms on its page, and toolgate keeps
their tokens; the next call
answers `hello` with their own name, not the operator's (whose `toolgate mcp login` serves
the tool list and sessions without an identity). A third user's client takes URL
elicitation: it is asked to open the link, and the one call waits and answers. And the login
CSRF of the security review: the "Continue" link of Mallory's start page, sent to Alice and
opened in Alice's browser, ends at a refusal, never with Alice's account kept for Mallory. A
missing Node, oidc-provider or binary fails the test; nothing skips.
"""

from __future__ import annotations

import html
import http.cookiejar
import re
import subprocess
import urllib.parse
import urllib.request
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from conftest import http_connection, toolgate_bin
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from oauth_provider import JWT_AUDIENCE, Provider, browser
from test_serve_oauth import SCOPE, sdk_auth, text_of

TOOL = "mcp__guarded__whoami"
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/oauth/start\?state=\S+)")


def configure(env: dict[str, str], provider: Provider) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    config.write_text(
        config.read_text()
        + f'\n[server.auth]\nissuer = "{provider.issuer}"\naudience = "{JWT_AUDIENCE}"\n'
        + f'required_scopes = ["{SCOPE}"]\n'
        + '\n[mcp]\noauth_credentials_store = "file"\n'
        + f'\n[mcp_servers.guarded]\nurl = "{provider.mcp}"\n'
        + "\n[mcp_servers.guarded.oauth]\nper_user = true\n"
    )


@asynccontextmanager
async def logged_in_as(url: str, **client_options):
    """An SDK session with toolgate, logged in through the provider (as whichever account
    it approves now)."""
    auth, _, _ = sdk_auth(url, "per-user test")
    async with create_mcp_http_client(auth=auth) as http:
        async with Client(
            streamable_http_client(url, http_client=http), mode="legacy", **client_options
        ) as client:
            yield client


def new_browser() -> urllib.request.OpenerDirector:
    """A browser of its own: its own cookies, following redirects."""
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))


def start(opener: urllib.request.OpenerDirector, link: str, user: str) -> str:
    """Opens `link` (toolgate's start page), checks that the page names `user`, and returns
    the "Continue" link (the authorization server's URL)."""
    with opener.open(link, timeout=60) as page:
        start = page.read().decode()
    assert f"<b>{user} (of " in start, start
    onward = re.search(r'<a id="continue" href="([^"]+)"', start)
    assert onward, start
    return html.unescape(onward.group(1))


def finish(opener: urllib.request.OpenerDirector, auth_url: str, user: str) -> str:
    """Follows `auth_url` (the provider approves the account it is set to) back to
    toolgate's callback, whose page must name `user`, and clicks "Finish" there; the page it
    ends on."""
    with opener.open(auth_url, timeout=60) as page:
        confirm = page.read().decode()
        callback = page.geturl()
    assert f"toolgate user <b>{user} (of " in confirm, confirm
    state = re.search(r'name="state" value="([^"]+)"', confirm)
    assert state and 'value="cancel"' in confirm, confirm
    form = urllib.parse.urlencode({"state": html.unescape(state.group(1)), "decision": "finish"})
    action = urllib.parse.urljoin(callback, "/oauth/callback")
    with opener.open(action, data=form.encode(), timeout=60) as page:
        return page.read().decode()


def open_in_browser(link: str, user: str) -> tuple[str, str]:
    """Opens `link` (toolgate's start page) in a fresh browser, checks that the page names
    `user`, clicks "Continue" and follows every redirect, the last one to toolgate's
    callback, whose page names `user` again; clicks "Finish" there. Returns the
    authorization URL it went to and the page it ends on."""
    opener = new_browser()
    auth_url = start(opener, link, user)
    return auth_url, finish(opener, auth_url, user)


def operator_login(provider: Provider, project: Path, env: dict[str, str], tmp_path: Path) -> None:
    """The operator's own `toolgate mcp login`: the tool list, and sessions without an
    identity."""
    provider.admin_call("account/operator")
    operator = subprocess.run(
        [toolgate_bin(), "--root", str(project), "mcp", "login", "guarded"],
        env={**env, "BROWSER": browser(tmp_path / "operator-cookies")},
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert operator.returncode == 0, operator.stdout + operator.stderr


@pytest.mark.anyio
async def test_each_caller_reaches_a_per_user_server_as_themselves(
    jwt_provider: Provider, project: Path, server_env: dict[str, str], start_http_server, tmp_path: Path
) -> None:
    configure(server_env, jwt_provider)
    # The operator's own login: the tool list, and sessions without an identity.
    operator_login(jwt_provider, project, server_env, tmp_path)
    listing = subprocess.run(
        [toolgate_bin(), "--root", str(project), "mcp", "list"],
        env=server_env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert "(per_user: each caller logs in as themselves)" in listing.stdout, listing.stdout
    assert "auth: logged in" in listing.stdout, listing.stdout
    server = start_http_server(project, token="static-token")
    callback = f"{server.origin}/oauth/callback"

    for user in ("alice", "bob"):
        jwt_provider.admin_call(f"account/{user}")
        async with logged_in_as(server.url) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert TOOL in names, names
            # No login of their own yet: a link to make one, never the operator's answer.
            first = await client.call_tool(TOOL, {})
            assert first.is_error, text_of(first)
            said = text_of(first)
            assert "log in" in said and "hello" not in said, said
            link = LINK.search(said)
            assert link and link.group(1).startswith(server.origin), said
            # Asked again before the login: the same link, not a second login.
            again = await client.call_tool(TOOL, {})
            assert LINK.search(text_of(again)).group(1) == link.group(1), text_of(again)

            auth_url, page = open_in_browser(link.group(1), user)
            query = urllib.parse.parse_qs(urllib.parse.urlparse(auth_url).query)
            assert auth_url.startswith(f"{jwt_provider.issuer}/auth?"), auth_url
            assert query["redirect_uri"] == [callback], query
            assert query["resource"] == [jwt_provider.mcp], query
            assert f"Logged in to `guarded` as {user}" in page, page
            result = await client.call_tool(TOOL, {})
            assert not result.is_error, text_of(result)
            assert text_of(result) == f"hello {user}", text_of(result)

    # A client that takes URL elicitation is asked to open the link, and the call waits for
    # the login and answers at once.
    jwt_provider.admin_call("account/carol")
    opened: list[str] = []

    async def elicit(_ctx, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert params.mode == "url", params
        opened.append(params.url)
        await anyio.to_thread.run_sync(open_in_browser, params.url, "carol")
        return types.ElicitResult(action="accept")

    async with logged_in_as(server.url, elicitation_callback=elicit) as client:
        result = await client.call_tool(TOOL, {})
        assert not result.is_error, text_of(result)
        assert text_of(result) == "hello carol", text_of(result)
    assert len(opened) == 1 and LINK.fullmatch(opened[0]), opened

    logins = jwt_provider.admin_call("stats")["codeGrants"]
    # alice again, in a new session (a new login to toolgate as alice): her own downstream
    # login still serves her, with no new one.
    jwt_provider.admin_call("account/alice")
    async with logged_in_as(server.url) as client:
        result = await client.call_tool(TOOL, {})
        assert not result.is_error and text_of(result) == "hello alice", text_of(result)
    # One more code grant: alice's login to toolgate itself; none for the downstream server.
    assert jwt_provider.admin_call("stats")["codeGrants"] == logins + 1

    # A session without an identity (the static token) uses the operator's login.
    async with http_connection(
        server.url, "legacy", headers={"Authorization": "Bearer static-token"}
    ) as client:
        result = await client.call_tool(TOOL, {})
        assert not result.is_error and text_of(result) == "hello operator", text_of(result)

    # Each user's tokens are a record of their own, apart from the operator's.
    records = list((Path(server_env["XDG_CONFIG_HOME"]) / "toolgate" / "mcp-oauth").glob("*.json"))
    assert len(records) == 4, records

    # A redirect nobody waits for is refused with what to do.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{callback}?code=x&state=unknown", timeout=60)
    assert refused.value.code == 400
    assert "call the tool again" in refused.value.read().decode()


@pytest.mark.anyio
async def test_a_continue_link_sent_to_someone_else_never_keeps_their_account(
    jwt_provider: Provider, project: Path, server_env: dict[str, str], start_http_server, tmp_path: Path
) -> None:
    """Login CSRF (RFC 6749 §10.12): Mallory opens her own start page, copies its "Continue"
    link and sends it to Alice, who is signed in at the provider. Alice's browser lands on
    toolgate's callback with Alice's code: refused, and Mallory's calls never run as Alice."""
    configure(server_env, jwt_provider)
    operator_login(jwt_provider, project, server_env, tmp_path)
    server = start_http_server(project, token="static-token")

    jwt_provider.admin_call("account/mallory")
    async with logged_in_as(server.url) as mallory:
        said = text_of(await mallory.call_tool(TOOL, {}))
        link = LINK.search(said)
        assert link, said
        mallorys_browser = new_browser()
        continue_link = start(mallorys_browser, link.group(1), "mallory")

        # Alice, signed in at the provider, opens what Mallory sent her.
        jwt_provider.admin_call("account/alice")
        alices_browser = new_browser()
        grants = jwt_provider.admin_call("stats")["codeGrants"]
        with pytest.raises(urllib.error.HTTPError) as refused:
            alices_browser.open(continue_link, timeout=60)
        assert refused.value.code == 403, refused.value
        page = refused.value.read().decode()
        assert "started in another browser" in page and "close this tab" in page, page
        assert refused.value.geturl().startswith(f"{server.origin}/oauth/callback?"), refused.value.geturl()
        # The provider did approve Alice (the attack reached toolgate), and nothing was
        # exchanged: no code was redeemed.
        assert jwt_provider.admin_call("stats")["codeGrants"] == grants
        # The start page itself, forwarded: refused in Alice's browser too.
        with pytest.raises(urllib.error.HTTPError) as refused:
            alices_browser.open(link.group(1), timeout=60)
        assert refused.value.code == 403
        # Nothing of Alice's under Mallory's name.
        after = text_of(await mallory.call_tool(TOOL, {}))
        assert "hello" not in after and LINK.search(after).group(1) == link.group(1), after

        # Mallory's own browser still finishes her own login, as herself.
        jwt_provider.admin_call("account/mallory")
        page = finish(mallorys_browser, continue_link, "mallory")
        assert "Logged in to `guarded` as mallory" in page, page
        result = await mallory.call_tool(TOOL, {})
        assert text_of(result) == "hello mallory", text_of(result)
