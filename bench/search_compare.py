#!/usr/bin/env python3
"""toolgate's grep and search_files beside ripgrep, all figures in one run.

For each tree, after checking that both report the same matches:

- fresh process: `toolgate call grep` vs `rg`, and `toolgate call search_files` vs
  `rg --files | rg -i`, with hyperfine (`-N` where no pipe is needed), in ROUNDS rounds of a
  few runs each, so that both sides meet the same load; median wall time and mean user+sys
  CPU time over all runs;
- warm: one `toolgate serve` session over stdio answering the same searches, alternating
  call by call with a new `rg` process; median wall time, and CPU time per call (the serve
  process's, from /proc; rg's from its rusage).

The machine's load average is printed beside every row: on a shared machine, compare the
CPU-time ratio when wall times are noisy. Called by bench/search.sh; usable alone:

    python3 bench/search_compare.py --tg target/release/toolgate --rg target/bench-tools/bin/rg \
        --config bench/search-bench.toml --tree vendor=DIR --pattern 'fn [a-z_]+_with_capacity' \
        --name parse --out /tmp/search.json
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

SKIP = "!{.git,node_modules,.cache,.pnpm-store,.yarn,.next,.nuxt,.turbo,dist,build,coverage,.venv,venv,target,.gradle,.idea}/"


def load():
    return os.getloadavg()[0]


def quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


class Session:
    """A line-delimited JSON-RPC client for `toolgate serve` on stdio."""

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
        res = self.request("tools/call", {"name": tool, "arguments": args}).get("result") or {}
        assert not res.get("isError"), res
        return res

    def cpu(self):
        """User+system seconds of the server so far (all its threads)."""
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def hyperfine(commands, rounds, runs, shell):
    """Runs `commands` side by side in `rounds` hyperfine invocations; per command: all wall
    times, and the mean user+sys CPU time."""
    walls = [[] for _ in commands]
    cpus = [[] for _ in commands]
    loads = []
    for _ in range(rounds):
        loads.append(load())
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            # -i: rg exits 1 when nothing matches (the counts were checked to agree).
            argv = ["hyperfine", "-i", "--warmup", "1", "--runs", str(runs), "--export-json", out.name,
                    "--style", "none"]
            if not shell:
                argv.append("-N")
            for name, cmd in commands:
                argv += ["-n", name, cmd]
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            results = json.load(open(out.name))["results"]
        for i, r in enumerate(results):
            walls[i] += r["times"]
            cpus[i].append(r["user"] + r["system"])
    loads.append(load())
    return [(statistics.median(w) * 1e3, statistics.mean(c) * 1e3) for w, c in zip(walls, cpus)], loads


def count_rg(rg, tree, pattern):
    lines = subprocess.run([rg, "--hidden", "-g", SKIP, "-n", "--", pattern, tree],
                           capture_output=True).stdout.count(b"\n")
    files = subprocess.run([rg, "--hidden", "-g", SKIP, "-l", "--", pattern, tree],
                           capture_output=True).stdout.count(b"\n")
    return lines, files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tg", required=True)
    ap.add_argument("--rg", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--tree", action="append", required=True, help="LABEL=DIR")
    ap.add_argument("--pattern", action="append", required=True)
    ap.add_argument("--name", required=True, help="search_files query")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=4, help="hyperfine runs per round")
    ap.add_argument("--warm-runs", type=int, default=20)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    tg, rg = a.tg, a.rg
    rows = []

    def row(tree, work, ours, theirs, loads, note=""):
        rows.append({"tree": tree, "work": work, "tg_ms": ours[0], "rg_ms": theirs[0],
                     "tg_cpu_ms": ours[1], "rg_cpu_ms": theirs[1],
                     "load": f"{min(loads):.1f}–{max(loads):.1f}", "note": note})
        r = rows[-1]
        print(f"{tree}: {work}: {r['tg_ms']:.1f} vs {r['rg_ms']:.1f} ms "
              f"(cpu {r['tg_cpu_ms']:.0f} vs {r['rg_cpu_ms']:.0f}) load {r['load']}",
              file=sys.stderr)

    for spec in a.tree:
        label, tree = spec.split("=", 1)
        base = [tg, "--root", tree, "--config", a.config, "call"]
        # Same answers first.
        for p in a.pattern:
            out = subprocess.run(base + ["grep", json.dumps({"pattern": p}), "--json"],
                                 capture_output=True, check=True).stdout
            sc = json.loads(out)["structuredContent"]
            assert not sc["truncated"], sc
            ours = (sc["total"], sc["files_matched"])
            theirs = count_rg(rg, tree, p)
            print(f"{label}: grep /{p}/: toolgate {ours}, rg {theirs} (lines, files)",
                  file=sys.stderr)
            if ours != theirs:
                sys.exit(f"MISMATCH for /{p}/ in {label}")
        out = subprocess.run(base + ["search_files", json.dumps({"query": a.name}), "--json"],
                             capture_output=True, check=True).stdout
        ours = json.loads(out)["structuredContent"]["total"]
        theirs = subprocess.run(f"{rg} --hidden -g {quote(SKIP)} --files {tree} | {rg} -i {a.name}",
                                shell=True, capture_output=True).stdout.count(b"\n")
        print(f"{label}: search_files {a.name}: toolgate {ours}, rg --files | rg -i {theirs}",
              file=sys.stderr)
        if ours != theirs:
            sys.exit(f"MISMATCH for search_files in {label}")
        subprocess.run([rg, "-uuu", "-c", "zzzz_warm_zzzz", tree], capture_output=True)

        # Fresh processes.
        for p in a.pattern:
            cmds = [
                ("toolgate", " ".join(quote(x) for x in base + ["grep", json.dumps({"pattern": p})])),
                ("rg", " ".join(quote(x) for x in [rg, "--hidden", "-g", SKIP, "-n", "--", p, tree])),
            ]
            (ours, theirs), loads = hyperfine(cmds, a.rounds, a.runs, shell=False)
            row(label, f"fresh `call grep /{p}/` vs `rg -n`", ours, theirs, loads)
        cmds = [
            ("toolgate", " ".join(quote(x) for x in base + ["search_files", json.dumps({"query": a.name})]) + " >/dev/null"),
            ("rg", f"{quote(rg)} --hidden -g {quote(SKIP)} --files {quote(tree)} | {quote(rg)} -i {a.name} >/dev/null"),
        ]
        (ours, theirs), loads = hyperfine(cmds, a.rounds, a.runs, shell=True)
        row(label, f"fresh `call search_files {a.name}` vs `rg --files | rg -i`", ours, theirs, loads)

        # Warm, one serve session, alternating call by call with rg.
        s = Session([tg, "--root", tree, "--config", a.config, "serve", "--log-level", "warn"], tree)
        searches = [("grep", {"pattern": p}, [rg, "--hidden", "-g", SKIP, "-n", "--", p, tree], False)
                    for p in a.pattern]
        searches.append(("search_files", {"query": a.name},
                         f"{rg} --hidden -g {quote(SKIP)} --files {tree} | {rg} -i {a.name}", True))
        for tool, args, theirs_cmd, shell in searches:
            for _ in range(2):
                sc = s.call(tool, args).get("structuredContent") or {}
                subprocess.run(theirs_cmd, shell=shell, capture_output=True)
            # The session answers whole too (its client profile is raised by the config).
            if sc.get("truncated") is not False:
                sys.exit(f"{label}: the serve session's {tool} {args} was cut: {sc.get('reason')}")
            tg_t, rg_t, tg_cpu, rg_cpu, loads = [], [], 0.0, 0.0, [load()]
            for _ in range(a.warm_runs):
                c0, t0 = s.cpu(), time.perf_counter()
                s.call(tool, args)
                tg_t.append((time.perf_counter() - t0) * 1e3)
                tg_cpu += s.cpu() - c0
                c0, t0 = children_cpu(), time.perf_counter()
                subprocess.run(theirs_cmd, shell=shell, capture_output=True)
                rg_t.append((time.perf_counter() - t0) * 1e3)
                rg_cpu += children_cpu() - c0
            loads.append(load())
            what = f"/{args['pattern']}/" if tool == "grep" else args["query"]
            against = "rg -n (new process)" if tool == "grep" else "rg --files | rg -i (new processes)"
            row(label, f"warm `serve` {tool} {what} vs {against}",
                (statistics.median(tg_t), tg_cpu / a.warm_runs * 1e3),
                (statistics.median(rg_t), rg_cpu / a.warm_runs * 1e3), loads)
        s.close()

    with open(a.out, "w") as f:
        json.dump({"rows": rows}, f, indent=1)
    print("\n| tree | work | toolgate ms | rg ms | ratio | CPU ms toolgate / rg | CPU ratio | load avg |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['tree']} | {r['work']} | {r['tg_ms']:.1f} | {r['rg_ms']:.1f} | "
              f"{r['tg_ms'] / r['rg_ms']:.2f} | {r['tg_cpu_ms']:.0f} / {r['rg_cpu_ms']:.0f} | "
              f"{r['tg_cpu_ms'] / max(r['rg_cpu_ms'], 1e-9):.2f} | {r['load']} |")


if __name__ == "__main__":
    main()
