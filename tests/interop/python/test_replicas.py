"""Three `serve --http` replicas behind a real HAProxy (Debian's package, installed by
scripts/install-peers.sh) running deploy/haproxy.cfg: sessions stick to the replica that
opened them, and when one replica is SIGKILLed mid-run every call is still answered or fails
at once, and the sessions it held initialize again on a live replica and go on.

The harness is bench/replicas.py's, at a small scale (20 sessions x 10 calls); the Python
MCP SDK goes through the same balancer as a real client would."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import anyio
import pytest
from conftest import REPO, http_connection, toolgate_bin
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(REPO / "bench"))
from replicas import (  # noqa: E402
    Cluster,
    Conn,
    haproxy_bin,
    make_project,
    run_load,
    stateless_call,
)

TOKEN = "tg-replicas-token-7d1e"
SESSIONS, CALLS = 20, 10
KILLED = "toolgate-2"
# A call unanswered this long hangs. HAProxy's own timeouts (connect 2 s, server 1 m) answer
# long before: the guard is for a loaded CI machine, not a measurement.
HANG_GUARD = 120.0
# What a client may see when its session's replica dies: a live replica's `404 Session not
# found` (HAProxy sent the request elsewhere), the balancer's 502/503, or the stream cut.
CLEAN = {"http 404", "http 502", "http 503", "connection cut"}


def start_cluster(tmp_path: Path) -> Cluster:
    assert haproxy_bin(), "haproxy is not installed: run scripts/install-peers.sh"
    cluster = Cluster(toolgate_bin(), 3, tmp_path, make_project(tmp_path), TOKEN)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    # HAProxy checks the replicas at /healthz, as deploy/haproxy.cfg says (a toolgate
    # without it would have been checked by TCP connect).
    assert cluster.http_check
    return cluster


def test_sessions_stick_spread_and_survive_a_killed_replica(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    try:
        report = asyncio.run(run_load(cluster, SESSIONS, CALLS, KILLED, HANG_GUARD))
        print(report.summary())
        assert report.hung == 0, report.summary()
        assert report.ok + report.cleanly_failed == SESSIONS * CALLS, report.summary()
        assert not report.unexpected, report.summary()
        assert set(report.failed) <= CLEAN, report.summary()
        # Stickiness: every ok call was answered by the replica that opened its session.
        assert not report.strays, report.summary()
        # Round robin spread the sessions over all three.
        assert sorted(report.sessions_by_replica) == ["toolgate-1", "toolgate-2", "toolgate-3"]
        # The killed replica's sessions noticed and went on elsewhere.
        assert report.hit > 0, report.summary()
        assert report.recovered == report.hit, report.summary()
        # The live replicas say so too: each opened its first sessions, and the sessions
        # opened again after the kill came to them.
        live = [r.name for r in cluster.replicas if r.name != KILLED]
        opened = {name: cluster.metric(name, "toolgate_sessions_opened_total") for name in live}
        for name in live:
            assert opened[name] >= report.sessions_by_replica[name], opened
        assert sum(opened.values()) == (
            sum(report.sessions_by_replica[n] for n in live) + report.reinitialized
        ), (opened, report.summary())
        cluster.wait_until(lambda s: s[KILLED] == "DOWN", f"{KILLED} DOWN")
    finally:
        problems = cluster.stop()
    assert not problems, problems


def test_stateless_requests_go_to_any_replica(tmp_path: Path) -> None:
    """Requests of the 2026-07-28 protocol carry no session: round robin spreads them."""
    cluster = start_cluster(tmp_path)

    async def calls() -> list[str]:
        conn = Conn(cluster.url)
        try:
            async with asyncio.timeout(HANG_GUARD):
                return [
                    await stateless_call(conn, TOKEN, n, "read_file", {"path": "README.md"})
                    for n in range(6)
                ]
        finally:
            conn.close()

    try:
        answered_by = asyncio.run(calls())
    finally:
        problems = cluster.stop()
    assert sorted(set(answered_by)) == ["toolgate-1", "toolgate-2", "toolgate-3"], answered_by
    assert not problems, problems


@pytest.mark.anyio
async def test_the_python_sdk_through_the_balancer_fails_fast_when_its_replica_dies(
    tmp_path: Path,
) -> None:
    """A real client (the SDK, with its GET stream and DELETE at the end) through HAProxy;
    when the replica holding its session is killed, its next call fails at once, and a new
    connection gets a session on a live replica."""
    cluster = start_cluster(tmp_path)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        with anyio.fail_after(HANG_GUARD):
            async with http_connection(cluster.url, "legacy", headers=auth) as client:
                ok = await client.call_tool("read_file", {"path": "README.md"})
                assert not ok.is_error, ok
                holder = [
                    r.name
                    for r in cluster.replicas
                    if cluster.metric(r.name, "toolgate_sessions_opened_total") == 1
                ]
                assert len(holder) == 1, holder
                cluster.kill(holder[0])
                # HAProxy sends the request to a live replica, whose 404 the SDK reports
                # as the end of its session.
                with pytest.raises(MCPError, match="Session terminated"):
                    await client.call_tool("read_file", {"path": "README.md"})
            async with http_connection(cluster.url, "legacy", headers=auth) as client:
                ok = await client.call_tool("list_dir", {"path": "src"})
                assert not ok.is_error, ok
    finally:
        problems = cluster.stop()
    assert not problems, problems
