#!/usr/bin/env bash
# `make chaos`: chatlinkd under network, backend, crash, disk, control-socket and security
# faults, with figures (issue 7). See Tests/chaos/README.md.
#
#   Tests/chaos/run.sh                       the full suite: about 30 minutes, 20 of them the soak
#   CHAOS_QUICK=1 Tests/chaos/run.sh         everything scaled down: about 6 minutes
#   CHAOS_SOAK_SECONDS=300             a shorter or longer soak
#   CHAOS_ONLY=network,crash           only some scenarios
#   CHAOS_SEED=1234                    repeat a run's random choices
#   CHATLINK_BIN=DIR                   use DIR/chatlinkd (default: `swift build` then its bin path)
#
# Needs root (network namespaces, tmpfs mounts, a client run as `nobody`, a daemon run as
# another user). Traffic stays on loopback and in the network namespaces it creates; every
# process, namespace and mount it makes is removed at exit, whatever the exit. Results: a
# table on stdout and .cache/chaos/results-<date>.md. Exits non-zero if anything was lost or
# a check failed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"

if [ "$(id -u)" != 0 ]; then
  echo "chaos: needs root (ip netns, mount -t tmpfs, setpriv); run it with sudo" >&2
  exit 2
fi
python="$repo/.venv/bin/python"
if [ ! -x "$python" ] || ! "$python" -c "import pytest, websockets, varlink, cryptography" 2>/dev/null; then
  echo "chaos: $repo/.venv lacks the test packages; run scripts/setup.sh --test first" >&2
  exit 2
fi
for tool in ip tc setpriv unshare prlimit gcore readelf strace ps; do
  command -v "$tool" >/dev/null || {
    echo "chaos: needs $tool (apt-get install iproute2 util-linux gdb binutils strace procps)" >&2
    exit 2
  }
done

if [ -z "${CHATLINK_BIN:-}" ]; then
  echo "chaos: building chatlinkd and chatlinkctl (debug)" >&2
  swift build --product chatlinkd >&2
  swift build --product chatlinkctl >&2
  CHATLINK_BIN=$(swift build --show-bin-path)
fi
if [ ! -x "$CHATLINK_BIN/chatlinkd" ]; then
  echo "chaos: no chatlinkd in $CHATLINK_BIN" >&2
  exit 2
fi

stamp=$(date -u +%Y%m%d-%H%M%S)
run_dir="$repo/.cache/chaos/run-$stamp"
mkdir -p "$run_dir/bin"
# A private copy: a rebuild during the run (others work in this tree) cannot swap the binary
# between two restarts of the crash scenario.
cp "$CHATLINK_BIN/chatlinkd" "$run_dir/bin/chatlinkd"
[ -x "$CHATLINK_BIN/chatlinkctl" ] && cp "$CHATLINK_BIN/chatlinkctl" "$run_dir/bin/chatlinkctl"
export CHATLINK_BIN_ORIGIN="$CHATLINK_BIN/chatlinkd"
export CHATLINK_BIN="$run_dir/bin"
export CHAOS_RUN_DIR="$run_dir"
export CHAOS_NETNS_PREFIX="chaos$$"
export CHAOS_IFTAG=$(( $$ % 10000 ))
export PYTHONDONTWRITEBYTECODE=1
# Daemons leave their control sockets in /tmp/clit-*; the suite removes them itself.

child=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    # The suite runs in its own process group (setsid): the daemons, backends and helpers
    # it started are in it too. Ask politely, then insist.
    kill -TERM -- "-$child" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$child" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$child" 2>/dev/null || true
  fi
  # Whatever is left of this run's process group (children that outlived the suite).
  [ -n "$child" ] && kill -KILL -- "-$child" 2>/dev/null || true
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${CHAOS_NETNS_PREFIX}-" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^ch${CHAOS_IFTAG}h" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  { grep " $run_dir/" /proc/mounts 2>/dev/null || true; } | awk '{print $2}' | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

setsid "$python" Tests/chaos/chaos.py &
child=$!
status=0
wait "$child" || status=$?
exit "$status"
