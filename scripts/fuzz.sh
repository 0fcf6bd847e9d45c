#!/usr/bin/env bash
# Builds and runs the libFuzzer targets, each for a bounded time:
#
#   websocket  Tests/Fuzz/WebSocketFuzzer.swift: the pure WebSocket module (decoder, assembler,
#              inflate, handshake, UTF-8)
#   varlink    Tests/Fuzz/VarlinkFuzzer.swift: VarlinkFramer, VarlinkCall/VarlinkReply, and the JSON
#              target under them (JSONScanner, JSONValue, JSONString)
#   config     Tests/Fuzz/ConfigFuzzer.swift: INIParser and ConfigLoader (ChatLinkDaemon/Config)
#   socketio   Tests/Fuzz/SocketIOFuzzer.swift: Engine.IO/Socket.IO packets and SocketIOProtocol
#              reading a hostile server's frames (LinkCore)
#   mqtt       Tests/Fuzz/MQTTFuzzer.swift: MQTTDecoder on a stream cut anywhere, the encoder
#              against it, and MQTTProtocol reading a hostile broker's frames (LinkCore)
#   stomp      Tests/Fuzz/STOMPFuzzer.swift: STOMPDecoder whole or in pieces, STOMPEncoder round
#              trips, and STOMPProtocol reading a hostile broker's frames (LinkCore)
#   metrics    Tests/Fuzz/MetricsFuzzer.swift: MetricsRequestParser reading what anyone who
#              reaches the metrics port sends, and MetricsHTTPResponse (ChatLinkDaemon/Metrics)
#   dedupe     Tests/Fuzz/DedupeFuzzer.swift: the store's dedupe window (ChatLinkDaemon/Store):
#              DedupeRebuild.idAndRoom on any store line and on the store's own lines,
#              DedupeWindow against a model, and DedupeSnapshot on damaged snapshots
#   xmpp       Tests/Fuzz/XMPPFuzzer.swift: XMLFrameParser (expat) on RFC 7395 frames in any
#              split, XMLWriter round trips, SASLNegotiation and StreamNegotiation reading a
#              hostile server (XMPP)
#
#   scripts/fuzz.sh [SECONDS] [FUZZER...]   default: $FUZZ_SECONDS, else 60, for all of them
#                                           together: split 2:1:1:1:1:1:1:1:1 (60 s: 12
#                                           websocket, 6 each for the others), at least 1 s each; one
#                                           fuzzer named alone gets all of it
#   scripts/fuzz.sh --build-only [FUZZER...]  just build .build/fuzz/<name>-fuzzer
#   .build/fuzz/<name>-fuzzer FILE          replay one input (e.g. a crash artifact)
#
# Every fuzzer runs, even after one fails; the script then exits non-zero when any of them
# reported a crash, an invariant failure, a leak, a timeout or an out-of-memory, after
# printing each artifact's path and a hex dump of it. A summary line per fuzzer is printed
# at the end (executions, exec/s, coverage, corpus size, verdict).
#
# Needs only the Swift toolchain and Debian's libssl-dev, zlib1g-dev, libsystemd-dev,
# libexpat1-dev and pkg-config (the same packages `swift build` needs); nothing is downloaded. Everything it
# writes is under .build/fuzz/: the committed seed corpora (Tests/Fuzz/corpus/<name>) are copied
# into scratch corpora there (.build/fuzz/<name>/corpus), so a run never modifies the
# repository. New crashes are added to the committed corpus by hand (Tests/Fuzz/README.md).
#
# Known bugs. When a fuzzer finds a bug in Sources, its oracle stays, and a -D flag in
# KNOWN_BUGS below steps around that one bug, so the run stays useful (and green) for
# everything else while the fix is pending; the input that found it is committed in the
# corpus as crash-*. FUZZ_STRICT=1 drops those flags: the crash-* inputs then fail at once,
# until the bug is fixed. After a fix, delete the flag here (and its #if in the fuzzer).
#
# Why swiftc, and how the build works:
#  - swiftc directly, not SwiftPM: SwiftPM cannot link an executable whose main() comes from
#    libclang_rt.fuzzer, has no per-target way to add -sanitize=fuzzer (passing it with
#    -Xswiftc instruments and breaks every executable and test of the package), and would
#    need a package edit for each fuzz target. Plain swiftc needs nothing but the sources.
#  - Every target a fuzzer imports (ChatLinkDaemon imports WebSocket, WebSocketClient,
#    Transport, EventLoop, JSON, Varlink, ChatLinkAPI, LinkCore; those import each other and
#    CSystemd, CSystem, COpenSSL, CZlib) is built as its own module, the way SwiftPM does it:
#    `-parse-as-library -module-name <Target> -emit-module -wmo -c`, with
#    -sanitize=fuzzer,address, into .build/fuzz/modules/<Target>.{o,swiftmodule}, each after
#    the targets it imports, with -I for that directory and for the system-library module maps
#    (Sources/CSystemd, Sources/CSystem, Sources/COpenSSL, Sources/CZlib, Sources/CExpat,
#    Sources/CBucket), and one
#    -package-name as SwiftPM gives. The dependency graph is read from the sources' own
#    `import` lines (imports_of below), so it follows Package.swift without a copy of it.
#  - The fuzzer file is compiled against those modules and linked with their objects and
#    -lsystemd -lssl -lcrypto -lz -lexpat -lm (the modules' link lines ask for the same). varlink
#    and config use public API only; websocket instead compiles Sources/WebSocket/*.swift
#    together with Tests/Fuzz/WebSocketFuzzer.swift as one module, as it always has, so it keeps
#    reaching internal API (FUZZER_FLAT); WebSocket's own imports (JSON) are modules. dedupe
#    does the same with Sources/ChatLinkDaemon (DedupeRebuild and DedupeWindow are internal,
#    and the rebuild reads lines the way the store writes them, StoreRecord, also internal).
#  - A module or fuzzer is rebuilt only when a hash of the compiler, the flags, its sources
#    and its dependencies' hashes changes (.build/fuzz/modules/*.key, *-fuzzer.key), so a
#    second run builds nothing; a fresh checkout builds everything (about a minute).
#  - The config fuzzer embeds config/chatlinkd.conf (generated .build/fuzz/gen/Shipped.swift)
#    for its "uncommented defaults are the defaults" oracle.
#  - Tests/TestSupport/SplitMix64.swift, the tests' deterministic generator, is compiled into
#    every fuzzer as a source file (it imports nothing). The TestSupport module is not built:
#    it imports XCTest (and with it Foundation) and the loop, transport and WebSocket targets,
#    which no fuzzer needs and which would put a second WebSocket beside websocket's own copy.
#  - -parse-as-library: without it the fuzzer file would be treated as top-level code and
#    Swift would emit its own `main`, clashing with libFuzzer's.
#  - -sanitize=fuzzer,address: swiftc adds the coverage instrumentation and links
#    libclang_rt.fuzzer and ASan from the toolchain (/opt/swift/usr/lib/clang/*/lib/linux).
#  - -use-ld=lld when the toolchain ships ld.lld: with the default gold linker the ASan
#    runtime makes it print thousands of "Cannot export local symbol" warnings (harmless).
#  - -swift-version 6: the package builds every target in the Swift 6 language mode.
#  - FUZZ_SWIFT_FLAGS (env) adds swiftc flags to every fuzzer file, e.g. a -DFUZZ_KNOWN_<BUG>
#    to step around a bug for one local run before it goes into KNOWN_BUGS.
#  - SWIFT_BACKTRACE=enable=no at run time: Swift's own crash backtracer reads the crashed
#    process's memory from a helper thread, which ASan reports as a second, bogus error;
#    libFuzzer's and ASan's handlers print the stack instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

OUT=.build/fuzz
MODULES="$OUT/modules"
GEN="$OUT/gen"
ALL_FUZZERS=(websocket varlink config socketio mqtt stomp metrics dedupe xmpp)

# The target whose sources are compiled into the fuzzer's own module (internal API), if any;
# every other target it needs is found from the `import` lines and built as a module.
declare -A FUZZER_FLAT=([websocket]=WebSocket [varlink]="" [config]="" [socketio]="" [mqtt]="" [stomp]=""
  [metrics]=""
  [dedupe]=ChatLinkDaemon [xmpp]="")
declare -A FUZZER_SOURCE=(
  [websocket]=Tests/Fuzz/WebSocketFuzzer.swift
  [varlink]=Tests/Fuzz/VarlinkFuzzer.swift
  [config]=Tests/Fuzz/ConfigFuzzer.swift
  [socketio]=Tests/Fuzz/SocketIOFuzzer.swift
  [mqtt]=Tests/Fuzz/MQTTFuzzer.swift
  [stomp]=Tests/Fuzz/STOMPFuzzer.swift
  [metrics]=Tests/Fuzz/MetricsFuzzer.swift
  [dedupe]=Tests/Fuzz/DedupeFuzzer.swift
  [xmpp]=Tests/Fuzz/XMPPFuzzer.swift
)
declare -A WEIGHT=([websocket]=2 [varlink]=1 [config]=1 [socketio]=1 [mqtt]=1 [stomp]=1 [metrics]=1 [dedupe]=1 [xmpp]=1)
declare -A MAX_LEN=([websocket]=70000 [varlink]=70000 [config]=16384 [socketio]=70000 [mqtt]=70000 [stomp]=70000
  [metrics]=20000 [dedupe]=4096 [xmpp]=70000)
# Reported bugs in Sources that the fuzzers step around (see the header comment); each flag
# is explained where the fuzzer source tests it.
declare -A KNOWN_BUGS=(
  [websocket]=""
  [varlink]=""
  [config]=""
  [socketio]=""
  [mqtt]=""
  [stomp]=""
  [metrics]=""
  [dedupe]=""
  [xmpp]=""
)

BUILD_ONLY=0
if [[ "${1:-}" == "--build-only" ]]; then
  BUILD_ONLY=1
  shift
fi
DURATION="${FUZZ_SECONDS:-60}"
if [[ $# -gt 0 && -z "${FUZZER_SOURCE[$1]+x}" ]]; then
  DURATION="$1"
  shift
fi
if ! [[ "$DURATION" =~ ^[0-9]+$ ]]; then
  echo "fuzz.sh: SECONDS must be a whole number, got '$DURATION'" >&2
  exit 2
fi
SELECTED=("$@")
if [[ ${#SELECTED[@]} -eq 0 ]]; then
  SELECTED=("${ALL_FUZZERS[@]}")
fi
for name in "${SELECTED[@]}"; do
  if [[ -z "${FUZZER_SOURCE[$name]+x}" ]]; then
    echo "fuzz.sh: unknown fuzzer '$name' (known: ${ALL_FUZZERS[*]})" >&2
    exit 2
  fi
done

SWIFTC="${SWIFTC:-$(command -v swiftc || true)}"
if [[ -z "$SWIFTC" ]]; then
  echo "fuzz.sh: swiftc not found on PATH" >&2
  exit 1
fi
if ! pkg-config --exists openssl zlib libsystemd expat; then
  echo "fuzz.sh: OpenSSL, zlib, libsystemd or expat headers missing (apt-get install" \
    "libssl-dev zlib1g-dev libsystemd-dev libexpat1-dev pkg-config)" >&2
  exit 1
fi

mkdir -p "$OUT" "$MODULES" "$GEN"
LINKER=()
if [[ -x "$(dirname "$SWIFTC")/ld.lld" ]] || command -v ld.lld >/dev/null; then
  LINKER=(-use-ld=lld)
fi
read -r -a C_INCLUDES <<<"$(pkg-config --cflags-only-I openssl zlib libsystemd expat | sed 's/-I/-Xcc -I/g')"
read -r -a C_LIBS <<<"$(pkg-config --libs libsystemd openssl zlib expat) -lm"
SWIFT_VERSION="$("$SWIFTC" --version 2>&1 | head -n 1)"
COMMON=(-parse-as-library -swift-version 6 -package-name chatlink -sanitize=fuzzer,address -g -O)
MODULE_MAPS=(
  -I Sources/CSystemd -I Sources/CSystem -I Sources/COpenSSL -I Sources/CZlib -I Sources/CExpat
  -I Sources/CBucket
)
STRICT="${FUZZ_STRICT:-0}"
read -r -a EXTRA_FLAGS <<<"${FUZZ_SWIFT_FLAGS:-}"

# A target's sources, sorted so the build is the same wherever the glob runs.
sources_of() {
  find "Sources/$1" -name '*.swift' | LC_ALL=C sort
}

# imports_of FILE...: the package's Swift targets those files import, sorted. The graph comes
# from the sources themselves, so it follows Package.swift without a copy of it (C modules
# are found through the module maps instead).
imports_of() {
  local name
  sed -nE 's/^[[:space:]]*(@[A-Za-z_]+[[:space:]]+)*import[[:space:]]+((typealias|struct|class|enum|protocol|let|var|func)[[:space:]]+)?([A-Za-z_][A-Za-z0-9_]*).*/\4/p' \
    "$@" | LC_ALL=C sort -u | while read -r name; do
    if [[ -d "Sources/$name" && ! "$name" =~ ^C[A-Z] ]] &&
      [[ -n "$(find "Sources/$name" -name '*.swift' -print -quit)" ]]; then
      echo "$name"
    fi
  done
}

# hash_of LABEL FILE...: a hash of the compiler, the common flags, a label and the files.
hash_of() {
  local label="$1"
  shift
  {
    echo "$SWIFT_VERSION" "${COMMON[*]}" "${LINKER[*]}" "$label"
    sha256sum "$@"
  } | sha256sum | cut -d' ' -f1
}

# build_module TARGET: builds TARGET (after the targets it imports) unless its key is
# unchanged.
declare -A BUILT=()
VISITING=()
build_module() {
  local target="$1" dep
  [[ -n "${BUILT[$target]+x}" ]] && return 0
  if [[ " ${VISITING[*]} " == *" $target "* ]]; then
    echo "fuzz.sh: import cycle: ${VISITING[*]} $target" >&2
    exit 1
  fi
  VISITING+=("$target")
  local sources deps deps_keys=()
  mapfile -t sources < <(sources_of "$target")
  mapfile -t deps < <(imports_of "${sources[@]}" | grep -vx "$target" || true)
  for dep in "${deps[@]}"; do
    build_module "$dep"
    deps_keys+=("$MODULES/$dep.key")
  done
  unset 'VISITING[${#VISITING[@]}-1]'
  local key
  key="$(hash_of "module $target ${deps[*]}" "${sources[@]}" "${deps_keys[@]}" \
    Sources/C*/module.modulemap Sources/C*/*.h)"
  BUILT[$target]=1
  if [[ -f "$MODULES/$target.key" && "$(cat "$MODULES/$target.key")" == "$key" &&
    -f "$MODULES/$target.o" && -f "$MODULES/$target.swiftmodule" ]]; then
    return 0
  fi
  echo "fuzz.sh: building module $target (${#sources[@]} sources${deps[*]:+, imports ${deps[*]}})"
  rm -f "$MODULES/$target.key"
  "$SWIFTC" "${COMMON[@]}" -module-name "$target" -emit-module \
    -emit-module-path "$MODULES/$target.swiftmodule" -wmo -c -o "$MODULES/$target.o" \
    -I "$MODULES" "${MODULE_MAPS[@]}" "${C_INCLUDES[@]}" "${sources[@]}"
  echo "$key" >"$MODULES/$target.key"
}

# The shipped configuration as a Swift constant, for the config fuzzer.
generate_shipped_config() {
  local file="$GEN/Shipped.swift"
  {
    echo "// Generated by scripts/fuzz.sh from config/chatlinkd.conf: its bytes, in hex."
    echo "let shippedConfigHex = \"$(od -An -tx1 -v config/chatlinkd.conf | tr -d ' \n')\""
  } >"$file.new"
  # Rewritten only when it changes, so the fuzzer's key (a hash of its inputs) stays put.
  if cmp -s "$file.new" "$file"; then
    rm "$file.new"
  else
    mv "$file.new" "$file"
  fi
}

# build_fuzzer NAME: builds .build/fuzz/NAME-fuzzer unless its key is unchanged.
build_fuzzer() {
  local name="$1" bin="$OUT/$1-fuzzer" flat="${FUZZER_FLAT[$1]}" target
  local flags=("${EXTRA_FLAGS[@]}")
  if [[ "$STRICT" != 1 ]]; then
    # shellcheck disable=SC2206  # a flag list
    flags+=(${KNOWN_BUGS[$name]})
  fi
  local inputs=() objects=() keys=() imports
  if [[ -n "$flat" ]]; then
    mapfile -t inputs < <(sources_of "$flat")
  fi
  inputs+=("${FUZZER_SOURCE[$name]}" Tests/Fuzz/FuzzSupport.swift)
  if [[ "$name" == config ]]; then
    generate_shipped_config
    inputs+=("$GEN/Shipped.swift")
  fi
  inputs+=(Tests/TestSupport/SplitMix64.swift)
  mapfile -t imports < <(imports_of "${inputs[@]}" | grep -vx "${flat:-}" || true)
  for target in "${imports[@]}"; do
    build_module "$target"
  done
  # Every module reached, imported directly or not, is linked.
  local linked
  mapfile -t linked < <(printf '%s\n' "${imports[@]}" | while read -r target; do
    closure_of "$target"
  done | LC_ALL=C sort -u)
  for target in "${linked[@]}"; do
    objects+=("$MODULES/$target.o")
    keys+=("$MODULES/$target.key")
  done
  local key
  key="$(hash_of "fuzzer $name ${flags[*]}" "${inputs[@]}" "${keys[@]}" \
    Sources/C*/module.modulemap Sources/C*/*.h)"
  if [[ -x "$bin" && -f "$bin.key" && "$(cat "$bin.key")" == "$key" ]]; then
    echo "fuzz.sh: $bin is up to date"
    return 0
  fi
  echo "fuzz.sh: building $bin (${flat:+$flat sources and }${FUZZER_SOURCE[$name]}" \
    "${linked[*]:+against ${linked[*]}}${flags[*]:+; ${flags[*]}})"
  rm -f "$bin.key"
  "$SWIFTC" -module-name "${name^}Fuzz" "${COMMON[@]}" "${inputs[@]}" "${objects[@]}" \
    -I "$MODULES" "${MODULE_MAPS[@]}" "${C_INCLUDES[@]}" "${C_LIBS[@]}" \
    "${LINKER[@]}" "${flags[@]}" -o "$bin"
  echo "$key" >"$bin.key"
}

# closure_of TARGET: TARGET and every target it imports, directly or not.
closure_of() {
  local dep
  echo "$1"
  for dep in $(imports_of $(sources_of "$1") | grep -vx "$1" || true); do
    closure_of "$dep"
  done
}

for name in "${SELECTED[@]}"; do
  build_fuzzer "$name"
done
if [[ "$BUILD_ONLY" == 1 ]]; then
  exit 0
fi

# The time budget, split by weight; the rounding remainder goes to the first fuzzer.
TOTAL_WEIGHT=0
for name in "${SELECTED[@]}"; do
  TOTAL_WEIGHT=$((TOTAL_WEIGHT + WEIGHT[$name]))
done
declare -A SHARE=()
LEFT="$DURATION"
for name in "${SELECTED[@]}"; do
  SHARE[$name]=$((DURATION * WEIGHT[$name] / TOTAL_WEIGHT))
  LEFT=$((LEFT - SHARE[$name]))
done
SHARE[${SELECTED[0]}]=$((SHARE[${SELECTED[0]}] + LEFT))
for name in "${SELECTED[@]}"; do
  # libFuzzer reads -max_total_time=0 as "no limit".
  if [[ "${SHARE[$name]}" -lt 1 ]]; then
    SHARE[$name]=1
  fi
done

export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}"
SYMBOLIZER="$(dirname "$SWIFTC")/llvm-symbolizer"
if [[ -x "$SYMBOLIZER" ]]; then
  export ASAN_SYMBOLIZER_PATH="$SYMBOLIZER"
fi

FAILED=()
SUMMARY=()
for name in "${SELECTED[@]}"; do
  bin="$OUT/$name-fuzzer"
  dir="$OUT/$name"
  work="$dir/corpus"
  artifacts="$dir/artifacts"
  log="$dir/fuzz.log"
  seconds="${SHARE[$name]}"
  # A scratch corpus: libFuzzer adds every new interesting input to its first corpus dir.
  rm -rf "$work" "$artifacts"
  mkdir -p "$work" "$artifacts"
  cp Tests/Fuzz/corpus/"$name"/* "$work"/
  echo "fuzz.sh: fuzzing $name for ${seconds}s (log: $log)"
  set +e
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${MAX_LEN[$name]}" \
    -dict="Tests/Fuzz/$name.dict" -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" 2>&1 |
    tee "$log"
  status=${PIPESTATUS[0]}
  set -e

  # The last status line libFuzzer printed: "#N  DONE  cov: C ft: F corp: …  exec/s: E …".
  last="$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)"
  cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")"
  ft="$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")"
  execs="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")"
  rate="$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log")"
  inputs="$(find "$work" -type f | wc -l)"
  mapfile -t found < <(find "$artifacts" -type f | LC_ALL=C sort)
  if [[ "$status" -ne 0 || "${#found[@]}" -gt 0 ]]; then
    FAILED+=("$name")
    verdict="FAILED (libFuzzer exit status $status)"
    echo "fuzz.sh: $name FAILED (libFuzzer exit status $status)" >&2
    for artifact in "${found[@]}"; do
      echo "fuzz.sh: artifact $artifact ($(wc -c <"$artifact") bytes); replay with:" >&2
      echo "  SWIFT_BACKTRACE=enable=no $bin $artifact" >&2
      # The first 4 KiB only (od | head would die of SIGPIPE under pipefail on big inputs).
      head -c 4096 "$artifact" | od -An -tx1 -v >&2
    done
  else
    verdict="ok"
  fi
  SUMMARY+=("$(printf '%-9s %4ss  %9s execs  %6s exec/s  cov %5s  ft %6s  %6s inputs  %s' \
    "$name" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$inputs" "$verdict")")
done

echo "fuzz.sh: summary"
for line in "${SUMMARY[@]}"; do
  echo "  $line"
done
if [[ ${#FAILED[@]} -gt 0 ]]; then
  echo "fuzz.sh: FAILED: ${FAILED[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no crash in ${DURATION}s (${SELECTED[*]})"
