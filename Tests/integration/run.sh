#!/usr/bin/env bash
# Runs chatlinkd's integration tests (Tests/integration) with pytest, against the Python
# backend of Tests/Fixtures/backend.py and the daemon binaries of this checkout. Loopback only: no network.
#
#   Tests/integration/run.sh [pytest arguments…]      e.g. -k backoff, -x, -v
#
# The binaries come from $CHATLINK_BIN; when it is unset, chatlinkd is built first (debug)
# and `swift build --show-bin-path` names the directory. The Python packages come from
# .venv (scripts/setup.sh creates it from Tests/requirements.txt). Exits non-zero on failure.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

python="$repo/.venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import pytest, pytest_timeout, websockets, varlink, socketio, aiohttp, paho.mqtt.client, stomp, slixmpp, pyfuse3, trio" 2>/dev/null; then
  echo "run.sh: $repo/.venv lacks the test packages; run scripts/setup.sh --test first" >&2
  exit 2
fi

if [ -z "${CHATLINK_BIN:-}" ]; then
  swift build --product chatlinkd >&2
  CHATLINK_BIN=$(swift build --show-bin-path)
  export CHATLINK_BIN
fi
if [ ! -x "$CHATLINK_BIN/chatlinkd" ]; then
  echo "run.sh: no chatlinkd in $CHATLINK_BIN" >&2
  exit 2
fi

exec "$python" -m pytest -q -p no:cacheprovider Tests/integration "$@"
