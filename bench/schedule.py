#!/usr/bin/env python3
"""Scheduling figures of `toolgate serve` (issue: one process-wide lock).

1. Cross-session latency: session A runs `sleep 10` through run_shell over Streamable HTTP;
   meanwhile session B calls read_file 20 times (and job_kill of its own job once). Reports
   B's latencies. Before the fix B waited for A (7.5-19.5 s); the goal is <= 50 ms.
2. Pipelined order: over stdio, 5 write_file calls to one file are written in one go before
   any reply is read; the final content must be the 5th call's. Counts wrong outcomes over
   30 trials.

Usage: .cache/peers/venv/bin/python bench/schedule.py [--bin target/release/toolgate]
"""
import argparse, asyncio, json, os, re, statistics, subprocess, sys, tempfile, time

import httpx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from mcp_http import Session, init_params  # noqa: E402


async def cross_session(tg, d, env):
    p = subprocess.Popen([tg, "serve", "--http", "127.0.0.1:0", "--log-level", "warn"], cwd=d,
                         stderr=subprocess.PIPE, env=env)
    url = None
    for line in p.stderr:
        m = re.search(rb"at (http://\S+/mcp)", line)
        if m:
            url = m.group(1).decode()
            break
    try:
        async with httpx.AsyncClient(timeout=60) as c:
            a = await Session(c, url).open()
            b = await Session(c, url).open()
            t0 = time.perf_counter()
            long = asyncio.create_task(a.call("run_shell", {"command": "sleep 10"}))
            await asyncio.sleep(0.3)
            job = await b.call("run_shell", {"command": "sleep 60", "background": True})
            job_id = job["structuredContent"]["job_id"]
            reads = []
            for _ in range(20):
                t = time.perf_counter()
                await b.call("read_file", {"path": "hundred.txt"})
                reads.append((time.perf_counter() - t) * 1000)
                await asyncio.sleep(0.2)
            t = time.perf_counter()
            await b.call("job_kill", {"job_id": job_id})
            kill = (time.perf_counter() - t) * 1000
            a_running = not long.done()
            await long
            a_took = time.perf_counter() - t0
        print(f"B read_file while A runs `sleep 10`: p50 {statistics.median(reads):.1f} ms, "
              f"max {max(reads):.1f} ms over {len(reads)} calls; B job_kill {kill:.1f} ms; "
              f"A still running after B's calls: {a_running}; A took {a_took:.1f} s")
    finally:
        p.kill()
        p.wait()


def pipelined_trial(tg, d, env, n=5):
    target = os.path.join(d, "same.txt")
    if os.path.exists(target):
        os.remove(target)
    lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params("bench")}),
             json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    for i in range(1, n + 1):
        lines.append(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "write_file", "arguments": {"path": "same.txt", "content": f"call {i}\n" * (200 - 30 * i)}}}))
    p = subprocess.Popen([tg, "serve", "--log-level", "error"], cwd=d, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdin.write(("\n".join(lines) + "\n").encode())
    p.stdin.flush()
    got = 0
    for line in p.stdout:
        msg = json.loads(line)
        if isinstance(msg.get("id"), int) and msg["id"] >= 1:
            got += 1
            if got == n:
                break
    p.stdin.close()
    p.wait()
    with open(target) as f:
        return f.read().startswith(f"call {n}\n")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("TOOLGATE_BIN") or os.path.join(ROOT, "target/release/toolgate"))
    ap.add_argument("--trials", type=int, default=30)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "hundred.txt"), "w") as f:
            f.writelines(f"line {i}\n" for i in range(100))
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(d, ".home"))
        env.pop("TOOLGATE_TOKEN", None)
        await cross_session(a.bin, d, env)
        wrong = sum(not pipelined_trial(a.bin, d, env) for _ in range(a.trials))
        print(f"pipelined write_file x5 to one file: wrong final content in {wrong} of {a.trials} trials")


asyncio.run(main())
