#!/usr/bin/env python3
"""Skills benchmark: time from a file change to the catalog update, and catalog size.

Measures, against a real `toolgate serve` over stdio (initialize handshake):
  - watch latency: a skill folder is added, renamed (folder and `name:`) or deleted; the
    clock runs from the moment the file operation returns to the moment the client receives
    `notifications/prompts/list_changed` (the catalog was updated and announced). Goal: <= 1 s.
    Reported as median / p95 / max per kind of change, over --runs rounds.
  - catalog size: with 10 and with 500 skills, the bytes of the `skill` tool's description
    (the catalog the model reads), of the whole tools/list, how many skills are listed and
    how many are left to search, and the wall time of `toolgate skills list --json`.

Usage: python3 bench/skills_watch.py [--runs 20] [--bin target/release/toolgate] [--debounce MS]
Needs only the binary (`cargo build -p toolgate [--release]`).
"""
import argparse, json, os, queue, shutil, statistics, subprocess, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_skill(skills, folder, name, description):
    d = os.path.join(skills, folder)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "SKILL.md"), "w") as f:
        f.write(f"---\nname: {name}\ndescription: {description}\n---\nSteps for {name}.\n")


class Server:
    def __init__(self, binary, project, env):
        self.p = subprocess.Popen([binary, "serve", "--log-level", "warn"], cwd=project, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.replies = queue.Queue()
        self.notes = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self):
        for line in self.p.stdout:
            msg = json.loads(line)
            if "id" in msg:
                self.replies.put(msg)
            else:
                self.notes.put((time.perf_counter(), msg.get("method")))

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.replies.get(timeout=30)

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def drain(self):
        while not self.notes.empty():
            self.notes.get_nowait()

    def wait_for(self, method, since, timeout=10.0):
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            at, got = self.notes.get(timeout=left)
            if got == method and at >= since:
                return at - since

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()


DEBOUNCE_MS = None


def env_for(home):
    env = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "TOOLGATE_TOKEN")}
    if DEBOUNCE_MS is not None:
        env["TOOLGATE_SKILLS__DEBOUNCE_MS"] = str(DEBOUNCE_MS)
    env["HOME"] = home
    env["XDG_CONFIG_HOME"] = os.path.join(home, ".config")
    return env


def summary(xs):
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    return f"median {statistics.median(xs) * 1000:6.0f} ms   p95 {p95 * 1000:6.0f} ms   max {xs[-1] * 1000:6.0f} ms"


def latency(binary, runs):
    tmp = tempfile.mkdtemp(prefix="tg-skills-bench-")
    try:
        project, home = os.path.join(tmp, "p"), os.path.join(tmp, "home")
        os.makedirs(project), os.makedirs(home)
        skills = os.path.join(project, ".claude", "skills")
        write_skill(skills, "base", "base", "Always there.")
        server = Server(binary, project, env_for(home))
        server.initialize()
        server.request("prompts/list", {})
        times = {"add": [], "rename": [], "delete": []}
        for i in range(runs):
            server.drain()
            t = time.perf_counter()
            write_skill(skills, f"s{i}", f"skill-{i}", "Added by the benchmark.")
            times["add"].append(server.wait_for("notifications/prompts/list_changed", t))
            server.drain()
            t = time.perf_counter()
            os.rename(os.path.join(skills, f"s{i}"), os.path.join(skills, f"r{i}"))
            write_skill(skills, f"r{i}", f"renamed-{i}", "Renamed by the benchmark.")
            times["rename"].append(server.wait_for("notifications/prompts/list_changed", t))
            server.drain()
            t = time.perf_counter()
            shutil.rmtree(os.path.join(skills, f"r{i}"))
            times["delete"].append(server.wait_for("notifications/prompts/list_changed", t))
        prompts = server.request("prompts/list", {})["result"]["prompts"]
        assert [p["name"] for p in prompts] == ["base"], prompts
        server.close()
        return times
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def catalog(binary, n):
    tmp = tempfile.mkdtemp(prefix="tg-skills-bench-")
    try:
        project, home = os.path.join(tmp, "p"), os.path.join(tmp, "home")
        os.makedirs(project), os.makedirs(home)
        skills = os.path.join(project, ".claude", "skills")
        for i in range(n):
            write_skill(skills, f"s{i:03}", f"skill-{i:03}",
                        f"Handles chore number {i}, with the steps, checks and clean-up it needs.")
        env = env_for(home)
        t = time.perf_counter()
        listed = json.loads(subprocess.check_output([binary, "skills", "list", "--json"],
                                                    cwd=project, env=env))
        wall = time.perf_counter() - t
        tools = subprocess.check_output([binary, "tools", "--json"], cwd=project, env=env)
        skill = next(t for t in json.loads(tools)["tools"] if t["name"] == "skill")
        return {
            "skills": n,
            "description_bytes": len(skill["description"].encode()),
            "tools_list_bytes": len(json.dumps(json.loads(tools)["tools"], separators=(",", ":")).encode()),
            "listed": listed["catalog"]["listed"],
            "omitted": listed["catalog"]["omitted"],
            "skills_list_ms": round(wall * 1000),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--bin", default=os.environ.get("TOOLGATE_BIN")
                    or os.path.join(ROOT, "target", "release", "toolgate"))
    ap.add_argument("--debounce", type=int, default=None, help="[skills] debounce_ms (default 200)")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    global DEBOUNCE_MS
    DEBOUNCE_MS = args.debounce
    print(f"binary: {args.bin}")
    times = latency(args.bin, args.runs)
    debounce = 200 if args.debounce is None else args.debounce
    print(f"file change -> prompts/list_changed received ({args.runs} runs each, debounce {debounce} ms):")
    for kind, xs in times.items():
        print(f"  {kind:<7} {summary(xs)}")
    for n in (10, 500):
        print(f"catalog: {json.dumps(catalog(args.bin, n))}")


if __name__ == "__main__":
    main()
