#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine that has Swift: the -dev packages the build links against,
# and (with --test) what the test suite needs. Idempotent: a second run changes nothing and
# needs no network.
#
#   scripts/setup.sh          build and run dependencies (apt) + the demo backend's Python venv
#   scripts/setup.sh --test   also the test tools (apt) and Python test packages (pip)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-run}

if ! command -v swift >/dev/null 2>&1; then
  echo "setup: swift is not on PATH; install the Swift 6 toolchain first (https://swift.org/install)" >&2
  exit 1
fi

packages=(libsystemd-dev libssl-dev zlib1g-dev libexpat1-dev pkg-config)
if [ "$mode" = "--test" ]; then
  # gcc builds wsaccel for Autobahn; openssl makes nothing but is handy to inspect test certs.
  packages+=(gcc iproute2 openssl groff-base man-db)
  # The brokers of the MQTT/STOMP tests (Tests/Fixtures/brokers.py starts private instances
  # of its own; the system services must not start, see below), and mosquitto_pub/_sub.
  packages+=(mosquitto mosquitto-clients rabbitmq-server)
  # The power-cut tests' lazy file system: FUSE itself (fusermount3) and what pip builds
  # pyfuse3 against (with pkg-config, above).
  packages+=(fuse3 libfuse3-dev)
  # promtool checks the metrics' text, and the metrics test scrapes chatlinkd with a real
  # Prometheus of its own (its system service must not start either).
  packages+=(prometheus)
  # The XMPP tests' server (Tests/Fixtures/prosody.py starts private instances as user
  # prosody; its system service must not start either).
  # lua-dbi-sqlite3: the rooms' archive in SQLite for floods (make chaos's xmpp scenario, make bench).
  packages+=(prosody lua-dbi-sqlite3)
  # The XMPP compatibility tests' second server (Tests/Fixtures/ejabberd.py starts private
  # nodes of its own; its system service must not start either).
  packages+=(ejabberd)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # A policy-rc.d that exits 101 keeps the packages' services (mosquitto, rabbitmq-server,
  # prometheus, prosody, ejabberd) from starting: the tests run their own instances. One
  # already in place is left alone.
  policy=/usr/sbin/policy-rc.d
  made_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/setup.sh: no service starts while it installs packages\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    made_policy=1
    trap '$sudo rm -f "$policy"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if [ -n "$made_policy" ]; then
    $sudo rm -f "$policy"
    trap - EXIT
  fi
  # Where systemd runs, a unit can still be started by something else than invoke-rc.d: the
  # tests' ejabberd nodes need no system one (nor its epmd), so one found running is stopped.
  if [ -d /run/systemd/system ] && systemctl is-active --quiet ejabberd 2>/dev/null; then
    $sudo systemctl stop ejabberd
  fi
fi

# The Python venv serves the demo backend (make run) and the independent test peers.
venv="$repo/.venv"
requirements="$repo/Tests/requirements.txt"
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: creating $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
  echo "$want" >"$stamp"
fi

if [ "$mode" = "--test" ]; then
  # pyfuse3 for the power-cut tests builds against libfuse3-dev: test set-up only.
  powerloss="$repo/Tests/requirements-powerloss.txt"
  stamp="$venv/.requirements-powerloss.sha256"
  want=$(sha256sum "$powerloss" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing the power-cut tests' packages into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$powerloss"
    echo "$want" >"$stamp"
  fi
  "$repo/scripts/setup-autobahn.sh"
fi
echo "setup: ready"
