"""The audit log through the real binary: `[audit] path` in the user config gives one JSON line
per tools/call on stdio and HTTP, mounted servers' tools included, with a digest instead of
argument values; `path = "-"` is refused by `serve` on stdio."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import anyio
import pytest
from conftest import stdio_connection, toolgate_bin

pytestmark = pytest.mark.anyio

TIMEOUT = 60


def digest(args: dict) -> str:
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def user_config(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"


@pytest.fixture
def audit_log(tmp_path: Path, server_env: dict[str, str]) -> Path:
    """The user config sends the audit log to a file (in a folder that does not exist yet) and
    denies write_file. Requested before `connect`, so the server starts with it."""
    path = tmp_path / "audit" / "audit.jsonl"
    config = user_config(server_env)
    config.write_text(
        config.read_text()
        + f'\n[audit]\npath = "{path}"\n\n[permissions]\ndeny = ["write_file"]\n'
    )
    return path


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_every_call_is_one_line_with_its_decision(audit_log: Path, connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            ok = await client.call_tool("read_file", {"path": "small.txt"})
            assert not ok.is_error, ok
            denied = await client.call_tool("write_file", {"path": "w.txt", "content": "s3cret"})
            assert denied.is_error, denied
            unknown = await client.call_tool("no_such_tool", {})
            assert unknown.is_error, unknown
    text = audit_log.read_text()
    assert "s3cret" not in text and "small.txt" not in text, text
    lines = read_lines(audit_log)
    assert [(l["tool"], l["decision"], l["outcome"]) for l in lines] == [
        ("read_file", "allowed", "ok"),
        ("write_file", "denied", "refused"),
        ("no_such_tool", "unchecked", "refused"),
    ], lines
    read, denied_line, _ = lines
    assert read["args_sha256"] == digest({"path": "small.txt"})
    assert read["result_bytes"] > 0
    assert denied_line["rule"] == 'deny = ["write_file"]', denied_line
    sessions = {l["session"] for l in lines}
    if (connect.transport, connect.mode) == ("http", "auto"):
        # The 2026-07-28 protocol over HTTP is stateless: each request is a session of its
        # own, and this SDK names no client in it.
        assert len(sessions) == 3, lines
    else:
        # One session, named by the client as it introduced itself.
        assert len(sessions) == 1, lines
        assert read["client"], read
    assert (audit_log.stat().st_mode & 0o777) == 0o600


async def test_a_mounted_servers_tool_is_audited_under_its_full_name(
    audit_log: Path, project: Path, tmp_path: Path, mounted_env: dict[str, str]
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with stdio_connection(project, mounted_env, "legacy", tmp_path / "err") as client:
            result = await client.call_tool("mcp__asker__where", {})
            assert not result.is_error, result
    lines = read_lines(audit_log)
    assert [(l["tool"], l["resolved"], l["outcome"]) for l in lines] == [
        ("mcp__asker__where", "mcp__asker__where", "ok")
    ], lines


def test_serve_on_stdio_refuses_an_audit_log_on_stdout(
    project: Path, server_env: dict[str, str]
) -> None:
    config = user_config(server_env)
    config.write_text(config.read_text() + '\n[audit]\npath = "-"\n')
    done = subprocess.run(
        [toolgate_bin(), "serve", "--root", str(project)],
        env=server_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2, done
    assert "audit.path" in done.stderr and "--http" in done.stderr, done.stderr
    assert done.stdout == "", "nothing may reach the MCP transport"
