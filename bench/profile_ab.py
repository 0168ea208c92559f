#!/usr/bin/env python3
"""Run-time A/B of two toolgate builds (e.g. two release profiles), calls alternating so a
loaded machine's noise falls on both: the round trip over stdio of
  - `read_file` of a 100-line file (the MCP server path: rmcp, toolgate-mcp, toolgate-fs),
  - `run_shell true` (toolgate-shell, toolgate-contain),
  - `grep` over the project,
  - `read_file` through the gateway: a second `toolgate serve` mounted as server `inner`
    (`--disclosure off`), so the call crosses rmcp's client and toolgate-gateway too.
Median of N calls per round, R rounds.

    python3 bench/profile_ab.py BIN_A BIN_B [CALLS] [ROUNDS]
"""
import os, statistics, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hardening as h

bins = [os.path.abspath(b) for b in sys.argv[1:3]]
calls = int(sys.argv[3]) if len(sys.argv) > 3 else 300
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
cases = {
    "read_file": ("read_file", {"path": "f.txt"}),
    "run_shell true": ("run_shell", {"command": "true"}),
    "grep": ("grep", {"pattern": "line 4[0-9]"}),
    "gateway read_file": ("mcp__inner__read_file", {"path": "f.txt"}),
}
res = {b: {c: [] for c in cases} for b in bins}
for _ in range(rounds):
    with tempfile.TemporaryDirectory() as d:
        servers = {}
        for i, b in enumerate(bins):
            p = os.path.join(d, str(i)); os.makedirs(p)
            with open(os.path.join(p, "f.txt"), "w") as f:
                f.write("".join(f"line {n}\n" for n in range(100)))
            inner = (f'[disclosure]\nmode = "off"\n[mcp_servers.inner]\ncommand = "{b}"\n'
                     f'args = ["serve", "--root", "{p}"]\n'
                     # The mounted server must not read this config (it would mount itself).
                     f'env = {{ XDG_CONFIG_HOME = "{p}/.inner-cfg" }}\n')
            servers[b] = h.Serve(b, p, inner)
            for _ in range(200):  # wait for the mounted server
                r = servers[b].call(*cases["gateway read_file"])
                if not r["result"].get("isError"):
                    break
                time.sleep(0.05)
        for case, (name, args) in cases.items():
            lat = {b: [] for b in bins}
            for _ in range(calls):
                for b, s in servers.items():
                    t = time.perf_counter()
                    r = s.call(name, args)
                    lat[b].append((time.perf_counter() - t) * 1000)
                    assert not r["result"].get("isError"), r
            for b in bins:
                res[b][case].append(statistics.median(lat[b]))
        for s in servers.values():
            s.p.stdin.close(); s.p.wait()
print(f"{'case':<20} " + "  ".join(f"{'B' if i else 'A'} (median of rounds)" for i in range(2)) + "  B/A")
for case in cases:
    a, b = (statistics.median(res[x][case]) for x in bins)
    print(f"{case:<20} {a:8.3f} ms            {b:8.3f} ms            {b / a:.3f}")
print(f"A = {bins[0]}\nB = {bins[1]}\nload {os.getloadavg()}")
