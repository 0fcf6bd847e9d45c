#!/usr/bin/env bash
# Checks the man pages under man/: each must render without a single warning, with
# `groff -man -Tutf8 -ww -z` (every warning enabled) and with man-db's `man -l` (as lintian
# runs it, and as a reader sees it at 80 columns). The sources must be ASCII, with
# non-ASCII characters written as groff escapes.
#
# Prints nothing and exits 0 when every page is clean; otherwise prints each problem,
# prefixed with the page's name, and exits 1. Installs groff-base and man-db when missing.
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pages=("$dir/chatlinkd.8" "$dir/chatlinkd.conf.5" "$dir/chatlinkctl.1")

missing=()
groff --version >/dev/null 2>&1 || missing+=(groff-base)
# `man --version`, not `command -v man`: minimised images ship a stub /usr/bin/man.
man --version >/dev/null 2>&1 || missing+=(man-db)
if [ ${#missing[@]} -gt 0 ]; then
  echo "check.sh: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi

status=0
report() {
  # report PAGE TEXT: prints TEXT's lines prefixed with the page's name.
  local name
  name=$(basename "$1")
  while IFS= read -r line; do
    printf '%s: %s\n' "$name" "$line"
  done <<<"$2"
  status=1
}

for page in "${pages[@]}"; do
  if [ ! -f "$page" ]; then
    report "$page" "missing"
    continue
  fi
  if LC_ALL=C grep -n '[^[:print:][:space:]]' "$page" >/dev/null; then
    report "$page" "$(LC_ALL=C grep -n '[^[:print:][:space:]]' "$page" |
      sed 's/^/non-ASCII byte on line /')"
  fi
  # groff with every warning (-ww), output discarded (-z): anything printed is a warning.
  if ! out=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || [ -n "$out" ]; then
    report "$page" "groff -man -Tutf8 -ww -z: ${out:-failed}"
  fi
  # man-db as lintian runs it (--warnings passes -w to groff; preconv and tbl included).
  if ! out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
    man --warnings=w -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null) || [ -n "$out" ]; then
    report "$page" "man --warnings=w -l: ${out:-failed}"
  fi
  # And as a reader sees it.
  if ! out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>&1 >/dev/null) || [ -n "$out" ]; then
    report "$page" "man -l: ${out:-failed}"
  fi
done
exit $status
