#!/usr/bin/env python3
"""Fault injection under load: `toolgate serve --http` with two mounted stdio
servers while CLIENTS concurrent Streamable HTTP sessions make CALLS tool calls, and a chaos
loop SIGKILLs the `flaky` server, hangs it (SIGSTOP for 3 s, then SIGCONT) and makes it print
lines that are not JSON-RPC (its `garble` tool).

Checks, and exits non-zero when one fails:
- every call is answered: a result (an error result counts: "cleanly failed") or a JSON-RPC
  error, never a dropped connection or a hang past the client's timeout;
- RSS is flat: the load runs as two identical rounds; after the second, RSS is within 8 MiB
  of its value after the first (a leak grows every round) and within 32 MiB of the
  warm-up's;
- zero leaked processes: during the run, at most the expected helpers carry this run's
  mark; after SIGTERM, none (checked in /proc by an environment mark every child inherits).

Prints calls answered, by outcome, p50/p99/max latency, RSS before and after, survivors.

Usage: python tests/fault/fault_injection.py --bin target/debug/toolgate \
           --fake target/debug/fake_server [--clients 50] [--calls 10000]
"""
import argparse, asyncio, json, os, random, re, signal, statistics, subprocess, sys, tempfile, time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from mcp_http import Session  # noqa: E402

RSS_SLACK_KIB = 32 * 1024
ROUND_SLACK_KIB = 8 * 1024


def marked(mark):
    """Live processes whose environment carries TOOLGATE_FAULT_MARK=mark: (pid, comm)."""
    needle = f"TOOLGATE_FAULT_MARK={mark}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read():
                    continue
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            state = stat[stat.rfind(")") + 2]
            if state in "ZX":
                continue
            with open(f"/proc/{entry}/comm") as f:
                found.append((int(entry), f.read().strip()))
        except OSError:
            continue
    return found


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def flaky_pids(mark):
    """The `flaky` fake server's own process (not its relay): comm fake_server, arg FLAKY."""
    pids = []
    for pid, comm in marked(mark):
        if comm != "fake_server":
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if b"FAKE_ROLE=flaky\0" in f.read():
                    pids.append(pid)
        except OSError:
            pass
    return pids


CALLS = [
    ("mcp__flaky__ok", {"message": "hi"}),
    ("mcp__flaky__garble", {}),
    ("mcp__flaky__sleep", {"ms": 50}),
    ("mcp__steady__ok", {"message": "steady"}),
    ("read_file", {"path": "notes.txt"}),
    ("grep", {"pattern": "needle"}),
    ("list_dir", {"path": "."}),
    ("run_shell", {"command": "echo hi"}),
]


samples = {}  # the first error result's text per tool, to show how calls failed


async def load(url, clients, calls, timeout):
    outcomes = {"ok": 0, "tool error": 0, "json-rpc error": 0, "unanswered": 0}
    latencies = []
    errors_by_tool = {}
    unanswered = []
    counter = iter(range(calls))

    async def worker(c, k):
        s = await Session(c, url, "fault-injection").open()
        for i in counter:
            name, args = CALLS[(i + k) % len(CALLS)]
            t = time.perf_counter()
            try:
                msg = await s.call_message(name, args)
                if "error" in msg:
                    outcomes["json-rpc error"] += 1
                elif msg["result"].get("isError"):
                    outcomes["tool error"] += 1
                    errors_by_tool[name] = errors_by_tool.get(name, 0) + 1
                    samples.setdefault(name, msg["result"]["content"][0]["text"][:160])
                else:
                    outcomes["ok"] += 1
            except Exception as e:  # a dropped connection or a timeout: not answered
                outcomes["unanswered"] += 1
                unanswered.append(f"{name}: {type(e).__name__}: {e}")
            latencies.append(time.perf_counter() - t)
        await s.close()

    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as c:
        await asyncio.gather(*(worker(c, k) for k in range(clients)))
    outcomes["errors by tool"] = errors_by_tool
    return outcomes, latencies, unanswered


async def chaos(mark, stop, log):
    """Every 0.7 s: SIGKILL the flaky server, or hang it for 3 s."""
    rng = random.Random(15)
    while not stop.is_set():
        await asyncio.sleep(0.7)
        pids = flaky_pids(mark)
        if not pids:
            continue
        if rng.random() < 0.6:
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            log["killed"] += 1
        else:
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
            log["hung"] += 1
            await asyncio.sleep(3)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/debug/toolgate")
    ap.add_argument("--fake", default="target/debug/fake_server")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds a client waits for one answer before counting it unanswered")
    a = ap.parse_args()
    tg, fake = os.path.abspath(a.bin), os.path.abspath(a.fake)
    mark = f"fault-{os.getpid()}-{int(time.time())}"
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "cfg", "toolgate")
        os.makedirs(cfg)
        with open(os.path.join(cfg, "config.toml"), "w") as f:
            f.write(f"""
[mcp_servers.flaky]
command = "{fake}"
args = ["normal"]
env = {{ FAKE_GARBLE = "1", FAKE_ROLE = "flaky" }}
tool_timeout_sec = 2
startup_timeout_sec = 5

[mcp_servers.steady]
command = "{fake}"
args = ["normal"]
""")
        project = os.path.join(d, "project")
        os.makedirs(project)
        with open(os.path.join(project, "notes.txt"), "w") as f:
            f.write("".join(f"line {i} needle\n" for i in range(200)))
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(d, "cfg"), TOOLGATE_FAULT_MARK=mark)
        env.pop("RUST_LOG", None)
        p = subprocess.Popen([tg, "serve", "--http", "127.0.0.1:0", "--disclosure", "off",
                              "--log-level", "info"], cwd=project, env=env,
                             stderr=subprocess.PIPE)
        url, containment = None, "?"
        for line in p.stderr:
            text = line.decode(errors="replace")
            m = re.search(r"process containment: (.*)", text)
            if m:
                containment = m.group(1).strip()
            m = re.search(r"at (http://\S+/mcp)", text)
            if m:
                url = m.group(1)
                break
        if url is None:
            print("toolgate did not start", file=sys.stderr)
            return 1
        # Keep reading stderr so toolgate never blocks on a full pipe.
        drain = asyncio.get_running_loop().run_in_executor(None, lambda: [_ for _ in p.stderr])
        failures = []
        try:
            warm, _, _ = await load(url, 10, 400, a.timeout)  # warm-up: servers started, caches filled
            await asyncio.sleep(1)
            rss_before = rss_kib(p.pid)
            # Two identical rounds: memory a first round grows into (allocator arenas for
            # 50 sessions) must not grow again in the second; a leak would.
            outcomes, lat, unanswered, rss_rounds, errors = {}, [], [], [], {}
            log = {"killed": 0, "hung": 0}
            t0 = time.perf_counter()
            for half in (a.calls // 2, a.calls - a.calls // 2):
                stop = asyncio.Event()
                chaos_task = asyncio.create_task(chaos(mark, stop, log))
                o, l, u = await load(url, a.clients, half, a.timeout)
                stop.set()
                await chaos_task
                for pid in flaky_pids(mark):  # nothing left stopped
                    os.kill(pid, signal.SIGCONT)
                by_tool = o.pop("errors by tool")
                for k, v in o.items():
                    outcomes[k] = outcomes.get(k, 0) + v
                for k, v in by_tool.items():
                    errors[k] = errors.get(k, 0) + v
                lat += l
                unanswered += u
                await asyncio.sleep(3)
                rss_rounds.append(rss_kib(p.pid))
            wall = time.perf_counter() - t0
            rss_after = rss_rounds[-1]
            during = marked(mark)
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                failures.append("toolgate did not exit within 10 s of SIGTERM")
                p.kill()
                p.wait()
            await drain
        deadline = time.time() + 10
        survivors = marked(mark)
        while survivors and time.time() < deadline:
            await asyncio.sleep(0.1)
            survivors = marked(mark)
    answered = sum(outcomes.values()) - outcomes["unanswered"]
    lat.sort()
    q = lambda x: lat[min(len(lat) - 1, int(x * len(lat)))] * 1000
    print(f"containment: {containment}")
    print(f"chaos: flaky server SIGKILLed {log['killed']} times, hung (SIGSTOP 3 s) {log['hung']} times, "
          f"garble called {a.calls // len(CALLS)} times")
    print(f"calls: {answered}/{a.calls} answered in {wall:.1f} s by {a.clients} clients "
          f"({', '.join(f'{k} {v}' for k, v in outcomes.items())})")
    print(f"error results by tool: {dict(sorted(errors.items())) or 'none'}")
    for name, text in sorted(samples.items()):
        print(f"  e.g. {name}: {text!r}")
    print(f"latency: p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, max {lat[-1] * 1000:.1f} ms")
    print(f"rss: {rss_before / 1024:.1f} MiB after warm-up, {rss_rounds[0] / 1024:.1f} MiB after "
          f"round 1, {rss_rounds[1] / 1024:.1f} MiB after round 2")
    print(f"processes with the run's mark at the end of the load: {len(during)} "
          f"({', '.join(sorted(c for _, c in during))})")
    print(f"survivors after toolgate exited: {len(survivors)} {survivors}")
    if outcomes["unanswered"]:
        failures.append(f"{outcomes['unanswered']} calls unanswered, e.g. {unanswered[:3]}")
    if rss_after > rss_before + RSS_SLACK_KIB:
        failures.append(f"RSS grew by {(rss_after - rss_before) / 1024:.1f} MiB")
    if rss_rounds[1] > rss_rounds[0] + ROUND_SLACK_KIB:
        failures.append(f"RSS grew by {(rss_rounds[1] - rss_rounds[0]) / 1024:.1f} MiB "
                        "between two identical rounds")
    if survivors:
        failures.append(f"{len(survivors)} processes outlived toolgate: {survivors}")
    # toolgate, its namespace keeper and init, and per server (flaky, steady) a relay, the
    # command supervisor (reaper) and the server: 9 when both servers are up at the end.
    if len(during) > 3 + 3 * 2:
        failures.append(f"{len(during)} marked processes during the run (leak?): {during}")
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
