#!/usr/bin/env python3
"""MCP gateway benchmark: what mounting servers behind `toolgate serve` costs a client.

Figures:
  1. Time to the first `tools/list` answer (process spawn -> initialize -> tools/list reply),
     median of N runs, for `toolgate serve` with
       a. no mounted server,
       b. one server that hangs forever (`sleep`, never answers initialize; startup timeout 15 s),
       c. server-everything mounted (a real server starting in the background).
     Goal: b and c equal a -- nobody waits for a mounted server.
  2. Added latency of one call through the gateway: median round trip of `echo` on
     server-everything called directly over stdio vs `mcp__everything__echo` through
     `toolgate serve --disclosure off` (every tool direct), and through `run_tool` with the
     default progressive disclosure (same machine, same session pattern, N calls each).

Usage: python3 bench/mcp_gateway.py [--runs 15] [--calls 500]
Needs: target/release/toolgate and .cache/peers (bash scripts/install-peers.sh).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, ".cache/peers/npm/node_modules")
NODE = os.path.join(PEERS, "node/bin/node")
EVERYTHING = os.path.join(PEERS, "@modelcontextprotocol/server-everything/dist/index.js")
TOOLGATE = os.path.join(ROOT, "target/release/toolgate")


class Session:
    def __init__(self, argv, cwd, env=None):
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        self.notifications = []

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def recv(self, want_id):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            msg = json.loads(line)
            if msg.get("id") == want_id and "method" not in msg:
                return msg
            if "method" in msg and "id" not in msg:
                self.notifications.append(msg["method"])
            elif "method" in msg:
                # A server-to-client request (roots/list, ping): answer it emptily.
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.recv(self.next_id)

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def project(servers):
    """A temporary project whose user config (`<d>/.user-config`, see env()) mounts
    `servers`: servers from a project file would need `toolgate mcp trust` first."""
    d = tempfile.mkdtemp(prefix="tg-gw-bench-")
    os.makedirs(os.path.join(d, ".user-config", "toolgate"))
    lines = ["[mcp]", "import = false", ""]
    for name, (command, args) in servers.items():
        lines += [f"[mcp_servers.{name}]", f"command = {json.dumps(command)}",
                  f"args = {json.dumps(args)}", ""]
    with open(os.path.join(d, ".user-config/toolgate/config.toml"), "w") as f:
        f.write("\n".join(lines))
    return d


def env(cwd=None):
    e = dict(os.environ)
    e["XDG_CONFIG_HOME"] = os.path.join(cwd, ".user-config") if cwd else "/nonexistent-toolgate-bench"
    e.pop("RUST_LOG", None)
    return e


def first_list(cwd, runs):
    times = []
    for _ in range(runs):
        s = Session([TOOLGATE, "serve"], cwd, env(cwd))
        s.initialize()
        s.request("tools/list", {})
        times.append(time.perf_counter() - s.t0)
        s.close()
    return statistics.median(times) * 1000, max(times) * 1000


def round_trips(session, name, calls, via_run_tool=False):
    times = []
    for i in range(calls):
        args = {"message": f"m{i}"}
        params = {"name": name, "arguments": args}
        if via_run_tool:
            params = {"name": "run_tool", "arguments": {"name": name, "input": args}}
        t = time.perf_counter()
        r = session.request("tools/call", params)
        times.append(time.perf_counter() - t)
        if "error" in r or r["result"].get("isError"):
            raise RuntimeError(f"{name} failed: {r}")
    times.sort()
    return statistics.median(times) * 1e6, times[int(len(times) * 0.99) - 1] * 1e6


def wait_for_tool(session, name, limit=60):
    """Waits until `name` answers (listed directly or reachable through run_tool)."""
    started = time.time()
    while time.time() - started < limit:
        r = session.request("tools/call", {"name": "run_tool", "arguments": {
            "name": name, "input": {"message": "ping"}}})
        direct = session.request("tools/list", {})["result"]["tools"]
        if any(t["name"] == name for t in direct) or not r.get("result", {}).get("isError"):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{name} never appeared")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--calls", type=int, default=500)
    a = ap.parse_args()
    for path in (TOOLGATE, NODE, EVERYTHING):
        if not os.path.exists(path):
            sys.exit(f"missing {path}: cargo build --release -p toolgate; bash scripts/install-peers.sh")

    print(f"1. time to the first tools/list answer (median of {a.runs} runs, max in brackets)")
    cases = {
        "no mounted server": {},
        "a server that hangs on initialize": {"hang": ("sleep", ["1000"])},
        "server-everything mounted": {"everything": (NODE, [EVERYTHING, "stdio"])},
    }
    results = {}
    for label, servers in cases.items():
        med, worst = first_list(project(servers), a.runs)
        results[label] = med
        print(f"   {label:<36} {med:7.1f} ms  [{worst:.1f}]")
    base = results["no mounted server"]
    print(f"   delay added by the hanging server: {results['a server that hangs on initialize'] - base:+.1f} ms")

    print(f"\n2. round trip of echo on server-everything ({a.calls} calls, median / p99)")
    direct = Session([NODE, EVERYTHING, "stdio"], ROOT, env())
    direct.initialize()
    round_trips(direct, "echo", 20)  # warm-up
    d_med, d_p99 = round_trips(direct, "echo", a.calls)
    direct.close()
    print(f"   direct (stdio)            {d_med:8.0f} us / {d_p99:.0f} us")
    mounted = project({"everything": (NODE, [EVERYTHING, "stdio"])})
    via = Session([TOOLGATE, "serve", "--disclosure", "off"], mounted, env(mounted))
    via.initialize()
    wait_for_tool(via, "mcp__everything__echo")
    round_trips(via, "mcp__everything__echo", 20)
    g_med, g_p99 = round_trips(via, "mcp__everything__echo", a.calls)
    via.close()
    print(f"   through toolgate serve    {g_med:8.0f} us / {g_p99:.0f} us   (--disclosure off)")
    via = Session([TOOLGATE, "serve"], mounted, env(mounted))
    via.initialize()
    wait_for_tool(via, "mcp__everything__echo")
    round_trips(via, "mcp__everything__echo", 20, via_run_tool=True)
    r_med, r_p99 = round_trips(via, "mcp__everything__echo", a.calls, via_run_tool=True)
    via.close()
    print(f"   through run_tool          {r_med:8.0f} us / {r_p99:.0f} us   (default disclosure)")
    print(f"   added by the gateway      {g_med - d_med:8.0f} us (median; {r_med - d_med:.0f} us via run_tool)")
    # The same call without the client's process and toolgate's own MCP server hop.
    subprocess.run(["cargo", "run", "--quiet", "--release", "-p", "toolgate-gateway",
                    "--example", "overhead", str(a.calls)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
