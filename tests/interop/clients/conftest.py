"""Fixtures for the real-client suite: a project folder, toolgate as the one MCP server of a
real Claude Code, Codex or Gemini CLI, and a scripted model endpoint (see fake_models.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# The OAuth provider fixture, shared with tests/interop/python/test_oauth.py.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oauth"))
pytest.register_assert_rewrite("oauth_provider")
from drive import ClientMissing, Run, run_claude, run_codex, run_gemini, toolgate_bin  # noqa: E402
from fake_models import FakeModel, Step  # noqa: E402
from oauth_provider import jwt_provider, provider  # noqa: E402, F401

PROBE = str(Path(__file__).parent / "probe_server.py")
CLIENTS = ["claude", "codex", "gemini"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 3001)))
    return root


def toolgate_server(project: Path, env: dict[str, str] | None = None) -> dict:
    binary = toolgate_bin()
    if not os.access(binary, os.X_OK):
        pytest.fail(f"toolgate binary not found at {binary}: run `cargo build -p toolgate`", pytrace=False)
    server = {"command": binary, "args": ["--root", str(project), "serve"]}
    # No user config or catalog cache from the machine running the tests.
    base = {
        "XDG_CONFIG_HOME": str(project.parent / "tg-config"),
        "XDG_CACHE_HOME": str(project.parent / "tg-cache"),
        "RUST_LOG": "info",
    }
    server["env"] = {**base, **(env or {})}
    return server


def mount_probe(
    project: Path,
    extra_tools: int = 0,
    delay: float = 0.0,
    resources: bool = False,
    ask_log: Path | None = None,
) -> None:
    """Mounts probe_server.py behind toolgate through the project's .mcp.json (with its
    resources when `resources`; with its tool that asks a form when `ask_log`, where it
    writes each answer it gets)."""
    env = {"PROBE_TOOLS": str(extra_tools), "PROBE_DELAY": str(delay)}
    if resources:
        env["PROBE_RESOURCES"] = "1"
    if ask_log is not None:
        env.update({"PROBE_ASK": "1", "PROBE_ASK_LOG": str(ask_log)})
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"probe": {"command": sys.executable, "args": [PROBE], "env": env}}})
    )
    # A project file's server starts only once the user trusted it, as a user would.
    done = toolgate(project, "mcp", "trust", "probe", timeout=60)
    assert done.returncode == 0, f"toolgate mcp trust failed: {done.stderr}"


def warm_catalog(project: Path) -> None:
    """Lists the mounted servers once, as an earlier session would have: their tools go into
    toolgate's catalog cache, so the next `serve` lists them at once. (A client that sends its
    first model request before a cold server is ready, as Codex 0.169 does, otherwise starts
    without them.)"""
    done = toolgate(project, "mcp", "list")
    assert done.returncode == 0, f"toolgate mcp list failed: {done.stdout}{done.stderr}"


def toolgate(
    project: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Runs `toolgate --root PROJECT ARGS…` as the user would in a terminal, with the same
    config and cache folders as the `serve` the clients start (plus `env`)."""
    full = {**os.environ, **toolgate_server(project)["env"], **(env or {})}
    return subprocess.run(
        [toolgate_bin(), "--root", str(project), *args],
        cwd=project,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def http_toolgate(project: Path) -> Iterator[Callable[[str], str]]:
    """Factory: `toolgate serve --http 127.0.0.1:0` for the project, with `config` as its
    user config (the same config folder as `toolgate_server`'s); returns its /mcp URL. The
    server is stopped at teardown."""
    started: list[subprocess.Popen] = []

    def start(config: str) -> str:
        env = {**os.environ, **toolgate_server(project)["env"]}
        folder = Path(env["XDG_CONFIG_HOME"]) / "toolgate"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.toml").write_text(config)
        log = project.parent / f"http-toolgate-{len(started)}.stderr"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [toolgate_bin(), "--root", str(project), "serve", "--http", "127.0.0.1:0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
            )
        started.append(proc)
        # It prints its URL once it listens, or exits (the deadline only stops a hang).
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            found = re.search(r"at (http://127\.0\.0\.1:\d+/mcp) \(", log.read_text(errors="replace"))
            if found:
                return found.group(1)
            time.sleep(0.05)
        raise AssertionError(f"toolgate serve --http printed no URL (exit {proc.poll()}):\n{log.read_text()}")

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=30)


def drive(
    client: str,
    project: Path,
    steps: list[Step],
    env: dict[str, str] | None = None,
    settings: dict | None = None,
    servers: dict | None = None,
) -> Run:
    """Runs `client` with toolgate as its MCP server `tg` (or with `servers`); the model
    follows `steps`. `settings` are Claude Code's (`--settings`), e.g. hooks."""
    model = FakeModel(steps)
    try:
        servers = servers or {"tg": toolgate_server(project, env)}
        try:
            if client == "claude":
                run = run_claude(project, servers, model, settings=settings)
            else:
                assert settings is None, "settings are Claude Code's"
                run = (run_gemini if client == "gemini" else run_codex)(project, servers, model)
        except ClientMissing as e:
            pytest.fail(str(e), pytrace=False)
    finally:
        model.close()
    return run
