#!/usr/bin/env python3
"""`run_shell {"command": "true"}` round trip over stdio for toolgate builds and containment
modes, all servers at once and their calls alternating, so a loaded machine's noise falls
on all alike. Median of CALLS calls per round (after 30 warm-up calls each),
ROUNDS rounds; the median of the rounds is the figure.

    chrt -f 5 python3 bench/shell_start_ab.py OLD_BIN NEW_BIN [process-group|auto] [CALLS] [ROUNDS]
    chrt -f 5 python3 bench/shell_start_ab.py BIN:MODE BIN:MODE ... [CALLS] [ROUNDS]

The second form compares any set, e.g. the old and new build under `auto` (the PID
namespace) and the new one under process groups:

    chrt -f 5 python3 bench/shell_start_ab.py old:auto new:auto new:process-group 300 5
"""
import os, statistics, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hardening as h

args = sys.argv[1:]
numbers = [a for a in args if a.isdigit()]
words = [a for a in args if not a.isdigit()]
if words and ":" in words[0]:
    specs = [(os.path.abspath(w.rsplit(":", 1)[0]), w.rsplit(":", 1)[1]) for w in words]
else:
    mode = words[2] if len(words) > 2 else "process-group"
    specs = [(os.path.abspath(words[0]), mode), (os.path.abspath(words[1]), mode)]
calls = int(numbers[0]) if numbers else 300
rounds = int(numbers[1]) if len(numbers) > 1 else 3
names = [f"{os.path.basename(b)}:{m}" for b, m in specs]
res = {name: [] for name in names}
for _ in range(rounds):
    with tempfile.TemporaryDirectory() as d:
        servers = {}
        for name, (b, m) in zip(names, specs):
            p = os.path.join(d, str(len(servers))); os.makedirs(p)
            servers[name] = h.Serve(b, p, h.mode_config(m))
        for _ in range(30):
            for s in servers.values():
                s.call("run_shell", {"command": "true"})
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
print(f"median of {calls} calls per round, {rounds} rounds")
first = statistics.median(res[names[0]])
for name, (b, _) in zip(names, specs):
    v = res[name]
    m = statistics.median(v)
    print(f"{name}: {m:.3f} ms (x{m / first:.3f} of the first), "
          f"rounds {', '.join(f'{x:.3f}' for x in v)}  ({b})")
print(f"load {os.getloadavg()}")
