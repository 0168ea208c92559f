#!/usr/bin/env bash
# run_shell benchmarks, through the release binary and the full pipeline:
#   1. peak RSS of `toolgate call run_shell` while a command prints 1 GiB;
#   2. its wall time next to `head -c 1G /dev/zero > /dev/null` (and the same pipeline
#      without toolgate, to stdout-less /dev/null and to a file);
#   3. the time from a timeout to a dead process tree (a command with grandchildren, one
#      group that exits on SIGTERM and one that ignores it and needs SIGKILL).
# Needs python3; uses hyperfine when installed (`apt-get install -y hyperfine`).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${TOOLGATE_BIN:-target/release/toolgate}
if [ ! -x "$BIN" ]; then
  cargo build --release -p toolgate
fi
BIN=$(realpath "$BIN")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
GIB=1073741824
FLOOD="head -c $GIB /dev/zero | tr '\\\\0' x"
ARGS="{\"command\": \"$FLOOD\"}"
printf '%s' "$ARGS" > "$work/flood.json"

echo "== 1. peak RSS of toolgate during the 1 GiB flood"
for i in 1 2 3; do
  rm -rf "$work/.toolgate"
  python3 - "$BIN" "$work" "$ARGS" <<'EOF'
import json, os, resource, subprocess, sys, time
bin, root, args = sys.argv[1:]
start = time.monotonic()
out = subprocess.run([bin, "--root", root, "call", "run_shell", args, "--json"],
                     capture_output=True, text=True, check=False)
wall = time.monotonic() - start
# The largest reaped descendant: toolgate itself (bash, head and tr are tiny).
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
sc = json.loads(out.stdout)["structuredContent"]
size = os.path.getsize(sc["stdout"]["path"])
print(f"peak RSS {peak:.1f} MiB · wall {wall:.2f} s · stdout bytes reported {sc['stdout']['bytes']} · on disk {size}")
assert size == 1 << 30, size
EOF
done

echo
echo "== 2. wall time of the flood"
rm -rf "$work/.toolgate"
if command -v hyperfine >/dev/null; then
  hyperfine --warmup 1 --runs 5 --shell bash \
    --prepare "rm -rf '$work/.toolgate'; sync" \
    -n "head -c 1G /dev/zero > /dev/null" "head -c $GIB /dev/zero > /dev/null" \
    -n "head | tr > /dev/null (the command alone)" "head -c $GIB /dev/zero | tr '\\0' x > /dev/null" \
    -n "head | tr > file (the command to disk)" "head -c $GIB /dev/zero | tr '\\0' x > '$work/plain.txt'" \
    -n "toolgate call run_shell (head | tr)" "'$BIN' --root '$work' call run_shell - < '$work/flood.json' > /dev/null"
else
  for cmd in "head -c $GIB /dev/zero > /dev/null" "'$BIN' --root '$work' call run_shell - < '$work/flood.json' > /dev/null"; do
    rm -rf "$work/.toolgate"
    /usr/bin/time -f "%e s  $cmd" bash -c "$cmd"
  done
fi

echo
echo "== 3. time from timeout to a dead process tree (10 runs each)"
python3 - "$BIN" "$work" <<'EOF'
import json, os, statistics, subprocess, sys, time
bin, root = sys.argv[1:]

def live(pgid):
    """Live (non-zombie) processes of group pgid, from /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            found.append(int(name))
    return found

def measure(script, timeout_ms):
    marker = os.path.join(root, "pgid")
    if os.path.exists(marker):
        os.remove(marker)
    command = f"echo $$ > {marker}; {script}"
    args = json.dumps({"command": command, "timeout_ms": timeout_ms})
    proc = subprocess.Popen([bin, "--root", root, "call", "run_shell", args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (os.path.exists(marker) and open(marker).read().endswith("\n")):
        time.sleep(0.0005)
    started = time.monotonic()
    pgid = int(open(marker).read())
    while live(pgid):
        time.sleep(0.0005)
    dead = time.monotonic()
    proc.wait()
    returned = time.monotonic()
    return (dead - started) * 1000 - timeout_ms, (returned - started) * 1000 - timeout_ms

cases = [
    ("grandchildren, exit on SIGTERM", "sleep 1000 & (sleep 1000) & sleep 1000; wait"),
    ("ignores SIGTERM (needs SIGKILL)", "trap '' TERM; sh -c \"trap '' TERM; sleep 1000\" & sleep 1000"),
]
for label, script in cases:
    dead, ret = zip(*(measure(script, 300) for _ in range(10)))
    print(f"{label}: tree dead {statistics.median(dead):.1f} ms after the timeout "
          f"(max {max(dead):.1f}); `toolgate call` returned {statistics.median(ret):.1f} ms after it")
EOF
