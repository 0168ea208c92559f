#!/usr/bin/env bash
# Interop check with the official MCP Inspector CLI (@modelcontextprotocol/inspector 2.x,
# installed by scripts/install-peers.sh) on Node 22: tools/list and tools/call against
# `toolgate serve` over stdio, then over Streamable HTTP (with and without a bearer token).
# Prints "N passed, M failed" last; exits non-zero if any check failed.
#
# Env: TOOLGATE_BIN (default target/debug/toolgate), PEERS (default .cache/peers).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
PEERS=${PEERS:-$REPO/.cache/peers}
BIN=${TOOLGATE_BIN:-$REPO/target/debug/toolgate}
NODE=$PEERS/npm/node_modules/node/bin/node
INSPECTOR=$PEERS/npm/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
PY=$PEERS/venv/bin/python
[ -x "$PY" ] || PY=python3

die() {
  echo "inspector.sh: $*" >&2
  echo "0 passed, 1 failed"
  exit 1
}
[ -x "$BIN" ] || die "toolgate binary not found at $BIN (run: cargo build -p toolgate)"
[ -x "$NODE" ] || die "Node 22 not found at $NODE (run: bash scripts/install-peers.sh)"
[ -f "$INSPECTOR" ] || die "MCP Inspector CLI not found at $INSPECTOR (run: bash scripts/install-peers.sh)"
node_version=$("$NODE" --version) || die "cannot run $NODE"
case $node_version in
  v22.*) ;;
  *) die "expected Node 22 from the node@22 package, got $node_version" ;;
esac

WORK=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-inspector.XXXXXX")
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -INT "$SERVER_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The project the server is confined to, and a file beside it that must stay unreachable.
ROOT=$WORK/project
mkdir -p "$ROOT/sub"
printf 'hello from toolgate\nsecond line\n' >"$ROOT/small.txt"
seq -f 'line %g' 1 3000 >"$ROOT/big.txt"
printf 'nested file\n' >"$ROOT/sub/nested.txt"
printf 'outside-the-root-secret\n' >"$WORK/outside.txt"

# The Inspector keeps state under $HOME/.mcp-inspector; keep it out of the real home, and keep
# user config and tokens away from the server.
export HOME=$WORK/home XDG_CONFIG_HOME=$WORK/xdg
mkdir -p "$HOME" "$XDG_CONFIG_HOME"
# The Inspector is an unknown client, which gets the conservative client profile (pages
# that fit the strictest measured client); these checks are about the tools' own limits
# (2,000 lines), so they raise it in the user config (the Inspector passes its stdio child
# only HOME and a few other variables). The last hop is tested in tests/interop/clients.
for dir in "$XDG_CONFIG_HOME/toolgate" "$HOME/.config/toolgate"; do
  mkdir -p "$dir"
  printf '[clients.default]\nmax_result_chars = 1000000\nmax_error_chars = 1000000\n' >"$dir/config.toml"
done
unset TOOLGATE_TOKEN RUST_LOG

passed=0
failed=0
pass() {
  passed=$((passed + 1))
  echo "ok   $1"
}
fail() {
  failed=$((failed + 1))
  echo "FAIL $1"
  shift
  for line in "$@"; do echo "     $line"; done
}

# inspect NAME ARGS...: runs the Inspector CLI (JSON output), leaving stdout in $WORK/NAME.out,
# stderr in $WORK/NAME.err and the exit status in $RC.
inspect() {
  local name=$1
  shift
  timeout 60 "$NODE" "$INSPECTOR" --cli --format json "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
  RC=$?
}

# check NAME WANT_RC PYTHON: passes when the Inspector exited WANT_RC and PYTHON (asserts on
# `out`, the parsed stdout, and `err`, the stderr text) raises nothing.
check() {
  local name=$1 want_rc=$2 code=$3
  if [ "$RC" != "$want_rc" ]; then
    fail "$name" "inspector exited $RC, expected $want_rc" \
      "stdout: $(head -c 600 "$WORK/$name.out")" "stderr: $(tail -c 1500 "$WORK/$name.err")"
    return
  fi
  local why
  if why=$("$PY" - "$WORK/$name.out" "$WORK/$name.err" "$code" 2>&1 <<'EOF'
import json, sys, traceback
out_path, err_path, code = sys.argv[1:4]
raw = open(out_path).read()
err = open(err_path).read()
try:
    out = json.loads(raw) if raw.strip() else None
except ValueError as e:
    sys.exit(f"stdout is not one JSON object ({e}): {raw[:400]!r}")
try:
    exec(compile(code, "<check>", "exec"), {"out": out, "err": err, "json": json})
except Exception as e:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == "<check>"]
    line = code.splitlines()[frames[-1].lineno - 1].strip() if frames else "?"
    detail = f"{type(e).__name__}: {e}"
    if len(detail) > 500:
        detail = detail[:500] + "..."
    sys.exit(f"check failed at: {line}\n     {detail}\n     stdout: {raw[:300]}")
EOF
  ); then
    pass "$name"
  else
    fail "$name" "$why"
  fi
}

# Assertions shared by stdio and HTTP.
TOOLS_LIST='
tools = {t["name"]: t for t in out["result"]["tools"]}
assert {"read_file", "list_dir"} <= set(tools), sorted(tools)
for name, t in tools.items():
    assert t["inputSchema"]["type"] == "object", name
    assert t["outputSchema"]["type"] == "object", name
    assert "text" in t["outputSchema"]["properties"], name
    assert t["annotations"]["readOnlyHint"] in (True, False), name
assert "path" in tools["read_file"]["inputSchema"]["required"]
'
READ_SMALL='
r = out["result"]
assert r["isError"] is False, r
text = r["content"][0]["text"]
assert text == "     1\thello from toolgate\n     2\tsecond line\n", repr(text)
sc = r["structuredContent"]
assert sc["text"] == text, sc
assert sc["truncated"] is False and "next_offset" not in sc and sc["path"] == "small.txt", sc
'
READ_BIG='
r = out["result"]
assert r["isError"] is False, r
text = r["content"][0]["text"]
sc = r["structuredContent"]
assert sc["text"] == text
assert "  2000\tline 2000\n" in text and "\tline 2001\n" not in text
assert sc["truncated"] is True and sc["reason"] == "result_limit", sc
assert sc["next_offset"] == 2001 and sc["total"] == 3000, sc
'
READ_WINDOW='
r = out["result"]
text = r["content"][0]["text"]
assert text.startswith("  2999\tline 2999\n  3000\tline 3000\n"), repr(text)
assert r["structuredContent"]["truncated"] is False
'
LIST_DIR='
r = out["result"]
text = r["content"][0]["text"]
assert [l.split()[0] for l in text.splitlines()] == ["big.txt", "small.txt", "sub/"], repr(text)
assert r["structuredContent"]["text"] == text
'
TOOL_ERROR='
assert out is None or "result" not in out or out["result"]["isError"] is True, out
assert "tool_is_error" in err, err[-500:]
'

echo "== Inspector CLI $("$NODE" "$INSPECTOR" --cli --version 2>/dev/null | tail -1) on Node $node_version"
echo "== stdio: $BIN serve --root $ROOT"
STDIO=("$BIN" serve --root "$ROOT")

inspect stdio-tools-list "${STDIO[@]}" --method tools/list
check stdio-tools-list 0 "$TOOLS_LIST"

inspect stdio-tools-list-strict --strict "${STDIO[@]}" --method tools/list
check stdio-tools-list-strict 0 'assert out["result"]["tools"]'

inspect stdio-read-small "${STDIO[@]}" --method tools/call --tool-name read_file --tool-arg path=small.txt
check stdio-read-small 0 "$READ_SMALL"

inspect stdio-read-big "${STDIO[@]}" --method tools/call --tool-name read_file --tool-arg path=big.txt
check stdio-read-big 0 "$READ_BIG"

inspect stdio-read-window "${STDIO[@]}" --method tools/call --tool-name read_file \
  --tool-args-json '{"path": "big.txt", "offset": 2999, "limit": 5}'
check stdio-read-window 0 "$READ_WINDOW"

inspect stdio-list-dir "${STDIO[@]}" --method tools/call --tool-name list_dir
check stdio-list-dir 0 "$LIST_DIR"

# Tool errors are isError results; the Inspector reports them with exit status 5.
inspect stdio-read-missing "${STDIO[@]}" --method tools/call --tool-name read_file --tool-arg path=missing.txt
check stdio-read-missing 5 "$TOOL_ERROR"

inspect stdio-read-outside "${STDIO[@]}" --method tools/call --tool-name read_file --tool-arg path=../outside.txt
check stdio-read-outside 5 "$TOOL_ERROR"'
text = out["result"]["content"][0]["text"]
assert "outside" in text and "outside-the-root-secret" not in text + err, text
'

inspect stdio-modern "${STDIO[@]}" --protocol-era auto --method tools/call --tool-name read_file --tool-arg path=small.txt
check stdio-modern 0 "$READ_SMALL"

# start_http [TOKEN]: starts `toolgate serve --http 127.0.0.1:0`, sets URL and SERVER_PID.
start_http() {
  local log=$WORK/http-server.$1.err
  if [ -n "${2:-}" ]; then
    TOOLGATE_TOKEN=$2 "$BIN" serve --root "$ROOT" --http 127.0.0.1:0 2>"$log" </dev/null &
  else
    "$BIN" serve --root "$ROOT" --http 127.0.0.1:0 2>"$log" </dev/null &
  fi
  SERVER_PID=$!
  URL=
  for _ in $(seq 150); do
    URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -1)
    [ -n "$URL" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  fail "http-server-$1-start" "no URL on stderr: $(tail -c 1000 "$log")"
  return 1
}

# stop_http NAME: SIGINT, and the server must exit 0 within 10 s.
stop_http() {
  kill -INT "$SERVER_PID" 2>/dev/null
  local i
  for i in $(seq 100); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -KILL "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null
    fail "$1" "server did not exit within 10 s of SIGINT"
  else
    wait "$SERVER_PID"
    local rc=$?
    if [ "$rc" = 0 ]; then pass "$1"; else fail "$1" "server exited $rc after SIGINT"; fi
  fi
  SERVER_PID=
}

echo "== Streamable HTTP"
if start_http plain; then
  echo "   $URL"
  inspect http-tools-list "$URL" --method tools/list
  check http-tools-list 0 "$TOOLS_LIST"

  inspect http-transport-flag --transport http --server-url "$URL" --method tools/list
  check http-transport-flag 0 "$TOOLS_LIST"

  inspect http-read-small "$URL" --method tools/call --tool-name read_file --tool-arg path=small.txt
  check http-read-small 0 "$READ_SMALL"

  inspect http-read-big "$URL" --method tools/call --tool-name read_file --tool-arg path=big.txt
  check http-read-big 0 "$READ_BIG"

  inspect http-modern "$URL" --protocol-era auto --method tools/call --tool-name list_dir
  check http-modern 0 "$LIST_DIR"

  inspect http-read-missing "$URL" --method tools/call --tool-name read_file --tool-arg path=missing.txt
  check http-read-missing 5 "$TOOL_ERROR"

  stop_http http-server-exits-on-sigint
fi

echo "== Streamable HTTP with a bearer token"
TOKEN=tg-inspector-token-51c2
if start_http token "$TOKEN"; then
  echo "   $URL"
  inspect http-token-ok "$URL" --header "Authorization: Bearer $TOKEN" \
    --method tools/call --tool-name read_file --tool-arg path=small.txt
  check http-token-ok 0 "$READ_SMALL"

  inspect http-token-missing --stored-auth-only "$URL" --method tools/list
  if [ "$RC" != 0 ] && ! grep -q '"tools"' "$WORK/http-token-missing.out" &&
    grep -qiE 'auth_required|401|bearer' "$WORK/http-token-missing.err"; then
    pass http-token-missing
  else
    fail http-token-missing "tools/list without a token: expected an auth failure (exit $RC)" \
      "stdout: $(head -c 300 "$WORK/http-token-missing.out")" \
      "stderr: $(tail -c 500 "$WORK/http-token-missing.err")"
  fi

  stop_http http-token-server-exits-on-sigint
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
