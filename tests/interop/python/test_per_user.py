"""A mounted server used by each caller as themselves (`[mcp_servers.NAME.oauth] per_user =
true`): `toolgate serve --http` takes OAuth access tokens of a real OpenID provider
(`[server.auth]`, fixture `jwt_provider`), and mounts the provider's guarded MCP server, whose
`whoami` answers `hello ACCOUNT` for the account of the token it gets.

Two users log in to toolgate with the Python MCP SDK (each with a JWT of their own). The
first call of each to `whoami` answers with a link: toolgate's start page (naming who asked)
of a login started for them with toolgate's `/oauth/callback` as its redirect URI. Their
"browser" (an HTTP client with its own cookies) opens it and continues, the provider approves
that user, the browser comes back to toolgate, which keeps their tokens; the next call
answers `hello` with their own name, not the operator's (whose `toolgate mcp login` serves
the tool list and sessions without an identity). A third user's client takes URL
elicitation: it is asked to open the link, and the one call waits and answers. A missing
Node, oidc-provider or binary fails the test; nothing skips.
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


def open_in_browser(link: str, user: str) -> tuple[str, str]:
    """Opens `link` (toolgate's start page) in a fresh browser (its own cookies), checks that
    the page names `user`, clicks "Continue" and follows every redirect, the last one to
    toolgate's callback; returns the authorization URL it went to and the page it ends on."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(link, timeout=60) as page:
        start = page.read().decode()
    assert f"<b>{user} (of " in start, start
    onward = re.search(r'<a id="continue" href="([^"]+)"', start)
    assert onward, start
    auth_url = html.unescape(onward.group(1))
    with opener.open(auth_url, timeout=60) as page:
        return auth_url, page.read().decode()


@pytest.mark.anyio
async def test_each_caller_reaches_a_per_user_server_as_themselves(
    jwt_provider: Provider, project: Path, server_env: dict[str, str], start_http_server, tmp_path: Path
) -> None:
    configure(server_env, jwt_provider)
    # The operator's own login: the tool list, and sessions without an identity.
    jwt_provider.admin_call("account/operator")
    operator = subprocess.run(
        [toolgate_bin(), "--root", str(project), "mcp", "login", "guarded"],
        env={**server_env, "BROWSER": browser(tmp_path / "operator-cookies")},
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert operator.returncode == 0, operator.stdout + operator.stderr
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
