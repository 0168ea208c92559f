#!/usr/bin/env python3
"""HTTP load: N concurrent tools/call requests against `toolgate serve --http`.

Opens one Streamable HTTP session, then fires N `read_file` calls at once (asyncio + httpx,
HTTP/1.1 connection pool) and reports how many were answered and p50/p99 latency.

Usage: .cache/peers/venv/bin/python bench/mcp_http_load.py [--calls 1000]
"""
import argparse, asyncio, json, os, re, statistics, subprocess, sys, tempfile, time

import httpx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from mcp_http import HDRS, init_params, parse  # noqa: E402


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    a = ap.parse_args()
    tg = os.environ.get("TOOLGATE_BIN") or os.path.join(ROOT, "target/release/toolgate")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "hundred.txt"), "w") as f:
            f.writelines(f"line {i}\n" for i in range(100))
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(d, ".home"))
        env.pop("TOOLGATE_TOKEN", None)
        p = subprocess.Popen([tg, "serve", "--http", "127.0.0.1:0", "--log-level", "warn"], cwd=d,
                             stderr=subprocess.PIPE, env=env)
        url = None
        for line in p.stderr:
            m = re.search(rb"at (http://\S+/mcp)", line)
            if m:
                url = m.group(1).decode()
                break
        try:
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
            async with httpx.AsyncClient(limits=limits, timeout=60) as c:
                r = await c.post(url, headers=HDRS, json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": init_params("load")})
                sid = r.headers.get("mcp-session-id")
                h = dict(HDRS, **({"Mcp-Session-Id": sid} if sid else {}))
                await c.post(url, headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

                async def one(i):
                    t = time.perf_counter()
                    r = await c.post(url, headers=h, json={"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                        "params": {"name": "read_file", "arguments": {"path": "hundred.txt"}}})
                    msg = parse(r)
                    ok = r.status_code == 200 and not msg["result"].get("isError")
                    return ok, (time.perf_counter() - t) * 1000

                t0 = time.perf_counter()
                results = await asyncio.gather(*(one(i) for i in range(a.calls)))
                wall = time.perf_counter() - t0
            lat = sorted(ms for _, ms in results)
            ok = sum(1 for good, _ in results if good)
            print(f"calls={a.calls} answered_ok={ok} wall={wall*1000:.0f} ms "
                  f"throughput={a.calls/wall:.0f}/s p50={statistics.median(lat):.1f} ms "
                  f"p99={lat[int(len(lat)*0.99)-1]:.1f} ms")
            if ok != a.calls:
                sys.exit(1)
        finally:
            p.terminate()
            p.wait(timeout=10)


if __name__ == "__main__":
    asyncio.run(main())
