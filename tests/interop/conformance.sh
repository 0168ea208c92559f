#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12, server
# mode, on Node 22; installed by scripts/install-oauth-peers.sh), run with both frozen
# requirement sets, `--requirements 2025-11-25` and `--requirements 2026-07-28`, against two
# servers:
#
# - `fixture`: crates/mcp/examples/conformance_fixture, which registers the suite's `test_*`
#   tools, prompts and resources in a toolgate registry and serves them with
#   `toolgate_mcp::serve_http`, as `toolgate serve --http` does (the MCP server layer);
# - `gateway`: `toolgate serve --http` with that fixture mounted as a remote server
#   (`url = …`, `prefix = "never"`, so its names stay the suite's): everything the suite
#   asks of a server must pass through the gateway (the transparent gateway);
# - `gateway-stdio`: the same with the fixture mounted as a stdio server (`lifecycle = "discover"`, `conformance_fixture
#   --stdio`, spawned by toolgate);
# - `serve`: `toolgate serve --http` alone, with nothing mounted: the scenarios its own
#   features cover pass, the ones that need the suite's `test_*` tools, prompts and
#   resources are listed as expected failures.
#
# A scenario passes when none of its checks is FAILURE or WARNING (the suite's own baseline
# rule). Only the scenarios a requirement set lists under `server:` are scored; the others the
# suite runs (extensions, pending) are printed as "extra". Scenarios listed in
# conformance-expected-failures.txt (`TARGET REVISION scenario  # reason`) may fail; any other
# failing scored scenario fails the script. The last line is "N passed, M failed", M counting
# only unexpected failures.
#
# Env: TARGETS (default "fixture gateway"), REQUIREMENTS (default "2025-11-25 2026-07-28"),
#      KEEP_RESULTS=1 keeps the suite's output and checks.json files (always kept on failure).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
PEERS=$REPO/.cache/conformance-client
NODE=$PEERS/node_modules/node/bin/node
SUITE_DIR=$PEERS/node_modules/@modelcontextprotocol/conformance
SUITE_VERSION=0.2.0-alpha.12
EXPECTED_FILE=$REPO/tests/interop/conformance-expected-failures.txt
TARGETS=${TARGETS:-fixture gateway gateway-stdio serve}
REQUIREMENTS=${REQUIREMENTS:-2025-11-25 2026-07-28}

die() {
  echo "conformance.sh: $*" >&2
  echo "0 passed, 1 failed"
  exit 1
}

bash scripts/install-oauth-peers.sh >&2 || die "scripts/install-oauth-peers.sh failed"
[ -x "$NODE" ] || die "Node 22 not found at $NODE"
grep -q "\"version\": \"$SUITE_VERSION\"" "$SUITE_DIR/package.json" 2>/dev/null ||
  die "conformance suite $SUITE_VERSION not found in $SUITE_DIR"

cargo build --workspace --all-features --bin toolgate --examples --quiet ||
  die "cannot build toolgate and the conformance fixture"
FIXTURE=$REPO/target/debug/examples/conformance_fixture
TOOLGATE=$REPO/target/debug/toolgate
[ -x "$FIXTURE" ] || die "fixture binary not found at $FIXTURE"
[ -x "$TOOLGATE" ] || die "toolgate binary not found at $TOOLGATE"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-conformance.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -INT "$pid" 2>/dev/null
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null
    fi
  done
  [ "${KEEP_RESULTS:-}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits for the line "…http://ADDR/mcp…" in $1 while process $2 lives; prints the URL.
url_in() {
  local url=
  for _ in $(seq 600); do
    url=$(grep -o 'http://[^ ]*/mcp' "$1" 2>/dev/null | head -n1)
    [ -n "$url" ] && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "$url"
}

# Port 0: the OS picks a free port; the fixture prints the URL it bound.
"$FIXTURE" 127.0.0.1:0 >/dev/null 2>"$WORK/fixture.log" &
FIXTURE_PID=$!
PIDS+=("$FIXTURE_PID")
FIXTURE_URL=$(url_in "$WORK/fixture.log" "$FIXTURE_PID")
[ -n "$FIXTURE_URL" ] || { cat "$WORK/fixture.log" >&2; die "the fixture did not report a URL"; }

# `toolgate serve --http` ($1: a name) with a project and config home of its own, nothing
# from the user's machine; $2 is its config. Sets SERVE_URL.
start_serve() {
  local name=$1 home=$WORK/$1-home project=$WORK/$1-project
  mkdir -p "$home/toolgate" "$project"
  printf '%s' "$2" >"$home/toolgate/config.toml"
  XDG_CONFIG_HOME=$home HOME=$home XDG_CACHE_HOME=$WORK/$name-cache \
    XDG_DATA_HOME=$WORK/$name-data XDG_STATE_HOME=$WORK/$name-state \
    "$TOOLGATE" --root "$project" serve --http 127.0.0.1:0 >/dev/null 2>"$WORK/$name.log" &
  local pid=$!
  PIDS+=("$pid")
  SERVE_URL=$(url_in "$WORK/$name.log" "$pid")
  [ -n "$SERVE_URL" ] || { tail -n 40 "$WORK/$name.log" >&2; die "toolgate serve --http ($name) did not report a URL"; }
}

# Mounted servers' tools shown directly (the suite is a client that lists and calls them).
GATEWAY_CONFIG='[disclosure]
mode = "off"
'
for target in $TARGETS; do
  case $target in
    fixture) url=$FIXTURE_URL ;;
    gateway)
      start_serve gateway "$GATEWAY_CONFIG
[mcp_servers.fixture]
url = \"$FIXTURE_URL\"
prefix = \"never\"
"
      url=$SERVE_URL ;;
    gateway-stdio)
      start_serve gateway-stdio "$GATEWAY_CONFIG
[mcp_servers.fixture]
command = \"$FIXTURE\"
args = [\"--stdio\"]
prefix = \"never\"
lifecycle = \"discover\"
"
      url=$SERVE_URL ;;
    serve) start_serve serve ""; url=$SERVE_URL ;;
    *) die "unknown target $target (fixture, gateway, gateway-stdio or serve)" ;;
  esac
  for rev in $REQUIREMENTS; do
    echo "conformance.sh: $target at $url, --requirements $rev" >&2
    dir=$WORK/$target/$rev
    mkdir -p "$dir"
    timeout 900 "$NODE" "$SUITE_DIR/dist/index.js" server --url "$url" \
      --requirements "$rev" -o "$dir/results" >"$dir/suite.log" 2>&1
    [ $? -eq 124 ] && { tail -n 40 "$dir/suite.log" >&2; die "the suite timed out on $target $rev"; }
    sed -n '/=== SUMMARY ===/,/^Total:/p' "$dir/suite.log" | grep -E '^[✓✗] ' >"$dir/summary.txt"
    [ -s "$dir/summary.txt" ] || {
      tail -n 40 "$dir/suite.log" >&2
      die "no scenario summary in the suite's output for $target $rev"
    }
  done
done
for pid in "${PIDS[@]}"; do
  kill -0 "$pid" 2>/dev/null || die "a server exited during the run (see $WORK/*.log)"
done

"$NODE" - "$WORK" "$SUITE_DIR/requirements" "$EXPECTED_FILE" "$TARGETS" $REQUIREMENTS <<'EOF'
const fs = require("fs");
const path = require("path");
const [work, reqDir, expectedFile, targets, ...revs] = process.argv.slice(2);

// The `server:` list of a requirements file (a flat YAML list; no YAML parser needed).
function scored(rev) {
  const lines = fs.readFileSync(path.join(reqDir, `${rev}.yaml`), "utf8").split("\n");
  const out = [];
  let inServer = false;
  for (const line of lines) {
    if (/^\S/.test(line)) inServer = line.startsWith("server:");
    else if (inServer) {
      const m = /^\s+-\s+(\S+)/.exec(line);
      if (m) out.push(m[1]);
    }
  }
  return out;
}

const expected = new Map();
if (fs.existsSync(expectedFile)) {
  for (const raw of fs.readFileSync(expectedFile, "utf8").split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const hash = line.indexOf("#");
    const key = (hash < 0 ? line : line.slice(0, hash)).trim().split(/\s+/).join(" ");
    expected.set(key, hash < 0 ? "(no reason given)" : line.slice(hash + 1).trim());
  }
}

// checks.json of each scenario: results/server-<scenario>-<timestamp>/checks.json
function checksOf(resultsDir) {
  const checks = new Map();
  if (!fs.existsSync(resultsDir)) return checks;
  for (const dir of fs.readdirSync(resultsDir)) {
    const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(dir);
    const file = path.join(resultsDir, dir, "checks.json");
    if (m && fs.existsSync(file)) checks.set(m[1], JSON.parse(fs.readFileSync(file, "utf8")));
  }
  return checks;
}

let passed = 0, unexpected = 0, xfail = 0;
for (const target of targets.split(/\s+/).filter(Boolean)) {
  for (const rev of revs) {
    const dir = path.join(work, target, rev);
    const verdicts = new Map();
    for (const line of fs.readFileSync(path.join(dir, "summary.txt"), "utf8").split("\n")) {
      const m = /^([✓✗]) ([^:]+):/.exec(line);
      if (m) verdicts.set(m[2], m[1] === "✓");
    }
    const checks = checksOf(path.join(dir, "results"));
    const list = scored(rev);
    let revPassed = 0;
    console.log(`== ${target}, --requirements ${rev}: ${list.length} scored scenarios`);
    for (const name of list) {
      const bad = (checks.get(name) || []).filter((c) => c.status === "FAILURE" || c.status === "WARNING");
      const ok = verdicts.get(name) === true && bad.length === 0;
      const key = `${target} ${rev} ${name}`;
      if (ok) {
        revPassed++;
        passed++;
        console.log(expected.has(key)
          ? `STALE  ${name}: passes now; remove it from conformance-expected-failures.txt`
          : `pass   ${name}`);
        continue;
      }
      const why = bad.map((c) => `${c.status} ${c.id}: ${c.errorMessage || c.description}`);
      if (!why.length) why.push(verdicts.has(name) ? "the scenario failed to run (see the suite output)" : "did not run");
      if (expected.has(key)) {
        xfail++;
        console.log(`xfail  ${name}  # ${expected.get(key)}`);
      } else {
        unexpected++;
        console.log(`FAIL   ${name}`);
      }
      for (const w of why) console.log(`         ${w.slice(0, 400)}`);
    }
    for (const [name, ok] of verdicts) {
      if (!list.includes(name)) console.log(`extra  ${name}: ${ok ? "pass" : "fail"} (not scored)`);
    }
    console.log(`${target} ${rev}: ${revPassed} of ${list.length} scored scenarios pass`);
  }
}
console.log(`\n${passed} passed, ${xfail} expected failures, ${unexpected} unexpected failures`);
fs.writeFileSync(path.join(work, "verdict"), `${passed} ${unexpected}\n`);
EOF
[ -f "$WORK/verdict" ] || die "could not evaluate the results"
read -r PASSED FAILED <"$WORK/verdict"
if [ "$FAILED" -ne 0 ] || [ "${KEEP_RESULTS:-}" = 1 ]; then
  KEEP_RESULTS=1
  echo "conformance.sh: the suite's output and checks.json files are in $WORK" >&2
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
