#!/usr/bin/env bash
# The test command (README "Quick start"): Rust tests, doctests, then interop tests with real
# MCP peers (Python SDK, MCP Inspector CLI, the official conformance suite), real clients
# (Claude Code, Codex CLI; installed by this script), a real Prometheus, a real HAProxy in
# front of replicas and a real tracing backend (Arize Phoenix) (tests/interop/python), and
# fault injection. tests/interop/*.sh
# includes the conformance suite's server leg and its client leg (conformance-client.sh).
#
# Every suite runs even when an earlier one failed; a summary of each suite's result and
# time comes last, and the script exits non-zero when any suite failed.
#
#   bash scripts/test.sh              # everything
#   ONLY="rust doc" bash scripts/test.sh   # some suites, by the names the summary uses
set -uo pipefail
cd "$(dirname "$0")/.."

NAMES=()
RESULTS=()
TIMES=()
FAILED=0

wanted() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

# suite NAME COMMAND...: runs one suite, records pass/fail and wall time, never stops.
suite() {
  local name=$1
  shift
  wanted "$name" || return 0
  echo
  echo "== $name: $*"
  local start=$SECONDS
  "$@"
  local rc=$?
  NAMES+=("$name")
  TIMES+=($((SECONDS - start)))
  if [ "$rc" -eq 0 ]; then
    RESULTS+=("passed")
  else
    RESULTS+=("FAILED (exit $rc)")
    FAILED=$((FAILED + 1))
  fi
}

summary() {
  echo
  echo "== summary"
  local i
  for i in "${!NAMES[@]}"; do
    printf '  %-14s %-18s %5ss\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${TIMES[$i]}"
  done
  local total=${#NAMES[@]} failed_names="" i2
  for i2 in "${!NAMES[@]}"; do
    [ "${RESULTS[$i2]}" = passed ] || failed_names+=" ${NAMES[$i2]}"
  done
  if [ "$FAILED" -eq 0 ]; then
    echo "all $total suites passed"
  else
    echo "$FAILED of $total suites failed:$failed_names"
  fi
}
trap summary EXIT

rust_tests() {
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --all-features --no-fail-fast
  else
    cargo test --workspace --all-features --no-fail-fast
  fi
}

interop_sh() {
  local rc=0 t
  for t in tests/interop/*.sh; do
    [ -e "$t" ] || continue
    echo "-- $t"
    bash "$t" || rc=1
  done
  return "$rc"
}

BIN="$PWD/target/debug/toolgate"
PY=.cache/peers/venv/bin/python

# Arize Phoenix (a real tracing backend for the telemetry test, ~850 MB of wheels) installs
# in the background while the rest is installed and built; the python suite waits for it.
PHOENIX_LOG=.cache/install-phoenix.log
# installed NAME PID: waits for scripts/install-NAME.sh started in the background, and shows
# the end of its log when it failed.
installed() {
  wait "$2" && return 0
  echo "scripts/install-$1.sh failed:" >&2
  tail -20 ".cache/install-$1.log" >&2
  return 1
}
mkdir -p .cache
PHOENIX_PID=
if wanted python; then
  bash scripts/install-phoenix.sh >"$PHOENIX_LOG" 2>&1 &
  PHOENIX_PID=$!
fi

# The peers (and, pinned, the conformance suite's client leg and a real OpenID provider for
# the OAuth tests) install in the background while the workspace builds: the install waits
# on the network, the build on the CPU. Their suites report them once the build is done.
PEERS_PID=
OAUTH_PEERS_PID=
if wanted peers; then
  bash scripts/install-peers.sh >.cache/install-peers.log 2>&1 &
  PEERS_PID=$!
fi
if wanted oauth-peers; then
  bash scripts/install-oauth-peers.sh >.cache/install-oauth-peers.log 2>&1 &
  OAUTH_PEERS_PID=$!
fi
# The build shows its progress: on a fresh clone it is the longest step. Tests build every
# feature (`team`, `keyring`): the team tests need the Redis, S3, JWT, Prometheus and OTLP
# code; `.ci/run` lints the default build too.
# What `cargo test` runs (libraries, binaries, tests, examples), not the benches: `.ci/run`'s
# clippy checks those.
suite build cargo build --workspace --lib --bins --tests --examples --all-features
[ -z "$PEERS_PID" ] || suite peers installed peers "$PEERS_PID"
[ -z "$OAUTH_PEERS_PID" ] || suite oauth-peers installed oauth-peers "$OAUTH_PEERS_PID"
suite rust rust_tests
suite doc cargo test --workspace --all-features --doc
suite interop interop_sh
if ls tests/interop/python/test_*.py >/dev/null 2>&1; then
  # Waited for (and reported) whenever it was started, whatever ONLY names.
  [ -z "$PHOENIX_PID" ] || ONLY= suite phoenix installed phoenix "$PHOENIX_PID"
  suite python env TOOLGATE_BIN="$BIN" "$PY" -m pytest -q tests/interop/python
fi
# The last hop: the real Claude Code and Codex CLIs against scripted model endpoints. A
# missing client fails these tests; they never skip.
suite clients env TOOLGATE_BIN="$BIN" "$PY" -m pytest -q tests/interop/clients
# Fault injection under load: 50 HTTP clients, 10,000 calls while a mounted server is
# killed, hung and prints garbage; every call answered, RSS flat, nothing leaked.
suite fault "$PY" tests/fault/fault_injection.py --bin target/debug/toolgate --fake target/debug/fake_server

[ "$FAILED" -eq 0 ]
