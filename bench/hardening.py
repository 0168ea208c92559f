#!/usr/bin/env python3
"""Hardening figures for `toolgate serve`, each with process containment on (the default,
a PID namespace where the system allows one) and off (`shell.containment = "process-group"`):

1. survivors after kill -9 of `serve` while a background job with children, a `setsid`
   child, a `set -m` job, a foreground command's `setsid` child and a mounted server's
   `setsid` grandchild run (7 processes; goal 0);
2. exit time after SIGTERM, SIGINT and SIGHUP with stdin still open and commands running
   (goal <= 2 s);
3. the cost of containment per command: `run_shell` of `true` over stdio, median of 200,
   also under each `[shell] sandbox` mode and `sandbox_network = false`;
4. a 1 MB glob given to `search_files` over stdio: the call's time and the server's peak
   RSS (goal <= 1 s, <= 64 MB).

Usage: python3 bench/hardening.py [--bin target/release/toolgate]
                                 [--cost-only [--rounds N] [--baseline OTHER_BIN]]

--cost-only measures only figure 3, in rounds; with --baseline OTHER_BIN both builds serve
at once and their calls alternate, so they compare fairly on a loaded machine.
"""
import argparse, json, os, signal, statistics, subprocess, tempfile, time

WAIT = 20


def processes_with(needle):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if needle.encode() in f.read().replace(b"\0", b" "):
                    with open(f"/proc/{pid}/stat") as s:
                        stat = s.read()
                    if stat[stat.rfind(")") + 2] not in "ZX":
                        found.append(int(pid))
        except OSError:
            pass
    return found


class Serve:
    def __init__(self, tg, project, config):
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(project, ".cfg"))
        cfg = os.path.join(project, ".cfg", "toolgate")
        os.makedirs(cfg, exist_ok=True)
        with open(os.path.join(cfg, "config.toml"), "w") as f:
            f.write(config)
        self.p = subprocess.Popen([tg, "serve", "--log-level", "warn"], cwd=project, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.n = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params, wait=True):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        if not wait:
            return None
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == self.n:
                return msg

    def call(self, name, args, wait=True):
        return self.request("tools/call", {"name": name, "arguments": args}, wait)


def mode_config(mode, extra=""):
    return f'[shell]\ncontainment = "{mode}"\n{extra}'


def survivors(tg, mode):
    marker = f"41.{os.getpid() % 1000:03d}7"
    with tempfile.TemporaryDirectory() as d:
        server = (f'[mcp_servers.spawner]\ncommand = "sh"\nargs = ["-c", "setsid sleep {marker}5 & '
                  f'exec sleep {marker}6"]\nstartup_timeout_sec = 60\n')
        s = Serve(tg, d, mode_config(mode) + server)
        s.call("run_shell", {"command": f"sleep {marker}1 & setsid sleep {marker}2 & "
                                        f"(set -m; sleep {marker}3 &); wait", "background": True})
        s.call("run_shell", {"command": f"setsid sleep {marker}4 & set -m; sleep {marker}7 & wait"},
               wait=False)
        deadline = time.time() + WAIT
        while len({n for n in range(1, 8) if processes_with(f"sleep {marker}{n}")}) < 7:
            if time.time() > deadline:
                raise RuntimeError("not every process started")
            time.sleep(0.02)
        s.p.kill()
        s.p.wait()
        time.sleep(2)
        left = processes_with(f"sleep {marker}")
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        return len(left)


def exit_times(tg, mode):
    times = {}
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with tempfile.TemporaryDirectory() as d:
            s = Serve(tg, d, mode_config(mode))
            s.call("run_shell", {"command": "sleep 1000", "background": True})
            s.call("run_shell", {"command": "trap '' TERM; sleep 1000"}, wait=False)
            time.sleep(0.3)
            t = time.perf_counter()
            s.p.send_signal(sig)
            s.p.wait(timeout=WAIT)
            times[sig.name] = time.perf_counter() - t
    return times


def per_command(tg, mode, extra="", n=200):
    with tempfile.TemporaryDirectory() as d:
        s = Serve(tg, d, mode_config(mode, extra))
        lat = []
        for _ in range(n):
            t = time.perf_counter()
            reply = s.call("run_shell", {"command": "true"})
            if reply["result"].get("isError"):
                raise RuntimeError(f"run_shell failed: {reply}")
            lat.append((time.perf_counter() - t) * 1000)
        s.p.stdin.close()
        s.p.wait()
    return statistics.median(lat)


def vm(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def big_glob(tg):
    """A 1 MB glob over stdio (too long for a command-line argument): the call's time and
    the server's peak RSS (VmHWM) before and after."""
    with tempfile.TemporaryDirectory() as d:
        for i in range(50):
            open(os.path.join(d, f"f{i}.txt"), "w").close()
        s = Serve(tg, d, "")
        query = ("a*" * 524288)[:1 << 20]
        before = vm(s.p.pid, "VmHWM")
        t = time.perf_counter()
        reply = s.call("search_files", {"query": query})
        wall = time.perf_counter() - t
        after = vm(s.p.pid, "VmHWM")
        s.p.stdin.close()
        s.p.wait()
        text = reply["result"]["content"][0]["text"][:150]
        return wall, before, after, text


SANDBOXES = [
    ("off", ""),
    ("read-only", 'sandbox = "read-only"\n'),
    ("workspace-write", 'sandbox = "workspace-write"\n'),
    ("sandbox_network = false", "sandbox_network = false\n"),
]


def costs(bins, rounds):
    """Figure 3 for every sandbox setting and binary. With two binaries both servers run at
    once and their calls alternate one by one, so every moment of a loaded machine's noise
    falls on both alike. Per binary and setting: the median of the rounds' medians of 200
    calls, and the lowest."""
    got = {(tg, name): [] for tg in bins for name, _ in SANDBOXES}
    for _ in range(rounds):
        for name, extra in SANDBOXES:
            with tempfile.TemporaryDirectory() as d:
                servers = []
                for i, tg in enumerate(bins):
                    project = os.path.join(d, str(i))
                    os.makedirs(project)
                    servers.append(Serve(tg, project, mode_config("auto", extra)))
                lat = [[] for _ in bins]
                for _ in range(200):
                    for i, s in enumerate(servers):
                        t = time.perf_counter()
                        reply = s.call("run_shell", {"command": "true"})
                        lat[i].append((time.perf_counter() - t) * 1000)
                        if reply["result"].get("isError"):
                            raise RuntimeError(f"run_shell failed: {reply}")
                for s in servers:
                    s.p.stdin.close()
                    s.p.wait()
                for tg, values in zip(bins, lat):
                    got[(tg, name)].append(statistics.median(values))
    for tg in bins:
        print(f"== {tg}")
        for name, _ in SANDBOXES:
            values = got[(tg, name)]
            shown = ", ".join(f"{v:.2f}" for v in values)
            print(f"  run_shell `true`, sandbox {name}: median of 200, median of rounds "
                  f"{statistics.median(values):.2f} ms, lowest {min(values):.2f} ms "
                  f"(rounds: {shown})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/toolgate")
    ap.add_argument("--cost-only", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", help="another build to measure alternately (--cost-only)")
    a = ap.parse_args()
    tg = os.path.abspath(a.bin)
    if a.cost_only:
        bins = [os.path.abspath(a.baseline)] if a.baseline else []
        costs(bins + [tg], a.rounds)
        return
    for mode in ("auto", "process-group"):
        print(f"== containment = {mode}")
        print(f"  survivors after kill -9: {survivors(tg, mode)} of 7")
        t = exit_times(tg, mode)
        print("  exit after " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in t.items()))
        print(f"  run_shell `true` round trip, median of 200: {per_command(tg, mode):.2f} ms")
    wall, before, after, text = big_glob(tg)
    print(f"== 1 MB glob in search_files: answered in {wall:.3f} s; serve's peak RSS "
          f"{before:.0f} MB before, {after:.0f} MB after: {text!r}")


if __name__ == "__main__":
    main()
