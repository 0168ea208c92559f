#!/usr/bin/env python3
"""`run_shell {"command": "true"}` round trip over stdio for two toolgate builds under one
containment, all servers at once and their calls alternating, so a loaded machine's noise
falls on both alike (issue 27: the posix_spawn-style start of process-group containment
against the `fork` before it). Median of CALLS calls per round, ROUNDS rounds.

    chrt -f 5 python3 bench/shell_start_ab.py OLD_BIN NEW_BIN [process-group|auto] [CALLS] [ROUNDS]
"""
import os, statistics, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hardening as h

old, new = (os.path.abspath(b) for b in sys.argv[1:3])
mode = sys.argv[3] if len(sys.argv) > 3 else "process-group"
calls = int(sys.argv[4]) if len(sys.argv) > 4 else 300
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
builds = {"old": old, "new": new}
res = {name: [] for name in builds}
for _ in range(rounds):
    with tempfile.TemporaryDirectory() as d:
        servers = {}
        for name, b in builds.items():
            p = os.path.join(d, name); os.makedirs(p)
            servers[name] = h.Serve(b, p, h.mode_config(mode))
        lat = {name: [] for name in servers}
        for _ in range(calls):
            for name, s in servers.items():
                t = time.perf_counter()
                r = s.call("run_shell", {"command": "true"})
                lat[name].append((time.perf_counter() - t) * 1000)
                assert not r["result"].get("isError"), r
        for name, s in servers.items():
            s.p.stdin.close(); s.p.wait()
            res[name].append(statistics.median(lat[name]))
print(f"containment {mode}; median of {calls} calls per round, {rounds} rounds")
for name, v in res.items():
    print(f"{name}: median of rounds {statistics.median(v):.3f} ms, "
          f"rounds {', '.join(f'{x:.3f}' for x in v)}  ({builds[name]})")
print(f"new/old {statistics.median(res['new']) / statistics.median(res['old']):.3f}")
print(f"load {os.getloadavg()}")
