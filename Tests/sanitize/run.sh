#!/usr/bin/env bash
# make sanitize: the unit tests and an integration subset (Tests/integration/test_sanitized_runs.py)
# under AddressSanitizer, with UBSan on the C the build compiles, and under ThreadSanitizer.
# Zero reports pass; any report fails the run and is printed in full. Tests/sanitize/README.md
# says what runs, with which options, and why.
#
#   Tests/sanitize/run.sh                   both builds
#   SANITIZE_ONLY=address Tests/sanitize/run.sh    one of them (address or thread)
#
# Each build has its own scratch path (.build/asan, .build/tsan): neither disturbs the plain
# build nor the other. Build logs and reports of the last run stay in .build/sanitize/.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
swift=${SWIFT:-swift}
python="$repo/.venv/bin/python"
here="$repo/Tests/sanitize"
out="$repo/.build/sanitize"
only=${SANITIZE_ONLY:-}
rm -rf "$out"
mkdir -p "$out"

# ThreadSanitizer does not see Synchronization's Mutex on Linux (it locks with raw futex calls)
# and reports every access under it as a race: every lock of Sources is a ThreadLock, which
# it sees, so that a report always means a race.
if grep -rnE '\bMutex *[<(]' Sources --include='*.swift'; then
  echo "sanitize: Sources uses Synchronization.Mutex, which ThreadSanitizer cannot see; use EventLoop's ThreadLock" >&2
  exit 1
fi

builds=()
for b in address thread; do
  [ -z "$only" ] || [ "$only" = "$b" ] && builds+=("$b")
done
[ ${#builds[@]} -gt 0 ] || { echo "sanitize: SANITIZE_ONLY is address or thread, not '$only'" >&2; exit 2; }

scratch() { case $1 in address) echo .build/asan ;; thread) echo .build/tsan ;; esac; }
# swift build / swift test flags. swiftc refuses -sanitize=undefined on Linux: UBSan covers
# the C that Clang compiles for the build (the shim.h wrappers, through -Xcc), and its reports
# go through ASan's runtime; Swift code traps on overflow and out-of-bounds access anyway.
flags() {
  case $1 in
    address) echo "--scratch-path .build/asan --sanitize=address -Xcc -fsanitize=undefined -Xswiftc -warnings-as-errors" ;;
    thread) echo "--scratch-path .build/tsan --sanitize=thread -Xswiftc -warnings-as-errors" ;;
  esac
}

# The sanitizers' options, with every report written to a file (prefix asan or tsan, then the
# pid) under folder $1, or $2 for ThreadSanitizer's: the processes the tests start have their
# stderr read by the tests, or by nobody, and a file cannot be missed. halt_on_error stops a
# process at its first report, with exit code 66 (LSan's and UBSan's reports go through ASan's
# runtime, to its log_path). detect_stack_use_after_return catches a pointer to a stack value
# kept past its withUnsafe… closure. history_size=7, the most: ThreadSanitizer drops a race,
# silently, when the earlier access is no longer in its per-thread history, and with the
# default it dropped a third or more of SanitizerProof's races.
export_options() { # folder [thread-folder]
  local tsan=${2:-$1}
  mkdir -p "$1" "$tsan"
  export ASAN_OPTIONS="halt_on_error=1:exitcode=66:detect_leaks=1:detect_stack_use_after_return=1:log_path=$1/asan"
  export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  export TSAN_OPTIONS="halt_on_error=1:exitcode=66:history_size=7:second_deadlock_stack=1:log_path=$tsan/tsan:suppressions=$here/tsan.supp"
}

phase() { printf 'sanitize: %-44s %4d s\n' "$1" "$(( SECONDS - started ))" | tee -a "$out/times"; }

build() { # build
  local log="$out/$1/build.log"
  mkdir -p "$out/$1"
  # shellcheck disable=SC2046 # flags are words
  if ! $swift build --build-tests $(flags "$1") >"$log" 2>&1; then
    # gold warns about every ASan register helper it cannot export: noise.
    grep -v "ld.gold: warning: Cannot export local symbol" "$log" | tail -80
    echo "sanitize: the $1 build failed (whole log: $log)" >&2
    exit 1
  fi
}

# Proof that reports are made and collected: chatlinkd's debug-only programs with one known
# bug (EventLoop/SanitizerProof.swift), run with the options of the real runs, must be
# reported, and the same program without the bug must not.
prove() { # build proof expected-report|"clean"
  local folder="$out/$1/proof-$2" rc=0
  (export_options "$folder"; CHATLINK_DEBUG_SANITIZER_PROOF=$2 "$(scratch "$1")/debug/chatlinkd" \
    >"$folder.out" 2>&1) || rc=$?
  if [ "$3" = clean ]; then
    if [ "$rc" -ne 0 ] || ! "$python" "$here/reports.py" check "$folder" >/dev/null; then
      "$python" "$here/reports.py" check "$folder" || true
      echo "sanitize: the $1 build reported the '$2' proof, which has no bug (exit $rc)" >&2
      exit 1
    fi
  elif [ "$rc" -ne 66 ] || ! "$python" "$here/reports.py" expect "$folder" "$3"; then
    echo "sanitize: the $1 build did not report the known bug of the '$2' proof (exit $rc; want 66 and '$3')" >&2
    exit 1
  fi
}

# No leak check at the unit tests' exit: swift-corelibs-xctest keeps every XCTestCase instance,
# and all its properties hold, until the process ends, and LeakSanitizer counts thousands of
# them (and a buffer FoundationEssentials' String(contentsOfFile:) drops for an empty file, in
# the tests' own helpers). Leaks are checked where they matter, at the exit of every chatlinkd
# and chatlinkctl of the integration subset.
unit() { # build
  local folder="$out/$1/unit" rc=0
  # shellcheck disable=SC2046
  (export_options "$folder"; export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
    CHATLINK_TEST_PYTHON=$python $swift test --skip-build $(flags "$1") >"$out/$1/unit.log" 2>&1) || rc=$?
  if ! "$python" "$here/reports.py" check "$folder" || [ "$rc" -ne 0 ]; then
    grep -E "error|failed|Test Suite 'All tests'" "$out/$1/unit.log" | tail -40
    echo "sanitize: the unit tests under the $1 build failed (exit $rc; log: $out/$1/unit.log)" >&2
    exit 1
  fi
}

started=$SECONDS
for b in "${builds[@]}"; do
  build "$b"
  phase "$b: built"
  case $b in
    address) prove address use-after-free "ERROR: AddressSanitizer: heap-use-after-free" ;;
    thread)
      prove thread race "WARNING: ThreadSanitizer: Swift access race|WARNING: ThreadSanitizer: data race"
      prove thread locked clean
      ;;
  esac
  phase "$b: proofs reported"
  unit "$b"
  phase "$b: unit tests, 0 reports"
done

# One pytest session for both builds: RabbitMQ boots once.
spec=""
for b in "${builds[@]}"; do spec+="$b=$repo/$(scratch "$b")/debug "; done
export_options "$out/integration/address" "$out/integration/thread"
CHATLINK_SANITIZE=$spec CHATLINK_SANITIZE_REPORTS="$out/integration" \
  CHATLINK_BIN="$repo/$(scratch "${builds[0]}")/debug" \
  Tests/integration/run.sh -k test_sanitized_runs || {
    "$python" "$here/reports.py" check "$out/integration/address" "$out/integration/thread" || true
    echo "sanitize: the integration subset failed" >&2
    exit 1
  }
"$python" "$here/reports.py" check "$out/integration/address" "$out/integration/thread"
phase "integration subset, 0 reports"
echo "sanitize: ${builds[*]}: 0 reports in $(( SECONDS - started )) s"
