#!/usr/bin/env bash
# Log compression's figures: characters to the model and key lines kept per real fixture
# (before and now), and compression throughput on a ~100 MB log through run_shell (release
# build).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p toolgate-shell --bench logs
