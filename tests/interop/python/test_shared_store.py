"""What replicas share in a real Redis (`[mcp] shared_store = "redis://…"`; Debian's package,
installed by scripts/install-peers.sh; fixture `redis_url` in conftest.py): the catalog cache —
what one toolgate learned of a mounted server's tools, another toolgate with another cache
folder lists before the server has started — and (test_oauth.py) OAuth logins."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import stdio_connection, toolgate_bin

TRACED = Path(__file__).with_name("traced_server.py")


def user_config(home: Path, redis: str, flag: Path) -> dict[str, str]:
    """A user of its own (own config and cache folders) mounting the traced server."""
    config = home / "xdg-config" / "toolgate"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        f'[mcp]\nshared_store = "{redis}"\n'
        f'[mcp_servers.slow]\ncommand = "{sys.executable}"\n'
        f'args = ["{TRACED}", "--slow-if", "{flag}"]\n'
    )
    return {
        "XDG_CONFIG_HOME": str(home / "xdg-config"),
        "XDG_CACHE_HOME": str(home / "xdg-cache"),
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
    }


@pytest.mark.anyio
async def test_a_replica_lists_a_starting_servers_tools_from_the_shared_catalog(
    project: Path, tmp_path: Path, redis_url: str
) -> None:
    flag = tmp_path / "slow"
    first = user_config(tmp_path / "first", redis_url, flag)
    listed = subprocess.run(
        [toolgate_bin(), "--root", str(project), "mcp", "list"],
        env=first, capture_output=True, text=True, timeout=120,
    )
    assert " ready " in listed.stdout, listed.stdout + listed.stderr
    keys = subprocess.run(
        ["redis-cli", "-u", redis_url, "--scan", "--pattern", "toolgate:catalog:*"],
        capture_output=True, text=True, timeout=30,
    ).stdout.split()
    assert len(keys) == 1, keys

    # Another machine: its own (empty) cache folder, and now the server takes ten minutes
    # to start. Its first list still has the server's tool, from Redis.
    flag.touch()
    second = user_config(tmp_path / "second", redis_url, flag)
    async with stdio_connection(project, second, "legacy", tmp_path / "stderr") as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert "mcp__slow__trace_seen" in names, names
    assert not (tmp_path / "second" / "xdg-cache" / "toolgate" / "catalog").exists()


def test_a_project_may_not_choose_the_shared_store(project: Path, tmp_path: Path) -> None:
    (project / ".toolgate").mkdir(exist_ok=True)
    (project / ".toolgate" / "config.toml").write_text(
        '[mcp]\nshared_store = "redis://evil:6379"\n'
    )
    env = user_config(tmp_path / "user", "redis://127.0.0.1:1/0", tmp_path / "flag")
    shown = subprocess.run(
        [toolgate_bin(), "--root", str(project), "config", "show"],
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert shown.returncode != 0, shown.stdout
    assert "mcp.shared_store" in shown.stderr, shown.stderr
