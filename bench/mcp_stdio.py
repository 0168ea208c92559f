#!/usr/bin/env python3
"""Stdio MCP benchmark: toolgate vs @modelcontextprotocol/server-filesystem, in one run.

Measures, for each server:
  - cold start: process spawn to the `initialize` reply (median of N runs)
  - round trip: median / p99 of a small read (a 100-line file) over one session

Usage: python3 bench/mcp_stdio.py [--runs 20] [--calls 500]
Needs: target/release/toolgate and .cache/peers (bash scripts/install-peers.sh).
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_PKG = os.path.join(ROOT, ".cache/peers/npm/node_modules")


def node_bin():
    for cand in [os.path.join(NODE_PKG, "node/bin/node"), os.path.join(NODE_PKG, ".bin/node")]:
        if os.path.exists(cand):
            return cand
    return shutil.which("node")


class Session:
    def __init__(self, argv, cwd):
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.next_id = 0

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def recv(self, want_id):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            msg = json.loads(line)
            if msg.get("id") == want_id:
                return msg

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.recv(self.next_id)

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "0"}})
        elapsed = time.perf_counter() - self.t0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r, elapsed

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def bench(name, argv, cwd, tool, args, runs, calls):
    starts = []
    for _ in range(runs):
        s = Session(argv, cwd)
        _, elapsed = s.initialize()
        starts.append(elapsed * 1000)
        s.close()
    s = Session(argv, cwd)
    s.initialize()
    for _ in range(20):  # warm-up
        s.request("tools/call", {"name": tool, "arguments": args})
    rtts = []
    for _ in range(calls):
        t = time.perf_counter()
        r = s.request("tools/call", {"name": tool, "arguments": args})
        rtts.append((time.perf_counter() - t) * 1000)
        assert not r["result"].get("isError"), r
    s.close()
    rtts.sort()
    return {
        "server": name,
        "cold_start_ms_median": round(statistics.median(starts), 2),
        "rtt_ms_median": round(statistics.median(rtts), 3),
        "rtt_ms_p99": round(rtts[int(len(rtts) * 0.99) - 1], 3),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--calls", type=int, default=500)
    a = ap.parse_args()
    tg = os.environ.get("TOOLGATE_BIN") or os.path.join(ROOT, "target/release/toolgate")
    if not os.path.exists(tg):
        sys.exit("build first: cargo build --release -p toolgate")
    with tempfile.TemporaryDirectory() as d:
        d = os.path.realpath(d)
        with open(os.path.join(d, "hundred.txt"), "w") as f:
            for i in range(100):
                f.write(f"line {i}: the quick brown fox jumps over the lazy dog\n")
        env_home = os.path.join(d, ".home")
        os.environ["XDG_CONFIG_HOME"] = env_home
        results = [bench("toolgate", [tg, "serve", "--log-level", "warn"], d, "read_file",
                         {"path": "hundred.txt"}, a.runs, a.calls)]
        fs_js = os.path.join(NODE_PKG, "@modelcontextprotocol/server-filesystem/dist/index.js")
        if os.path.exists(fs_js):
            results.append(bench("server-filesystem", [node_bin(), fs_js, d], d, "read_text_file",
                                 {"path": os.path.join(d, "hundred.txt")}, a.runs, a.calls))
        print(f"{'server':<20}{'cold start (ms)':>18}{'rtt median (ms)':>18}{'rtt p99 (ms)':>15}")
        for r in results:
            print(f"{r['server']:<20}{r['cold_start_ms_median']:>18}{r['rtt_ms_median']:>18}{r['rtt_ms_p99']:>15}")


if __name__ == "__main__":
    main()
