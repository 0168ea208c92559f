"""Fixtures for the interop suite: a temp project, and toolgate served over stdio or HTTP.

The server is the real binary (TOOLGATE_BIN, default target/debug/toolgate), driven through
the official Python MCP SDK (`mcp` 2.3.x). Every test gets a fresh project folder and, for
HTTP, its own server process, which is stopped with SIGINT at teardown and must exit 0.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# The workspace root: the nearest folder above this one with a Cargo.toml.
# Plain asserts in the fixtures module get pytest's detailed messages too.
pytest.register_assert_rewrite("tool_fixtures", "oauth_provider")

REPO = next(
    (p for p in Path(__file__).resolve().parents if (p / "Cargo.toml").is_file()),
    Path.cwd(),
)

# The OAuth provider fixture (test_oauth.py), shared with tests/interop/clients.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oauth"))
from oauth_provider import jwt_provider, provider  # noqa: E402, F401

SMALL_TEXT = "hello from toolgate\nsecond line\n"
BIG_LINES = 3000
NESTED_TEXT = "nested file\n"
OUTSIDE_SECRET = "outside-the-root-secret"

# How long a server may take to print its URL (a guard against a hang on a loaded machine,
# not a measurement), and to exit after SIGINT.
STARTUP_TIMEOUT = 120.0
SHUTDOWN_TIMEOUT = 10.0

# (transport, client mode): "legacy" = the initialize handshake every client uses today;
# "auto" = the SDK default (server/discover, falling back to initialize).
CONNECTIONS = [("stdio", "legacy"), ("stdio", "auto"), ("http", "legacy"), ("http", "auto")]


def toolgate_bin() -> str:
    path = os.environ.get("TOOLGATE_BIN") or str(REPO / "target" / "debug" / "toolgate")
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"toolgate binary not found or not executable at {path}: "
            "run `cargo build -p toolgate` or set TOOLGATE_BIN",
            pytrace=False,
        )
    return path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root with a small file, a 3000-line file and a subfolder; beside it (outside
    the root) a file the tools must never reveal."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "small.txt").write_text(SMALL_TEXT)
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, BIG_LINES + 1)))
    (root / "sub").mkdir()
    (root / "sub" / "nested.txt").write_text(NESTED_TEXT)
    (tmp_path / "outside.txt").write_text(OUTSIDE_SECRET + "\n")
    return root


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    """Environment for server processes: no user config, no inherited token."""
    config_home = tmp_path / "xdg-config"
    config_home.mkdir(exist_ok=True)
    # The SDK is an unknown client, which gets the conservative client profile (pages that
    # fit the strictest measured client). These tests check the tools' own limits (2,000
    # lines, 50 KiB), so they raise it; the last hop is tested in tests/interop/clients.
    (config_home / "toolgate").mkdir(exist_ok=True)
    (config_home / "toolgate" / "config.toml").write_text(
        "[clients.default]\nmax_result_chars = 1000000\nmax_error_chars = 1000000\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLGATE_TOKEN", "RUST_LOG")}
    env["XDG_CONFIG_HOME"] = str(config_home)
    env["HOME"] = str(tmp_path)
    return env


@dataclass
class HttpServer:
    proc: subprocess.Popen[bytes]
    url: str
    stderr_path: Path
    token: str | None = None
    _stderr: IO[bytes] | None = field(default=None, repr=False)

    @property
    def origin(self) -> str:
        m = re.match(r"(http://[^/]+)", self.url)
        assert m
        return m.group(1)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> int:
        """SIGINT, then wait; returns the exit code (killing it if it hangs)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(SHUTDOWN_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                if self._stderr:
                    self._stderr.close()
                raise AssertionError(
                    f"toolgate HTTP server (pid {self.proc.pid}) did not exit within "
                    f"{SHUTDOWN_TIMEOUT} s of SIGINT; killed it. stderr:\n{self.stderr()}"
                )
        if self._stderr:
            self._stderr.close()
        return self.proc.returncode


@pytest.fixture
def start_http_server(
    tmp_path: Path, server_env: dict[str, str]
) -> Iterator[Callable[..., HttpServer]]:
    """Factory: start `toolgate serve --http 127.0.0.1:0` for a root; every server it started
    is stopped at teardown and must have exited with status 0."""
    started: list[HttpServer] = []

    def start(root: Path, token: str | None = None) -> HttpServer:
        n = len(started)
        stderr_path = tmp_path / f"http-server-{n}.stderr"
        stderr = open(stderr_path, "wb")
        env = dict(server_env)
        if token is not None:
            env["TOOLGATE_TOKEN"] = token
        proc = subprocess.Popen(
            [toolgate_bin(), "serve", "--root", str(root), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        url = None
        while time.monotonic() < deadline:
            text = stderr_path.read_text(errors="replace")
            m = re.search(r"at (http://127\.0\.0\.1:\d+/mcp) \(", text)
            if m:
                url = m.group(1)
                break
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        server = HttpServer(proc, url or "", stderr_path, token, stderr)
        started.append(server)
        if url is None:
            raise AssertionError(
                f"toolgate HTTP server did not print its URL within {STARTUP_TIMEOUT} s "
                f"(exit status {proc.poll()}); stderr:\n{server.stderr()}"
            )
        return server

    yield start

    problems = []
    for server in started:
        try:
            code = server.stop()
        except AssertionError as e:
            problems.append(str(e))
            continue
        if code != 0:
            problems.append(
                f"toolgate HTTP server exited with status {code} after SIGINT (expected 0); "
                f"stderr:\n{server.stderr()}"
            )
    assert not problems, "\n".join(problems)


@asynccontextmanager
async def stdio_connection(
    root: Path, env: dict[str, str], mode: str, errlog_path: Path, **client_options: Any
) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=toolgate_bin(),
        args=["serve", "--root", str(root)],
        env={"XDG_CONFIG_HOME": env["XDG_CONFIG_HOME"], "HOME": env["HOME"]},
    )
    with open(errlog_path, "a") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), mode=mode, **client_options
        ) as client:
            yield client


@asynccontextmanager
async def http_connection(
    url: str, mode: str, headers: dict[str, str] | None = None, **client_options: Any
) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(
            streamable_http_client(url, http_client=http), mode=mode, **client_options
        ) as client:
            yield client


@dataclass
class Connector:
    """Opens SDK client connections to a toolgate serving `root` over one transport."""

    transport: str
    mode: str
    root: Path
    _open: Callable[[], object]

    def __call__(self):  # -> AsyncContextManager[Client]
        return self._open()


@pytest.fixture(params=CONNECTIONS, ids=[f"{t}-{m}" for t, m in CONNECTIONS])
def connect(
    request: pytest.FixtureRequest,
    project: Path,
    tmp_path: Path,
    server_env: dict[str, str],
    start_http_server: Callable[..., HttpServer],
) -> Connector:
    """`async with connect() as client:` gives an initialised SDK client talking to toolgate
    serving `project`, over the parametrised transport and client mode."""
    transport, mode = request.param
    if transport == "stdio":
        errlog = tmp_path / "stdio-server.stderr"
        return Connector(
            transport, mode, project, lambda: stdio_connection(project, server_env, mode, errlog)
        )
    server = start_http_server(project)
    return Connector(transport, mode, project, lambda: http_connection(server.url, mode))


ASKER = Path(__file__).with_name("asking_server.py")


@pytest.fixture
def mounted_env(project: Path, server_env: dict[str, str]) -> dict[str, str]:
    """The user config mounts the asking server; `mcp list` has seen it once (the catalog is
    warm, as after any earlier session), so `serve` lists its tools from the start."""
    config = Path(server_env["XDG_CONFIG_HOME"]) / "toolgate" / "config.toml"
    config.write_text(
        config.read_text()
        + f'\n[mcp_servers.asker]\ncommand = "{sys.executable}"\nargs = ["{ASKER}"]\n'
    )
    listed = subprocess.run(
        [toolgate_bin(), "--root", str(project), "mcp", "list"],
        env=server_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0 and " ready " in listed.stdout, listed.stdout + listed.stderr
    return server_env


@contextmanager
def python_http_server(script: Path, log: Path, env: dict[str, str]) -> Iterator[str]:
    """`script` (a test MCP server taking `--http PORT`) serving Streamable HTTP on a free
    loopback port, its URL; stopped on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(script), "--http", str(port)], stdout=out, stderr=out, env=env
        )
        try:
            # A guard for a loaded machine: the interpreter and the SDK take a while to load.
            deadline = time.monotonic() + 60.0
            while True:
                assert proc.poll() is None, f"{script.name} exited: {log.read_text()}"
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"{script.name} did not listen"
                    time.sleep(0.1)  # a poll interval, not a deadline
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            proc.wait(timeout=30)


# A guard for a loaded machine, not a measurement.
REDIS_START = 60.0


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    assert binary, "redis-server is not installed: run scripts/install-peers.sh"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "redis.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + REDIS_START
        while True:
            assert proc.poll() is None, f"redis-server exited with {proc.returncode}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "redis-server did not answer PING"
            time.sleep(0.05)  # a poll interval, not a deadline
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
