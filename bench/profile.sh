#!/usr/bin/env bash
# Profiles chatlinkd and chatlinkctl with perf where the benchmark finds them slow; see
# bench/profile.py. Needs the binaries bench/run.sh builds (run `make bench` once first).
#
#   bench/profile.sh                      the inbound flood (default)
#   bench/profile.sh flood send ctl history
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v perf >/dev/null || { echo "profile: perf is missing (Debian: linux-perf)" >&2; exit 2; }
exec "$repo/.venv/bin/python" "$repo/bench/profile.py" "$@"
