"""OpenTelemetry traces (`[telemetry]`), received over OTLP/HTTP by a receiver that decodes
each export with the official OTLP messages (`opentelemetry-proto`, installed by
scripts/install-peers.sh): one server span per MCP request whose parent is the caller's
`traceparent` (HTTP header or `_meta`, `_meta` first), an `execute_tool` span per tool
call inside it, and a client span per call to a mounted server, whose context the mounted
server receives in `_meta` (and, over HTTP, in the `traceparent` header). The last test sends
the spans to a real tracing backend instead, Arize Phoenix (scripts/install-phoenix.sh), and
reads the trace back through its API."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import http_connection, python_http_server, stdio_connection
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

TRACED = Path(__file__).with_name("traced_server.py")
# A guard for a loaded machine, not a measurement: exports come every 100 ms here.
PATIENCE = 120.0
SERVER, CLIENT = 2, 3  # OTLP span kinds
STATUS_ERROR = 2

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
META_TRACE = "0af7651916cd43dd8448eb211c80319c"
META_PARENT = "b7ad6b7169203331"


@dataclass
class Span:
    name: str
    trace: str
    id: str
    parent: str
    kind: int
    attrs: dict[str, object]
    status: int
    service: str


def value(any_value) -> object:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver:
    """An OTLP/HTTP traces endpoint on loopback that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.paths: list[str] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                assert self.headers["Content-Type"] == "application/x-protobuf"
                receiver.add(self.path, request)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, path: str, request: ExportTraceServiceRequest) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for s in scope.spans:
                    spans.append(
                        Span(
                            name=s.name,
                            trace=s.trace_id.hex(),
                            id=s.span_id.hex(),
                            parent=s.parent_span_id.hex(),
                            kind=s.kind,
                            attrs={a.key: value(a.value) for a in s.attributes},
                            status=s.status.code,
                            service=str(resource.get("service.name")),
                        )
                    )
        with self.changed:
            self.paths.append(path)
            self.spans.extend(spans)
            self.changed.notify_all()

    def wait_for(self, what: str, found: Callable[[list[Span]], bool]) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: found(self.spans), timeout=PATIENCE):
                names = [(s.name, s.trace, s.parent) for s in self.spans]
                raise AssertionError(f"no {what} after {PATIENCE} s; spans received: {names}")

    def one(self, name: str, trace: str) -> Span:
        with self.changed:
            matches = [s for s in self.spans if s.name == name and s.trace == trace]
        assert len(matches) == 1, (name, trace, self.spans)
        return matches[0]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


@pytest.fixture
def traced_http(tmp_path: Path, server_env: dict[str, str]) -> Iterator[str]:
    """`traced_server.py` over Streamable HTTP, its URL."""
    with python_http_server(TRACED, tmp_path / "traced-http.log", server_env) as url:
        yield url


def configure(server_env: dict[str, str], extra: str) -> None:
    config = Path(server_env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    config.write_text(
        config.read_text()
        + f'\n[mcp_servers.tstdio]\ncommand = "{sys.executable}"\nargs = ["{TRACED}"]\n'
        + extra
    )


def seen(result) -> dict[str, str | None]:
    assert not result.is_error, result
    return json.loads(result.content[0].text)


def parent_of(traceparent: str | None, trace: str) -> str:
    assert traceparent, "the mounted server got no traceparent"
    version, got_trace, span, flags = traceparent.split("-")
    assert (version, got_trace, flags) == ("00", trace, "01"), traceparent
    return span


@pytest.mark.anyio
async def test_spans_over_http_follow_the_callers_trace_into_mounted_servers(
    project: Path,
    server_env: dict[str, str],
    traced_http: str,
    receiver: Receiver,
    start_http_server,
) -> None:
    # (Fixtures in this order: toolgate stops first, then the server it mounted.)
    # A bare collector address: toolgate posts to its /v1/traces.
    configure(
        server_env,
        f'[mcp_servers.thttp]\nurl = "{traced_http}"\n'
        f'[telemetry]\notlp_endpoint = "{receiver.url}"\n',
    )
    server_env["OTEL_BSP_SCHEDULE_DELAY"] = "100"
    server = start_http_server(project)
    header = {"traceparent": f"00-{TRACE}-{PARENT}-01"}
    async with http_connection(server.url, "legacy", headers=header) as client:
        over_stdio = seen(await client.call_tool("mcp__tstdio__trace_seen", {}))
        over_http = seen(await client.call_tool("mcp__thttp__trace_seen", {}))
        failed = await client.call_tool("read_file", {"path": "no-such-file.txt"})
        assert failed.is_error
        meta = {"traceparent": f"00-{META_TRACE}-{META_PARENT}-01"}
        listed = await client.call_tool("list_dir", {"path": "."}, meta=meta)
        assert not listed.is_error
        prompt = await client.get_prompt("mcp__tstdio__trace_prompt")
        prompt_seen = json.loads(prompt.messages[0].content.text)

    receiver.wait_for(
        "span of every call",
        lambda spans: {"tools/call trace_seen", "execute_tool read_file", "tools/call list_dir"}
        <= {s.name for s in spans}
        and sum(s.name == "tools/call trace_seen" for s in spans) == 2,
    )
    assert set(receiver.paths) == {"/v1/traces"}, receiver.paths

    # The request's span continues the caller's trace (the HTTP header).
    request = receiver.one("tools/call mcp__tstdio__trace_seen", TRACE)
    assert (request.parent, request.kind, request.service) == (PARENT, SERVER, "toolgate")
    assert request.attrs["mcp.method.name"] == "tools/call"
    assert request.attrs["gen_ai.tool.name"] == "mcp__tstdio__trace_seen"
    assert request.attrs["network.transport"] == "tcp"
    assert request.attrs["mcp.session.id"]
    tool = receiver.one("execute_tool mcp__tstdio__trace_seen", TRACE)
    assert tool.parent == request.id and tool.attrs["toolgate.outcome"] == "ok", tool
    with receiver.changed:
        downstream = [
            s for s in receiver.spans if s.name == "tools/call trace_seen" and s.trace == TRACE
        ]
    by_server = {s.attrs["toolgate.mcp_server"]: s for s in downstream}
    assert set(by_server) == {"tstdio", "thttp"}, downstream
    stdio_call = by_server["tstdio"]
    assert (stdio_call.parent, stdio_call.kind) == (tool.id, CLIENT), stdio_call

    # The mounted servers got the client span's context: in `_meta` over stdio, in `_meta`
    # and the header over HTTP.
    assert parent_of(over_stdio["meta"], TRACE) == stdio_call.id
    assert over_stdio["header"] is None
    http_call = by_server["thttp"]
    http_tool = receiver.one("execute_tool mcp__thttp__trace_seen", TRACE)
    assert http_call.parent == http_tool.id, (http_call, http_tool)
    assert parent_of(over_http["meta"], TRACE) == http_call.id
    assert over_http["header"] == over_http["meta"]

    # A failed call is an error span; `_meta` wins over the header.
    failed_tool = receiver.one("execute_tool read_file", TRACE)
    assert failed_tool.status == STATUS_ERROR, failed_tool
    assert failed_tool.attrs["toolgate.outcome"] == "tool_error"
    by_meta = receiver.one("tools/call list_dir", META_TRACE)
    assert by_meta.parent == META_PARENT, by_meta

    # A mounted server's prompt: the same chain, without a tool span between.
    receiver.wait_for(
        "span of the prompt", lambda spans: any(s.name == "prompts/get trace_prompt" for s in spans)
    )
    asked = receiver.one("prompts/get mcp__tstdio__trace_prompt", TRACE)
    forwarded = receiver.one("prompts/get trace_prompt", TRACE)
    assert (forwarded.parent, forwarded.kind) == (asked.id, CLIENT), forwarded
    assert parent_of(prompt_seen["meta"], TRACE) == forwarded.id


@pytest.mark.anyio
async def test_spans_of_a_stdio_session_are_flushed_when_it_ends(
    project: Path, server_env: dict[str, str], receiver: Receiver, tmp_path: Path
) -> None:
    # The default export delay (5 s) is longer than the session: what arrives was flushed
    # at exit.
    configure(server_env, f'[telemetry]\notlp_endpoint = "{receiver.url}/v1/traces"\n')
    meta = {"traceparent": f"00-{META_TRACE}-{META_PARENT}-01"}
    async with stdio_connection(project, server_env, "legacy", tmp_path / "stderr") as client:
        seen(await client.call_tool("mcp__tstdio__trace_seen", {}, meta=meta))
    receiver.wait_for(
        "span of the stdio call",
        lambda spans: any(s.name == "tools/call trace_seen" for s in spans),
    )
    request = receiver.one("tools/call mcp__tstdio__trace_seen", META_TRACE)
    assert request.parent == META_PARENT and request.attrs["network.transport"] == "pipe"


@pytest.mark.anyio
async def test_without_telemetry_nothing_is_added_to_what_mounted_servers_get(
    project: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    configure(server_env, "")
    async with stdio_connection(project, server_env, "legacy", tmp_path / "stderr") as client:
        got = seen(await client.call_tool("mcp__tstdio__trace_seen", {}))
    assert got == {"meta": None, "header": None}, got


PHOENIX = Path(__file__).resolve().parents[3] / ".cache" / "peers" / "phoenix" / "bin" / "phoenix"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[str]:
    """Arize Phoenix serving on loopback (OTLP/HTTP at /v1/traces, spans at
    /v1/projects/default/spans), its URL; stopped at teardown."""
    if not PHOENIX.exists():
        pytest.fail(f"Phoenix missing at {PHOENIX}: run scripts/install-phoenix.sh", pytrace=False)
    port = free_port()
    env = dict(
        os.environ,
        PHOENIX_WORKING_DIR=str(tmp_path / "phoenix"),
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(free_port()),
        PHOENIX_TELEMETRY_ENABLED="false",
    )
    log = open(tmp_path / "phoenix.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + PATIENCE
        while True:
            assert proc.poll() is None, (tmp_path / "phoenix.log").read_text(errors="replace")
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Phoenix did not answer /healthz"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def phoenix_spans(url: str, trace: str, want: set[str]) -> dict[str, dict]:
    """The spans of `trace` Phoenix holds, by name, once it holds every name in `want`."""
    deadline = time.monotonic() + PATIENCE
    while True:
        with urllib.request.urlopen(f"{url}/v1/projects/default/spans?limit=1000", timeout=30) as r:
            spans = [s for s in json.load(r)["data"] if s["context"]["trace_id"] == trace]
        by_name: dict[str, list[dict]] = {}
        for span in spans:
            by_name.setdefault(span["name"], []).append(span)
        if want <= set(by_name):
            for name in want:
                assert len(by_name[name]) == 1, by_name[name]
            return {name: found[0] for name, found in by_name.items()}
        assert time.monotonic() < deadline, f"Phoenix holds {sorted(by_name)} of trace {trace}"
        time.sleep(0.2)


@pytest.mark.anyio
async def test_a_real_tracing_backend_receives_the_trace_of_a_call_through_a_mounted_server(
    project: Path, server_env: dict[str, str], phoenix: str, tmp_path: Path
) -> None:
    configure(server_env, f'[telemetry]\notlp_endpoint = "{phoenix}"\n')
    meta = {"traceparent": f"00-{TRACE}-{PARENT}-01"}
    async with stdio_connection(project, server_env, "legacy", tmp_path / "stderr") as client:
        got = seen(await client.call_tool("mcp__tstdio__trace_seen", {}, meta=meta))
        failed = await client.call_tool("read_file", {"path": "missing.txt"}, meta=meta)
        assert failed.is_error
    # Flushed at exit; Phoenix stores what it receives and answers for it.
    spans = phoenix_spans(
        phoenix,
        TRACE,
        {
            "tools/call mcp__tstdio__trace_seen",
            "execute_tool mcp__tstdio__trace_seen",
            "tools/call trace_seen",
            "tools/call read_file",
            "execute_tool read_file",
        },
    )
    request = spans["tools/call mcp__tstdio__trace_seen"]
    assert request["parent_id"] == PARENT, request
    assert request["attributes"]["mcp.method.name"] == "tools/call", request
    tool = spans["execute_tool mcp__tstdio__trace_seen"]
    assert tool["parent_id"] == request["context"]["span_id"], tool
    assert tool["attributes"]["toolgate.outcome"] == "ok", tool
    downstream = spans["tools/call trace_seen"]
    assert downstream["parent_id"] == tool["context"]["span_id"], downstream
    assert downstream["attributes"]["toolgate.mcp_server"] == "tstdio", downstream
    # The mounted server got exactly that span's context.
    assert parent_of(got["meta"], TRACE) == downstream["context"]["span_id"]
    failed_tool = spans["execute_tool read_file"]
    assert failed_tool["status_code"] == "ERROR", failed_tool
    assert failed_tool["attributes"]["toolgate.outcome"] == "tool_error", failed_tool
