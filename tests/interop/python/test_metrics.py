"""`serve --http`'s Prometheus metrics, scraped by a real Prometheus (Debian's package,
installed by scripts/install-peers.sh): `/metrics` sits behind the same token as `/mcp`,
and what Prometheus stores matches the calls the SDK client made and the mounted server's
health."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from conftest import http_connection

TOKEN = "tg-metrics-token-51c2"
# How long Prometheus gets to start and scrape (it scrapes every second): a guard for a
# loaded machine, not a measurement.
PATIENCE = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(prometheus: str, promql: str) -> list[dict]:
    answer = httpx.get(f"{prometheus}/api/v1/query", params={"query": promql}, timeout=10)
    answer.raise_for_status()
    return answer.json()["data"]["result"]


def wait_for(prometheus: str, promql: str, want: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + PATIENCE
    seen = None
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"prometheus exited with {proc.returncode}"
        try:
            result = query(prometheus, promql)
        except httpx.HTTPError:
            result = []
        if result:
            seen = float(result[0]["value"][1])
            if seen == want:
                return
        time.sleep(0.5)
    raise AssertionError(f"`{promql}` was {seen} after {PATIENCE} s, expected {want}")


@pytest.mark.anyio
async def test_a_real_prometheus_scrapes_calls_and_server_health(
    project: Path, mounted_env, start_http_server, tmp_path: Path
) -> None:
    binary = shutil.which("prometheus")
    assert binary, "prometheus is not installed: run scripts/install-peers.sh"
    server = start_http_server(project, token=TOKEN)
    metrics_url = f"{server.origin}/metrics"

    # Behind the same token as /mcp.
    assert httpx.get(metrics_url, timeout=10).status_code == 401
    page = httpx.get(metrics_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("application/openmetrics-text")
    assert "toolgate_build_info" in page.text and page.text.endswith("# EOF\n"), page.text

    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with http_connection(server.url, "legacy", headers=auth) as client:
        for _ in range(3):
            ok = await client.call_tool("list_dir", {"path": "."})
            assert not ok.is_error, ok
        failed = await client.call_tool("read_file", {"path": "no-such-file.txt"})
        assert failed.is_error, failed

    port = free_port()
    config = tmp_path / "prometheus.yml"
    host = server.origin.removeprefix("http://")
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: toolgate\n    metrics_path: /metrics\n"
        f"    authorization:\n      credentials: {TOKEN}\n"
        f"    static_configs:\n      - targets: ['{host}']\n"
    )
    log = open(tmp_path / "prometheus.log", "wb")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    prometheus = f"http://127.0.0.1:{port}"
    try:
        wait_for(prometheus, 'up{job="toolgate"}', 1, proc)
        wait_for(
            prometheus,
            'toolgate_tool_calls_total{server="toolgate",tool="list_dir",outcome="ok"}',
            3,
            proc,
        )
        wait_for(
            prometheus,
            'toolgate_tool_calls_total{server="toolgate",tool="read_file",outcome="error"}',
            1,
            proc,
        )
        wait_for(
            prometheus, 'toolgate_tool_call_duration_seconds_count{server="toolgate"}', 4, proc
        )
        wait_for(prometheus, "toolgate_sessions_opened_total", 1, proc)
        wait_for(prometheus, 'toolgate_mounted_server_up{server="asker"}', 1, proc)
        tools = query(prometheus, 'toolgate_mounted_server_tools{server="asker"}')
        assert tools and float(tools[0]["value"][1]) > 0, tools
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
