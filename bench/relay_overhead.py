#!/usr/bin/env python3
"""What relaying a call through `toolgate serve` adds to a mounted server's trivial tool:
`echo` on server-everything called directly over stdio vs `mcp__everything__echo` through
`toolgate serve --disclosure off` (every tool listed directly) mounting the same server over
stdio, calls alternating so a loaded machine's noise falls on both alike. Median and p90 of
N calls each (after 20 warm-up calls), per round; the added cost is the difference of the
medians. Two clients: `--client sdk` (default), the Python SDK's `Client` (the one the
interop tests use, which does work of its own per call), and `--client raw`, JSON-RPC lines
written and read directly, which shows the transport and relay cost alone.

    .cache/peers/venv/bin/python bench/relay_overhead.py [--bin target/release/toolgate] [--calls 200] [--rounds 3] [--client sdk|raw]

Needs .cache/peers (bash scripts/install-peers.sh).

Measured 2026-12-02 (release build of branch `subs`, 2 shared cores, load about 4), medians
of 200 per round, 3 rounds: raw client direct 0.67-0.81 ms, through toolgate 1.19-1.40 ms
(+0.52-0.60 ms); SDK client direct 1.59-1.93 ms, through toolgate 2.31-2.88 ms
(+0.72-0.95 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / ".cache/peers/npm/node_modules"
NODE = str(PEERS / "node/bin/node")
EVERYTHING = str(PEERS / "@modelcontextprotocol/server-everything/dist/index.js")


def p90(xs: list[float]) -> float:
    return sorted(xs)[int(len(xs) * 0.9)]


async def timed(client: Client, tool: str) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, {"message": "hi"})
    elapsed = (time.perf_counter() - started) * 1000
    assert not result.is_error and result.content[0].text == "Echo: hi", result
    return elapsed


class Raw:
    """A line-JSON MCP client over a child's stdin and stdout."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        self.p = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, cwd=cwd,
        )
        self.next = 0
        self.request("initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        assert self.p.stdin
        self.p.stdin.write((json.dumps(message) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        assert self.p.stdout
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            message = json.loads(self.p.stdout.readline())
            if message.get("id") == self.next:
                return message

    def timed(self, tool: str) -> float:
        started = time.perf_counter()
        reply = self.request("tools/call", {"name": tool, "arguments": {"message": "hi"}})
        elapsed = (time.perf_counter() - started) * 1000
        result = reply["result"]
        assert not result.get("isError") and result["content"][0]["text"] == "Echo: hi", reply
        return elapsed

    def close(self) -> None:
        assert self.p.stdin
        self.p.stdin.close()
        self.p.wait(timeout=30)


def setup(tmp: str) -> tuple[Path, dict[str, str]]:
    """A project whose user config mounts server-everything, and the environment for both."""
    project = Path(tmp) / "project"
    project.mkdir()
    config = Path(tmp) / "xdg-config" / "toolgate"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        f'[mcp_servers.everything]\ncommand = "{NODE}"\nargs = ["{EVERYTHING}", "stdio"]\n'
    )
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(Path(tmp) / "xdg-config"),
        "XDG_CACHE_HOME": str(Path(tmp) / "xdg-cache"),
        "HOME": tmp,
    }
    env.pop("RUST_LOG", None)
    return project, env


def serve_argv(binary: str, project: Path) -> list[str]:
    return [binary, "serve", "--root", str(project), "--disclosure", "off", "--log-level", "error"]


def raw_round(binary: str, calls: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        project, env = setup(tmp)
        direct = Raw([NODE, EVERYTHING, "stdio"], env, str(project))
        via = Raw(serve_argv(binary, project), env, str(project))
        try:
            for _ in range(20):
                direct.timed("echo")
                via.timed("mcp__everything__echo")
            d, v = [], []
            for _ in range(calls):
                d.append(direct.timed("echo"))
                v.append(via.timed("mcp__everything__echo"))
            return d, v
        finally:
            direct.close()
            via.close()


async def sdk_round(binary: str, calls: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        project, env = setup(tmp)
        direct_params = StdioServerParameters(command=NODE, args=[EVERYTHING, "stdio"], env=env)
        via_params = StdioServerParameters(
            command=binary,
            args=serve_argv(binary, project)[1:],
            env=env,
            cwd=str(project),
        )
        with open(os.devnull, "w") as devnull:
            async with (
                Client(stdio_client(direct_params, errlog=devnull), mode="legacy") as direct,
                Client(stdio_client(via_params, errlog=devnull), mode="legacy") as via,
            ):
                # The first call through toolgate waits for the server to start.
                for _ in range(20):
                    await timed(direct, "echo")
                    await timed(via, "mcp__everything__echo")
                d, v = [], []
                for _ in range(calls):
                    d.append(await timed(direct, "echo"))
                    v.append(await timed(via, "mcp__everything__echo"))
                return d, v


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=str(ROOT / "target/release/toolgate"))
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--client", choices=["sdk", "raw"], default="sdk")
    args = parser.parse_args()
    args.bin = os.path.abspath(args.bin)
    print(f"binary {args.bin}; {args.client} client; {args.calls} calls each per round, alternating")
    for n in range(args.rounds):
        if args.client == "raw":
            d, v = raw_round(args.bin, args.calls)
        else:
            d, v = await sdk_round(args.bin, args.calls)
        dm, vm = statistics.median(d), statistics.median(v)
        print(
            f"round {n + 1}: direct median {dm:.2f} ms (p90 {p90(d):.2f}), "
            f"through toolgate median {vm:.2f} ms (p90 {p90(v):.2f}), added {vm - dm:.2f} ms"
        )
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    anyio.run(main)
