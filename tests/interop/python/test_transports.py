"""Transport-level behaviour: HTTP Origin/Host checks and bearer token, stdio framing and exit."""

from __future__ import annotations

import json
import subprocess

import anyio
import httpx
import pytest
from conftest import http_connection, toolgate_bin

TIMEOUT = 20
TOKEN = "tg-interop-token-7f3a"

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "toolgate-interop-raw", "version": "0"},
    },
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post_initialize(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10)


# --- HTTP: Origin and Host (DNS rebinding) -----------------------------------------------------


def test_http_foreign_origin_is_forbidden(project, start_http_server) -> None:
    server = start_http_server(project)
    evil = post_initialize(server.url, Origin="http://evil.example")
    assert evil.status_code == 403, (
        f"POST {server.url} with Origin: http://evil.example -> {evil.status_code} "
        f"{evil.text[:200]!r}; expected 403"
    )
    evil_get = httpx.get(
        server.url, headers={"Accept": "text/event-stream", "Origin": "http://evil.example"}, timeout=10
    )
    assert evil_get.status_code == 403, f"GET with foreign Origin -> {evil_get.status_code}"
    # Controls: the same request from the server's own origin, and with no Origin, succeed,
    # so the 403 above is the Origin check and not a malformed request.
    own = post_initialize(server.url, Origin=server.origin)
    assert own.status_code == 200, f"own Origin {server.origin} -> {own.status_code} {own.text[:200]!r}"
    plain = post_initialize(server.url)
    assert plain.status_code == 200, f"no Origin -> {plain.status_code} {plain.text[:200]!r}"


def test_http_foreign_host_is_forbidden(project, start_http_server) -> None:
    server = start_http_server(project)
    port = server.origin.rsplit(":", 1)[1]
    rebound = post_initialize(server.url, Host=f"evil.example:{port}")
    assert rebound.status_code in (403, 421), (
        f"POST with Host: evil.example:{port} (DNS rebinding) -> {rebound.status_code}; expected 403"
    )


# --- HTTP: bearer token ------------------------------------------------------------------------


def test_http_token_required(project, start_http_server) -> None:
    server = start_http_server(project, token=TOKEN)
    assert "bearer token" in server.stderr(), server.stderr()
    missing = post_initialize(server.url)
    assert missing.status_code == 401, f"no token -> {missing.status_code} {missing.text[:200]!r}"
    assert missing.headers.get("www-authenticate", "").lower().startswith("bearer"), missing.headers
    wrong = post_initialize(server.url, Authorization=f"Bearer {TOKEN}x")
    assert wrong.status_code == 401, f"wrong token -> {wrong.status_code}"
    not_bearer = post_initialize(server.url, Authorization=TOKEN)
    assert not_bearer.status_code == 401, f"token without scheme -> {not_bearer.status_code}"
    right = post_initialize(server.url, Authorization=f"Bearer {TOKEN}")
    assert right.status_code == 200, f"right token -> {right.status_code} {right.text[:200]!r}"
    # The auth scheme is case-insensitive (RFC 7235); regression for `strip_prefix("Bearer ")`.
    for scheme in ("bearer", "BEARER"):
        other_case = post_initialize(server.url, Authorization=f"{scheme} {TOKEN}")
        assert other_case.status_code == 200, f"{scheme} scheme -> {other_case.status_code}"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_token_through_sdk(project, start_http_server, mode: str) -> None:
    server = start_http_server(project, token=TOKEN)
    with anyio.fail_after(TIMEOUT):
        async with http_connection(
            server.url, mode, headers={"Authorization": f"Bearer {TOKEN}"}
        ) as client:
            info = client.server_info
            names = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("read_file", {"path": "small.txt"})
    assert info and info.name == "toolgate"
    assert "read_file" in names
    assert result.is_error is False, result
    assert result.structured_content and "hello from toolgate" in result.structured_content["text"]


@pytest.mark.anyio
async def test_http_sdk_without_token_fails_fast(project, start_http_server) -> None:
    server = start_http_server(project, token=TOKEN)
    error: Exception | None = None
    # A hang surfaces as TimeoutError from fail_after (cancellation is not an Exception).
    with anyio.fail_after(TIMEOUT):
        try:
            async with http_connection(server.url, "legacy"):
                pass
        except Exception as e:  # the SDK wraps the 401 in ExceptionGroups
            error = e
    assert error is not None, "the SDK connected without the bearer token"


# --- stdio -------------------------------------------------------------------------------------


def test_stdio_framing_and_exit_on_eof(project, server_env) -> None:
    """Raw newline-delimited JSON-RPC: stdout carries only JSON-RPC messages (logs go to
    stderr), and the server exits 0 once its stdin closes."""
    requests = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "big.txt", "limit": 3}},
        },
    ]
    proc = subprocess.Popen(
        [toolgate_bin(), "serve", "--root", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env,
    )
    assert proc.stdin and proc.stdout
    # Send one request at a time and wait for its answer, then close stdin.
    responses: dict[int, dict] = {}
    stray: list[str] = []
    try:
        for req in requests:
            proc.stdin.write((json.dumps(req) + "\n").encode())
            proc.stdin.flush()
            if "id" not in req:
                continue
            while req["id"] not in responses:
                line = proc.stdout.readline()
                assert line, f"stdout closed early; stderr:\n{proc.stderr.read().decode()}"  # type: ignore[union-attr]
                try:
                    msg = json.loads(line)
                except ValueError:
                    stray.append(line.decode(errors="replace"))
                    continue
                if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                    stray.append(line.decode(errors="replace"))
                elif "id" in msg and ("result" in msg or "error" in msg):
                    responses[msg["id"]] = msg
        proc.stdin.close()
        rest = proc.stdout.read()
        code = proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode(errors="replace")  # type: ignore[union-attr]
    assert not stray, f"non-JSON-RPC output on stdout: {stray}"
    for line in rest.splitlines():
        assert json.loads(line).get("jsonrpc") == "2.0", f"stray stdout line at exit: {line!r}"
    init = responses[1]["result"]
    assert init["serverInfo"]["name"] == "toolgate"
    assert init["capabilities"]["tools"]["listChanged"] is True
    assert init["protocolVersion"] == "2025-06-18", init["protocolVersion"]
    assert {t["name"] for t in responses[2]["result"]["tools"]} >= {"read_file", "list_dir"}
    call = responses[3]["result"]
    assert call["isError"] is False
    sc = call["structuredContent"]
    assert sc["text"] == call["content"][0]["text"]
    assert sc["truncated"] is True and sc["next_offset"] == 4 and sc["reason"] == "result_limit"
    assert code == 0, f"stdio server exited {code} after stdin closed; stderr:\n{stderr}"


def test_http_sigint_with_open_stream(project, start_http_server) -> None:
    """Ctrl-C while a client holds a session and its GET event stream open: the server
    ends the stream and exits 0 promptly (checked again by the fixture teardown)."""
    import signal
    import threading

    server = start_http_server(project)
    init = post_initialize(server.url)
    assert init.status_code == 200, init.text[:200]
    session = init.headers.get("mcp-session-id")
    assert session, f"no Mcp-Session-Id header on initialize: {dict(init.headers)}"
    headers = {**MCP_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
    note = httpx.post(
        server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert note.status_code in (200, 202), note.status_code
    opened = threading.Event()
    outcome: dict[str, object] = {}

    def hold_stream() -> None:
        try:
            get_headers = {**headers, "Accept": "text/event-stream"}
            with httpx.stream("GET", server.url, headers=get_headers, timeout=30) as stream:
                outcome["status"] = stream.status_code
                opened.set()
                for _ in stream.iter_lines():
                    pass
            outcome["ended"] = True
        except Exception as e:  # a reset connection is also an end
            outcome["ended"] = repr(e)
        finally:
            opened.set()

    thread = threading.Thread(target=hold_stream, daemon=True)
    thread.start()
    assert opened.wait(10), "GET stream did not open"
    assert outcome.get("status") == 200, outcome
    server.proc.send_signal(signal.SIGINT)
    try:
        code = server.proc.wait(10)
    except subprocess.TimeoutExpired:
        pytest.fail("server did not exit within 10 s of SIGINT while a GET stream was open")
    thread.join(10)
    assert code == 0, f"exit status {code}; stderr:\n{server.stderr()}"
    assert "ended" in outcome, "the GET stream was not closed by the server's shutdown"
