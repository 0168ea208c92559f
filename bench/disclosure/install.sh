#!/usr/bin/env bash
# Installs the MCP servers whose tool lists make the disclosure benchmark's catalog, into
# .cache/peers/bench-npm (server-everything and server-filesystem come from
# scripts/install-peers.sh). Only needed to refresh the committed fixture.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .cache/peers/bench-npm
cd .cache/peers/bench-npm
[ -f package.json ] || echo '{"name":"toolgate-bench-peers","private":true}' > package.json
npm install --no-audit --no-fund --loglevel=error --ignore-scripts \
  @modelcontextprotocol/server-memory @modelcontextprotocol/server-github \
  @modelcontextprotocol/server-gitlab @modelcontextprotocol/server-slack \
  @modelcontextprotocol/server-google-maps @modelcontextprotocol/server-brave-search \
  @modelcontextprotocol/server-sequential-thinking @modelcontextprotocol/server-postgres \
  @playwright/mcp @notionhq/notion-mcp-server @upstash/context7-mcp tavily-mcp \
  firecrawl-mcp exa-mcp-server
