#!/usr/bin/env bash
# Writes scripts/chatlinkd.order, the function order the release link of chatlinkd follows
# (scripts/build-release.sh passes it to lld as --symbol-ordering-file):
#
#   scripts/make-order-file.sh [BINDIR]     BINDIR holds release chatlinkd, chatlinkctl and
#                                           chatlink-devserver (default .cache/bench/build/bin,
#                                           which `make bench` and `make profile` build)
#
# Why: the kernel maps a binary's code into a process 64 KiB at a time around each page it
# touches (fault-around), and every mapped page counts in the process's RSS. Left in source
# order, the few hundred KiB of functions an idle daemon runs are spread over most of its
# text, so most of the text ends up resident. Linked next to each other, they fill a few
# dozen such windows instead. The order has two parts, each the functions valgrind's callgrind
# saw run:
#   1. start-up, a status query, keepalive pings and a quiet minute's work, then a clean stop:
#      what a long-lived idle daemon keeps resident;
#   2. then, not already listed, what an inbound flood (its message ids read into the dedupe
#      window, as catch-up has them), sends and a history query add.
# Only functions defined in chatlinkd are kept. A stale order costs memory, never correctness:
# lld places functions it does not find in their usual order. build-release.sh says how much of
# the order it found; rerun this script when that drops (new or renamed hot functions).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(cd "${1:-$repo/.cache/bench/build/bin}" && pwd)
out=$repo/scripts/chatlinkd.order
command -v valgrind >/dev/null || { echo "make-order-file: valgrind is missing (Debian: valgrind)" >&2; exit 2; }
for b in chatlinkd chatlinkctl chatlink-devserver; do
  [ -x "$bin/$b" ] || { echo "make-order-file: $bin/$b is missing; run make profile or make bench first" >&2; exit 2; }
done
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# start_devserver NAME ARGS...: a devserver on a free port; sets $port.
start_devserver() {
  local name=$1
  shift
  "$bin/chatlink-devserver" --port 0 "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    port=$(sed -n 's#.*listening on ws://127.0.0.1:\([0-9]*\)/.*#\1#p' "$work/$name.log")
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "make-order-file: the devserver did not start" >&2
  exit 1
}

# run_phase NAME SCRIPT [CONF]: chatlinkd under callgrind against $port, with CONF added to its
# configuration; SCRIPT runs while it is up (with $ctl as the control command), then chatlinkd is
# stopped with SIGTERM, as systemd does.
run_phase() {
  local name=$1 script=$2 extra=${3:-} dir=$work/$1
  mkdir -p "$dir"
  cat >"$dir/chatlinkd.conf" <<EOF
[Backend]
URL=ws://127.0.0.1:$port/
Rooms=7
PingIntervalSec=2
[Store]
Directory=$dir/state
[Control]
Socket=$dir/control.sock
[Daemon]
LogLevel=notice
$extra
EOF
  env -u NOTIFY_SOCKET -u LISTEN_FDS -u LISTEN_PID valgrind --tool=callgrind --demangle=no \
    --compress-strings=no --separate-recs=1 --callgrind-out-file="$dir/callgrind.out" \
    "$bin/chatlinkd" --config "$dir/chatlinkd.conf" </dev/null >"$dir/log" 2>&1 &
  local daemon=$!
  pids+=("$daemon")
  ctl="$bin/chatlinkctl --socket $dir/control.sock"
  for _ in $(seq 300); do
    $ctl status --json 2>/dev/null | grep -q '"state": *"open"' && break
    sleep 0.2
  done
  $ctl status --json | grep -q '"state": *"open"' || { echo "make-order-file: $name: chatlinkd did not connect" >&2; cat "$dir/log" >&2; exit 1; }
  eval "$script"
  kill -TERM "$daemon"
  wait "$daemon" || true
  # fn= and cfn= lines name every function that ran (and every callee).
  sed -n -E 's/^c?fn=(\([0-9]+\) ?)?//p' "$dir/callgrind.out" | awk '!seen[$0]++' >"$dir/functions"
}

start_devserver idle
run_phase idle '$ctl status >/dev/null; $ctl status --json >/dev/null; sleep 15; $ctl status >/dev/null'
start_devserver flood --flood 20000
run_phase flood '
  for _ in $(seq 600); do
    [ "$($ctl status --json | sed -n "s/.*\"last_seq\": *\([0-9]*\).*/\1/p")" -ge 20000 ] && break
    sleep 0.2
  done
  printf "hello %s\n" 1 2 3 | $ctl send --room 7 - >/dev/null
  $ctl history --room 7 --limit 100 >/dev/null' '[Envelope]
IDField=msg_id
SinceField=since'

nm --defined-only "$bin/chatlinkd" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >"$work/defined"
{
  echo "# The function order of chatlinkd's release link: written by scripts/make-order-file.sh"
  echo "# (which says why); regenerate it rather than editing it."
  cat "$work/idle/functions" "$work/flood/functions" | awk '!seen[$0]++' | grep -F -x -f "$work/defined"
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "make-order-file: $(grep -vc '^#' "$out") functions in $out ($(grep -F -x -c -f "$work/defined" "$work/idle/functions") from the idle phase)"
