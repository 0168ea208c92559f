#!/usr/bin/env bash
# Installs the real MCP peers the interop tests talk to, into .cache/peers (idempotent):
#   - Python: the `mcp` SDK (2.3.x) and pytest, in a virtualenv
#   - npm: Node 22 (the `node@22` package; the Inspector needs Node >= 22.19),
#     @modelcontextprotocol/inspector 2.x, @modelcontextprotocol/conformance,
#     @modelcontextprotocol/server-filesystem (benchmark anchor, gateway tests),
#     @modelcontextprotocol/server-everything (gateway tests: stdio and streamableHttp)
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS="$PWD/.cache/peers"
mkdir -p "$PEERS"

if [ ! -x "$PEERS/venv/bin/python" ]; then
  python3 -m venv "$PEERS/venv"
fi
if ! "$PEERS/venv/bin/python" -c '
import importlib.metadata as m, mcp, pytest, httpx, anyio, jsonschema
assert m.version("mcp").startswith("2.3."), m.version("mcp")' 2>/dev/null; then
  "$PEERS/venv/bin/pip" install --quiet --disable-pip-version-check 'mcp>=2.3,<2.4' 'pytest>=8' httpx
fi

if [ ! -f "$PEERS/npm/.installed-v2" ] || [ ! -x "$PEERS/npm/node_modules/node/bin/node" ] ||
  [ ! -f "$PEERS/npm/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" ] ||
  [ ! -d "$PEERS/npm/node_modules/@modelcontextprotocol/server-everything" ]; then
  mkdir -p "$PEERS/npm"
  (cd "$PEERS/npm" && [ -f package.json ] || echo '{"name":"toolgate-peers","private":true}' > package.json)
  (cd "$PEERS/npm" && npm install --no-audit --no-fund --loglevel=error \
    node@22 @modelcontextprotocol/inspector@2 @modelcontextprotocol/conformance \
    @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-everything)
  touch "$PEERS/npm/.installed-v2"
fi
