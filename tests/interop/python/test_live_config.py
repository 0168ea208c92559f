"""Config changes apply while `toolgate serve` runs: a server added to a config file is
mounted and its tools reach the client with `notifications/tools/list_changed`, a project
server starts in the running session once `toolgate mcp trust` trusts it, a changed entry is
restarted, a removed one disappears, and a file saved half-written changes nothing.

The mounted server is `asking_server.py` (the Python SDK's `MCPServer`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ASKER, stdio_connection, toolgate_bin
from mcp import types

pytestmark = pytest.mark.anyio

# A guard against a hang, not a speed goal: the machine may be loaded.
GUARD = 60


class ListChanges:
    """Counts the `notifications/tools/list_changed` one client received."""

    def __init__(self) -> None:
        self.count = 0
        self.arrived = anyio.Event()

    async def handle(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.arrived.set()
            self.arrived = anyio.Event()


async def until_tools(client: Any, changes: ListChanges, wanted: Any) -> set[str]:
    """Lists the tools after each `list_changed` until `wanted(names)` holds."""
    with anyio.fail_after(GUARD):
        while True:
            arrived = changes.arrived
            names = {t.name for t in (await client.list_tools()).tools}
            if wanted(names):
                return names
            await arrived.wait()


async def until_logged(stderr: Path, text: str) -> None:
    with anyio.fail_after(GUARD):
        while text not in stderr.read_text(errors="replace"):
            await anyio.sleep(0.1)  # a poll interval, not a deadline


def asker_entry(name: str, extra: str = "") -> str:
    return f'\n[mcp_servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{ASKER}"]\n{extra}'


def mcp(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [toolgate_bin(), "--root", str(project), "mcp", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_servers_added_trusted_changed_and_removed_apply_to_the_running_session(
    project: Path, tmp_path: Path, server_env: dict[str, str]
) -> None:
    config = Path(server_env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    # Every tool in tools/list, so a mounted server's tools are seen there.
    base = config.read_text() + '\n[disclosure]\nmode = "off"\n'
    config.write_text(base)
    changes = ListChanges()
    stderr = tmp_path / "serve.stderr"
    async with stdio_connection(
        project, server_env, "legacy", stderr, message_handler=changes.handle
    ) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "read_file" in names and not any(n.startswith("mcp__") for n in names), names

        # Added to the user config: mounted and started, announced with list_changed.
        config.write_text(base + asker_entry("asker"))
        await until_tools(client, changes, lambda n: "mcp__asker__where" in n)
        result = await client.call_tool("mcp__asker__where", {})
        assert not result.is_error, result

        # A project server (.mcp.json) needs the user's trust: listed by `mcp list` as not
        # trusted, not started; `mcp trust` in another terminal starts it in this session.
        (project / ".mcp.json").write_text(
            json.dumps({"mcpServers": {"proj": {"command": sys.executable, "args": [str(ASKER)]}}})
        )
        trusted = mcp(project, server_env, "trust", "proj")
        assert trusted.returncode == 0, trusted.stdout + trusted.stderr
        await until_tools(client, changes, lambda n: "mcp__proj__where" in n)
        result = await client.call_tool("mcp__proj__where", {})
        assert not result.is_error, result

        # A file saved half-written changes nothing: the servers keep running.
        config.write_text(base + asker_entry("asker") + "\n[mcp_servers.broken\n")
        await until_logged(stderr, "was not applied")
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"mcp__asker__where", "mcp__proj__where"} <= names, names

        # A changed entry is restarted; its tools are the same, so they come back as they
        # were.
        config.write_text(base + asker_entry("asker", "tool_timeout_sec = 30\n"))
        await until_logged(stderr, "restarted `asker`")
        names = await until_tools(client, changes, lambda n: "mcp__asker__where" in n)
        assert "mcp__proj__where" in names, names
        result = await client.call_tool("mcp__asker__where", {})
        assert not result.is_error, result

        # Removed from the config: its tools disappear; the project server stays.
        config.write_text(base)
        names = await until_tools(client, changes, lambda n: "mcp__asker__where" not in n)
        assert "mcp__proj__where" in names, names
        result = await client.call_tool("mcp__proj__where", {})
        assert not result.is_error, result
    log = stderr.read_text(errors="replace")
    assert "added `asker`" in log, log[-3000:]
    assert "removed `asker`" in log, log[-3000:]
