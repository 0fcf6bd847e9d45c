#!/usr/bin/env bash
# Builds the Python 2.7 virtualenv that runs the Autobahn|Testsuite fuzzing server.
#
# Why Python 2: autobahntestsuite 25.10.1 (the newest on PyPI) is Python 2 code; on Python 3 it
# installs but `wstest` dies at import. Debian 12 has no python2, but the machine image ships one
# under pyenv (versions/2.7.18). Recipe and pins: shared/notes/autobahn.md.
#
# Idempotent: if VENV/bin/wstest exists, the suite imports and the venv was built from the pins
# below (a stamp file records them), nothing is done.
#
# Environment:
#   AUTOBAHN_VENV  where the venv goes (default: <repo>/.cache/autobahn-venv; .cache/ is gitignored)
#   PYTHON3        the Python 3 used to bootstrap virtualenv (default: python3)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${AUTOBAHN_VENV:-$REPO/.cache/autobahn-venv}"
PYTHON3="${PYTHON3:-python3}"

log() { printf 'setup-autobahn: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Every package pinned, transitive ones included, and installed with --no-deps: pip never
# resolves anything, so a new upload to PyPI cannot change what we get. The first block is the
# set measured to work in shared/notes/autobahn.md; the second is what those pull in (pip freeze
# of a working venv). `pip check` below catches a missing one.
PINS=(
  autobahntestsuite==25.10.1
  autobahn==0.10.9
  Twisted==19.10.0
  txaio==2.1.0
  cryptography==3.3.2
  pyOpenSSL==19.1.0
  service-identity==18.1.0
  setuptools==44.0.0
  wsaccel==0.6.6
  ujson==2.0.3
  zope.interface==4.6.0
  klein==17.10.0
  Werkzeug==1.0.1
  Jinja2==2.11.3
  # transitive. argparse is listed although Python 2.7 has it in the stdlib: unittest2 declares
  # it, pip resolution installs it, and `pip freeze` hides it.
  argparse==1.4.0
  attrs==21.4.0
  Automat==22.10.0
  cffi==1.15.1
  constantly==15.1.0
  enum34==1.1.10
  hyperlink==21.0.0
  idna==2.10
  incremental==16.10.1
  ipaddress==1.0.23
  linecache2==1.0.0
  MarkupSafe==1.1.1
  pyasn1==0.5.1
  pyasn1-modules==0.3.0
  pycparser==2.21
  PyHamcrest==1.10.1
  six==1.16.0
  traceback2==1.4.0
  typing==3.10.0.0
  unittest2==1.1.0
)

# The pins, one per array element; comment lines are skipped.
reqs=()
for p in "${PINS[@]}"; do [[ "$p" == \#* ]] || reqs+=("$p"); done
# Written last, after a successful build: a venv interrupted half-way, or built from other pins,
# has no (or a different) stamp and is rebuilt.
STAMP="$VENV/.chatlink-autobahn-pins"
stamp_text() { printf '%s\n' "${reqs[@]}"; }

# Is the venv already usable? Built from these pins, wstest exists, and the modules the launcher
# uses import.
venv_ok() {
  [[ -x "$VENV/bin/wstest" && -x "$VENV/bin/python" && -f "$STAMP" ]] || return 1
  [[ "$(cat "$STAMP")" == "$(stamp_text)" ]] || return 1
  "$VENV/bin/python" -c 'import autobahntestsuite.fuzzing, autobahn.twisted.websocket, twisted.internet.reactor' \
    >/dev/null 2>&1
}

if venv_ok; then
  log "venv ready: $VENV"
  exit 0
fi

# Find pyenv's root. pyenv is often not on PATH in a non-interactive shell (CI, cron), so fall
# back to the usual install locations.
pyenv_root=""
if command -v pyenv >/dev/null 2>&1; then
  pyenv_root="$(pyenv root)"
fi
for cand in "$pyenv_root" "${PYENV_ROOT:-}" "$HOME/.pyenv" /root/.pyenv; do
  if [[ -n "$cand" && -x "$cand/versions/2.7.18/bin/python2.7" ]]; then
    pyenv_root="$cand"
    break
  fi
done
PY27="$pyenv_root/versions/2.7.18/bin/python2.7"
[[ -n "$pyenv_root" && -x "$PY27" ]] ||
  die "Python 2.7.18 not found under pyenv (looked in \$(pyenv root), \$PYENV_ROOT, $HOME/.pyenv, /root/.pyenv). autobahntestsuite needs Python 2; install it with 'pyenv install 2.7.18'."
command -v "$PYTHON3" >/dev/null 2>&1 || die "$PYTHON3 not found (needed to bootstrap virtualenv)"

log "building venv at $VENV with $PY27"
start=$SECONDS

# Whatever is there (an interrupted build, other pins) failed venv_ok and would get in
# virtualenv's way: start clean.
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"

# virtualenv 20.21.1 is the last release that can still create Python 2.7 environments, and
# Python 2 has no stdlib `venv`. Install it into a throwaway --target dir
# rather than into anyone's site-packages.
tmp="$(mktemp -d)"
# On any failure from here on, leave no half-built venv behind.
done_ok=0
cleanup() {
  rm -rf "$tmp"
  if [[ $done_ok -eq 0 ]]; then rm -rf "$VENV"; fi
}
trap cleanup EXIT
"$PYTHON3" -m pip install --quiet --disable-pip-version-check --target "$tmp/virtualenv" virtualenv==20.21.1
PYTHONPATH="$tmp/virtualenv" "$PYTHON3" -m virtualenv --quiet -p "$PY27" "$VENV"

# wsaccel and ujson compile C extensions with gcc here.
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-python-version-warning \
  --no-deps "${reqs[@]}"
"$VENV/bin/pip" check --disable-pip-version-check --no-python-version-warning >&2 ||
  die "pip check failed: a dependency is missing from PINS"

stamp_text >"$STAMP"
venv_ok || die "venv built but autobahntestsuite does not import"
done_ok=1
log "venv ready: $VENV ($((SECONDS - start)) s)"
