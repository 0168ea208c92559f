#!/usr/bin/env bash
# Installs Arize Phoenix (pinned), a real OpenTelemetry backend that receives OTLP/HTTP traces
# and answers queries for them, into its own virtualenv .cache/peers/phoenix (idempotent;
# ~850 MB of wheels, kept apart from the test venv's packages). tests/interop/python/
# test_telemetry.py sends toolgate's spans to it. scripts/test.sh runs this in the
# background while the workspace builds.
set -euo pipefail
cd "$(dirname "$0")/.."
PHOENIX_VERSION=20.26.1
VENV="$PWD/.cache/peers/phoenix"
if [ -x "$VENV/bin/phoenix" ] &&
  "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('arize-phoenix') == '$PHOENIX_VERSION'" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "arize-phoenix==$PHOENIX_VERSION"
"$VENV/bin/phoenix" --help >/dev/null
