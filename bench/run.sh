#!/usr/bin/env bash
# `make bench`: ChatLink's benchmark suite (issue 6), not part of `make test`.
#
#   bench/run.sh                  the full run (about 15 minutes on 2 cores)
#   BENCH_QUICK=1 bench/run.sh    N ÷ 10 everywhere, a smoke run of about 3 minutes
#   BENCH_ONLY=inbound,latency    only some scenarios (inbound latency outbound store idle socketio
#                                 mqtt stomp scale dedupe xmpp)
#   BENCH_REPS=5                  more interleaved repetitions (default 3)
#   BENCH_PROFILE=1               afterwards, profile chatlinkd during a flood (bench/profile.sh)
#
# xmpp (issue 34) runs private Prosody instances (Tests/Fixtures/prosody.py: Debian's prosody, from
# scripts/setup.sh --test, with slixmpp from Tests/requirements.txt), their MUC archives in SQLite
# (lua-dbi-sqlite3, installed below when missing).
#
# Builds chatlinkd, chatlinkctl and chatlink-devserver as the package ships them
# (scripts/build-release.sh, in .cache/bench/build, apart from the normal .build), and the Go peer on
# Debian's gorilla/websocket; then runs bench/bench.py. Everything listens on 127.0.0.1 only;
# every process it starts is stopped at exit. Results: stdout and .cache/bench/results-*.md.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
cache="$repo/.cache/bench"
mkdir -p "$cache/bin" "$cache/logs"

python="$repo/.venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import websockets, varlink" 2>/dev/null; then
  echo "bench: $repo/.venv lacks websockets/varlink; run scripts/setup.sh --test first" >&2
  exit 2
fi
# The Socket.IO peer (python-socketio's AsyncClient on aiohttp) and the broker peers (paho-mqtt,
# stomp.py), pinned in bench/requirements.txt.
if ! "$python" -c "import socketio, aiohttp, paho.mqtt, stomp" 2>/dev/null; then
  echo "bench: installing the Socket.IO and broker peers' packages (bench/requirements.txt) into .venv" >&2
  "$python" -m pip install -q --disable-pip-version-check -r bench/requirements.txt >&2 ||
    echo "bench: could not install them; the socketio, mqtt and stomp scenarios will fail" >&2
fi
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
if ! command -v go >/dev/null || [ ! -d /usr/share/gocode/src/github.com/gorilla/websocket ]; then
  echo "bench: installing the Go peer's packages (golang, golang-github-gorilla-websocket-dev)" >&2
  $sudo apt-get install -y --no-install-recommends golang golang-github-gorilla-websocket-dev >&2
fi
# The brokers of the mqtt and stomp scenarios. The suite runs its own instances (bench/brokers.py);
# while they install, a policy-rc.d that refuses keeps the packages' own services from starting.
if [ ! -x /usr/sbin/mosquitto ] || [ ! -x /usr/sbin/rabbitmq-server ]; then
  echo "bench: installing the brokers (mosquitto, rabbitmq-server)" >&2
  policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy" && made_policy=1
  fi
  $sudo apt-get install -y --no-install-recommends mosquitto rabbitmq-server >&2 ||
    echo "bench: could not install them; the mqtt and stomp scenarios will fail" >&2
  [ "$made_policy" = 0 ] || $sudo rm -f "$policy"
fi

# The xmpp scenario's server: Prosody, and its SQLite driver for the rooms' archives.
if [ ! -x /usr/bin/prosody ] || ! dpkg-query -W -f '${Status}' lua-dbi-sqlite3 2>/dev/null | grep -q "ok installed"; then
  echo "bench: installing Prosody and lua-dbi-sqlite3 (the xmpp scenario)" >&2
  policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy" && made_policy=1
  fi
  $sudo apt-get install -y --no-install-recommends prosody lua-dbi-sqlite3 >&2 ||
    echo "bench: could not install them; the xmpp scenario will fail" >&2
  [ "$made_policy" = 0 ] || $sudo rm -f "$policy"
fi

echo "bench: building the release binaries as the package ships them, in .cache/bench/build" >&2
RELEASE_SCRATCH="$cache/build" scripts/build-release.sh "$cache/build/bin" \
  chatlinkd chatlinkctl chatlink-devserver >"$cache/logs/build.log" 2>&1 ||
  { cat "$cache/logs/build.log" >&2; exit 1; }

echo "bench: building the write limit's minimal writer" >&2
cc -O2 -Wall -Wextra -Werror -o "$cache/bin/writelimit" bench/peers/writelimit.c

echo "bench: building the Go peer" >&2
# GOPATH mode on Debian's source packages: no module download, no network.
GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE="$cache/go-cache" \
  go build -o "$cache/bin/chatbench-go" ./bench/peers/go/

"$python" bench/bench.py &
bench=$!
trap 'kill $bench 2>/dev/null || true; wait $bench 2>/dev/null || true' EXIT INT TERM
status=0
wait $bench || status=$?
trap - EXIT INT TERM
if [ "${BENCH_PROFILE:-0}" = 1 ]; then
  bench/profile.sh || status=$?
fi
exit $status
