"""Runs the real Claude Code, Codex and Gemini CLIs (pinned, from npm, in .cache/peers/clients)
non-interactively against a `FakeModel`, with MCP servers given as a dict like `.mcp.json`'s
`mcpServers`. Each run gets its own HOME / CODEX_HOME, so nothing of the user's leaks in."""

from __future__ import annotations

import http.cookiejar
import json
import os
import pty
import re
import select
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from fake_models import FakeModel

REPO = next(
    (p for p in Path(__file__).resolve().parents if (p / "Cargo.toml").is_file()),
    Path.cwd(),
)
PEERS = Path(os.environ.get("PEERS") or REPO / ".cache" / "peers")
CLIENTS = PEERS / "clients" / "node_modules" / ".bin"
NODE_BIN = PEERS / "npm" / "node_modules" / "node" / "bin"
RUN_TIMEOUT = 180


class ClientMissing(Exception):
    """A pinned client is not installed: the run fails, never skips."""


@dataclass
class Run:
    """One client run: its exit, output, and what it sent the model."""

    code: int
    stdout: str
    stderr: str
    model: FakeModel


def toolgate_bin() -> str:
    return os.environ.get("TOOLGATE_BIN") or str(REPO / "target" / "debug" / "toolgate")


def client_home(client: str, workdir: Path) -> Path:
    """The HOME a run of `client` ("claude", "codex" or "gemini") in `workdir` gets: the
    user's home folder as that client and the MCP servers it starts see it
    (`~/.claude.json`, `~/.gemini/settings.json` …)."""
    return workdir.parent / {"claude": "claude-home", "gemini": "gemini-home"}.get(client, "codex-user")


def _exe(name: str) -> str:
    path = CLIENTS / name
    if not os.access(path, os.X_OK):
        raise ClientMissing(
            f"{name} not found at {path}: run `bash scripts/install-peers.sh` (installs the pinned "
            "@anthropic-ai/claude-code, @openai/codex and @google/gemini-cli)"
        )
    return str(path)


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "GEMINI_", "GOOGLE_", "TOOLGATE_"))
    }
    env["HOME"] = str(home)
    env["PATH"] = f"{NODE_BIN}:{env.get('PATH', '/usr/bin:/bin')}"
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env["NO_COLOR"] = "1"
    return env


def run_claude(
    workdir: Path,
    servers: dict[str, Any],
    model: FakeModel,
    extra_env: dict[str, str] | None = None,
    prompt: str = "Use the tools as asked.",
    settings: dict[str, Any] | None = None,
) -> Run:
    """`claude -p PROMPT` in `workdir` with `servers` as its only MCP servers, talking to
    `model`, with `settings` (as in a settings.json, e.g. `hooks`) given by `--settings`."""
    exe = _exe("claude")
    home = client_home("claude", workdir)
    home.mkdir(exist_ok=True)
    config = workdir.parent / "claude-mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    env = _env(home)
    env.update(
        {
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-tests",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "MCP_TIMEOUT": "60000",
        }
    )
    env.update(extra_env or {})
    allowed = ",".join(f"mcp__{name}" for name in servers)
    cmd = [
        exe, "-p", prompt,
        "--mcp-config", str(config), "--strict-mcp-config",
        "--allowedTools", allowed,
        "--model", "claude-sonnet-4-5",
        "--output-format", "json",
    ]
    if settings is not None:
        settings_file = workdir.parent / "claude-settings.json"
        settings_file.write_text(json.dumps(settings))
        cmd += ["--settings", str(settings_file)]
    p = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    return Run(p.returncode, p.stdout, p.stderr, model)


def _toml(value: Any) -> str:
    return json.dumps(value)  # JSON strings, arrays and numbers are valid TOML values


def codex_home(workdir: Path) -> Path:
    """CODEX_HOME of a Codex run in `workdir`: its config.toml and its logins."""
    return workdir.parent / "codex-home"


def run_codex(
    workdir: Path,
    servers: dict[str, Any],
    model: FakeModel,
    extra_env: dict[str, str] | None = None,
) -> Run:
    """`codex exec` in `workdir` with `servers` as its MCP servers, talking to `model`
    through a custom provider with the Responses wire API."""
    exe = _exe("codex")
    home = codex_home(workdir)
    home.mkdir(exist_ok=True)
    lines = [
        'model = "fake-model"',
        'model_provider = "fake"',
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        "[model_providers.fake]",
        'name = "fake"',
        f"base_url = {_toml(model.url + '/v1')}",
        'wire_api = "responses"',
        'env_key = "FAKE_MODEL_KEY"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
    ]
    # Logins (`codex mcp login`) in a 0600 file under CODEX_HOME, not the OS keyring.
    lines.append('mcp_oauth_credentials_store = "file"')
    for name, server in servers.items():
        lines.append(f"[mcp_servers.{name}]")
        if "url" in server:
            lines.append(f"url = {_toml(server['url'])}")
        else:
            lines.append(f"command = {_toml(server['command'])}")
            lines.append(f"args = {_toml(server.get('args', []))}")
        lines.append("startup_timeout_sec = 60")
        lines.append("tool_timeout_sec = 120")
        # exec mode cannot ask; without this every non-read-only MCP call is refused.
        lines.append('default_tools_approval_mode = "approve"')
        if server.get("env"):
            lines.append(f"[mcp_servers.{name}.env]")
            lines += [f"{k} = {_toml(v)}" for k, v in server["env"].items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")
    env = _env(client_home("codex", workdir))
    env.update({"CODEX_HOME": str(home), "FAKE_MODEL_KEY": "fake-key"})
    env.update(extra_env or {})
    cmd = [exe, "exec", "--skip-git-repo-check", "-C", str(workdir), "Use the tools as asked."]
    p = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    return Run(p.returncode, p.stdout, p.stderr, model)


def run_gemini(
    workdir: Path,
    servers: dict[str, Any],
    model: FakeModel,
    extra_env: dict[str, str] | None = None,
    prompt: str = "Use the tools as asked.",
) -> Run:
    """`gemini -p PROMPT --approval-mode yolo` in `workdir` with `servers` as its MCP servers
    (in `~/.gemini/settings.json`, trusted), talking to `model` through
    `GOOGLE_GEMINI_BASE_URL` with the API-key login (`GEMINI_API_KEY`)."""
    exe = _exe("gemini")
    home = client_home("gemini", workdir)
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    mcp = {}
    for name, server in servers.items():
        entry: dict[str, Any] = {"trust": True, "timeout": 120_000}
        if "url" in server:
            entry["httpUrl"] = server["url"]
        else:
            entry.update({k: server[k] for k in ("command", "args", "env") if k in server})
        mcp[name] = entry
    settings = {
        "mcpServers": mcp,
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "model": {"skipNextSpeakerCheck": True},
        # The API-key login; the key and the endpoint come from the environment.
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env = _env(home)
    env.update(
        {
            "GOOGLE_GEMINI_BASE_URL": model.url,
            "GEMINI_API_KEY": "fake-gemini-key-for-tests",
            # The project folder is trusted, as a user's own checkout is.
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
    )
    env.update(extra_env or {})
    # gemini-3-pro-preview: the models whose prompt makes `wait_for_previous` a must.
    cmd = [exe, "-p", prompt, "--approval-mode", "yolo", "-m", "gemini-3-pro-preview", "--output-format", "json"]
    p = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    return Run(p.returncode, p.stdout, p.stderr, model)


@dataclass
class Login:
    """One `mcp login` run: its exit status and everything it printed on its terminal."""

    code: int
    output: str
    authorize_url: str


# Terminal escapes (CSI sequences and OSC 8 hyperlinks) between a client's words.
_ESCAPES = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-9;?]*[A-Za-z]")


def login(client: str, workdir: Path, servers: dict[str, Any], name: str) -> Login:
    """`CLIENT mcp login NAME --no-browser` on a terminal (a pseudo-terminal: Claude Code
    refuses to log in without one), as a user on a machine without a browser does it: the
    client prints the authorization URL; the "browser" (an HTTP client keeping the
    provider's cookies) opens it and follows the provider's redirects — login and consent
    approved at once, as a user clicking "Allow" — to the client's redirect URI, and that
    URL is pasted back at the client's prompt."""
    exe = _exe(client)
    if client == "claude":
        home = client_home("claude", workdir)
        home.mkdir(exist_ok=True)
        (home / ".claude.json").write_text(json.dumps({"mcpServers": servers}))
        env = _env(home)
        env.update({"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"})
    else:
        home = codex_home(workdir)
        home.mkdir(exist_ok=True)
        lines = ['mcp_oauth_credentials_store = "file"']
        for server_name, server in servers.items():
            lines += [f"[mcp_servers.{server_name}]", f"url = {_toml(server['url'])}"]
        (home / "config.toml").write_text("\n".join(lines) + "\n")
        env = _env(client_home("codex", workdir))
        env["CODEX_HOME"] = str(home)
    env["TERM"] = "dumb"
    master, child = pty.openpty()
    proc = subprocess.Popen(
        [exe, "mcp", "login", name, "--no-browser"],
        cwd=workdir, env=env, stdin=child, stdout=child, stderr=child, close_fds=True,
    )
    os.close(child)
    seen = bytearray()

    def text() -> str:
        return _ESCAPES.sub("", seen.decode(errors="replace")).replace("\r", "")

    def read_until(done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not done() and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the client closed its terminal
                    return
                if not chunk:
                    return
                seen.extend(chunk)

    try:
        auth = re.compile(r"(https?://[^\s]+/auth\?[^\s]*redirect_uri=[^\s]+)")
        read_until(lambda: bool(auth.search(text())) or proc.poll() is not None)
        found = auth.search(text())
        assert found, f"{client} printed no authorization URL; it printed:\n{text()}"
        authorize_url = found.group(1)
        redirect = parse_qs(urlparse(authorize_url).query)["redirect_uri"][0]
        callback = _approve(authorize_url, redirect)
        os.write(master, (callback + "\r").encode())
        read_until(lambda: proc.poll() is not None)
        code = proc.wait(timeout=RUN_TIMEOUT)
        # What it wrote before exiting is in the terminal's buffer already.
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen.extend(chunk)
        return Login(code, text(), authorize_url)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def _approve(url: str, redirect_uri: str) -> str:
    """Follows the provider's redirects from `url`, keeping its cookies, until the one to
    `redirect_uri`; returns that URL (with the code and state)."""

    class Stop(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(Stop, urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    visited = []
    for _ in range(20):
        visited.append(url)
        if url.startswith(redirect_uri):
            assert "code=" in url, f"the provider refused: {url}"
            return url
        try:
            with opener.open(url, timeout=30) as response:
                location = response.headers.get("location")
        except urllib.error.HTTPError as redirect:
            location = redirect.headers.get("location")
        assert location, f"{url} answered without a redirect"
        url = urllib.parse.urljoin(url, location)
    raise AssertionError(f"no redirect to the client after {visited}")
