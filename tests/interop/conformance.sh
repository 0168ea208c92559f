#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, server mode, on
# Node 22; installed by scripts/install-peers.sh) against the fixture server
# crates/mcp/examples/conformance_fixture, which registers the suite's `test_*` tools in a
# toolgate registry and serves them with `toolgate_mcp::serve_http`, as `toolgate serve --http`.
#
# A scenario passes when none of its checks is FAILURE or WARNING (the suite's own baseline
# rule). Scenarios listed in conformance-expected-failures.txt (`name  # reason`) may fail;
# any other failure makes this script exit non-zero. The last line is "N passed, M failed",
# M counting only unexpected failures.
#
# Env: CONFORMANCE_SUITE (active [default] | all | pending), PEERS (default .cache/peers),
#      KEEP_RESULTS=1 keeps the suite's output and checks.json files (always kept on failure).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
PEERS=${PEERS:-$REPO/.cache/peers}
SUITE=${CONFORMANCE_SUITE:-active}
NODE=$PEERS/npm/node_modules/node/bin/node
CONFORMANCE=$PEERS/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js
EXPECTED_FILE=$REPO/tests/interop/conformance-expected-failures.txt

die() {
  echo "conformance.sh: $*" >&2
  echo "0 passed, 1 failed"
  exit 1
}

if [ ! -x "$NODE" ] || [ ! -f "$CONFORMANCE" ]; then
  echo "conformance.sh: installing the MCP peers (scripts/install-peers.sh)" >&2
  bash scripts/install-peers.sh >&2 || die "scripts/install-peers.sh failed"
fi
[ -x "$NODE" ] || die "Node 22 not found at $NODE (run: bash scripts/install-peers.sh)"
[ -f "$CONFORMANCE" ] || die "conformance suite not found at $CONFORMANCE (run: bash scripts/install-peers.sh)"
node_version=$("$NODE" --version) || die "cannot run $NODE"
case $node_version in
  v22.*) ;;
  *) die "expected Node 22 from the node@22 package, got $node_version" ;;
esac

cargo build -p toolgate-mcp --example conformance_fixture --quiet ||
  die "cannot build the conformance fixture"
FIXTURE=$REPO/target/debug/examples/conformance_fixture
[ -x "$FIXTURE" ] || die "fixture binary not found at $FIXTURE"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-conformance.XXXXXX")
FIXTURE_PID=
cleanup() {
  if [ -n "$FIXTURE_PID" ] && kill -0 "$FIXTURE_PID" 2>/dev/null; then
    kill -INT "$FIXTURE_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$FIXTURE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$FIXTURE_PID" 2>/dev/null
  fi
  [ "${KEEP_RESULTS:-}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Port 0: the OS picks a free port; the fixture prints the URL it bound.
"$FIXTURE" 127.0.0.1:0 2>"$WORK/fixture.log" &
FIXTURE_PID=$!
URL=
for _ in $(seq 100); do
  URL=$(grep -o 'http://[^ ]*/mcp' "$WORK/fixture.log" 2>/dev/null | head -n1)
  [ -n "$URL" ] && break
  kill -0 "$FIXTURE_PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$URL" ]; then
  cat "$WORK/fixture.log" >&2
  die "the fixture did not report a URL"
fi
echo "conformance.sh: fixture at $URL; running the $SUITE suite" >&2

mkdir -p "$WORK/results"
# The suite's exit code is ignored: the verdict below applies the expected failures.
timeout 900 "$NODE" "$CONFORMANCE" server --url "$URL" --suite "$SUITE" \
  -o "$WORK/results" >"$WORK/suite.log" 2>&1
suite_rc=$?
if [ "$suite_rc" -eq 124 ]; then
  tail -n 40 "$WORK/suite.log" >&2
  die "the conformance suite timed out"
fi
kill -0 "$FIXTURE_PID" 2>/dev/null || {
  cat "$WORK/fixture.log" >&2
  die "the fixture exited during the run"
}

# One line per scenario from the suite's summary ("✓ name: …" / "✗ name: …"), which also
# covers scenarios that crashed before writing checks.json.
sed -n '/=== SUMMARY ===/,$p' "$WORK/suite.log" | grep -E '^[✓✗] ' >"$WORK/summary.txt"
[ -s "$WORK/summary.txt" ] || {
  tail -n 40 "$WORK/suite.log" >&2
  die "no scenario summary in the suite's output"
}

"$NODE" - "$WORK/summary.txt" "$WORK/results" "$EXPECTED_FILE" <<'EOF'
const fs = require("fs");
const path = require("path");
const [summaryFile, resultsDir, expectedFile] = process.argv.slice(2);

const expected = new Map();
if (fs.existsSync(expectedFile)) {
  for (const raw of fs.readFileSync(expectedFile, "utf8").split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const hash = line.indexOf("#");
    const name = (hash < 0 ? line : line.slice(0, hash)).trim();
    const reason = hash < 0 ? "(no reason given)" : line.slice(hash + 1).trim();
    expected.set(name, reason);
  }
}

// checks.json of each scenario: results/server-<scenario>-<timestamp>/checks.json
const checks = new Map();
for (const dir of fs.readdirSync(resultsDir)) {
  const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(dir);
  const file = path.join(resultsDir, dir, "checks.json");
  if (m && fs.existsSync(file)) checks.set(m[1], JSON.parse(fs.readFileSync(file, "utf8")));
}

let passed = 0, unexpected = 0, expectedFailed = 0, total = 0;
for (const line of fs.readFileSync(summaryFile, "utf8").split("\n")) {
  const m = /^([✓✗]) ([^:]+):/.exec(line);
  if (!m) continue;
  total++;
  const name = m[2];
  const list = checks.get(name) || [];
  const bad = list.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
  const failed = m[1] === "✗" || bad.length > 0;
  if (!failed) {
    passed++;
    if (expected.has(name)) {
      console.log(`STALE  ${name}: passes now; remove it from conformance-expected-failures.txt`);
    } else {
      console.log(`pass   ${name}`);
    }
    continue;
  }
  const why = bad.map((c) => `${c.status} ${c.id}: ${c.errorMessage || c.description}`);
  if (!why.length) why.push("the scenario failed to run (see the suite output)");
  if (expected.has(name)) {
    expectedFailed++;
    console.log(`xfail  ${name}  # ${expected.get(name)}`);
    for (const w of why) console.log(`         ${w}`);
  } else {
    unexpected++;
    console.log(`FAIL   ${name}`);
    for (const w of why) console.log(`         ${w}`);
  }
}
console.log(`\n${total} scenarios: ${passed} passed, ${expectedFailed} expected failures, ${unexpected} unexpected failures`);
fs.writeFileSync(path.join(resultsDir, "..", "verdict"), `${passed} ${unexpected}\n`);
EOF
[ -f "$WORK/verdict" ] || die "could not evaluate the results"
read -r PASSED FAILED <"$WORK/verdict"
if [ "$FAILED" -ne 0 ] || [ "${KEEP_RESULTS:-}" = 1 ]; then
  KEEP_RESULTS=1
  echo "conformance.sh: the suite's output and checks.json files are in $WORK" >&2
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
