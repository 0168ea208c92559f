#!/usr/bin/env bash
# The client leg of the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned below, on Node 22), with toolgate's gateway as the client: the suite starts a test
# server per scenario and runs crates/gateway/examples/conformance_client with its URL,
# which mounts it, logs in when it must (`mcp login`'s flow, with a $BROWSER that follows
# the redirects to the loopback callback), lists and calls its tools.
#
# Both frozen requirement sets run (`--requirements 2025-11-25` and `2026-07-28`). A
# scored scenario fails unless the suite marks it ✓; one listed in
# conformance-client-expected-failures.txt (`REVISION SCENARIO  # reason`) may fail. The
# sets' not-scored scenarios (extensions such as client credentials) are reported as extras.
# The last line is "N passed, M failed", M counting unexpected failures of scored scenarios.
#
# Env: REQUIREMENTS (default "2025-11-25 2026-07-28"), KEEP_RESULTS=1 keeps the output.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
SUITE_VERSION=0.2.0-alpha.12
PEERS=$REPO/.cache/conformance-client
NODE=$PEERS/node_modules/node/bin/node
SUITE_DIR=$PEERS/node_modules/@modelcontextprotocol/conformance
EXPECTED_FILE=$REPO/tests/interop/conformance-client-expected-failures.txt
REQUIREMENTS=${REQUIREMENTS:-2025-11-25 2026-07-28}

die() {
  echo "conformance-client.sh: $*" >&2
  echo "0 passed, 1 failed"
  exit 1
}

bash scripts/install-oauth-peers.sh >&2 || die "scripts/install-oauth-peers.sh failed"
[ -x "$NODE" ] || die "Node 22 not found at $NODE"
grep -q "\"version\": \"$SUITE_VERSION\"" "$SUITE_DIR/package.json" 2>/dev/null ||
  die "conformance suite $SUITE_VERSION not found in $SUITE_DIR"

cargo build -p toolgate-gateway --all-features --example conformance_client --quiet ||
  die "cannot build the conformance client runner"
RUNNER=$REPO/target/debug/examples/conformance_client
[ -x "$RUNNER" ] || die "runner not found at $RUNNER"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-conformance-client.XXXXXX")
cleanup() { [ "${KEEP_RESULTS:-}" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The "browser": follows the authorization server's redirects back to the callback, as a
# user's browser does after the user approves.
export BROWSER="curl -sS -L -o /dev/null --max-time 20"

for rev in $REQUIREMENTS; do
  echo "conformance-client.sh: --requirements $rev" >&2
  mkdir -p "$WORK/$rev"
  timeout 1800 "$NODE" "$SUITE_DIR/dist/index.js" client --command "$RUNNER" \
    --requirements "$rev" -o "$WORK/$rev/results" >"$WORK/$rev/suite.log" 2>&1
  [ $? -eq 124 ] && { tail -n 40 "$WORK/$rev/suite.log" >&2; die "the suite timed out on $rev"; }
  sed -n '/=== SUITE SUMMARY ===/,/^Total:/p' "$WORK/$rev/suite.log" | grep -E '^[✓✗] ' \
    >"$WORK/$rev/summary.txt"
  [ -s "$WORK/$rev/summary.txt" ] || {
    tail -n 40 "$WORK/$rev/suite.log" >&2
    die "no scenario summary in the suite's output for $rev"
  }
done

"$NODE" - "$WORK" "$SUITE_DIR/requirements" "$EXPECTED_FILE" $REQUIREMENTS <<'EOF'
const fs = require("fs");
const path = require("path");
const [work, reqDir, expectedFile, ...revs] = process.argv.slice(2);

// The `client:` list of a requirements file (a flat YAML list; no YAML parser needed).
function scored(rev) {
  const lines = fs.readFileSync(path.join(reqDir, `${rev}.yaml`), "utf8").split("\n");
  const out = [];
  let inClient = false;
  for (const line of lines) {
    if (/^\S/.test(line)) inClient = line.startsWith("client:");
    else if (inClient) {
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

// The failed checks of a scenario's run, one line each (the suite's summary has none).
function failedChecks(resultsDir, name) {
  if (!fs.existsSync(resultsDir)) return [];
  const out = [];
  for (const dir of fs.readdirSync(resultsDir).filter((d) => d.startsWith(`${name}-`))) {
    const file = path.join(resultsDir, dir, "checks.json");
    if (!fs.existsSync(file)) continue;
    for (const c of JSON.parse(fs.readFileSync(file, "utf8"))) {
      if (c.status !== "FAILURE") continue;
      const details = c.details ? ` ${JSON.stringify(c.details).slice(0, 300)}` : "";
      out.push(`${c.id}: ${c.errorMessage ?? c.description}${details}`);
    }
  }
  return out;
}

const failures = [];
let passed = 0, unexpected = 0, xfail = 0;
for (const rev of revs) {
  const verdicts = new Map();
  for (const line of fs.readFileSync(path.join(work, rev, "summary.txt"), "utf8").split("\n")) {
    const m = /^([✓✗]) ([^:]+):/.exec(line);
    if (m) verdicts.set(m[2], m[1] === "✓");
  }
  const list = scored(rev);
  let revPassed = 0;
  console.log(`== --requirements ${rev}: ${list.length} scored scenarios`);
  for (const name of list) {
    const ok = verdicts.get(name) === true;
    const key = `${rev} ${name}`;
    if (ok) {
      revPassed++;
      passed++;
      console.log(expected.has(key)
        ? `STALE  ${name}: passes now; remove it from conformance-client-expected-failures.txt`
        : `pass   ${name}`);
    } else if (expected.has(key)) {
      xfail++;
      console.log(`xfail  ${name}  # ${expected.get(key)}`);
    } else {
      unexpected++;
      console.log(`FAIL   ${name}${verdicts.has(name) ? "" : " (did not run)"}`);
      for (const line of failedChecks(path.join(work, rev, "results"), name)) console.log(`         ${line}`);
      failures.push(`${rev} ${name}`);
    }
  }
  const extras = [...verdicts.keys()].filter((n) => !list.includes(n));
  for (const name of extras) {
    console.log(`extra  ${name}: ${verdicts.get(name) ? "pass" : "fail"} (not scored)`);
  }
  console.log(`${rev}: ${revPassed} of ${list.length} scored scenarios pass`);
}
console.log(`\n${passed} passed, ${xfail} expected failures, ${unexpected} unexpected failures`);
fs.writeFileSync(path.join(work, "verdict"), `${passed} ${unexpected}\n`);
fs.writeFileSync(path.join(work, "failures"), failures.map((f) => `${f}\n`).join(""));
EOF
[ -f "$WORK/verdict" ] || die "could not evaluate the results"
read -r PASSED FAILED <"$WORK/verdict"

# A scored scenario that failed in the full run is run once more, alone. Some scenarios
# race the client's own concurrency against their script: `sse-retry` answers the tool call
# on the client's standalone GET stream when that stream happens to open after the call,
# and then measures the stream's opening as an early reconnection. The failed run's checks
# are printed above either way; a second failure counts.
while read -r rev name; do
  [ -n "$name" ] || continue
  out="$WORK/$rev/rerun-$name"
  timeout 600 "$NODE" "$SUITE_DIR/dist/index.js" client --command "$RUNNER" \
    --scenario "$name" --spec-version "$rev" -o "$out" >"$out.log" 2>&1
  if grep -qE '^Passed: [0-9]+/[0-9]+, 0 failed' "$out.log"; then
    echo "rerun  $name ($rev): passed when run alone; counted as passed"
    PASSED=$((PASSED + 1))
    FAILED=$((FAILED - 1))
  else
    echo "rerun  $name ($rev): failed again"
    grep -E '^(Passed|Failed)' "$out.log" | sed 's/^/         /'
  fi
done <"$WORK/failures"
if [ "$FAILED" -ne 0 ] || [ "${KEEP_RESULTS:-}" = 1 ]; then
  KEEP_RESULTS=1
  echo "conformance-client.sh: the suite's output is in $WORK" >&2
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
