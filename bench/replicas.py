#!/usr/bin/env python3
"""toolgate replicas behind HAProxy under load: N `toolgate serve --http` on
loopback behind HAProxy running deploy/haproxy.cfg, S sessions at once each making C tool
calls through the balancer; with --kill-one, one replica is SIGKILLed when about half the
calls are done and the sessions it held initialize again through the balancer and go on.

    .cache/peers/venv/bin/python bench/replicas.py --bin target/release/toolgate \\
        --replicas 3 --sessions 200 --calls 50 [--kill-one]

Each call ends one of three ways:
- ok:            HTTP 200 and a JSON-RPC result that is not a tool error;
- cleanly failed: an HTTP error status (404 for a session its replica no longer holds, 502 or
                 503 from the balancer), a JSON-RPC error, or the connection cut by the
                 replica's death mid-answer: all seen by the client at once;
- hung:          no answer within --timeout (30 s).
It exits non-zero when any call hung, or failed where nothing was killed: with no kill every
call must be ok, with --kill-one only sessions held by the killed replica may fail.

tests/interop/python/test_replicas.py runs the same harness at a small scale.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
HAPROXY_CFG = REPO / "deploy" / "haproxy.cfg"
PROTOCOL = "2025-11-25"
# How long one replica or HAProxy may take to come up, or to exit: a guard for a loaded
# machine, not a measurement.
PATIENCE = 60.0


def haproxy_bin() -> str | None:
    """HAProxy's path: Debian puts it in /usr/sbin, which a normal user's PATH may lack."""
    return shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/sbin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def render_haproxy_cfg(
    template: str, bind: str, replicas: list[tuple[str, str]], stats_socket: str, http_check: bool
) -> str:
    """deploy/haproxy.cfg with the harness's listener and replicas. Besides, the harness asks
    HAProxy to name the replica that answered in `X-Toolgate-Replica` (which replica holds
    which session) and opens a stats socket (when all replicas are up). Without
    `http_check` (a toolgate from before `/healthz`), replicas are checked by TCP connect."""
    out, skipping, bound = [], False, False
    for line in template.splitlines():
        stripped = line.strip()
        if stripped == "# replicas:begin":
            skipping = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(f"{indent}server {name} {addr}" for name, addr in replicas)
            out.append(f"{indent}http-response set-header X-Toolgate-Replica %[srv_name]")
            continue
        if stripped == "# replicas:end":
            skipping = False
            continue
        if skipping:
            continue
        if re.fullmatch(r"bind \S+", stripped):
            out.append(line.replace(stripped, f"bind {bind}"))
            bound = True
            continue
        if not http_check and ("httpchk" in stripped or stripped.startswith("http-check")):
            continue
        out.append(line)
        if stripped == "global":
            out.append(f"    stats socket abns@{stats_socket} level admin")
    assert bound and not skipping, "deploy/haproxy.cfg lost its bind line or replicas markers"
    return "\n".join(out) + "\n"


@dataclass
class Replica:
    name: str
    proc: subprocess.Popen
    url: str  # http://127.0.0.1:PORT
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@dataclass
class Cluster:
    """HAProxy in front of N toolgate replicas on loopback, all serving one project."""

    binary: str
    n: int
    workdir: Path
    project: Path
    token: str
    replicas: list[Replica] = field(default_factory=list)
    haproxy: subprocess.Popen | None = None
    url: str = ""  # the balancer's /mcp
    killed: set[str] = field(default_factory=set)
    http_check: bool = True

    def start(self) -> None:
        for i in range(1, self.n + 1):
            self.replicas.append(self._start_replica(f"toolgate-{i}"))
        haproxy = haproxy_bin()
        if not haproxy:
            raise RuntimeError("haproxy is not installed: run scripts/install-peers.sh")
        probe = httpx.get(f"{self.replicas[0].url}/healthz", timeout=10)
        self.http_check = probe.status_code == 200
        if not self.http_check:
            print(f"note: {self.binary} has no /healthz; HAProxy checks replicas by TCP connect")
        port = free_port()
        # An abstract socket: a path under a test's long tmp folder may pass the 108-byte cap.
        self.stats = f"toolgate-replicas-{os.getpid()}-{port}"
        cfg = self.workdir / "haproxy.cfg"
        cfg.write_text(
            render_haproxy_cfg(
                HAPROXY_CFG.read_text(),
                f"127.0.0.1:{port}",
                [(r.name, r.url.removeprefix("http://")) for r in self.replicas],
                self.stats,
                self.http_check,
            )
        )
        self.haproxy_log = self.workdir / "haproxy.log"
        with open(self.haproxy_log, "wb") as log:
            self.haproxy = subprocess.Popen(
                [haproxy, "-db", "-f", str(cfg)], stdout=log, stderr=subprocess.STDOUT
            )
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.wait_until(lambda s: all(v == "UP" for v in s.values()), "every replica UP")

    def _start_replica(self, name: str) -> Replica:
        home = self.workdir / name
        (home / "toolgate").mkdir(parents=True)
        # The clients are unknown to toolgate's profiles; the results here are small anyway.
        (home / "toolgate" / "config.toml").write_text("[server]\nmetrics = true\n")
        env = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "TOOLGATE_TOKEN")}
        env.update(XDG_CONFIG_HOME=str(home), HOME=str(home), TOOLGATE_TOKEN=self.token)
        stderr_path = self.workdir / f"{name}.stderr"
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                [self.binary, "serve", "--root", str(self.project), "--http", "127.0.0.1:0",
                 "--log-level", "warn"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
            )
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            printed = stderr_path.read_text(errors="replace")
            m = re.search(r"at (http://127\.0\.0\.1:\d+)/mcp", printed)
            if m:
                return Replica(name, proc, m.group(1), stderr_path)
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        proc.kill()
        raise RuntimeError(
            f"{name} did not print its URL within {PATIENCE} s (exit {proc.poll()}): "
            + stderr_path.read_text(errors="replace")
        )

    def server_states(self) -> dict[str, str]:
        """Each replica's state as HAProxy sees it (`UP`, `DOWN`, …), from its stats socket."""
        with socket.socket(socket.AF_UNIX) as s:
            # HAProxy names an abstract socket by all 108 bytes of sun_path, zero-padded.
            name = b"\0" + self.stats.encode()
            s.connect(name.ljust(108, b"\0"))
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        rows = csv.DictReader(io.StringIO(data.decode().lstrip("# ")))
        return {
            r["svname"]: r["status"].split()[0]
            for r in rows
            if r["pxname"] == "toolgate" and r["svname"] not in ("FRONTEND", "BACKEND")
        }

    def wait_until(self, ok, what: str) -> None:
        deadline = time.monotonic() + PATIENCE
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            if self.haproxy and self.haproxy.poll() is not None:
                raise RuntimeError(f"haproxy exited: {self.haproxy_log.read_text()}")
            try:
                states = self.server_states()
            except OSError:
                states = {}
            if states and ok(states):
                return
            time.sleep(0.05)
        raise RuntimeError(f"HAProxy never saw {what} within {PATIENCE} s: {states}")

    def kill(self, name: str) -> None:
        replica = next(r for r in self.replicas if r.name == name)
        replica.proc.send_signal(signal.SIGKILL)
        replica.proc.wait()
        self.killed.add(name)

    def metric(self, name: str, metric: str) -> float:
        """A counter from a live replica's /metrics (asked directly, not through HAProxy)."""
        replica = next(r for r in self.replicas if r.name == name)
        page = httpx.get(
            f"{replica.url}/metrics", headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )
        page.raise_for_status()
        m = re.search(rf"^{metric}(?:\{{[^}}]*\}})? (\S+)$", page.text, re.M)
        return float(m.group(1)) if m else 0.0

    def stop(self) -> list[str]:
        """Stops HAProxy and the live replicas (SIGINT); the problems seen (a replica that
        did not exit 0)."""
        problems = []
        if self.haproxy and self.haproxy.poll() is None:
            self.haproxy.terminate()
            self.haproxy.wait(PATIENCE)
        for r in self.replicas:
            if r.name in self.killed:
                continue
            if r.proc.poll() is None:
                r.proc.send_signal(signal.SIGINT)
                try:
                    r.proc.wait(PATIENCE)
                except subprocess.TimeoutExpired:
                    r.proc.kill()
                    r.proc.wait()
                    problems.append(f"{r.name} did not exit within {PATIENCE} s of SIGINT")
                    continue
            if r.proc.returncode != 0:
                problems.append(f"{r.name} exited {r.proc.returncode}: {r.stderr()[-2000:]}")
        return problems


def make_project(root: Path) -> Path:
    """A small project: a few source files to grep, a README to read."""
    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("# demo\n\nA small project for the replica load test.\n")
    for i in range(12):
        body = "".join(f"fn item_{i}_{j}() -> u32 {{ {j} }} // needle {j % 3}\n" for j in range(40))
        (project / "src" / f"mod_{i}.rs").write_text(body)
    return project


def tool_call(session: int, i: int) -> tuple[str, dict]:
    """The cheap mix: mostly file tools, a `run_shell echo` one call in ten."""
    k = (session + i) % 10
    if k == 9:
        return "run_shell", {"command": f"echo call {i}"}
    if k in (0, 3, 6):
        return "list_dir", {"path": "src"}
    if k in (1, 4, 7):
        return "read_file", {"path": "README.md"}
    return "grep", {"pattern": "needle 2", "path": "src", "limit": 20}


def rpc_message(text: str, content_type: str) -> dict | None:
    """The JSON-RPC reply in a response body, JSON or SSE."""
    if "text/event-stream" in content_type:
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                msg = json.loads(line[5:])
                if "id" in msg:
                    return msg
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


@dataclass
class Report:
    ok: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # how, e.g. "http 404"
    examples: dict[str, str] = field(default_factory=dict)  # how: the first such failure
    unexpected: list[str] = field(default_factory=list)  # failures not explained by the kill
    strays: list[str] = field(default_factory=list)  # ok calls served off their session's replica
    hung: int = 0
    latencies_ms: list[float] = field(default_factory=list)  # of ok calls
    failed_ms: list[float] = field(default_factory=list)  # of cleanly failed calls
    reinitialized: int = 0  # sessions opened again after a failure
    hit: int = 0  # sessions whose call failed because their replica was killed, calls left
    recovered: int = 0  # of those, ones that made an ok call afterwards
    sessions_by_replica: dict[str, int] = field(default_factory=dict)  # first initialize
    killed: str | None = None
    wall_s: float = 0.0

    @property
    def cleanly_failed(self) -> int:
        return sum(self.failed.values())

    def summary(self) -> str:
        lat = sorted(self.latencies_ms)
        pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))] if lat else float("nan")
        total = self.ok + self.cleanly_failed + self.hung
        lines = [
            f"calls {total}: ok {self.ok}, cleanly failed {self.cleanly_failed} "
            f"{dict(sorted(self.failed.items()))}, hung {self.hung}",
            f"latency of ok calls: p50 {pct(0.5):.1f} ms, p99 {pct(0.99):.1f} ms"
            + (f", mean {statistics.mean(lat):.1f} ms" if lat else ""),
            f"throughput {total / self.wall_s:.0f} calls/s over {self.wall_s:.1f} s",
            *(
                [f"cleanly failed calls took p50 {statistics.median(self.failed_ms):.1f} ms, "
                 f"max {max(self.failed_ms):.1f} ms"]
                if self.failed_ms else []
            ),
            f"sessions per replica at start: {dict(sorted(self.sessions_by_replica.items()))}",
        ]
        if self.killed:
            lines.append(
                f"killed {self.killed}: {self.hit} sessions lost their replica, "
                f"{self.recovered} of them initialized again and made ok calls after "
                f"({self.reinitialized} initializations again in all)"
            )
        for how, example in sorted(self.examples.items()):
            lines.append(f"  first {how}: {example[:300]}")
        if self.unexpected:
            lines.append(f"UNEXPECTED failures ({len(self.unexpected)}): {self.unexpected[:5]}")
        if self.strays:
            lines.append(
                f"CALLS OFF THEIR SESSION'S REPLICA ({len(self.strays)}): {self.strays[:5]}")
        return "\n".join(lines)


class Failed(Exception):
    """A prompt failure of a request: `how` is its kind for the report."""

    def __init__(self, how: str, detail: str = ""):
        super().__init__(f"{how} {detail}".strip())
        self.how = how


@dataclass
class Response:
    status_code: int
    headers: dict[str, str]  # names in lower case
    text: str


class Conn:
    """One keep-alive HTTP/1.1 connection to the balancer, the least a request can cost in
    Python: with httpx, the client's own CPU time per request was what the first figures
    measured (the load generator at 90 % of a core, toolgate at 12 %)."""

    def __init__(self, url: str):
        m = re.fullmatch(r"http://([^/:]+):(\d+)(/.*)", url)
        assert m, url
        self.host, self.port, self.path = m.group(1), int(m.group(2)), m.group(3)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _send(self, request: bytes) -> bytes:
        """Writes `request` (connecting first if need be); the response's status line."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(request)
        await self.writer.drain()
        assert self.reader
        return await self.reader.readline()

    def close(self) -> None:
        if self.writer:
            self.writer.close()
        self.reader = self.writer = None

    async def post(self, headers: dict, body: dict) -> Response:
        try:
            return await self._post(headers, json.dumps(body).encode())
        except ConnectionRefusedError as e:
            self.close()
            raise Failed("connect error", repr(e)) from e
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            self.close()
            raise Failed("connection cut", repr(e)) from e
        except BaseException:
            self.close()  # a timeout mid-answer leaves the connection unusable
            raise

    async def _post(self, headers: dict, body: bytes) -> Response:
        head = f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head += f"Content-Length: {len(body)}\r\n\r\n"
        request = head.encode() + body
        reused = self.writer is not None
        try:
            status_line = await self._send(request)
        except ConnectionError:
            if not reused:
                raise
            status_line = b""
        if not status_line and reused:
            # The balancer closed the idle keep-alive connection (it does so to connections
            # it had tied to a replica marked down): send again on a new one, as every HTTP
            # client does. Nothing had reached a replica, or it would have answered 502.
            self.close()
            status_line = await self._send(request)
        if not status_line:
            raise ConnectionResetError("closed before the status line")
        reader = self.reader
        assert reader
        status = int(status_line.split()[1])
        got: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            got[name.strip().lower()] = value.strip()
        if got.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size_line = await reader.readline()
                if not size_line:
                    raise ConnectionResetError("the stream ended mid-answer")
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    break
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            await reader.readline()  # the blank line after the last chunk
            data = b"".join(parts)
        elif "content-length" in got:
            data = await reader.readexactly(int(got["content-length"]))
        else:
            data = await reader.read()
            got["connection"] = "close"
        if got.get("connection", "").lower() == "close":
            self.close()
        return Response(status, got, data.decode(errors="replace"))


async def initialize(conn: Conn, token: str, name: str) -> tuple[dict, str]:
    """Opens a session through the balancer: its request headers and the replica holding it."""
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
         "Authorization": f"Bearer {token}"}
    r = await conn.post(h, {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": name, "version": "0"}}})
    if r.status_code != 200:
        raise Failed(f"http {r.status_code}", r.text[:200])
    msg = rpc_message(r.text, r.headers.get("content-type", ""))
    if not msg or "result" not in msg or "mcp-session-id" not in r.headers:
        raise Failed("bad initialize", r.text[:200])
    h["Mcp-Session-Id"] = r.headers["mcp-session-id"]
    h["MCP-Protocol-Version"] = PROTOCOL
    r = await conn.post(h, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    if r.status_code != 202:
        raise Failed(f"http {r.status_code}", r.text[:200])
    return h, r.headers.get("x-toolgate-replica") or "?"


async def call(conn: Conn, headers: dict, n: int, tool: str, args: dict,
               meta: dict | None = None) -> str:
    """One tools/call: the replica that answered it."""
    params = {"name": tool, "arguments": args}
    if meta:
        params["_meta"] = meta
    r = await conn.post(headers, {
        "jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
    if r.status_code != 200:
        raise Failed(f"http {r.status_code}", r.text[:200])
    msg = rpc_message(r.text, r.headers.get("content-type", ""))
    if msg is None:
        raise Failed("no reply in the body", r.text[:200])
    if "error" in msg:
        raise Failed("json-rpc error", str(msg["error"])[:200])
    if msg["result"].get("isError"):
        raise Failed("tool error", str(msg["result"])[:300])
    return r.headers.get("x-toolgate-replica") or "?"


async def stateless_call(conn: Conn, token: str, n: int, tool: str, args: dict) -> str:
    """One tools/call in the stateless protocol (2026-07-28: no session, the client named in
    `_meta`): the replica that answered it."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "stateless", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
         "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2026-07-28",
         "Mcp-Method": "tools/call", "Mcp-Name": tool}
    return await call(conn, h, n, tool, args, meta)


async def run_load(
    cluster: Cluster, sessions: int, calls: int, kill: str | None, timeout: float
) -> Report:
    """S sessions at once, C calls each; kills replica `kill` when half the calls are done."""
    report = Report(killed=kill)
    total = sessions * calls
    done = 0
    half = asyncio.Event()
    dead = asyncio.Event()  # set once the replica is killed

    async def killer() -> None:
        await half.wait()
        cluster.kill(kill)
        dead.set()

    async def session(s: int) -> None:
        nonlocal done
        conn = Conn(cluster.url)  # the session's connection, opened by its first request
        headers, replica, held_by_killed = None, None, False
        needs_init, reinits = True, 0
        for i in range(calls):
            tool, args = tool_call(s, i)
            start = time.perf_counter()
            try:
                async with asyncio.timeout(timeout):
                    if needs_init:
                        headers, replica = await initialize(conn, cluster.token, f"load-{s}")
                        if reinits == 0:
                            report.sessions_by_replica[replica] = (
                                report.sessions_by_replica.get(replica, 0) + 1)
                        else:
                            report.reinitialized += 1
                        needs_init = False
                        start = time.perf_counter()
                    answered_by = await call(conn, headers, i + 1, tool, args)
                report.ok += 1
                if answered_by != replica:
                    report.strays.append(
                        f"session {s} opened on {replica}, {tool} answered by {answered_by}")
                report.latencies_ms.append((time.perf_counter() - start) * 1000)
                if reinits and held_by_killed:
                    report.recovered += 1
                    held_by_killed = False
            except TimeoutError:
                report.hung += 1
                needs_init, reinits = True, reinits + 1
            except Failed as f:
                report.failed[f.how] = report.failed.get(f.how, 0) + 1
                report.failed_ms.append((time.perf_counter() - start) * 1000)
                report.examples.setdefault(f.how, f"{tool} on {replica}: {f}")
                # A failure is explained only by the kill: on the killed replica's session,
                # or while opening a session when the only replica is dead.
                if kill and dead.is_set() and (replica == kill or needs_init):
                    # (A session whose last call failed has nothing left to recover.)
                    if replica == kill and not held_by_killed and i < calls - 1:
                        held_by_killed = True
                        report.hit += 1
                else:
                    report.unexpected.append(f"session {s} on {replica}, {tool}: {f}")
                needs_init, reinits = True, reinits + 1
            done += 1
            if done * 2 >= total:
                half.set()

    start = time.perf_counter()
    kill_task = asyncio.create_task(killer()) if kill else None
    await asyncio.gather(*(session(s) for s in range(sessions)))
    report.wall_s = time.perf_counter() - start
    if kill_task:
        await kill_task
    return report


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(REPO / "target" / "debug" / "toolgate"))
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--kill-one", action="store_true", help="SIGKILL one replica halfway")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds before a call counts as hung")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs, config)")
    a = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="toolgate-replicas-"))
    cluster = Cluster(os.path.abspath(a.bin), a.replicas, workdir, make_project(workdir),
                      token="tg-replicas-bench")
    try:
        cluster.start()
        # The middle replica, so with one it is the only one.
        kill = cluster.replicas[len(cluster.replicas) // 2].name if a.kill_one else None
        report = asyncio.run(run_load(cluster, a.sessions, a.calls, kill, a.timeout))
    finally:
        problems = cluster.stop()
        if not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"work folder kept: {workdir}")
    print(f"{a.replicas} replica(s), {a.sessions} sessions x {a.calls} calls"
          f"{', one replica killed halfway' if a.kill_one else ''}; {a.bin}")
    print(report.summary())
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    bad = report.hung or report.unexpected or report.strays or problems
    if problems:
        print("PROBLEMS:", *problems, sep="\n  ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
