#!/usr/bin/env bash
# `make soak` (issue 35, not part of `make test`): the release chatlinkd under mixed load for
# SOAK_MINUTES (default 60), sampled every 10 s, failing on a slow leak. See Tests/soak/soak.py
# for the load and the checks, Tests/soak/fit.py for the verdict, bench/README.md ("Soak")
# for the figures.
#
#   Tests/soak/run.sh                    build the release binaries, then soak for an hour
#   SOAK_MINUTES=3 Tests/soak/run.sh     a short run (the fit needs a few minutes at least)
#   CHATLINK_BIN=DIR                     use DIR/chatlinkd and DIR/chatlinkctl as they are
#   SOAK_RATE=1000 SOAK_ROOMS=20 SOAK_SENDS=50 SOAK_ROTATE=64M SOAK_SAMPLE_SECONDS=10
#
# Results: samples.jsonl (one line per sample) and summary.json in the run directory
# (.cache/soak/run-<date>, or $SOAK_DIR), and a summary on stdout. Exits non-zero on failure.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

python="$repo/.venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import pytest, websockets" 2>/dev/null; then
  echo "soak: $repo/.venv lacks the test packages; run scripts/setup.sh --test first" >&2
  exit 2
fi
if [ -z "${CHATLINK_BIN:-}" ]; then
  echo "soak: building the release binaries (scripts/build-release.sh)" >&2
  RELEASE_SCRATCH=.cache/soak/build scripts/build-release.sh .cache/soak/build/bin chatlinkd chatlinkctl >&2
  CHATLINK_BIN=$repo/.cache/soak/build/bin
fi
for b in chatlinkd chatlinkctl; do
  [ -x "$CHATLINK_BIN/$b" ] || { echo "soak: no $b in $CHATLINK_BIN" >&2; exit 2; }
done
stamp=$(date -u +%Y%m%d-%H%M%S)
export SOAK_DIR=${SOAK_DIR:-$repo/.cache/soak/run-$stamp}
mkdir -p "$SOAK_DIR/bin"
# A private copy: a rebuild during the run cannot change the binary under it.
cp "$CHATLINK_BIN/chatlinkd" "$CHATLINK_BIN/chatlinkctl" "$SOAK_DIR/bin/"
export CHATLINK_BIN=$SOAK_DIR/bin
export PYTHONDONTWRITEBYTECODE=1
exec "$python" Tests/soak/soak.py
