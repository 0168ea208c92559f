#!/usr/bin/env python3
"""`run_shell {"command": "true"}` round trip over stdio with containment `auto` (the PID
namespace: relay + supervisor) and `process-group` (neither), both servers at once and
their calls alternating, so a loaded machine's noise falls on both alike (where the
per-command time goes). Median of 200 calls per round.

    chrt -f 5 python3 bench/relay_cost.py target/release/toolgate 3
"""
import os, statistics, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hardening as h
tg = os.path.abspath(sys.argv[1]); rounds = int(sys.argv[2])
res = {"auto": [], "process-group": []}
for _ in range(rounds):
    with tempfile.TemporaryDirectory() as d:
        servers = {}
        for mode in res:
            p = os.path.join(d, mode); os.makedirs(p)
            servers[mode] = h.Serve(tg, p, h.mode_config(mode))
        lat = {m: [] for m in res}
        for _ in range(200):
            for m, s in servers.items():
                t = time.perf_counter()
                r = s.call("run_shell", {"command": "true"})
                lat[m].append((time.perf_counter() - t) * 1000)
                assert not r["result"].get("isError"), r
        for m, s in servers.items():
            s.p.stdin.close(); s.p.wait()
            res[m].append(statistics.median(lat[m]))
for m, v in res.items():
    print(f"{m}: median of rounds {statistics.median(v):.2f} ms, lowest {min(v):.2f} ms, rounds {', '.join(f'{x:.2f}' for x in v)}")
print(f"load {os.getloadavg()}")
