#!/usr/bin/env bash
# search_files and grep against ripgrep, side by side (issue 3; SPEC "Bounded I/O").
#
#   bash bench/search.sh            # everything below; prints one table at the end
#   RUNS=20 bash bench/search.sh    # more hyperfine runs
#   SKIP_BUILD=1 bash bench/search.sh   # use target/release/toolgate as it is
#
# Needs: cargo, python3, rg and hyperfine (`apt-get install -y ripgrep hyperfine`), and for
# the contrast with the reference filesystem server `bash scripts/install-peers.sh`.
#
# Data (generated, never committed) under target/bench-data:
#   src-tree/vendor  `cargo vendor` of a fixed set of popular crates: ~380 MB, ~20,000 files
#                    of real Rust and C source (plus the binary import libraries some crates
#                    ship, which both tools skip as binary).
#   app_1GiB.log     a 1 GiB log (the read_file benchmark's), for peak memory.
#
# Fairness: the toolgate side runs with bench/search-bench.toml, which raises the result,
# payload, scan and output-budget limits so that one call returns every match, as rg prints
# every match; the default limits would stop after 100 results, which is the point of them
# but not a comparison. rg gets the same walk as toolgate: hidden files searched (`--hidden`),
# the heavy folders skipped (`-g '!{.git,node_modules,…}/'`; vendored crates hold `build/`
# folders), .gitignore honoured (both). The script checks that both report the same number of
# matching lines and files before timing them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-10}
DATA=$ROOT/target/bench-data
TREE=$DATA/src-tree/vendor
TG=$ROOT/target/release/toolgate
CONF=$ROOT/bench/search-bench.toml
OUT=$DATA/search-results
mkdir -p "$DATA" "$OUT"

for tool in rg hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y ripgrep hyperfine)" >&2; exit 2; }
done

if [ -z "${SKIP_BUILD:-}" ]; then   # SKIP_BUILD=1: use target/release/toolgate as it is
  echo "== build" >&2
  cargo build --release -p toolgate --quiet
fi

if [ ! -d "$TREE" ]; then
  echo "== generate $TREE (cargo vendor)" >&2
  mkdir -p "$DATA/src-tree/src"
  cat > "$DATA/src-tree/Cargo.toml" <<'EOF'
[package]
name = "toolgate-bench-tree"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
tokio = { version = "1", features = ["full"] }
hyper = { version = "1", features = ["full"] }
axum = "0.8"
reqwest = "0.12"
serde_json = "1"
syn = { version = "2", features = ["full"] }
regex = "1"
clap = "4"
rustls = "0.23"
ring = "0.17"
libgit2-sys = "0.18"
bindgen = "0.71"
aws-sdk-s3 = "1"
EOF
  : > "$DATA/src-tree/src/lib.rs"
  (cd "$DATA/src-tree" && cargo vendor --quiet --versioned-dirs "$TREE.tmp" >/dev/null)
  mv "$TREE.tmp" "$TREE"
fi
if [ ! -f "$DATA/app_1GiB.log" ]; then
  echo "== generate $DATA/app_1GiB.log" >&2
  # The same lines as crates/fs/benches/support/data.rs writes (the read_file benchmark's).
  python3 - "$DATA/app_1GiB.log" <<'EOF'
import sys
with open(sys.argv[1] + ".tmp", "w") as f:
    n, size = 0, 0
    while size < 1 << 30:
        s = n % 86400
        line = (f"2026-11-30T{s // 3600:02}:{s // 60 % 60:02}:{s % 60:02}Z INFO request "
                f"id={n} path=/api/v1/items status={500 if n % 97 == 0 else 200}\n")
        f.write(line)
        size += len(line)
        n += 1
EOF
  mv "$DATA/app_1GiB.log.tmp" "$DATA/app_1GiB.log"
fi
TREE_MB=$(du -sm "$TREE" | cut -f1)
TREE_FILES=$(find "$TREE" -type f | wc -l)
echo "tree: $TREE ($TREE_MB MB, $TREE_FILES files)" >&2

SKIP='!{.git,node_modules,.cache,.pnpm-store,.yarn,.next,.nuxt,.turbo,dist,build,coverage,.venv,venv,target,.gradle,.idea}/'
tg() { "$TG" --root "$TREE" --config "$CONF" call "$@"; }
json() { python3 -c 'import json,sys; print(json.dumps({"pattern": sys.argv[1]}))' "$1"; }

# Warm the page cache so every run reads from memory.
rg -uuu -c zzzz_warm_zzzz "$TREE" >/dev/null || true

# --- grep vs rg -n ---------------------------------------------------------------------------
GREP_PATTERNS=("unsafe impl Send" 'fn \w+_unchecked\b' 'TODO|FIXME')
check_grep() {
  local pattern=$1 ours theirs
  ours=$(tg grep "$(json "$pattern")" --json | python3 -c '
import json, sys
sc = json.load(sys.stdin)["structuredContent"]
assert not sc["truncated"], sc
print(sc["total"], sc["files_matched"])')
  theirs="$(rg --hidden -g "$SKIP" -n -- "$pattern" "$TREE" | wc -l) $(rg --hidden -g "$SKIP" -l -- "$pattern" "$TREE" | wc -l)"
  echo "grep /$pattern/: toolgate $ours, rg $theirs (matching lines, files)" >&2
  [ "$ours" = "$theirs" ] || { echo "MISMATCH for /$pattern/" >&2; exit 1; }
}
for p in "${GREP_PATTERNS[@]}"; do check_grep "$p"; done

i=0
for p in "${GREP_PATTERNS[@]}"; do
  i=$((i + 1))
  hyperfine --warmup 2 --runs "$RUNS" --export-json "$OUT/grep$i.json" \
    -n "toolgate call grep /$p/" "$TG --root $TREE --config $CONF call grep '$(json "$p")'" \
    -n "rg -n --hidden -g SKIP /$p/" "rg --hidden -g '$SKIP' -n -- '$p' $TREE" >&2
done

# --- search_files vs rg --files | rg ---------------------------------------------------------
NAME=parse
ours=$(tg search_files "{\"query\": \"$NAME\"}" --json | python3 -c '
import json, sys
sc = json.load(sys.stdin)["structuredContent"]
assert not sc["truncated"], sc
print(sc["total"])')
theirs=$(rg --hidden -g "$SKIP" --files "$TREE" | rg -i "$NAME" | wc -l)
echo "search_files '$NAME': toolgate $ours, rg --files | rg -i $theirs" >&2
[ "$ours" = "$theirs" ] || { echo "MISMATCH for search_files" >&2; exit 1; }
hyperfine --warmup 2 --runs "$RUNS" --export-json "$OUT/find.json" \
  -n "toolgate call search_files $NAME" "$TG --root $TREE --config $CONF call search_files '{\"query\": \"$NAME\"}' >/dev/null" \
  -n "rg --files -g SKIP | rg -i $NAME" "rg --hidden -g '$SKIP' --files $TREE | rg -i $NAME >/dev/null" >&2

# --- warm, inside the MCP server, and the reference filesystem server --------------------------
python3 bench/search_mcp.py --root "$TREE" --config "$CONF" --name "$NAME" --rg-glob "$SKIP" \
  --runs "$RUNS" --out "$OUT/mcp.json" "${GREP_PATTERNS[@]}" >&2

# --- peak memory over one 1 GiB file ---------------------------------------------------------
rss() { /usr/bin/time -f '%M %e' "$@" 2>&1 >/dev/null | tail -1; }
LOG=$DATA/app_1GiB.log
cat "$LOG" >/dev/null
# A line that occurs once (the whole file is searched), and one on every 97th line (the page
# is full after 100 matches and the search stops).
RARE='id=9999999 '
COMMON='status=500'
read -r tg_rare_kb tg_rare_s < <(rss "$TG" --root "$DATA" --config "$CONF" call grep "{\"pattern\": \"$RARE\", \"path\": \"app_1GiB.log\"}")
read -r tg_many_kb tg_many_s < <(rss "$TG" --root "$DATA" call grep "{\"pattern\": \"$COMMON\", \"path\": \"app_1GiB.log\"}")
read -r rg_rare_kb rg_rare_s < <(rss rg -n "$RARE" "$LOG")
read -r rg_nommap_kb rg_nommap_s < <(rss rg --no-mmap -n "$RARE" "$LOG")
[ "$("$TG" --root "$DATA" call grep "{\"pattern\": \"$RARE\", \"path\": \"app_1GiB.log\"}" | grep -c '^[0-9]*:')" = 1 ] \
  || { echo "expected one line with $RARE in the log" >&2; exit 1; }

# --- the table -------------------------------------------------------------------------------
python3 - "$OUT" "$TREE_MB" "$TREE_FILES" <<EOF
import json, os, sys
out, mb, files = sys.argv[1], sys.argv[2], sys.argv[3]
print(f"\ntree: {mb} MB, {files} files (cargo vendor); hyperfine mean ± σ, {os.environ.get('RUNS', '$RUNS')} runs")
print(f"{'command':<52} {'mean ms':>9} {'σ ms':>7} {'ratio':>7}")
def table(name):
    rs = json.load(open(os.path.join(out, name)))["results"]
    base = rs[1]["mean"]
    for r in rs:
        print(f"{r['command'][:52]:<52} {r['mean']*1e3:9.1f} {r['stddev']*1e3:7.1f} {r['mean']/base:7.2f}")
for name in ["grep1.json", "grep2.json", "grep3.json", "find.json"]:
    table(name)
m = json.load(open(os.path.join(out, "mcp.json")))
print("\nwarm, one MCP session over stdio (median per call, ms):")
for row in m["rows"]:
    print(f"  {row['what']:<58} {row['median_ms']:9.1f}  ({row['detail']})")
print("\npeak RSS over the 1 GiB log (KiB, seconds):")
print(f"  toolgate call grep, 1 match (whole file searched)   $tg_rare_kb KiB  ${tg_rare_s} s")
print(f"  toolgate call grep, every 97th line (stops at 100)  $tg_many_kb KiB  ${tg_many_s} s")
print(f"  rg -n, 1 match (mmap, the default for one file)     $rg_rare_kb KiB  ${rg_rare_s} s")
print(f"  rg --no-mmap -n, 1 match                            $rg_nommap_kb KiB  ${rg_nommap_s} s")
EOF
