"""toolgate `serve --http` as an OAuth-protected MCP server, logged in to through a real
OpenID provider.

`oidc-provider` (tests/interop/oauth/provider.mjs, fixture `jwt_provider`) issues JWT access
tokens for toolgate's /mcp URL (`aud` = JWT_AUDIENCE, signed with its own keys). toolgate is
configured with `[server.auth]` naming that issuer and audience; the Python MCP SDK's OAuth
client does the whole dance a real client does: 401 → protected-resource metadata → issuer
metadata → dynamic registration → authorization code with PKCE and a resource indicator
(the "browser" follows the provider's redirects; it approves at once) → token → tool call.
A missing Node, oidc-provider or binary fails the test; nothing skips.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth_provider import JWT_AUDIENCE, Provider, free_port

SCOPE = "mcp:tools"


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """Follows the provider's redirects (login and consent approved at once) until the one
    to the client's redirect URI, whose code and state the callback handler returns."""

    def __init__(self, redirect_uri: str) -> None:
        self.redirect_uri = redirect_uri
        self.result: AuthorizationCodeResult | None = None
        self.visited: list[str] = []

    async def open(self, url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            for _ in range(20):
                self.visited.append(url)
                if url.startswith(self.redirect_uri):
                    query = parse_qs(urlparse(url).query)
                    assert "code" in query, f"the provider refused: {query}"
                    self.result = AuthorizationCodeResult(
                        code=query["code"][0],
                        state=query.get("state", [None])[0],
                        iss=query.get("iss", [None])[0],
                    )
                    return
                response = await http.get(url)
                location = response.headers.get("location")
                assert location, f"{url} answered {response.status_code} without a redirect: {response.text[:500]}"
                url = urljoin(url, location)
        raise AssertionError(f"no redirect to the client after {self.visited}")

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None, f"the browser never reached the client: {self.visited}"
        return self.result


def sdk_auth(server_url: str, client_name: str) -> tuple[OAuthClientProvider, Browser, MemoryStorage]:
    """The Python SDK's OAuth client for `server_url`, whose "browser" approves at once."""
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    browser = Browser(redirect_uri)
    storage = MemoryStorage()
    auth = OAuthClientProvider(
        server_url=server_url,
        client_metadata=OAuthClientMetadata(
            client_name=client_name,
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    return auth, browser, storage


def jwt_claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def text_of(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.anyio
async def test_the_sdk_logs_in_through_a_real_provider_and_calls_a_tool(
    jwt_provider: Provider, project: Path, server_env: dict[str, str], start_http_server
) -> None:
    config = Path(server_env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    config.write_text(
        config.read_text()
        + f'\n[server.auth]\nissuer = "{jwt_provider.issuer}"\naudience = "{JWT_AUDIENCE}"\n'
        + f'required_scopes = ["{SCOPE}"]\n'
    )
    server = start_http_server(project)
    assert f"OAuth tokens from {jwt_provider.issuer}" in server.stderr(), server.stderr()
    metadata_url = f"{server.origin}/.well-known/oauth-protected-resource/mcp"

    # Without a token: 401 pointing at the metadata, which names the real provider.
    request = urllib.request.Request(server.url, data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    challenge = refused.value.headers["WWW-Authenticate"]
    assert f'resource_metadata="{metadata_url}"' in challenge, challenge
    with urllib.request.urlopen(metadata_url, timeout=30) as r:
        metadata = json.load(r)
    assert metadata["resource"] == server.url
    assert metadata["authorization_servers"] == [jwt_provider.issuer]
    assert metadata["scopes_supported"] == [SCOPE]

    auth, browser, storage = sdk_auth(server.url, "toolgate serve oauth test")
    async with create_mcp_http_client(auth=auth) as http:
        async with Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "read_file" in names, names
            (project / "hello.txt").write_text("hello through the door\n")
            result = await client.call_tool("read_file", {"path": "hello.txt"})
            assert not result.is_error, text_of(result)
            assert "hello through the door" in text_of(result), text_of(result)

    # The login went through the provider, with a resource indicator for toolgate's URL, and
    # the token toolgate accepted is the provider's JWT for this run's user.
    assert any(u.startswith(f"{jwt_provider.issuer}/auth?") for u in browser.visited), browser.visited
    assert storage.tokens is not None
    claims = jwt_claims(storage.tokens.access_token)
    assert claims["iss"] == jwt_provider.issuer
    assert claims["aud"] == JWT_AUDIENCE
    assert claims["sub"] == jwt_provider.account
    assert SCOPE in claims["scope"].split()

    # The same token with one byte of its signature changed is refused.
    token = storage.tokens.access_token
    forged = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    request = urllib.request.Request(
        server.url,
        data=b"{}",
        method="POST",
        headers={"Authorization": f"Bearer {forged}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    assert 'error="invalid_token"' in refused.value.headers["WWW-Authenticate"]
