"""The real authorization server of the OAuth tests, shared by tests/interop/python
(test_oauth.py, the Python MCP SDK as the client) and tests/interop/clients (Claude Code and
Codex): `oidc-provider` (installed by scripts/install-oauth-peers.sh) guarding the small MCP
server of provider.mjs, whose one tool `whoami` answers `hello ACCOUNT` for the account the
access token was issued to.

Both test folders put this folder on `sys.path` and import the `provider` fixture into their
conftest.py. A missing Node or oidc-provider fails the test; nothing skips.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = next((p for p in HERE.parents if (p / "Cargo.toml").is_file()), Path.cwd())
PEERS = REPO / ".cache" / "conformance-client" / "node_modules"
NODE = PEERS / "node" / "bin" / "node"
OIDC_PROVIDER = PEERS / "oidc-provider"
PROVIDER_SCRIPT = HERE / "provider.mjs"
# The one tool of the guarded server, as toolgate mounts it under the server name `guarded`.
SERVER = "guarded"
TOOL = f"mcp__{SERVER}__whoami"
# How long the provider may take to listen (Node loading oidc-provider on a busy machine).
STARTUP_TIMEOUT = 60.0


@dataclass
class Provider:
    issuer: str
    mcp: str
    admin: str
    account: str  # who logs in (the provider approves this user at once)

    def admin_call(self, what: str) -> dict:
        with urllib.request.urlopen(f"{self.admin}/{what}", timeout=30) as r:
            return json.load(r)

    def whoami(self) -> str:
        """What the `whoami` tool answers for a token of this provider's user."""
        return f"hello {self.account}"


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[Provider]:
    """The provider and its MCP server, ready once the script printed its URLs; stopped at
    teardown. Each run logs in a different user, so a result names this run's login."""
    yield from run_provider(tmp_path, {})


# The `aud` of the JWT access tokens `jwt_provider` issues for toolgate's own /mcp.
JWT_AUDIENCE = "toolgate-e2e"


@pytest.fixture
def jwt_provider(tmp_path: Path) -> Iterator[Provider]:
    """`provider`, also issuing JWT access tokens (`aud` = JWT_AUDIENCE) for any other
    loopback /mcp URL: toolgate `serve --http` as the resource server."""
    yield from run_provider(tmp_path, {"JWT_AUDIENCE": JWT_AUDIENCE})


def run_provider(tmp_path: Path, extra_env: dict[str, str]) -> Iterator[Provider]:
    if not NODE.exists() or not (OIDC_PROVIDER / "package.json").exists():
        pytest.fail(
            f"oidc-provider or Node 22 missing under {PEERS}: run scripts/install-oauth-peers.sh",
            pytrace=False,
        )
    account = f"user-{secrets.token_hex(4)}"
    log_path = tmp_path / "provider.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(NODE), str(PROVIDER_SCRIPT), str(OIDC_PROVIDER), account],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, **extra_env},
        )
    try:
        assert proc.stdout is not None
        # The script prints its URLs once both servers listen (or exits, closing stdout).
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(STARTUP_TIMEOUT)
        line = proc.stdout.readline() if ready else b""
        log = log_path.read_text(errors="replace")
        assert line, f"the provider printed no URLs within {STARTUP_TIMEOUT} s; its log:\n{log}"
        urls = json.loads(line)
        yield Provider(urls["issuer"], urls["mcp"], urls["admin"], account)
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_claude_json(home: Path, provider: Provider, callback_port: int) -> Path:
    """The user's `~/.claude.json` with the login-protected server, as Claude Code keeps it
    (`"oauth": {"callbackPort": …}` is how Claude Code pins the login's callback port)."""
    path = home / ".claude.json"
    server = {"type": "http", "url": provider.mcp, "oauth": {"callbackPort": callback_port}}
    path.write_text(json.dumps({"mcpServers": {SERVER: server}}))
    return path


def browser(jar: Path) -> str:
    """A `$BROWSER` for `toolgate mcp login`: curl following the provider's redirects (login
    and consent are approved at once, as a user clicking "Allow") back to the callback."""
    return f"curl -sS -L -c {jar} -b {jar} -o /dev/null"


def stored_tokens(config_home: Path) -> list[str]:
    """Every token toolgate keeps in its 0600 file store (`oauth_credentials_store = "file"`)
    under `config_home` (the XDG_CONFIG_HOME it ran with)."""
    store = config_home / "toolgate" / "mcp-oauth"
    tokens = []
    for record in store.glob("*.json"):
        for issuer in json.loads(record.read_text())["issuers"].values():
            response = issuer["credentials"]["token_response"]
            tokens += [response[k] for k in ("access_token", "refresh_token", "id_token") if response.get(k)]
    return tokens
