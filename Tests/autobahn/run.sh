#!/usr/bin/env bash
# Runs the Autobahn|Testsuite fuzzing server (client-testing mode) against a client agent, on
# loopback only, bounded in time, and judges the results.
#
#   Tests/autobahn/run.sh AGENT_BINARY [--cases LIST]
#
# AGENT_BINARY is run as `AGENT_BINARY --url ws://127.0.0.1:PORT --agent chatlink [--cases LIST]`.
# It must read /getCaseCount, run /runCase?case=N&agent=chatlink for each selected case N
# (echoing every message), then open /updateReports?agent=chatlink. LIST (comma-separated case
# ids or patterns, e.g. '1.1.1,12.*') is passed through verbatim; the agent resolves it.
#
# Environment:
#   AUTOBAHN_TIMEOUT   bound on the agent's run, in timeout(1) syntax (default 40m; the full
#                      suite takes about 15 min, most of it in 12.*/13.*)
#   AUTOBAHN_PORT      port to use (default: 9001 if free, else any free one)
#   AUTOBAHN_AGENT     agent name in the reports (default chatlink)
#   AGENT_PYTHONPATH   PYTHONPATH for the agent only (for reference_agent.py)
#   AUTOBAHN_VENV      see scripts/setup-autobahn.sh
#
# Reports: .cache/autobahn-reports (index.html for people, index.json for check_results.py),
# with the server's log in server.log and the requested ids in expected-ids.txt.
# Exit status: the agent's if it failed (124: timed out), else the checker's.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${AUTOBAHN_VENV:-$REPO/.cache/autobahn-venv}"
export AUTOBAHN_VENV="$VENV"
REPORTS="$REPO/.cache/autobahn-reports"
AGENT_NAME="${AUTOBAHN_AGENT:-chatlink}"
TIMEOUT="${AUTOBAHN_TIMEOUT:-40m}"
HOST=127.0.0.1

log() { printf 'autobahn: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }
usage() { echo "usage: $0 AGENT_BINARY [--cases LIST]" >&2; exit 2; }

[[ $# -ge 1 ]] || usage
AGENT="$1"; shift
CASES=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cases) [[ $# -ge 2 ]] || usage; CASES="$2"; shift 2 ;;
    --cases=*) CASES="${1#--cases=}"; shift ;;
    *) usage ;;
  esac
done
command -v "$AGENT" >/dev/null 2>&1 || die "agent not found or not executable: $AGENT"

bash "$REPO/scripts/setup-autobahn.sh"
# The suite's Python 2 and the checker's Python 3 must not see a PYTHONPATH meant for the agent.
PY2=(env -u PYTHONPATH -u PYTHONHOME "$VENV/bin/python" -u)
PY3=(env -u PYTHONPATH -u PYTHONHOME python3)

# Fresh reports: index.json must hold this run's cases only, since the checker judges every
# case in it.
rm -rf "$REPORTS"
mkdir -p "$REPORTS"

# The ids the agent is expected to run, resolved by the suite's own matcher; this also rejects
# an unknown literal id before anything starts.
EXPECTED="$REPORTS/expected-ids.txt"
"${PY2[@]}" "$HERE/fuzzingserver.py" --resolve-cases "${CASES:-*}" >"$EXPECTED"
n_expected=$(wc -l <"$EXPECTED")
[[ $n_expected -gt 0 ]] || die "--cases '$CASES' selects no case"
log "$n_expected case(s) selected${CASES:+ by '$CASES'}"

# Listening sockets on a port, as "local-address:port" per line.
listeners() { ss -ltnH "( sport = :$1 )" | awk '{print $4}'; }

if [[ -n "${AUTOBAHN_PORT:-}" ]]; then
  PORT="$AUTOBAHN_PORT"
elif [[ -z "$(listeners 9001)" ]]; then
  PORT=9001
else
  # Let the kernel pick a free loopback port. Another process could take it before the server
  # binds; the server then fails to start and we say so below.
  PORT=$("${PY3[@]}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
[[ -z "$(listeners "$PORT")" ]] || die "port $PORT is already in use"

server_pid=""
agent_pid=""
# Stop a process we started: TERM, then KILL after $2 seconds.
stop() {
  local pid="$1" grace="$2"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
# Whatever happens (error, Ctrl-C, timeout), nothing we started outlives this script. The
# server gets 60 s because on TERM it writes any reports the agent did not ask for.
cleanup() {
  stop "$agent_pid" 5
  stop "$server_pid" 60
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${PY2[@]}" "$HERE/fuzzingserver.py" --port "$PORT" --outdir "$REPORTS" >"$REPORTS/server.log" 2>&1 &
server_pid=$!

# Wait for the listening socket, then make sure it is bound to loopback and nothing else.
for ((i = 0; i < 300; i++)); do
  kill -0 "$server_pid" 2>/dev/null || { tail -n 30 "$REPORTS/server.log" >&2; die "fuzzing server exited during start-up"; }
  [[ -n "$(listeners "$PORT")" ]] && break
  sleep 0.1
done
bound="$(listeners "$PORT")"
[[ -n "$bound" ]] || { tail -n 30 "$REPORTS/server.log" >&2; die "fuzzing server not listening on port $PORT after 30 s"; }
if grep -qvxF "$HOST:$PORT" <<<"$bound"; then
  die "fuzzing server must listen on $HOST:$PORT only, but listens on: $(echo $bound)"
fi
ss -ltnpH "( sport = :$PORT )" | grep -q "pid=$server_pid," ||
  die "port $PORT is held by a process other than our fuzzing server"
log "fuzzing server (pid $server_pid) listening on $HOST:$PORT only; log: $REPORTS/server.log"

# The agent runs in the background and we `wait` for it, so that Ctrl-C or TERM reaches the
# traps at once instead of after the agent ends.
agent_cmd=("$AGENT" --url "ws://$HOST:$PORT" --agent "$AGENT_NAME")
[[ -n "$CASES" ]] && agent_cmd+=(--cases "$CASES")
log "running (timeout $TIMEOUT): ${agent_cmd[*]}"
start=$SECONDS
if [[ -n "${AGENT_PYTHONPATH:-}" ]]; then
  PYTHONPATH="$AGENT_PYTHONPATH" timeout --kill-after=15s "$TIMEOUT" "${agent_cmd[@]}" &
else
  timeout --kill-after=15s "$TIMEOUT" "${agent_cmd[@]}" &
fi
agent_pid=$!
agent_rc=0
wait "$agent_pid" || agent_rc=$?
agent_pid=""
log "agent exited with status $agent_rc after $((SECONDS - start)) s"
case $agent_rc in
  0) ;;
  124|137) log "error: agent timed out after $TIMEOUT" ;;
  *) log "error: agent failed (status $agent_rc)" ;;
esac

# The agent must have asked for the reports itself; the server writes them at shutdown anyway
# (fuzzingserver.py), so the checker can still show what was run.
asked_reports=1
grep -q "^Updating reports" "$REPORTS/server.log" || asked_reports=0

# Stop the server before judging, so reports left unwritten by the agent are flushed.
stop "$server_pid" 60
server_pid=""

check_rc=0
"${PY3[@]}" "$HERE/check_results.py" "$REPORTS" --agent "$AGENT_NAME" \
  --expect-ids "$EXPECTED" --expect-count "$n_expected" || check_rc=$?
[[ -f "$REPORTS/index.html" ]] && log "HTML report: $REPORTS/index.html"

if [[ $agent_rc -ne 0 ]]; then
  exit "$agent_rc"
fi
if [[ $asked_reports -eq 0 ]]; then
  log "error: the agent never opened /updateReports?agent=$AGENT_NAME"
  exit 1
fi
exit "$check_rc"
