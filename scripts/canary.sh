#!/usr/bin/env bash
# The real-client suite (tests/interop/clients) against the NEWEST Claude Code, Codex and Gemini
# CLIs from npm, to learn early when a client release changes what toolgate must handle. CI keeps
# testing the pinned versions (scripts/install-peers.sh); this script is run by hand, and the
# versions it passed with are written in docs/clients.md ("Last checked").
#
#   bash scripts/canary.sh                      # newest of each
#   CLAUDE_CODE_VERSION=2.1.332 CODEX_VERSION=0.171.0 GEMINI_CLI_VERSION=0.61.0 bash scripts/canary.sh
#
# Needs what scripts/test.sh needs (cargo, python3, npm); it installs the peers itself.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

bash scripts/install-peers.sh
bash scripts/install-oauth-peers.sh  # the real OpenID provider of the login test
cargo build -p toolgate --all-features --bin toolgate

# A peers folder of its own: the newest clients, the pinned peers' Node and Python.
CANARY=$ROOT/target/canary
mkdir -p "$CANARY/clients"
ln -sfn "$ROOT/.cache/peers/npm" "$CANARY/npm"
NODE_BIN=$ROOT/.cache/peers/npm/node_modules/node/bin
CLAUDE=${CLAUDE_CODE_VERSION:-latest}
CODEX=${CODEX_VERSION:-latest}
GEMINI=${GEMINI_CLI_VERSION:-latest}
(cd "$CANARY/clients" && { [ -f package.json ] || echo '{"name":"toolgate-canary","private":true}' > package.json; } &&
  PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE" "@openai/codex@$CODEX" "@google/gemini-cli@$GEMINI")

version() { sed -n 's/^ *"version": "\(.*\)",*$/\1/p' "$1" | head -1; }
CLAUDE_V=$(version "$CANARY/clients/node_modules/@anthropic-ai/claude-code/package.json")
CODEX_V=$(version "$CANARY/clients/node_modules/@openai/codex/package.json")
GEMINI_V=$(version "$CANARY/clients/node_modules/@google/gemini-cli/package.json")
echo "== canary: Claude Code $CLAUDE_V, Codex $CODEX_V, Gemini CLI $GEMINI_V"

rc=0
PEERS=$CANARY TOOLGATE_BIN="$ROOT/target/debug/toolgate" \
  .cache/peers/venv/bin/python -m pytest -q tests/interop/clients || rc=$?
if [ "$rc" -eq 0 ]; then
  echo "canary passed: Claude Code $CLAUDE_V, Codex $CODEX_V, Gemini CLI $GEMINI_V ($(date -u +%Y-%m-%d)); record them under \"Last checked\" in docs/clients.md"
else
  echo "canary FAILED with Claude Code $CLAUDE_V, Codex $CODEX_V, Gemini CLI $GEMINI_V: a client release changed something toolgate must handle" >&2
fi
exit "$rc"
