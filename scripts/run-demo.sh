#!/usr/bin/env bash
# `make run`: the bundled demo backend (chatlink-devserver) and chatlinkd against it, with a
# local configuration and local paths: no root, nothing installed. Ctrl-C stops both.
#
#   DEMO_PORT=8765           the backend's port
#   DEMO_PROTOCOL=envelope   what they speak: envelope (the default) or socketio (Socket.IO 5
#                            over Engine.IO 4; chatlinkd with Protocol=socketio)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(cd "$repo" && swift build -c release --show-bin-path)
demo="$repo/.cache/demo"
port=${DEMO_PORT:-8765}
protocol=${DEMO_PROTOCOL:-envelope}
case "$protocol" in
envelope) endpoint="/" ;;
socketio) endpoint="/socket.io/" ;;
*)
  echo "run-demo: DEMO_PROTOCOL is envelope or socketio, not '$protocol'" >&2
  exit 2
  ;;
esac
mkdir -p "$demo/state"

cat >"$demo/chatlinkd.conf" <<CONF
# Written by scripts/run-demo.sh: chatlinkd against the local demo backend.
[Backend]
Protocol=$protocol
URL=ws://127.0.0.1:$port/
Rooms=7 ops
Sender=demo-user
[Store]
Directory=$demo/state
[Control]
Socket=$demo/control.sock
CONF

"$bin/chatlink-devserver" --port "$port" --protocol "$protocol" --chatter 3 >"$demo/devserver.log" 2>&1 &
devserver=$!
trap 'kill $devserver 2>/dev/null || true' EXIT
sleep 0.3
if ! kill -0 $devserver 2>/dev/null; then
  echo "run-demo: the demo backend did not start (port $port busy? set DEMO_PORT):" >&2
  cat "$demo/devserver.log" >&2
  exit 1
fi

cat <<TEXT
ChatLink demo
  backend   chatlink-devserver on ws://127.0.0.1:$port$endpoint ($protocol; a bot posts to rooms 7 and ops every 3 s)
  daemon    chatlinkd --config $demo/chatlinkd.conf
  store     $demo/state/messages.jsonl

In another terminal (the store exists now; a tail -F started before a file exists polls
once a second and may skip rotated files under a flood: chatlinkctl follow never does):
  tail -F $demo/state/messages.jsonl
  $bin/chatlinkctl --socket $demo/control.sock follow
  $bin/chatlinkctl --socket $demo/control.sock send --room 7 "hello from the demo"
  $bin/chatlinkctl --socket $demo/control.sock status
TEXT
if [ "$protocol" = socketio ]; then
  cat <<TEXT
  $bin/chatlinkctl --socket $demo/control.sock send --wait --room 7 "reject: this one"
      (the devserver refuses messages starting with "reject:": a failed delivery)
TEXT
fi
cat <<TEXT

Ctrl-C stops the daemon and the backend.

TEXT
# Once the daemon is up, send one message so the first "out" line shows up in the store.
(
  for _ in $(seq 50); do
    "$bin/chatlinkctl" --socket "$demo/control.sock" status >/dev/null 2>&1 && break
    sleep 0.2
  done
  "$bin/chatlinkctl" --socket "$demo/control.sock" send --wait --room 7 "hello from make run" \
    >/dev/null && echo "run-demo: sent \"hello from make run\" to room 7; see the \"dir\":\"out\" line in the store"
) &
"$bin/chatlinkd" --config "$demo/chatlinkd.conf"
