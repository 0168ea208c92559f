#!/usr/bin/env bash
# The test command (README "Quick start"): Rust tests, then interop tests with real MCP
# peers (Python SDK, MCP Inspector CLI, the official conformance suite) and real clients
# (Claude Code, Codex CLI), which this script installs itself. tests/interop/*.sh includes
# the conformance suite's server leg and its client leg (conformance-client.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-peers.sh
# Pinned: the conformance suite's client leg and a real OpenID provider (OAuth tests).
bash scripts/install-oauth-peers.sh
cargo build --workspace --all-targets --quiet
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
else
  cargo test --workspace --no-fail-fast
fi
cargo test --workspace --doc --quiet
for t in tests/interop/*.sh; do
  [ -e "$t" ] || continue
  echo "== $t"
  bash "$t"
done
if ls tests/interop/python/test_*.py >/dev/null 2>&1; then
  TOOLGATE_BIN="$PWD/target/debug/toolgate" .cache/peers/venv/bin/python -m pytest -q tests/interop/python
fi
# The last hop: the real Claude Code and Codex CLIs against scripted model endpoints. A
# missing client fails these tests; they never skip.
TOOLGATE_BIN="$PWD/target/debug/toolgate" .cache/peers/venv/bin/python -m pytest -q tests/interop/clients
# Fault injection under load (issue 15): 50 HTTP clients, 10,000 calls while a mounted
# server is killed, hung and prints garbage; every call answered, RSS flat, nothing leaked.
echo "== tests/fault/fault_injection.py"
.cache/peers/venv/bin/python tests/fault/fault_injection.py \
  --bin target/debug/toolgate --fake target/debug/fake_server
