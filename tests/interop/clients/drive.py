"""Runs the real Claude Code and Codex CLIs (pinned, from npm, in .cache/peers/clients)
non-interactively against a `FakeModel`, with MCP servers given as a dict like `.mcp.json`'s
`mcpServers`. Each run gets its own HOME / CODEX_HOME, so nothing of the user's leaks in."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    """The HOME a run of `client` ("claude" or "codex") in `workdir` gets: the user's home
    folder as that client and the MCP servers it starts see it (`~/.claude.json` …)."""
    return workdir.parent / ("claude-home" if client == "claude" else "codex-user")


def _exe(name: str) -> str:
    path = CLIENTS / name
    if not os.access(path, os.X_OK):
        raise ClientMissing(
            f"{name} not found at {path}: run `bash scripts/install-peers.sh` (installs the pinned "
            "@anthropic-ai/claude-code and @openai/codex)"
        )
    return str(path)


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "TOOLGATE_"))
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


def run_codex(
    workdir: Path,
    servers: dict[str, Any],
    model: FakeModel,
    extra_env: dict[str, str] | None = None,
) -> Run:
    """`codex exec` in `workdir` with `servers` as its MCP servers, talking to `model`
    through a custom provider with the Responses wire API."""
    exe = _exe("codex")
    home = workdir.parent / "codex-home"
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
    for name, server in servers.items():
        lines.append(f"[mcp_servers.{name}]")
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
