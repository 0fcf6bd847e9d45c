#!/usr/bin/env bash
# Tests/e2e/run.sh: the Debian package under a real systemd, end to end, as a user would.
#
# Builds dist/chatlink_<version>_amd64.deb (make deb) and a static chatlink-devserver, makes
# (or reuses) a clean Debian 12 tree under .cache/e2e/ (debootstrap --variant=minbase plus
# systemd, systemd-sysv, dbus, procps and the package's Depends, so the test needs no network),
# boots it with systemd-nspawn as PID 1 (--volatile=overlay: the cached tree stays clean;
# --private-network: only the container's own loopback), and checks installation, the units,
# the daemon against a backend inside the container, and removal. One PASS/FAIL line per
# check, then "e2e: N passed, M failed"; exit status 1 on any failure.
#
# Run as root on Debian 12: `bash Tests/e2e/run.sh`. Environment:
#   E2E_DEB=PATH        use this .deb instead of running `make deb`
#   E2E_DEVSERVER=PATH  use this (static) chatlink-devserver instead of building it
#   E2E_MIRROR=URL      the Debian mirror for debootstrap (default http://deb.debian.org/debian)
#   E2E_KEEP_LOGS=1     keep the log directory of a passing run too (it is always kept on failure)
#   E2E_TIMEOUT=SECS    hard limit for the whole run (default 900, builds included)
# Facts about systemd-nspawn on these machines: shared/notes/systemd-e2e.md.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache="$repo/.cache/e2e"
mirror=${E2E_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
port=18765
machine="chatlink-e2e-$$"
cgroup="e2e-$machine"
t0=$SECONDS

[ "$(id -u)" = 0 ] || { echo "e2e: run as root (it boots a container)" >&2; exit 2; }
mkdir -p "$cache"
# Keep the logs of the last few runs only.
# shellcheck disable=SC2012 # our own names, no odd characters
for old in $(ls -1dt "$cache"/run-* 2>/dev/null | tail -n +6); do rm -rf --one-file-system "$old"; done
logs=$(mktemp -d "$cache/run-$(date +%Y%m%d-%H%M%S)-XXXX")

# grep -q in a pipeline ends early, and under pipefail the writer's SIGPIPE fails it: read it all.
has() { grep "$@" >/dev/null; }
say() { printf 'e2e [%4ds] %s\n' $((SECONDS - t0)) "$*"; }
die() { say "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------------------------------------
# Cleanup: stop the container, kill what is left in our cgroups, remove them, unmount.
nspawn_pid=""
ct_pid=""
chroot_dir=""
build_tmp=""
watchdog_pid=""
exec 3>&1 4>&2 # the run's own output, for cleanup when a signal comes in the middle of a check
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  exec 1>&3 2>&4
  [ "$rc" -ge 128 ] && echo "e2e: interrupted (exit $rc); stopping the container" >&2
  [ -n "$watchdog_pid" ] && kill "$watchdog_pid" 2>/dev/null
  # Background jobs of this script (bounded tails, etc.).
  local j
  for j in $(jobs -p); do [ "$j" = "$nspawn_pid" ] || kill "$j" 2>/dev/null; done
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid" 2>/dev/null # nspawn asks the container's systemd to power off
    for _ in $(seq 1 50); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$nspawn_pid" 2>/dev/null; then
      [ -n "$ct_pid" ] && kill -KILL "$ct_pid" 2>/dev/null
      kill -KILL "$nspawn_pid" 2>/dev/null
    fi
    wait "$nspawn_pid" 2>/dev/null
  fi
  local h pid
  for h in unified systemd; do
    [ -d "/sys/fs/cgroup/$h/$cgroup" ] || continue
    for _ in 1 2 3 4 5; do
      local left
      left=$(find "/sys/fs/cgroup/$h/$cgroup" -name cgroup.procs -exec cat {} + 2>/dev/null)
      [ -z "$left" ] && break
      for pid in $left; do kill -KILL "$pid" 2>/dev/null; done
      sleep 0.2
    done
    find "/sys/fs/cgroup/$h/$cgroup" -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d "/sys/fs/cgroup/$h/$cgroup" ] && echo "e2e: could not remove cgroup $h/$cgroup" >&2
  done
  if [ -n "$chroot_dir" ]; then
    umount -l "$chroot_dir/proc" "$chroot_dir/sys" "$chroot_dir/dev/pts" "$chroot_dir/dev" 2>/dev/null
  fi
  [ -n "$build_tmp" ] && [ -d "$build_tmp" ] && rm -rf --one-file-system "$build_tmp"
  if [ "$rc" = 0 ] && [ -z "${E2E_KEEP_LOGS:-}" ]; then
    rm -rf "$logs"
  else
    echo "e2e: logs in $logs" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A hard bound on the whole run, should any wait below not be bounded after all.
# The TERM trap runs once the current foreground command ends, so that command is ended too.
(sleep "${E2E_TIMEOUT:-900}" && echo "e2e: timed out after ${E2E_TIMEOUT:-900} s" >&4 &&
  kill -TERM $$ && pkill -TERM -P $$ -x 'nsenter|make|swift-build|debootstrap|chroot|sleep') </dev/null >/dev/null 2>&1 &
watchdog_pid=$!

# ---------------------------------------------------------------------------------------------
# Host tools.
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
command -v nsenter >/dev/null || need+=(util-linux)
command -v objdump >/dev/null || need+=(binutils)
command -v lintian >/dev/null || need+=(lintian)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get update -qq >"$logs/apt-host.log" 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >>"$logs/apt-host.log" 2>&1 ||
    die "apt-get install ${need[*]} failed (see $logs/apt-host.log)"
fi
[ -d /sys/fs/cgroup/unified ] || [ -f /sys/fs/cgroup/cgroup.controllers ] ||
  die "no cgroup hierarchy that systemd-nspawn can use"

# ---------------------------------------------------------------------------------------------
# The package and the backend binary.
if [ -n "${E2E_DEB:-}" ]; then
  deb=$(readlink -f "$E2E_DEB")
else
  say "make deb"
  # A source file edited while the build runs makes swift build fail; try again once then.
  for attempt in 1 2; do
    make -C "$repo" deb >"$logs/make-deb.log" 2>&1 && break
    if [ "$attempt" = 2 ] || ! grep -q 'was modified during the build' "$logs/make-deb.log"; then
      die "make deb failed (see $logs/make-deb.log)"
    fi
    say "a source changed during the build; make deb again"
  done
  deb=$(sed -n 's/^build-deb: \(dist\/[^ ]*\.deb\) .*/\1/p' "$logs/make-deb.log" | tail -n1)
  [ -n "$deb" ] || die "make deb did not say which package it built"
  deb="$repo/$deb"
fi
[ -f "$deb" ] || die "no package at $deb"
if [ -n "${E2E_DEVSERVER:-}" ]; then
  devserver=$(readlink -f "$E2E_DEVSERVER")
else
  say "building chatlink-devserver (--static-swift-stdlib)"
  # The script scripts/build-deb.sh uses, so that the two builds do not invalidate each other.
  "$repo/scripts/build-release.sh" "$logs/bin" chatlink-devserver \
    >"$logs/build-devserver.log" 2>&1 || die "building chatlink-devserver failed (see $logs/build-devserver.log)"
  devserver="$logs/bin/chatlink-devserver"
fi
[ -x "$devserver" ] || die "no chatlink-devserver at $devserver"
# Debug and release, static and dynamic builds share .build/<config>: make sure we got static ones.
stage="$logs/stage"
mkdir -p "$stage"
cp "$deb" "$stage/"
cp "$devserver" "$stage/chatlink-devserver"
dpkg-deb -x "$deb" "$stage/unpacked"
for bin in "$stage/chatlink-devserver" "$stage/unpacked/usr/bin/chatlinkd" "$stage/unpacked/usr/bin/chatlinkctl"; do
  if objdump -p "$bin" | awk '/NEEDED/ {print $2}' | has swift; then
    die "$(basename "$bin") needs a Swift runtime library; it must be built with --static-swift-stdlib"
  fi
done
# Debian policy 10.2: no RPATH or RUNPATH in packaged binaries.
for bin in "$stage/unpacked/usr/bin/chatlinkd" "$stage/unpacked/usr/bin/chatlinkctl"; do
  if readelf -d "$bin" | has -E '\((RPATH|RUNPATH)\)'; then
    die "$(basename "$bin") carries $(readelf -d "$bin" | grep -E 'RPATH|RUNPATH' | head -n1)"
  fi
done
deb_name=$(basename "$deb")
say "package: $deb_name ($(du -h "$deb" | cut -f1))"
# The README promises that lintian reports nothing (overrides: packaging/debian/lintian-overrides).
lintian --fail-on error,warning "$deb" >"$logs/lintian.log" 2>&1 ||
  die "lintian reports on $deb_name: $(grep -E '^[EW]: ' "$logs/lintian.log" | head -n5 | paste -sd';' -)"

# ---------------------------------------------------------------------------------------------
# The Debian tree, cached by the hash of what goes into it.
depends=$(dpkg-deb -f "$deb" Depends)
dep_pkgs=$(printf '%s\n' "$depends" | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep -v '^$')
# procps: the test reads ps output. Everything else is what the package itself needs.
# shellcheck disable=SC2086 # one package a word
pkgs=$(printf '%s\n' systemd systemd-sysv dbus procps $dep_pkgs | sort -u | paste -sd' ')
recipe="e2e-rootfs v1; debootstrap --variant=minbase $suite $mirror; sources: $suite $suite-updates $suite-security; packages: $pkgs; depends: $depends"
key=$(printf '%s' "$recipe" | sha256sum | cut -c1-16)
tree="$cache/rootfs-$key"

build_tree() {
  build_tmp="$tree.tmp"
  rm -rf --one-file-system "$build_tmp"
  say "debootstrap --variant=minbase $suite (cache key $key)"
  debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus "$suite" "$build_tmp" "$mirror" \
    >"$logs/debootstrap.log" 2>&1 || die "debootstrap failed (see $logs/debootstrap.log)"
  local security=${mirror%/debian}/debian-security
  cat >"$build_tmp/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
  echo chatlink-e2e >"$build_tmp/etc/hostname"
  chroot_dir="$build_tmp"
  mount -t proc proc "$build_tmp/proc"
  mount --bind /dev "$build_tmp/dev"
  mount --bind /dev/pts "$build_tmp/dev/pts"
  mount -t sysfs sysfs "$build_tmp/sys"
  say "installing into the tree: $pkgs"
    chroot "$build_tmp" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    sh -ec "apt-get update; apt-get -y dist-upgrade; apt-get install -y --no-install-recommends $pkgs; apt-get clean" \
    >"$logs/tree-apt.log" 2>&1 || die "installing into the tree failed (see $logs/tree-apt.log)"
  umount "$build_tmp/sys" "$build_tmp/dev/pts" "$build_tmp/dev" "$build_tmp/proc"
  chroot_dir=""
  printf '%s\n' "$recipe" >"$build_tmp/.e2e-recipe"
  rm -rf --one-file-system "$tree"
  mv "$build_tmp" "$tree"
  build_tmp=""
  # Older trees (another recipe) are not needed any more.
  local old
  for old in "$cache"/rootfs-*; do
    [ "$old" = "$tree" ] || rm -rf --one-file-system "$old"
  done
}
if [ -f "$tree/.e2e-recipe" ]; then
  say "reusing the cached tree $tree"
else
  build_tree
fi

# ---------------------------------------------------------------------------------------------
# Boot it.
for h in unified systemd; do
  [ -d "/sys/fs/cgroup/$h" ] && mkdir -p "/sys/fs/cgroup/$h/$cgroup"
done
say "booting the container"
(
  for h in unified systemd; do
    [ -d "/sys/fs/cgroup/$h/$cgroup" ] && echo "$BASHPID" >"/sys/fs/cgroup/$h/$cgroup/cgroup.procs"
  done
  exec systemd-nspawn --quiet --boot --register=no --keep-unit --console=pipe \
    --private-network --link-journal=no --volatile=overlay --machine="$machine" \
    --directory="$tree" --bind-ro="$stage:/e2e" \
    -- systemd.mask=systemd-firstboot.service
) </dev/null >"$logs/nspawn.log" 2>&1 &
nspawn_pid=$!

for _ in $(seq 1 100); do
  # shellcheck disable=SC2013 # a list of PIDs
  for c in $(cat /proc/"$nspawn_pid"/task/*/children 2>/dev/null); do
    [ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && ct_pid=$c
  done
  [ -n "$ct_pid" ] && break
  kill -0 "$nspawn_pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$ct_pid" ] || { cat "$logs/nspawn.log" >&2; die "the container's systemd did not start"; }

PATH_CT=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Runs a command inside the container, as root, with a clean environment.
ct() {
  nsenter -t "$ct_pid" -a -r -w env -i PATH=$PATH_CT HOME=/root LANG=C.UTF-8 TERM=dumb \
    NO_COLOR=1 SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat PAGER=cat DEBIAN_FRONTEND=noninteractive "$@"
}
# Runs a shell snippet inside the container.
ctsh() { ct sh -c "$1"; }
# Runs a command inside the container as USER (with the user's groups).
as() {
  local user=$1
  shift
  ct setpriv --reuid="$user" --regid="$user" --init-groups env HOME="/home/$user" USER="$user" "$@"
}

# The manager's socket appears early in boot; is-system-running --wait then waits for the rest.
for _ in $(seq 1 150); do
  ct test -S /run/systemd/private 2>/dev/null && break
  kill -0 "$nspawn_pid" 2>/dev/null || break
  sleep 0.2
done
state=$(timeout 60 nsenter -t "$ct_pid" -a -r -w env -i PATH=$PATH_CT systemctl is-system-running --wait 2>&1) || true
say "container booted: $state"
ct systemctl --failed --no-legend >"$logs/failed-at-boot.txt" 2>&1 || true
case "$state" in
  running | degraded) ;;
  *) die "the container did not boot (is-system-running: $state)" ;;
esac

# ---------------------------------------------------------------------------------------------
# Checks.
passed=0
failed=0
declare -a summary=()
reason=""
# why MESSAGE: records why the current check fails; returns 1.
why() {
  reason="${reason:+$reason; }$*"
  return 1
}
note() { printf '      %s\n' "$*"; }
# check NUMBER TITLE FUNCTION: runs FUNCTION (in an if, so set -e does not apply inside) and
# prints PASS or FAIL.
check() {
  local number=$1 title=$2 fn=$3 started=$SECONDS
  reason=""
  say "check $number: $title"
  if "$fn" </dev/null >>"$logs/check-$number.log" 2>&1 && [ -z "$reason" ]; then
    printf 'PASS %2s %s (%ds)\n' "$number" "$title" $((SECONDS - started))
    summary+=("PASS $number $title")
    passed=$((passed + 1))
  else
    [ -n "$reason" ] || reason="see $logs/check-$number.log"
    printf 'FAIL %2s %s: %s\n' "$number" "$title" "$reason"
    summary+=("FAIL $number $title: $reason")
    failed=$((failed + 1))
  fi
}
# wait_for SECONDS COMMAND...: polls COMMAND until it succeeds; returns 1 after SECONDS.
wait_for() {
  local end=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.2
  done
}
store=/var/lib/chatlink/messages.jsonl
# store_has PATTERN...: a store line matching every fixed string.
store_has() {
  local cmd="cat $store 2>/dev/null" p
  for p in "$@"; do cmd="$cmd | grep -F -e $(printf '%q' "$p")"; done
  ctsh "$cmd" >/dev/null
}
show() { ct systemctl show -p "$1" --value chatlinkd.service; }
status_line() { ct systemctl show -p StatusText --value chatlinkd.service; }
connected() { status_line | has "^Connected to ws://127.0.0.1:$port/"; }
start_backend() {
  ct systemctl reset-failed e2e-backend.service >/dev/null 2>&1 || true
  ct systemd-run --quiet --unit=e2e-backend --property=Restart=no \
    /e2e/chatlink-devserver --host 127.0.0.1 --port "$port" --chatter 1 "$@" || return 1
  wait_for 10 ct bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
}
stop_backend() { ct systemctl stop e2e-backend.service; }
not_connected() { ! connected; }
status_has() { status_line | has -F "$1"; }
service_active() { [ "$(ct systemctl is-active chatlinkd.service)" = active ]; }
new_main_pid() {
  local p
  p=$(show MainPID)
  [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$1" ]
}
backend_log_has() { ct journalctl -u e2e-backend.service --no-pager | has -F "$1"; }
tag=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')

check_install() {
  ct cp "/e2e/$deb_name" /root/ || return 1
  ct sh -c "cd /root && apt install -y ./$deb_name" || why "apt install failed"
  ct dpkg -s chatlink | has '^Status: install ok installed' || why "dpkg does not list chatlink as installed"
  getent_out=$(ct getent passwd chatlink) || why "no user chatlink"
  echo "user: $getent_out"
  ct getent group chatlink || why "no group chatlink"
  local enabled active
  enabled=$(ct systemctl is-enabled chatlinkd.service) || true
  active=$(ct systemctl is-active chatlinkd.service) || true
  echo "chatlinkd.service: $enabled, $active"
  [ "$enabled" = enabled ] || why "chatlinkd.service is $enabled after install, not enabled"
  if [ "$active" != active ]; then
    local err
    err=$(ct journalctl -u chatlinkd.service --no-pager _COMM=chatlinkd -o cat | tail -n1)
    why "chatlinkd.service is $active after install, not active (chatlinkd: ${err:-no message})"
  fi
  # The socket unit is optional: shipped, not enabled.
  enabled=$(ct systemctl is-enabled chatlinkd.socket) || true
  echo "chatlinkd.socket: $enabled"
  [ "$enabled" = disabled ] || why "chatlinkd.socket is $enabled after install (documented as optional)"
  ct systemctl status --no-pager chatlinkd.service || true
  [ "$active" = active ] || ct journalctl -u chatlinkd.service --no-pager -n 10
  [ -z "$reason" ]
}

check_configure() {
  start_backend || why "the backend did not start"
  ctsh "mkdir -p /etc/chatlink/chatlinkd.conf.d && cat >/etc/chatlink/chatlinkd.conf.d/50-e2e.conf" <<EOF || return 1
# e2e: the backend inside the container.
[Backend]
URL=ws://127.0.0.1:$port/
Rooms=7 ops
ReconnectMaxSec=2
EOF
  ct chatlinkd --check-config || why "chatlinkd --check-config refused the configuration"
  ct systemctl restart chatlinkd.service || why "systemctl restart failed"
  # Type=notify: restart returns after READY=1, so all of this holds at once, without waiting.
  local st
  st=$(ct systemctl show -p ActiveState,SubState --value chatlinkd.service | paste -sd/)
  echo "right after restart: $st; status: $(status_line)"
  [ "$st" = active/running ] || why "right after restart the unit is $st"
  [ -n "$(status_line)" ] || why "right after restart there is no STATUS= line"
  ct timeout 5 chatlinkctl status || why "right after restart chatlinkctl status fails (control socket not ready at READY)"
  # The same for stop and start.
  ct systemctl stop chatlinkd.service || why "systemctl stop failed"
  ct systemctl start chatlinkd.service || why "systemctl start failed"
  st=$(ct systemctl show -p ActiveState,SubState --value chatlinkd.service | paste -sd/)
  echo "right after start: $st; status: $(status_line)"
  [ "$st" = active/running ] || why "right after start the unit is $st"
  ct timeout 5 chatlinkctl status >/dev/null || why "right after start chatlinkctl status fails"
  ct journalctl -u chatlinkd.service --no-pager -n 20
  [ -z "$reason" ]
}

check_status() {
  wait_for 15 connected || why "not connected within 15 s (STATUS: $(status_line))"
  local out
  out=$(ct systemctl status --no-pager -l chatlinkd.service) || true
  echo "$out"
  grep -q "Status: \"Connected to ws://127.0.0.1:$port/" <<<"$out" ||
    why "systemctl status shows no 'Connected to ws://127.0.0.1:$port/' status line"
  [ -z "$reason" ]
}

check_send() {
  local rc
  ct useradd --create-home --groups chatlink alice || return 1
  ct useradd --create-home mallory || return 1
  ct chatlinkctl send --room 7 "e2e from root $tag" || why "chatlinkctl send as root failed"
  as alice chatlinkctl send --room 7 "e2e from alice $tag" || why "chatlinkctl send as alice (group chatlink) failed"
  rc=0
  as mallory chatlinkctl send --room 7 "e2e from mallory $tag" || rc=$?
  echo "mallory: exit $rc"
  [ "$rc" = 4 ] || why "chatlinkctl send as mallory (not in group chatlink) exited $rc, not 4"
  wait_for 10 store_has '"dir":"out"' "e2e from root $tag" || why "root's message is not in the store as dir:out"
  wait_for 10 store_has '"dir":"out"' "e2e from alice $tag" || why "alice's message is not in the store as dir:out"
  if store_has "e2e from mallory $tag"; then why "mallory's message reached the store"; fi
  wait_for 10 store_has '"dir":"in"' '"sender":"demo-bot"' || why "no backend (chatter) message in $store"
  # A group member follows the store with tail -F (bounded) and sees new backend messages.
  as alice timeout 6 tail -n0 -F "$store" >"$logs/tail-F.out" 2>&1 &
  local tail_job=$!
  sleep 1
  as alice chatlinkctl send --room ops "e2e while tailing $tag" || why "chatlinkctl send --room ops failed"
  wait "$tail_job" || true
  echo "--- tail -F saw:"
  cat "$logs/tail-F.out"
  grep -F '"dir":"in"' "$logs/tail-F.out" | has -F '"sender":"demo-bot"' ||
    why "tail -F $store saw no backend message within 5 s"
  grep -F '"dir":"out"' "$logs/tail-F.out" | has -F "e2e while tailing $tag" ||
    why "tail -F $store did not see the message sent while tailing"
  [ -z "$reason" ]
}

check_modes() {
  ct ls -la /var/lib/chatlink /run/chatlink
  local line f
  line=$(ct stat -c '%a %U:%G' /var/lib/chatlink)
  [ "$line" = "750 chatlink:chatlink" ] || why "/var/lib/chatlink is $line, not 750 chatlink:chatlink"
  for f in $(ct find /var/lib/chatlink -type f); do
    line=$(ct stat -c '%a %U:%G' "$f")
    [ "$line" = "640 chatlink:chatlink" ] || why "$f is $line, not 640 chatlink:chatlink"
  done
  ct test -f "$store" || why "no $store"
  ct test -f /var/lib/chatlink/outbox.jsonl || why "no /var/lib/chatlink/outbox.jsonl"
  line=$(ct stat -c '%a %U:%G %F' /run/chatlink/control.sock) || why "no control socket"
  echo "control.sock: $line"
  case "$line" in
    "660 chatlink:chatlink socket" | "660 root:chatlink socket") ;;
    *) why "/run/chatlink/control.sock is $line, not 660 (root|chatlink):chatlink" ;;
  esac
  [ -z "$reason" ]
}

check_journal() {
  ct journalctl -u chatlinkd.service -o json --no-pager >"$logs/journal.json" || return 1
  local daemon structured
  daemon=$(grep -c '"_COMM":"chatlinkd"' "$logs/journal.json") || true
  structured=$(grep '"_COMM":"chatlinkd"' "$logs/journal.json" | grep '"CHATLINK_[A-Z_]*":' | grep -c '"PRIORITY":"[0-7]"') || true
  echo "entries from chatlinkd: $daemon, with CHATLINK_* fields and PRIORITY: $structured"
  [ "${structured:-0}" -gt 0 ] || why "no journal entry of chatlinkd with CHATLINK_* fields and PRIORITY"
  grep -q '"CHATLINK_LOGGER":' "$logs/journal.json" || why "no CHATLINK_LOGGER field"
  # The connection to the backend is logged with its URL as a field.
  grep -F "\"CHATLINK_URL\":\"ws://127.0.0.1:$port/\"" "$logs/journal.json" | head -n2
  grep -qF "\"CHATLINK_URL\":\"ws://127.0.0.1:$port/\"" "$logs/journal.json" ||
    why "no journal entry with CHATLINK_URL=ws://127.0.0.1:$port/"
  grep -o '"CHATLINK_[A-Z_]*"' "$logs/journal.json" | sort | uniq -c
  [ -z "$reason" ]
}

check_fatal_priority() {
  # Why the service does not start must be findable with `journalctl -p err`: a bad drop-in.
  local since bad=/etc/chatlink/chatlinkd.conf.d/99-e2e-bad.conf
  since=$(ct date '+%Y-%m-%d %H:%M:%S')
  ctsh "printf '[Backend]\nNoSuchKey=1\n' >$bad"
  if ct systemctl restart chatlinkd.service; then why "systemctl restart succeeded with an unknown key"; fi
  sleep 0.5
  ct journalctl -u chatlinkd.service --since "$since" -o json --no-pager >"$logs/journal-bad.json"
  echo "--- the start with an unknown key:"
  grep -F NoSuchKey "$logs/journal-bad.json" | tr ',' '\n' | grep -E '"(MESSAGE|PRIORITY|_TRANSPORT)"'
  grep -F NoSuchKey "$logs/journal-bad.json" | has '"PRIORITY":"[0-3]"' ||
    why "a fatal start error is logged below priority err (stderr, PRIORITY=$(grep -F NoSuchKey "$logs/journal-bad.json" | sed -n 's/.*"PRIORITY":"\([0-7]\)".*/\1/p' | head -n1)), so journalctl -p err does not show why chatlinkd fails"
  ct rm -f "$bad"
  ct systemctl reset-failed chatlinkd.service
  ct systemctl restart chatlinkd.service || why "restart after removing the bad drop-in failed"
  wait_for 15 connected || why "not connected after removing the bad drop-in"
  [ -z "$reason" ]
}

# chatlinkd loads OpenSSL with dlopen for its first TLS context (Transport/OpenSSLLibrary.swift):
# under the hardened unit (MemoryDenyWriteExecute=, SystemCallFilter=, ProtectSystem=) that must
# still work. The devserver speaks plain ws, so a wss:// URL to it stays in the TLS handshake
# (the devserver waits for an HTTP request that never comes) until it times out: proof that
# libssl was loaded and used, where a refused dlopen would stop the start instead.
tls_handshake_tried() { status_has "TLS handshake"; }
check_tls_loads() {
  local dropin=/etc/chatlink/chatlinkd.conf.d/60-e2e-wss.conf pid
  ctsh "printf '[Backend]\nURL=wss://127.0.0.1:$port/\n' >$dropin"
  ct systemctl restart chatlinkd.service || why "systemctl restart with a wss:// URL failed"
  wait_for 15 tls_handshake_tried || why "no TLS handshake failure in the status (STATUS: $(status_line))"
  pid=$(show MainPID)
  ctsh "grep -o 'libssl.so.[0-9]*' /proc/$pid/maps | sort -u" | has '^libssl.so.3$' ||
    why "the daemon's maps show no libssl.so.3 after a wss:// attempt"
  echo "wss:// attempt: $(status_line)"
  ct rm -f "$dropin"
  ct systemctl restart chatlinkd.service || why "restart after removing the wss:// drop-in failed"
  wait_for 15 connected || why "not connected after removing the wss:// drop-in"
  pid=$(show MainPID)
  if ctsh "grep -q libssl /proc/$pid/maps"; then why "a ws:// daemon maps libssl"; fi
  [ -z "$reason" ]
}

rooms() { ct chatlinkctl rooms; }
check_reload() {
  local before after pid
  before=$(rooms) || why "chatlinkctl rooms failed"
  echo "rooms before: $before"
  pid=$(show MainPID)
  ct sed -i 's/^Rooms=.*/Rooms=7 e2e-new/' /etc/chatlink/chatlinkd.conf.d/50-e2e.conf
  local since
  since=$(ct date '+%Y-%m-%d %H:%M:%S')
  ct systemctl reload chatlinkd.service || why "systemctl reload failed"
  after=$(rooms) || why "chatlinkctl rooms failed after reload"
  echo "rooms right after reload: $after"
  if ! grep -qw e2e-new <<<"$after" || grep -qw ops <<<"$after"; then
    if wait_for 5 rooms_reloaded; then
      why "systemctl reload returned before the new Rooms= applied (they did a moment later)"
    else
      why "after reload, rooms are '$(rooms | paste -sd' ')', expected 7 and e2e-new without ops"
    fi
  fi
  [ "$(show MainPID)" = "$pid" ] || why "reload restarted the daemon"
  sleep 0.5
  ct journalctl -u chatlinkd.service --since "$since" -o json --no-pager >"$logs/journal-reload.json"
  ct journalctl -u chatlinkd.service --since "$since" --no-pager
  grep -q '"MESSAGE":"configuration reloaded' "$logs/journal-reload.json" || why "no 'configuration reloaded' in the journal"
  grep -q '"MESSAGE":"Reloading' "$logs/journal-reload.json" || why "systemd logged no 'Reloading' for the unit"
  grep -q '"MESSAGE":"Reloaded' "$logs/journal-reload.json" || why "systemd logged no 'Reloaded' for the unit"
  # The devserver confirms the join of the new room.
  wait_for 5 backend_log_has e2e-new ||
    why "the backend saw no join of e2e-new"
  wait_for 10 connected || why "not connected after reload (STATUS: $(status_line))"
  [ -z "$reason" ]
}

seq_above() { [ "$(max_seq)" -gt "$1" ]; }
rooms_reloaded() {
  local r
  r=$(rooms) && grep -qw e2e-new <<<"$r" && ! grep -qw ops <<<"$r"
}
max_seq() { ctsh "cat $store" | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' | sort -n | tail -n1; }
check_kill() {
  local pid restarts last since msg="e2e queued while down $tag"
  stop_backend || why "could not stop the backend"
  wait_for 15 not_connected ||
    why "still 'Connected' 15 s after the backend stopped"
  echo "status with the backend down: $(status_line)"
  ct chatlinkctl send --room 7 "$msg" || why "chatlinkctl send while the backend is down failed"
  ctsh "grep -F '$msg' /var/lib/chatlink/outbox.jsonl" || why "the queued message is not in outbox.jsonl"
  last=$(max_seq)
  pid=$(show MainPID)
  restarts=$(show NRestarts)
  echo "before kill: MainPID=$pid NRestarts=$restarts last seq=$last"
  since=$(ct date '+%Y-%m-%d %H:%M:%S')
  ct kill -9 "$pid"
  wait_for 20 new_main_pid "$pid" ||
    why "no new main process within 20 s of kill -9"
  wait_for 10 service_active ||
    why "chatlinkd.service not active again after kill -9"
  echo "after kill: MainPID=$(show MainPID) NRestarts=$(show NRestarts) Result=$(show Result)"
  [ "$(show NRestarts)" = $((restarts + 1)) ] || why "NRestarts went from $restarts to $(show NRestarts), not +1"
  ct journalctl -u chatlinkd.service --no-pager --since "$since" | grep -E 'KILL|Scheduled restart|Started|recover' || true
  ct journalctl -u chatlinkd.service --no-pager --since "$since" | has 'status=9/KILL' || why "the journal shows no SIGKILL exit"
  start_backend || why "the backend did not start again"
  wait_for 20 connected || why "not connected within 20 s after both restarted (STATUS: $(status_line))"
  wait_for 15 store_has '"dir":"out"' "$msg" || why "the message queued before kill -9 was not delivered"
  wait_for 10 seq_above "$last" ||
    why "no new record after the restart"
  ctsh "cat $store" >"$logs/store-after-kill.jsonl"
  sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' "$logs/store-after-kill.jsonl" >"$logs/seqs.txt"
  local lines seqs
  lines=$(wc -l <"$logs/store-after-kill.jsonl")
  seqs=$(wc -l <"$logs/seqs.txt")
  [ "$lines" = "$seqs" ] || why "$((lines - seqs)) store lines without a leading seq"
  awk 'NR > 1 && $1 <= prev { print "seq " $1 " after " prev " at line " NR; bad = 1 } { prev = $1 } END { exit bad }' \
    "$logs/seqs.txt" || why "seq does not strictly increase across the restart (repeat or reorder)"
  awk 'NR > 1 && $1 != prev + 1 { print "gap: " prev " -> " $1 } { prev = $1 }' "$logs/seqs.txt"
  echo "records: $lines, seq $(head -n1 "$logs/seqs.txt")..$(tail -n1 "$logs/seqs.txt"), last before kill $last"
  echo "deliveries of the queued message: $(grep -F '"dir":"out"' "$logs/store-after-kill.jsonl" | grep -cF "$msg")"
  [ -z "$reason" ]
}

check_watchdog() {
  local wd pid restarts since
  wd=$(show WatchdogUSec)
  echo "WatchdogUSec=$wd"
  [ "$wd" = 30s ] || why "WatchdogUSec is '$wd', not 30s"
  ct systemctl cat chatlinkd.service | has '^WatchdogSec=30s' || why "the unit does not show WatchdogSec=30s"
  # The daemon keeps a short watchdog fed; a stopped daemon is killed and restarted.
  ctsh 'mkdir -p /etc/systemd/system/chatlinkd.service.d && printf "[Service]\nWatchdogSec=3s\n" >/etc/systemd/system/chatlinkd.service.d/90-e2e-watchdog.conf'
  ct systemctl daemon-reload
  ct systemctl restart chatlinkd.service || why "restart with WatchdogSec=3s failed"
  pid=$(show MainPID)
  restarts=$(show NRestarts)
  sleep 7
  [ "$(show MainPID)" = "$pid" ] || why "with WatchdogSec=3s the healthy daemon was restarted (not fed often enough)"
  echo "healthy for 7 s with WatchdogSec=3s: MainPID $pid"
  since=$(ct date '+%Y-%m-%d %H:%M:%S')
  ct kill -STOP "$pid"
  wait_for 40 new_main_pid "$pid" ||
    why "the stopped daemon was not restarted within 40 s"
  [ "$(show NRestarts)" -gt "$restarts" ] || why "NRestarts did not grow ($restarts -> $(show NRestarts)): not an automatic restart"
  ct kill -CONT "$pid" 2>/dev/null || true
  ct journalctl -u chatlinkd.service --no-pager --since "$since" | grep -iE 'watchdog|Scheduled restart' || true
  ct journalctl -u chatlinkd.service --no-pager --since "$since" | has -i 'watchdog timeout' || why "no 'Watchdog timeout' in the journal"
  ct rm -f /etc/systemd/system/chatlinkd.service.d/90-e2e-watchdog.conf
  ct systemctl daemon-reload
  ct systemctl restart chatlinkd.service || why "restart after the watchdog test failed"
  [ "$(show WatchdogUSec)" = 30s ] || why "WatchdogUSec not back to 30s"
  wait_for 15 connected || why "not connected after the watchdog test"
  [ -z "$reason" ]
}

check_socket() {
  ct systemctl stop chatlinkd.service || why "stop failed"
  ct systemctl enable --now chatlinkd.socket || why "systemctl enable --now chatlinkd.socket failed"
  local line
  line=$(ct systemctl is-active chatlinkd.service) || true
  [ "$line" = inactive ] || why "chatlinkd.service is $line right after the socket started"
  line=$(ct stat -c '%a %U:%G %F' /run/chatlink/control.sock) || why "no socket"
  echo "control.sock from the socket unit: $line"
  [ "$line" = "660 root:chatlink socket" ] || why "the socket unit's socket is $line, not 660 root:chatlink"
  ct timeout 20 chatlinkctl status || why "the first chatlinkctl status did not succeed"
  line=$(ct systemctl is-active chatlinkd.service) || true
  echo "chatlinkd.service after the first chatlinkctl status: $line; TriggeredBy=$(show TriggeredBy)"
  [ "$line" = active ] || why "chatlinkctl status did not activate chatlinkd.service ($line)"
  as alice timeout 10 chatlinkctl status >/dev/null || why "alice cannot use the socket-activated daemon"
  ct journalctl -u chatlinkd.socket -u chatlinkd.service --no-pager -n 15
  wait_for 15 connected || why "the socket-activated daemon did not connect"
  ct systemctl disable --now chatlinkd.socket || why "systemctl disable --now chatlinkd.socket failed"
  line=$(ct systemctl is-enabled chatlinkd.socket) || true
  [ "$line" = disabled ] || why "chatlinkd.socket is $line after disable"
  # Back to the plain service, which binds the socket itself.
  ct systemctl restart chatlinkd.service || why "restart without the socket unit failed"
  ct timeout 5 chatlinkctl status >/dev/null || why "chatlinkctl status fails after going back from socket activation"
  line=$(ct stat -c '%a %U:%G %F' /run/chatlink/control.sock) || true
  echo "control.sock after going back: $line"
  wait_for 15 connected || why "not connected after going back from socket activation"
  [ -z "$reason" ]
}

check_token() {
  local token where=""
  token="e2e-secret-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
  ctsh "umask 077 && printf '%s\n' '$token' >/etc/chatlink/token"
  stop_backend
  start_backend --token-file /etc/chatlink/token || why "the backend with --token-file did not start"
  # Without the credential the backend refuses the daemon.
  wait_for 20 status_has 'HTTP 401' ||
    why "without the token, the status does not show the 401 ($(status_line))"
  echo "without the credential: $(status_line)"
  ctsh 'mkdir -p /etc/systemd/system/chatlinkd.service.d && printf "[Service]\nLoadCredential=token:/etc/chatlink/token\n" >/etc/systemd/system/chatlinkd.service.d/50-token.conf'
  ct systemctl daemon-reload
  ct systemctl restart chatlinkd.service || why "restart with LoadCredential failed"
  wait_for 15 connected || why "not connected with the credential (STATUS: $(status_line))"
  echo "with the credential: $(status_line)"
  ct chatlinkctl send --room 7 "e2e with token $tag" || why "send with the token failed"
  wait_for 10 store_has '"dir":"out"' "e2e with token $tag" || why "the message sent with the token was not confirmed"
  ct journalctl --no-pager -o verbose >"$logs/leak-journal.txt" 2>&1
  ct journalctl --no-pager -o json >>"$logs/leak-journal.txt" 2>&1
  ct systemctl status --no-pager -l chatlinkd.service >"$logs/leak-status.txt" 2>&1
  ct systemctl show chatlinkd.service >>"$logs/leak-status.txt" 2>&1
  ct chatlinkctl status --json >"$logs/leak-ctl.txt" 2>&1
  ct chatlinkctl status >>"$logs/leak-ctl.txt" 2>&1
  ct ps auxwwe >"$logs/leak-ps.txt" 2>&1
  local f
  for f in journal status ctl ps; do
    if grep -qF "$token" "$logs/leak-$f.txt"; then where="$where $f"; grep -F "$token" "$logs/leak-$f.txt" | head -n3; fi
  done
  [ -z "$where" ] || why "the token appears in:$where"
  grep -q chatlinkd "$logs/leak-ps.txt" || why "ps shows no chatlinkd (the ps check proves nothing)"
  # Undo: the plain unit and a backend without a token, for the checks that follow.
  ct rm -f /etc/systemd/system/chatlinkd.service.d/50-token.conf /etc/chatlink/token
  ct rmdir /etc/systemd/system/chatlinkd.service.d 2>/dev/null || true
  ct systemctl daemon-reload
  stop_backend
  start_backend || true
  ct systemctl restart chatlinkd.service || why "restart without the credential failed"
  [ -z "$reason" ]
}

# Instances (chatlinkd@NAME): a, b against the devserver, c against a second one.
inst_status() { ct systemctl show -p StatusText --value "chatlinkd@$1.service"; }
inst_connected() { inst_status "$1" | has "^$1: Connected to ws://127.0.0.1:"; }
# inst_store_has NAME PATTERN...: a line of NAME's store matching every fixed string.
inst_store_has() {
  local cmd="cat /var/lib/chatlink/$1/messages.jsonl 2>/dev/null" p
  shift
  for p in "$@"; do cmd="$cmd | grep -F -e $(printf '%q' "$p")"; done
  ctsh "$cmd" >/dev/null
}
# connects_of [NAME]: GetStatus's connects of instance NAME, or of chatlinkd.service.
connects_of() {
  ct chatlinkctl ${1:+-i "$1"} --json status | sed -n 's/.*"connects":\([0-9]*\).*/\1/p'
}
check_instances() {
  local port2=$((port + 1)) n m p line
  line=$(ct systemctl list-units --all --no-legend 'chatlinkd@*') || true
  [ -z "$line" ] || why "instance units loaded before any was started: $line"
  ct systemd-run --quiet --unit=e2e-backend2 --property=Restart=no \
    /e2e/chatlink-devserver --host 127.0.0.1 --port "$port2" --chatter 1 || why "the second backend did not start"
  wait_for 10 ct bash -c "exec 3<>/dev/tcp/127.0.0.1/$port2" || why "the second backend does not listen"
  for n in a b c; do
    p=$port
    [ "$n" = c ] && p=$port2
    printf '[Backend]\nURL=ws://127.0.0.1:%s/\nRooms=7 inst-%s\nReconnectMaxSec=2\n' "$p" "$n" |
      ct sh -c "cat >/etc/chatlink/$n.conf" || why "cannot write /etc/chatlink/$n.conf"
  done
  ct chatlinkd --instance a --check-config || why "chatlinkd --instance a --check-config failed"
  ct systemctl enable --now chatlinkd@a.service chatlinkd@b.service || why "enable --now chatlinkd@a, @b failed"
  ct systemctl start chatlinkd@c.socket || why "starting chatlinkd@c.socket failed"
  line=$(ct systemctl is-active chatlinkd@c.service) || true
  [ "$line" = inactive ] || why "chatlinkd@c.service is $line before its socket was used"
  line=$(ct stat -c '%a %U:%G %F' /run/chatlink/c.sock) || why "no /run/chatlink/c.sock"
  [ "$line" = "660 root:chatlink socket" ] || why "/run/chatlink/c.sock is $line"
  ct timeout 20 chatlinkctl -i c status || why "chatlinkctl -i c status did not activate chatlinkd@c"
  line=$(ct systemctl is-active chatlinkd@c.service) || true
  [ "$line" = active ] || why "chatlinkd@c.service is $line after the first chatlinkctl -i c"
  for n in a b c; do
    wait_for 20 inst_connected "$n" || why "chatlinkd@$n not connected (STATUS: $(inst_status "$n"))"
    echo "chatlinkd@$n: $(inst_status "$n")"
  done
  wait_for 15 connected || why "chatlinkd.service not connected beside the instances"
  ct stat -c '%n %a %U:%G' /var/lib/chatlink/a /var/lib/chatlink/b /var/lib/chatlink/c || why "no instance store directories"
  # Each instance stores only what it sent and received. Each sends to a room only it joined
  # (the devserver relays a message to every member of its room: a room all joined would reach
  # every link).
  for n in a b c; do
    ct chatlinkctl -i "$n" send --room "inst-$n" "e2e from $n $tag" || why "chatlinkctl -i $n send failed"
  done
  for n in a b c; do
    wait_for 15 inst_store_has "$n" '"dir":"out"' "e2e from $n $tag" || why "chatlinkd@$n did not store its confirmed send"
    for m in a b c; do
      [ "$m" = "$n" ] && continue
      inst_store_has "$n" "e2e from $m $tag" && why "chatlinkd@$n stored $m's message"
    done
    store_has "e2e from $n $tag" && why "chatlinkd.service stored $n's message"
  done
  # The journal names the instance on every entry; systemctl status shows its STATUS= line.
  ct journalctl --no-pager -o json -u chatlinkd@b.service _COMM=chatlinkd >"$logs/journal-b.json" || true
  line=$(grep -c . "$logs/journal-b.json") || true
  n=$(grep -vc '"CHATLINK_INSTANCE":"b"' "$logs/journal-b.json") || true
  echo "chatlinkd@b journal entries: $line, without CHATLINK_INSTANCE=b: $n"
  [ "${line:-0}" -gt 0 ] || why "no journal entries of chatlinkd@b"
  [ "${n:-1}" = 0 ] || why "$n journal entries of chatlinkd@b lack CHATLINK_INSTANCE=b"
  ct journalctl --no-pager -o cat CHATLINK_INSTANCE=a | tail -n 3
  ct systemctl status --no-pager chatlinkd@a.service | has 'Status: "a: Connected to' ||
    why "systemctl status chatlinkd@a shows no 'a: Connected' line"
  ct chatlinkctl instances | tee "$logs/instances.txt" || why "chatlinkctl instances failed"
  for n in - a b c; do
    awk -v n="$n" '$1 == n && $2 == "open" { found = 1 } END { exit !found }' "$logs/instances.txt" ||
      why "chatlinkctl instances shows no open '$n'"
  done
  # Killing, reloading and stopping one instance leaves the others' connections alone.
  local plain_before b_before c_before pid
  plain_before=$(connects_of)
  b_before=$(connects_of b)
  c_before=$(connects_of c)
  pid=$(ct systemctl show -p MainPID --value chatlinkd@a.service)
  ct kill -9 "$pid" || why "kill -9 chatlinkd@a failed"
  wait_for 20 new_instance_pid a "$pid" || why "chatlinkd@a was not restarted after kill -9"
  wait_for 20 inst_connected a || why "chatlinkd@a not connected again after kill -9"
  ct systemctl reload chatlinkd@c.service || why "reload chatlinkd@c failed"
  ct systemctl stop chatlinkd@a.service || why "stop chatlinkd@a failed"
  sleep 1
  echo "connects: plain $plain_before -> $(connects_of), b $b_before -> $(connects_of b), c $c_before -> $(connects_of c)"
  [ "$(connects_of)" = "$plain_before" ] || why "chatlinkd.service reconnected when instance a was killed"
  [ "$(connects_of b)" = "$b_before" ] || why "chatlinkd@b reconnected when instance a was killed"
  [ "$(connects_of c)" = "$c_before" ] || why "a reload of chatlinkd@c reconnected it"
  inst_connected b || why "chatlinkd@b is no longer connected"
  connected || why "chatlinkd.service is no longer connected"
  # b stays enabled: the purge (check 13) must remove its state and its enablement.
  ct systemctl stop chatlinkd@c.service chatlinkd@c.socket || why "stop chatlinkd@c failed"
  ct systemctl stop e2e-backend2.service || true
  [ -z "$reason" ]
}
new_instance_pid() {
  local p
  p=$(ct systemctl show -p MainPID --value "chatlinkd@$1.service")
  [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$2" ]
}

check_analyze() {
  local out level
  # The shipped unit, without the known-issue drop-in.
  ct rm -f "$workaround"
  ct rmdir "${workaround%/*}" 2>/dev/null || true
  ct systemctl daemon-reload
  out=$(ct systemd-analyze security --no-pager chatlinkd.service 2>&1) || true
  echo "$out" | tail -n 5
  level=$(sed -n 's/.*Overall exposure level for chatlinkd.service: \([0-9.]*\).*/\1/p' <<<"$out")
  echo "exposure: $level"
  [ -n "$level" ] || why "no exposure level from systemd-analyze security"
  [ -n "$level" ] && ! awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }' && why "exposure $level is above 2.0"
  # --man=no: a minbase system has no man(1) to look the Documentation= pages up with.
  out=$(ct systemd-analyze verify --man=no /lib/systemd/system/chatlinkd.service /lib/systemd/system/chatlinkd.socket 2>&1) ||
    why "systemd-analyze verify exited non-zero"
  echo "verify: ${out:-(nothing)}"
  [ -z "$out" ] || why "systemd-analyze verify printed: $(head -n2 <<<"$out" | paste -sd' ')"
  # The template's instances are hardened as the plain unit is.
  out=$(ct systemd-analyze security --no-pager chatlinkd@b.service 2>&1) || true
  level=$(sed -n 's/.*Overall exposure level for chatlinkd@b.service: \([0-9.]*\).*/\1/p' <<<"$out")
  echo "exposure of chatlinkd@b.service: $level"
  [ -n "$level" ] || why "no exposure level for chatlinkd@b.service"
  [ -n "$level" ] && ! awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }' && why "chatlinkd@b.service exposure $level is above 2.0"
  out=$(ct systemd-analyze verify --man=no chatlinkd@b.service chatlinkd@b.socket 2>&1) ||
    why "systemd-analyze verify of the template exited non-zero"
  echo "verify chatlinkd@b: ${out:-(nothing)}"
  [ -z "$out" ] || why "systemd-analyze verify of the template printed: $(head -n2 <<<"$out" | paste -sd' ')"
  [ -z "$reason" ]
}

check_reinstall() {
  # An admin's edit of the conffile survives reinstalling (or upgrading) the package, and the
  # service keeps running with it.
  ctsh "echo '# edited by the admin (e2e)' >>/etc/chatlink/chatlinkd.conf"
  ct sh -c "cd /root && apt install -y --reinstall -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold ./$deb_name" ||
    why "apt install --reinstall failed"
  ct grep -q "edited by the admin (e2e)" /etc/chatlink/chatlinkd.conf || why "the modified conffile was replaced"
  local state
  state=$(ct systemctl is-active chatlinkd.service) || true
  [ "$state" = active ] || why "chatlinkd.service is $state after the reinstall"
  [ -z "$reason" ]
}

check_remove() {
  ct apt remove -y chatlink || why "apt remove failed"
  ct dpkg -s chatlink | grep '^Status:' || true
  ct test -f "$store" || why "apt remove deleted $store"
  ct test -f /etc/chatlink/chatlinkd.conf || why "apt remove deleted the conffile"
  ct test -f /var/lib/chatlink/b/messages.jsonl || why "apt remove deleted instance b's store"
  line=$(ct systemctl is-active chatlinkd@b.service) || true
  [ "$line" = inactive ] || why "chatlinkd@b.service is $line after remove"
  local line
  line=$(ct systemctl is-active chatlinkd.service) || true
  [ "$line" = inactive ] || why "chatlinkd.service is $line after remove"
  ct pgrep -x chatlinkd && why "a chatlinkd process survived apt remove"
  ct test -e /usr/bin/chatlinkd && why "/usr/bin/chatlinkd survived apt remove"
  echo "after remove: chatlinkd.service is $(ct systemctl is-enabled chatlinkd.service 2>&1)"
  ct ls -la /var/lib/chatlink /etc/chatlink
  ct apt purge -y chatlink || why "apt purge failed"
  ct dpkg -s chatlink 2>&1 | head -n2 || true
  ct dpkg -s chatlink >/dev/null 2>&1 && why "dpkg still knows chatlink after purge"
  # The instances' files in /etc/chatlink are the administrator's (check 11b wrote them):
  # purge keeps them and nothing else there.
  line=$(ct ls -A /etc/chatlink 2>/dev/null | paste -sd' ') || true
  echo "/etc/chatlink after purge: ${line:-(gone)}"
  [ "$line" = "a.conf b.conf c.conf" ] || why "/etc/chatlink after purge holds '$line', not just the instances' a.conf b.conf c.conf"
  ct rm -rf /etc/chatlink
  for f in /var/lib/chatlink /run/chatlink /etc/systemd/system/multi-user.target.wants/chatlinkd.service \
    /etc/systemd/system/sockets.target.wants/chatlinkd.socket /etc/systemd/system/chatlinkd.service \
    /etc/systemd/system/chatlinkd.socket /etc/systemd/system/multi-user.target.wants/chatlinkd@b.service; do
    if ct test -e "$f" -o -L "$f"; then why "$f is left after purge"; ct ls -la "$f"; fi
  done
  line=$(ct sh -c 'ls /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked 2>/dev/null | grep chatlinkd' ) || true
  [ -z "$line" ] || why "deb-systemd-helper state left: $line"
  line=$(ct systemctl list-unit-files --no-legend 'chatlinkd*') || true
  echo "unit files after purge: ${line:-(none)}"
  [ -z "$line" ] || why "unit files left after purge: $line"
  line=$(ct systemctl show -p LoadState --value chatlinkd.service) || true
  [ "$line" = not-found ] || why "chatlinkd.service is $line after purge, not not-found"
  echo "user chatlink after purge: $(ct getent passwd chatlink || echo none) (Debian keeps system users)"
  [ -z "$reason" ]
}

skip_rest=""
run() {
  if [ -n "$skip_rest" ]; then
    printf 'FAIL %2s %s: not run (%s)\n' "$1" "$2" "$skip_rest"
    summary+=("FAIL $1 $2: not run")
    failed=$((failed + 1))
    return
  fi
  check "$@"
}
run 1 "apt install enables and starts the service" check_install
# Known issue (reported, not fixed here): the unit's SystemCallFilter=~@privileged includes @chown,
# and chatlinkd chowns its control socket to SocketGroup= (Transport/UnixListener.swift), which
# seccomp refuses with EPERM: "chown /run/chatlink/control.sock: Operation not permitted", and the
# service never starts. So that the other checks still run, a drop-in allows @chown again; check 1
# has failed already, and check 12 analyses the unit without the drop-in.
workaround=/etc/systemd/system/chatlinkd.service.d/80-e2e-known-issue-chown.conf
if ct dpkg -s chatlink >/dev/null 2>&1 && [ "$(ct systemctl is-active chatlinkd.service)" != active ] &&
  ct journalctl -u chatlinkd.service --no-pager | has 'chown /run/chatlink/control.sock: Operation not permitted'; then
  say "KNOWN ISSUE: SystemCallFilter=~@privileged blocks chatlinkd's chown of its socket; allowing @chown in $workaround for the other checks"
  ctsh "mkdir -p ${workaround%/*} && printf '[Service]\nSystemCallFilter=@chown\n' >$workaround"
  ct systemctl daemon-reload
  ct systemctl restart chatlinkd.service || true
fi
if ! ct dpkg -s chatlink >/dev/null 2>&1; then
  skip_rest="the package did not install"
elif [ "$(ct systemctl is-active chatlinkd.service)" != active ]; then
  skip_rest="chatlinkd.service does not run"
fi
run 2 "restart against the devserver returns after READY" check_configure
run 3 "systemctl status shows the live STATUS line" check_status
run 4 "chatlinkctl send (root, group, refused) and the store (tail -F)" check_send
run 5 "store and socket modes and owners" check_modes
run 6 "structured journal entries" check_journal
run 6b "a failed start is logged at priority err" check_fatal_priority
run 6c "wss:// loads OpenSSL under the hardened unit; ws:// never maps it" check_tls_loads
run 7 "systemctl reload applies Rooms=" check_reload
run 8 "kill -9: restart, seq continues, outbox delivered" check_kill
run 9 "watchdog" check_watchdog
run 10 "socket activation" check_socket
run 11 "token as a credential, never shown" check_token
run 11b "three instances, two backends: own stores, journal, sockets; one killed, others untouched" check_instances
run 12 "systemd-analyze security <= 2.0 and verify clean" check_analyze
run 12b "reinstall keeps a modified conffile" check_reinstall
run 13 "apt remove keeps state, apt purge removes it" check_remove

# The container's journal, for the logs.
ct journalctl --no-pager -o short-precise >"$logs/journal-all.txt" 2>&1 || true

echo
echo "e2e summary ($((SECONDS - t0)) s):"
printf '  %s\n' "${summary[@]}"
echo "e2e: $passed passed, $failed failed"
[ "$failed" = 0 ]
