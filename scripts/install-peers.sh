#!/usr/bin/env bash
# Installs the real MCP peers the interop tests talk to, into .cache/peers (idempotent):
#   - Python: the `mcp` SDK (2.3.x), pytest and opentelemetry-proto, in a virtualenv; moto's S3
#     server
#   - npm: Node 22 (the `node@22` package; the Inspector needs Node >= 22.19),
#     @modelcontextprotocol/inspector 2.x,
#     @modelcontextprotocol/server-filesystem (benchmark anchor, gateway tests),
#     @modelcontextprotocol/server-everything (gateway tests: stdio and streamableHttp)
#   - npm, pinned, in .cache/peers/clients: the real agent CLIs the last-hop tests drive
#     (tests/interop/clients): @anthropic-ai/claude-code, @openai/codex and @google/gemini-cli
#   - Debian packages: prometheus (test_metrics.py), haproxy (test_replicas.py)
# (The conformance suite, pinned, comes with scripts/install-oauth-peers.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS="$PWD/.cache/peers"
mkdir -p "$PEERS"

if [ ! -x "$PEERS/venv/bin/python" ]; then
  python3 -m venv "$PEERS/venv"
fi
if ! "$PEERS/venv/bin/python" -c '
import importlib.metadata as m, mcp, pytest, httpx, anyio, jsonschema
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
assert m.version("mcp").startswith("2.3."), m.version("mcp")' 2>/dev/null; then
  # opentelemetry-proto: the OTLP messages the telemetry test's receiver decodes.
  "$PEERS/venv/bin/pip" install --quiet --disable-pip-version-check 'mcp>=2.3,<2.4' 'pytest>=8' httpx \
    'opentelemetry-proto>=1.30'
fi

# A real S3-compatible server (moto's, `python -m moto.server`) for the shared spill store
# of `serve --http` replicas: tests/interop/python/test_spill_store.py.
if ! "$PEERS/venv/bin/python" -c 'import moto.server, flask' 2>/dev/null; then
  "$PEERS/venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]>=5,<6'
fi

if [ ! -f "$PEERS/npm/.installed-v2" ] || [ ! -x "$PEERS/npm/node_modules/node/bin/node" ] ||
  [ ! -f "$PEERS/npm/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" ] ||
  [ ! -d "$PEERS/npm/node_modules/@modelcontextprotocol/server-everything" ]; then
  mkdir -p "$PEERS/npm"
  (cd "$PEERS/npm" && [ -f package.json ] || echo '{"name":"toolgate-peers","private":true}' > package.json)
  (cd "$PEERS/npm" && npm install --no-audit --no-fund --loglevel=error \
    node@22 @modelcontextprotocol/inspector@2 \
    @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-everything)
  touch "$PEERS/npm/.installed-v2"
fi

# The real clients, pinned: their result limits were measured with these versions
# (tests/interop/clients/measure.py; crates/core/src/profile.rs).
CLAUDE_CODE_VERSION=2.1.328
CODEX_VERSION=0.169.0
GEMINI_CLI_VERSION=0.61.0
CLIENTS="$PEERS/clients"
if ! { [ -x "$CLIENTS/node_modules/.bin/claude" ] && [ -x "$CLIENTS/node_modules/.bin/codex" ] &&
  [ -x "$CLIENTS/node_modules/.bin/gemini" ] &&
  grep -q "\"version\": \"$CLAUDE_CODE_VERSION\"" "$CLIENTS/node_modules/@anthropic-ai/claude-code/package.json" 2>/dev/null &&
  grep -q "\"version\": \"$CODEX_VERSION\"" "$CLIENTS/node_modules/@openai/codex/package.json" 2>/dev/null &&
  grep -q "\"version\": \"$GEMINI_CLI_VERSION\"" "$CLIENTS/node_modules/@google/gemini-cli/package.json" 2>/dev/null; }; then
  mkdir -p "$CLIENTS"
  (cd "$CLIENTS" && [ -f package.json ] || echo '{"name":"toolgate-clients","private":true}' > package.json)
  (cd "$CLIENTS" && PATH="$PEERS/npm/node_modules/node/bin:$PATH" npm install --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" \
    "@google/gemini-cli@$GEMINI_CLI_VERSION")
fi

# A real Prometheus (Debian's package) scrapes `serve --http`'s /metrics in
# tests/interop/python/test_metrics.py.
if ! command -v prometheus >/dev/null; then
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null; }
  # The package starts a system service on :9090; the test runs its own on a free port.
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
command -v prometheus >/dev/null

# A real load balancer (Debian's HAProxy) in front of several `serve --http` replicas, with
# deploy/haproxy.cfg: tests/interop/python/test_replicas.py and bench/replicas.py.
# Debian installs it in /usr/sbin, which a normal user's PATH may lack.
haproxy_installed() { command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ]; }
if ! haproxy_installed; then
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy >/dev/null; }
  # The package starts a system service with its own config; the tests run their own.
  $SUDO systemctl disable --now haproxy >/dev/null 2>&1 || true
fi
haproxy_installed

# A real Redis (Debian's package) holds the catalog cache shared by replicas
# (`[mcp] shared_store`) in tests/interop/python/test_shared_store.py.
if ! command -v redis-server >/dev/null; then
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server >/dev/null; }
  # The package starts a system service on :6379; the test runs its own on a free port.
  $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
fi
command -v redis-server >/dev/null
