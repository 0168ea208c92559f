#!/usr/bin/env python3
"""Warm search latency over MCP stdio, beside ripgrep and the reference filesystem server.

One `toolgate serve` session answers `grep` for each pattern and `search_files` for a name,
RUNS times each (median per call, after warm-up); ripgrep runs the same searches as fresh
processes; `@modelcontextprotocol/server-filesystem` answers the same name search with its
own `search_files` (a glob, `**/*NAME*`), for contrast. Called by bench/search.sh, which
prints the table; usable alone:

    python3 bench/search_mcp.py --root DIR --config bench/search-bench.toml --name parse \
        --runs 10 --out /tmp/mcp.json 'unsafe impl Send' 'TODO|FIXME'
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_PKG = os.path.join(ROOT, ".cache/peers/npm/node_modules")


def node_bin():
    for cand in [os.path.join(NODE_PKG, "node/bin/node"), os.path.join(NODE_PKG, ".bin/node")]:
        if os.path.exists(cand):
            return cand
    return shutil.which("node")


class Session:
    """A line-delimited JSON-RPC client for an MCP server on stdio."""

    def __init__(self, argv, cwd):
        self.p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                return msg

    def call(self, tool, args):
        r = self.request("tools/call", {"name": tool, "arguments": args})
        res = r.get("result") or {}
        assert not res.get("isError"), r
        return res

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def timed(fn, runs, warmup=2):
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--rg-glob", default="!.git/", help="rg -g GLOB giving rg toolgate's walk")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", required=True)
    ap.add_argument("patterns", nargs="+")
    a = ap.parse_args()
    tg = os.environ.get("TOOLGATE_BIN") or os.path.join(ROOT, "target/release/toolgate")
    rows = []

    s = Session([tg, "--root", a.root, "--config", a.config, "serve", "--log-level", "warn"], a.root)
    for p in a.patterns:
        ms, res = timed(lambda: s.call("grep", {"pattern": p}), a.runs)
        sc = res["structuredContent"]
        rows.append({"what": f"toolgate serve: grep /{p}/", "median_ms": ms,
                     "detail": f"{sc['total']} lines in {sc['files_matched']} files"})
        ms, out = timed(lambda: subprocess.run(["rg", "--hidden", "-g", a.rg_glob, "-n", "--", p,
                                                a.root],
                                                capture_output=True, check=True).stdout, a.runs)
        lines = out.count(b"\n")
        rows.append({"what": f"rg -n --hidden -g SKIP /{p}/ (new process each)", "median_ms": ms,
                     "detail": f"{lines} lines"})
    ms, res = timed(lambda: s.call("search_files", {"query": a.name}), a.runs)
    rows.append({"what": f"toolgate serve: search_files {a.name}", "median_ms": ms,
                 "detail": f"{res['structuredContent']['total']} files"})
    s.close()
    ms, out = timed(lambda: subprocess.run(
        f"rg --hidden -g '{a.rg_glob}' --files {a.root} | rg -i {a.name}", shell=True,
        capture_output=True,
        check=True).stdout, a.runs)
    files = out.count(b"\n")
    rows.append({"what": f"rg --files | rg -i {a.name} (new processes each)", "median_ms": ms,
                 "detail": f"{files} files"})

    fs_js = os.path.join(NODE_PKG, "@modelcontextprotocol/server-filesystem/dist/index.js")
    node = node_bin()
    if os.path.exists(fs_js) and node:
        s = Session([node, fs_js, a.root], a.root)
        pattern = f"**/*{a.name}*"
        ms, res = timed(lambda: s.call("search_files", {"path": a.root, "pattern": pattern}),
                        max(3, a.runs // 3), warmup=1)
        text = res["content"][0]["text"]
        count = 0 if text.startswith("No matches") else len(text.splitlines())
        rows.append({"what": f"server-filesystem: search_files {pattern}", "median_ms": ms,
                     "detail": f"{count} paths (files and folders, unbounded, "
                               f"{len(text) // 1024} KiB of text)"})
        s.close()
    else:
        print("server-filesystem not installed (bash scripts/install-peers.sh); skipped",
              file=sys.stderr)

    with open(a.out, "w") as f:
        json.dump({"rows": rows}, f, indent=1)
    for r in rows:
        print(f"{r['what']:<60} {r['median_ms']:9.1f} ms  ({r['detail']})", file=sys.stderr)


if __name__ == "__main__":
    main()
