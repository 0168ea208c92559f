#!/usr/bin/env bash
# grep and search_files against the newest ripgrep, side by side, all figures in one run
# (results: bench/RESULTS-performance.md).
#
#   bash bench/search.sh                 # everything below; prints one table at the end
#   ROUNDS=8 RUNS=5 bash bench/search.sh # more rounds / runs per round
#   SKIP_BUILD=1 bash bench/search.sh    # use target/release/toolgate as it is
#
# Needs: cargo, python3 and hyperfine (`apt-get install -y hyperfine`, else it is installed
# with cargo). ripgrep is installed by this script from crates.io, the newest release, into
# target/bench-tools (`cargo install ripgrep --locked`), so the anchor is the current one and
# not the distribution's.
#
# Data (generated, never committed) under target/bench-data:
#   src-tree/vendor  `cargo vendor` of a fixed set of popular crates: ~380 MB, ~20,000 files
#                    of real Rust and C source (plus the binary import libraries some crates
#                    ship, which both tools skip as binary).
#   c-tree/vendor    `cargo vendor` of crates that bundle large C projects (OpenSSL 3 via
#                    openssl-src, SQLite, zstd, xz, zlib): ~80 MB, ~4,800 files, mostly C —
#                    the second tree, a different shape (fewer, bigger files; deep folders).
#   app_1GiB.log     a 1 GiB log (the read_file benchmark's), for peak memory.
#
# Fairness: the toolgate side runs with bench/search-bench.toml, which raises the result,
# payload, scan and output-budget limits so that one call returns every match, as rg prints
# every match; the default limits would stop after 100 results, which is the point of them
# but not a comparison. rg gets the same walk as toolgate: hidden files searched (`--hidden`),
# the heavy folders skipped (`-g '!{.git,node_modules,…}/'`; vendored crates hold `build/`
# folders), .gitignore honoured (both). bench/search_compare.py checks that both report the
# same number of matching lines and files before timing them, runs both sides in alternation
# (hyperfine rounds; call by call when warm) and prints the load average beside every row,
# and CPU time (user + system) beside wall time: on a shared machine the CPU ratio is the
# steadier one.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-4}
DATA=$ROOT/target/bench-data
TREE=$DATA/src-tree/vendor
CTREE=$DATA/c-tree/vendor
TG=$ROOT/target/release/toolgate
CONF=$ROOT/bench/search-bench.toml
TOOLS=$ROOT/target/bench-tools
OUT=$DATA/search-results
mkdir -p "$DATA" "$OUT" "$TOOLS"

command -v python3 >/dev/null || { echo "missing python3" >&2; exit 2; }
echo "== ripgrep: the newest release from crates.io" >&2
cargo install ripgrep --locked --root "$TOOLS" --quiet
RG=$TOOLS/bin/rg
"$RG" --version | head -1 >&2
if ! command -v hyperfine >/dev/null; then
  cargo install hyperfine --locked --root "$TOOLS" --quiet
fi
export PATH=$TOOLS/bin:$PATH

if [ -z "${SKIP_BUILD:-}" ]; then   # SKIP_BUILD=1: use target/release/toolgate as it is
  echo "== build" >&2
  cargo build --release -p toolgate --quiet
fi

# `cargo vendor` of the crates in $2 (Cargo.toml dependency lines) into $1.
vendor() {
  local dir=$1 deps=$2
  [ -d "$dir/vendor" ] && return
  echo "== generate $dir/vendor (cargo vendor)" >&2
  mkdir -p "$dir/src"
  # An empty [workspace]: the folder lies inside this workspace's target/.
  printf '[package]\nname = "toolgate-bench-%s"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\n%s\n\n[workspace]\n' \
    "$(basename "$dir")" "$deps" > "$dir/Cargo.toml"
  : > "$dir/src/lib.rs"
  (cd "$dir" && cargo vendor --quiet --versioned-dirs vendor.tmp >/dev/null)
  mv "$dir/vendor.tmp" "$dir/vendor"
}
vendor "$DATA/src-tree" 'tokio = { version = "1", features = ["full"] }
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
aws-sdk-s3 = "1"'
vendor "$DATA/c-tree" 'openssl-src = "300"
libsqlite3-sys = { version = "0.30", features = ["bundled"] }
zstd-sys = "2"
lzma-sys = "0.1"
libz-sys = { version = "1", features = ["static"] }'
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
for t in "$TREE" "$CTREE"; do
  echo "tree: $t ($(du -sm "$t" | cut -f1) MB, $(find "$t" -type f | wc -l) files)" >&2
done

# --- grep and search_files, fresh and warm, both trees ----------------------------------------
python3 bench/search_compare.py --tg "$TG" --rg "$RG" --config "$CONF" \
  --tree "vendor=$TREE" --tree "c-tree=$CTREE" \
  --pattern 'fn [a-z_]+_with_capacity' --pattern 'unsafe impl Send' --pattern 'TODO|FIXME' \
  --name parse --rounds "$ROUNDS" --runs "$RUNS" --out "$OUT/compare.json" > "$OUT/compare.md"

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
read -r rg_rare_kb rg_rare_s < <(rss "$RG" -n "$RARE" "$LOG")
read -r rg_nommap_kb rg_nommap_s < <(rss "$RG" --no-mmap -n "$RARE" "$LOG")
[ "$("$TG" --root "$DATA" call grep "{\"pattern\": \"$RARE\", \"path\": \"app_1GiB.log\"}" | grep -c '^[0-9]*:')" = 1 ] \
  || { echo "expected one line with $RARE in the log" >&2; exit 1; }

# --- the table -------------------------------------------------------------------------------
echo
echo "$("$RG" --version | head -1); $(nproc) CPUs; hyperfine medians over $ROUNDS rounds of $RUNS runs (fresh), medians of 20 alternating calls (warm)"
cat "$OUT/compare.md"
echo
echo "peak RSS over the 1 GiB log (KiB, seconds):"
echo "  toolgate call grep, 1 match (whole file searched)   $tg_rare_kb KiB  ${tg_rare_s} s"
echo "  toolgate call grep, every 97th line (stops at 100)  $tg_many_kb KiB  ${tg_many_s} s"
echo "  rg -n, 1 match (mmap, the default for one file)     $rg_rare_kb KiB  ${rg_rare_s} s"
echo "  rg --no-mmap -n, 1 match                            $rg_nommap_kb KiB  ${rg_nommap_s} s"
