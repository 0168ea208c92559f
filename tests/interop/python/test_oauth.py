"""MCP authorization end to end, against a real OpenID provider.

`oidc-provider` (installed by scripts/install-oauth-peers.sh) guards a small MCP server
(tests/interop/oauth/provider.mjs; fixture in tests/interop/oauth/oauth_provider.py, shared
with the real-client suite). The server is configured as a user would have it, in
`~/.claude.json` with Claude Code's `"oauth": {"callbackPort": …}`. The test drives the real
binary: `toolgate mcp list` shows `needs login`; `toolgate mcp login` registers toolgate
dynamically, opens `$BROWSER` (curl following the provider's redirects, with the provider
approving at once, as a user clicking "Allow") and stores the tokens in a 0600 file; `serve`
uses them, refreshes on a 401, turns `needs login` when the grant is revoked, and picks up a
new login made meanwhile without a restart; `toolgate mcp logout` forgets the tokens, after
which a call (the tool listed from the catalog cache) tells the model a human must log in.
"""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import anyio
import pytest
from conftest import stdio_connection, toolgate_bin
from oauth_provider import TOOL, Provider, browser, free_port, write_claude_json


def run(env: dict[str, str], root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [toolgate_bin(), "--root", str(root), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def listed(env: dict[str, str], root: Path) -> dict:
    out = run(env, root, "mcp", "list", "--json")
    assert out.returncode == 0, out.stderr
    servers = json.loads(out.stdout)["servers"]
    return next(s for s in servers if s["name"] == "guarded")


def text_of(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.anyio
async def test_login_serve_refresh_revoke_logout(
    provider: Provider, project: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    env = dict(server_env)
    home = Path(env["HOME"])
    config = Path(env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    config.write_text(config.read_text() + '\n[mcp]\noauth_credentials_store = "file"\n')
    port = free_port()
    write_claude_json(home, provider, port)
    env["BROWSER"] = browser(tmp_path / "browser-cookies")

    # Before any login: a clear state, not a failure.
    before = listed(env, project)
    assert before["status"] == "needs login", before
    assert before["login_command"] == "toolgate mcp login guarded"
    # `toolgate doctor` calls it a problem and names the command, not "still starting".
    doctor = run(env, project, "doctor")
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "guarded: needs login" in doctor.stdout, doctor.stdout
    assert "toolgate mcp login guarded" in doctor.stdout, doctor.stdout

    login = run(env, project, "mcp", "login", "guarded")
    assert login.returncode == 0, login.stdout + login.stderr
    assert f"{provider.issuer}/auth?" in login.stdout, login.stdout
    assert f"redirect_uri=http%3A%2F%2Flocalhost%3A{port}%2Fcallback" in login.stdout
    assert "code_challenge_method=S256" in login.stdout
    assert "resource=" in login.stdout
    assert "logged in to `guarded`" in login.stdout
    doctor = run(env, project, "doctor")
    assert "guarded: logged in" in doctor.stdout, doctor.stdout
    stats = provider.admin_call("stats")
    assert stats["registrations"] == 1 and stats["codeGrants"] == 1, stats

    store = Path(env["XDG_CONFIG_HOME"]) / "toolgate" / "mcp-oauth"
    records = [p for p in store.iterdir() if p.suffix == ".json"]
    assert len(records) == 1, list(store.iterdir())
    assert stat.S_IMODE(records[0].stat().st_mode) == 0o600
    record = json.loads(records[0].read_text())
    access = record["issuers"][provider.issuer]["credentials"]["token_response"]["access_token"]
    assert "refresh_token" in record["issuers"][provider.issuer]["credentials"]["token_response"]
    assert not any(access in p.read_text(errors="replace") for p in project.rglob("*") if p.is_file())

    after = listed(env, project)
    assert after["status"] == "ready", after
    assert after["auth"].startswith("logged in"), after
    assert "expires" in after["auth"]

    errlog = tmp_path / "serve.stderr"
    async with stdio_connection(project, env, "legacy", errlog) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert TOOL in names, names
        result = await client.call_tool(TOOL, {})
        assert not result.is_error and text_of(result) == provider.whoami(), text_of(result)

        # The server stops accepting the access token: toolgate refreshes once and retries.
        provider.admin_call("reject-access-tokens")
        result = await client.call_tool(TOOL, {})
        assert not result.is_error and text_of(result) == provider.whoami(), text_of(result)
        assert provider.admin_call("stats")["refreshGrants"] == 1

        # The grant is revoked: the refresh fails and the server needs a login, which the
        # model is told it cannot do itself.
        provider.admin_call("revoke-grants")
        result = await client.call_tool(TOOL, {})
        assert result.is_error, text_of(result)
        message = text_of(result)
        assert "toolgate mcp login guarded" in message and "human" in message, message

        # A login in another terminal; the running serve picks it up, no restart.
        again = run(env, project, "mcp", "login", "guarded")
        assert again.returncode == 0, again.stdout + again.stderr
        result = await client.call_tool(TOOL, {})
        assert not result.is_error and text_of(result) == provider.whoami(), text_of(result)
        assert provider.admin_call("stats")["codeGrants"] == 2

    # Tokens never reach the log.
    new_access = json.loads(records[0].read_text())["issuers"][provider.issuer]["credentials"][
        "token_response"
    ]["access_token"]
    log = errlog.read_text(errors="replace")
    assert access not in log and new_access not in log

    out = run(env, project, "mcp", "logout", "guarded")
    assert out.returncode == 0 and "logged out of `guarded`" in out.stdout, out.stdout + out.stderr
    assert not records[0].exists()

    # After the logout: the tool is still listed from the catalog cache, and a call says
    # how to log in instead of failing obscurely or hanging.
    async with stdio_connection(project, env, "legacy", errlog) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert TOOL in names, names
        result = await client.call_tool(TOOL, {})
        assert result.is_error
        assert "toolgate mcp login guarded" in text_of(result), text_of(result)
    assert listed(env, project)["status"] == "needs login"


@pytest.mark.anyio
async def test_replicas_share_one_login_and_refresh_in_turn_through_redis(
    provider: Provider, project: Path, server_env: dict[str, str], tmp_path: Path, redis_url: str
) -> None:
    """Two machines (own homes and config folders) with `[mcp] shared_store`: one login on
    the first serves both; when the access token is refused on both at once, or comes due on
    both at once, one of them refreshes it and the other takes the token it saved (each
    re-reads the record under the Redis refresh lock): one refresh each time, never two."""
    envs = []
    for name in ("one", "two"):
        home = tmp_path / name
        config = home / "xdg-config" / "toolgate"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(f'[mcp]\nshared_store = "{redis_url}"\n')
        write_claude_json(home, provider, free_port())
        envs.append(dict(server_env, HOME=str(home), XDG_CONFIG_HOME=str(home / "xdg-config")))
    envs[0]["BROWSER"] = browser(tmp_path / "browser-cookies")

    login = run(envs[0], project, "mcp", "login", "guarded")
    assert login.returncode == 0, login.stdout + login.stderr
    assert listed(envs[1], project)["status"] == "ready"
    # The tokens are in Redis, on neither machine's disk.
    for env in envs:
        assert not (Path(env["XDG_CONFIG_HOME"]) / "toolgate" / "mcp-oauth").exists()

    async with (
        stdio_connection(project, envs[0], "legacy", tmp_path / "one.stderr") as one,
        stdio_connection(project, envs[1], "legacy", tmp_path / "two.stderr") as two,
    ):
        for client in (one, two):
            result = await client.call_tool(TOOL, {})
            assert not result.is_error and text_of(result) == provider.whoami(), text_of(result)

        async def both_call_at_once() -> None:
            results = {}

            async def call(name: str, client) -> None:
                results[name] = await client.call_tool(TOOL, {})

            async with anyio.create_task_group() as group:
                group.start_soon(call, "one", one)
                group.start_soon(call, "two", two)
            for name, result in results.items():
                assert not result.is_error, (name, text_of(result))
                assert text_of(result) == provider.whoami()

        provider.admin_call("reject-access-tokens")
        await both_call_at_once()
        assert provider.admin_call("stats")["refreshGrants"] == 1

        # The stored token comes due (its receipt moved an hour back, as after an idle hour):
        # both renew it before sending, and only one of them asks the provider.
        age_stored_token(redis_url, 3600)
        await both_call_at_once()
        assert provider.admin_call("stats")["refreshGrants"] == 2
    assert provider.admin_call("stats")["codeGrants"] == 1


def age_stored_token(redis_url: str, seconds: int) -> None:
    """Moves the receipt of every token in the shared store `seconds` back."""
    cli = ["redis-cli", "-u", redis_url]
    keys = subprocess.run(
        [*cli, "--scan", "--pattern", "toolgate:oauth:*:record"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    assert keys, "no OAuth record in Redis"
    for key in keys:
        record = json.loads(
            subprocess.run([*cli, "GET", key], capture_output=True, text=True, check=True).stdout
        )
        for entry in record["issuers"].values():
            entry["credentials"]["token_received_at"] -= seconds
        subprocess.run([*cli, "SET", key, json.dumps(record)], capture_output=True, check=True)
