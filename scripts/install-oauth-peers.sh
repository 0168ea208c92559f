#!/usr/bin/env bash
# Installs, pinned, into .cache/conformance-client (idempotent): Node 22 (the `node@22`
# package), the official MCP conformance suite whose client leg
# tests/interop/conformance-client.sh runs, and `oidc-provider` (a certified OpenID
# provider), the real authorization server of the OAuth end-to-end tests
# (tests/interop/oauth/provider.mjs; tests/interop/python/test_oauth.py and
# tests/interop/clients/test_clients.py).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="$PWD/.cache/conformance-client"
NODE_VERSION=22
CONFORMANCE_VERSION=0.2.0-alpha.12
OIDC_PROVIDER_VERSION=9.13.3
installed() {
  [ -x "$DIR/node_modules/node/bin/node" ] &&
    grep -q "\"version\": \"$CONFORMANCE_VERSION\"" \
      "$DIR/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null &&
    grep -q "\"version\": \"$OIDC_PROVIDER_VERSION\"" \
      "$DIR/node_modules/oidc-provider/package.json" 2>/dev/null
}
installed && exit 0
mkdir -p "$DIR"
(cd "$DIR" && [ -f package.json ] || echo '{"name":"toolgate-conformance-client","private":true}' >package.json)
(cd "$DIR" && npm install --no-audit --no-fund --loglevel=error --save-exact \
  "node@$NODE_VERSION" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
  "oidc-provider@$OIDC_PROVIDER_VERSION")
installed
