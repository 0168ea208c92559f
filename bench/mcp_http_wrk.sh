#!/usr/bin/env bash
# 1,000 concurrent connections calling read_file over Streamable HTTP (wrk; apt-get install wrk).
# Usage: bash bench/mcp_http_wrk.sh [CONNECTIONS] [SECONDS]   (TOOLGATE_BIN overrides the binary)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${TOOLGATE_BIN:-$PWD/target/release/toolgate}"
CONNS="${1:-1000}"; SECS="${2:-10}"; PORT=18899
WORK=$(mktemp -d); trap 'kill $PID 2>/dev/null; rm -rf "$WORK"' EXIT
seq 1 100 | sed 's/^/line /' > "$WORK/hundred.txt"
(cd "$WORK" && XDG_CONFIG_HOME="$WORK/.x" exec "$BIN" serve --http 127.0.0.1:$PORT --log-level warn 2>"$WORK/err.log") &
PID=$!; sleep 1
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
SID=$(curl -s -D - -o /dev/null -X POST "http://127.0.0.1:$PORT/mcp" "${H[@]}" \
  -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wrk","version":"0"}}}' \
  | awk 'tolower($1)=="mcp-session-id:" {print $2}' | tr -d '\r')
curl -s -X POST "http://127.0.0.1:$PORT/mcp" "${H[@]}" -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-06-18' \
  -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
cat > "$WORK/call.lua" <<LUA
local counter = 0
local tid = 0
setup = function(thread) tid = tid + 1; thread:set("tid", tid) end
request = function()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. (tid * 100000000 + counter) .. ',"method":"tools/call","params":{"name":"read_file","arguments":{"path":"hundred.txt"}}}'
  return wrk.format("POST", nil, {["Content-Type"]="application/json", ["Accept"]="application/json, text/event-stream", ["Mcp-Session-Id"]="$SID", ["MCP-Protocol-Version"]="2025-06-18"}, body)
end
response = function(status, headers, body)
  if status ~= 200 or not string.find(body, '"isError":false', 1, true) then wrk.thread:stop() end
end
LUA
wrk -t2 -c"$CONNS" -d"${SECS}s" --latency -s "$WORK/call.lua" "http://127.0.0.1:$PORT/mcp"
