#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60) on the committed corpus and
# prints the executions and findings per target. Fuzzing needs nightly compiler features
# (sanitizers); they are enabled on the stable toolchain with RUSTC_BOOTSTRAP=1 here only —
# the workspace itself stays on stable. A crash is saved under fuzz/artifacts/TARGET/; turn
# it into a regression test before fixing it.
#
#   bash scripts/fuzz.sh 600            # every target, 10 minutes each
#   bash scripts/fuzz.sh 60 compress    # one target
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(compress path config tool_args stdio)
fi
cd fuzz
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log="target/fuzz-$t.log"
  mkdir -p target
  echo "== $t (${seconds}s)"
  status=0
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -rss_limit_mb=4096 \
    -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || status=$?
  execs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' | tail -1 || true)
  if [ "$status" -eq 0 ]; then
    echo "   ${execs:-?} executions, no finding"
  else
    echo "   ${execs:-?} executions, FINDING (exit $status): see fuzz/$log and fuzz/artifacts/$t/"
    grep -E 'panicked|ERROR: ' "$log" | head -5 || true
  fi
done
