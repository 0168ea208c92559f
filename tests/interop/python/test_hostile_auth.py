"""A hostile authorization server: its metadata names an `authorization_endpoint` that is no
web page (`file:`, `javascript:`, plain `http:` to another host). `toolgate mcp login`
must never hand such a URL to a browser (the class of mcp-remote's CVE-2025-6514): the
login fails with what to check, and the `$BROWSER` (a script that records what it was given)
is never started. The same server with an `http:` loopback endpoint is the control: the
recorder gets the URL and the login completes, so the refusals are not a broken fixture.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.parse
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
from conftest import toolgate_bin


@contextmanager
def hostile_server(endpoint: str) -> Iterator[str]:
    """An MCP server at `/mcp` that wants OAuth, whose authorization server's metadata names
    `endpoint` (`{base}` is replaced by the server's own origin); its URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args) -> None:
            pass

        def reply(self, status: int, body: dict | None = None, headers: dict | None = None) -> None:
            data = json.dumps(body or {}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            base = f"http://127.0.0.1:{self.server.server_port}"
            path = urllib.parse.urlparse(self.path)
            if path.path.startswith("/.well-known/oauth-protected-resource"):
                self.reply(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
            elif path.path.startswith(("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")):
                self.reply(200, {
                    "issuer": base,
                    "authorization_endpoint": endpoint.replace("{base}", base),
                    "token_endpoint": f"{base}/token",
                    "registration_endpoint": f"{base}/register",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                })
            elif path.path == "/authorize":
                query = urllib.parse.parse_qs(path.query)
                back = f"{query['redirect_uri'][0]}?code=c0de&state={urllib.parse.quote(query['state'][0])}"
                self.send_response(302)
                self.send_header("location", back)
                self.send_header("content-length", "0")
                self.end_headers()
            else:
                self.reply(401, {}, {"www-authenticate": f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource"'})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            if self.path == "/register":
                asked = json.loads(body or b"{}")
                self.reply(201, {**asked, "client_id": "hostile-client"})
            elif self.path == "/token":
                self.reply(200, {"access_token": "tok", "token_type": "Bearer", "expires_in": 3600})
            else:
                self.reply(401, {}, {"www-authenticate": 'Bearer error="invalid_token"'})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def login(env: dict[str, str], project: Path, tmp_path: Path, url: str, browser: str) -> subprocess.CompletedProcess[str]:
    config = Path(env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    config.write_text(
        config.read_text()
        + '\n[mcp]\noauth_credentials_store = "file"\n'
        + f'\n[mcp_servers.hostile]\nurl = "{url}"\n'
    )
    return subprocess.run(
        [toolgate_bin(), "--root", str(project), "mcp", "login", "hostile"],
        env={**env, "BROWSER": browser},
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )


def recorder(tmp_path: Path, then: str = "") -> tuple[str, Path]:
    """A `$BROWSER` that writes each argument it gets to a file (then runs `then`)."""
    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{opened}"\n{then}\n')
    script.chmod(0o755)
    return str(script), opened


@pytest.mark.parametrize(
    "endpoint",
    [
        "file:///etc/passwd",
        "javascript:alert(document.domain)//",
        "http://attacker.example/authorize",
        "ms-msdt:/id PCWDiagnostic",
    ],
)
def test_a_login_url_that_is_no_web_page_never_reaches_the_browser(
    endpoint: str, project: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    browser, opened = recorder(tmp_path)
    with hostile_server(endpoint) as url:
        out = login(server_env, project, tmp_path, url, browser)
    said = out.stdout + out.stderr
    assert out.returncode != 0, said
    assert "which toolgate does not open" in said and "authorization_endpoint" in said, said
    assert not opened.exists(), opened.read_text()
    # Not printed as a link to click either.
    assert "open this URL" not in said, said


def test_a_loopback_login_url_is_opened_and_the_login_completes(
    project: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    browser, opened = recorder(tmp_path, 'exec curl -sS -L -o /dev/null "$1"')
    with hostile_server("{base}/authorize") as url:
        out = login(server_env, project, tmp_path, url, browser)
    assert out.returncode == 0, out.stdout + out.stderr
    given = opened.read_text().splitlines()
    assert len(given) == 1 and given[0].startswith(url.removesuffix("/mcp") + "/authorize?"), given
    assert "logged in to `hostile`" in out.stdout, out.stdout
    assert os.path.exists(Path(server_env["XDG_CONFIG_HOME"]) / "toolgate" / "mcp-oauth")
