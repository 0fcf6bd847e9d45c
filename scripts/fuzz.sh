#!/usr/bin/env bash
# Builds and runs the libFuzzer target for the pure WebSocket module (decoder, assembler,
# inflate, handshake, UTF-8), for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]          default: $FUZZ_SECONDS, else 60
#   scripts/fuzz.sh --build-only       just build .build/fuzz/websocket-fuzzer
#   .build/fuzz/websocket-fuzzer FILE  replay one input (e.g. a crash artifact)
#
# Exits non-zero when libFuzzer reports a crash, an invariant failure, a leak, a timeout or
# an out-of-memory, after printing the artifact's path and a hex dump of it.
#
# Needs only the Swift toolchain and Debian's libssl-dev, zlib1g-dev and pkg-config (the same
# packages `swift build` needs); nothing is downloaded. Everything it writes is under
# .build/fuzz/: the committed seed corpus (Fuzz/corpus/websocket) is copied into a scratch
# corpus there, so a run never modifies the repository.
#
# How the build works, and the tricks it needs:
#  - swiftc directly, not SwiftPM: SwiftPM cannot build a libFuzzer executable whose main()
#    comes from libclang_rt.fuzzer. The module's sources and Fuzz/WebSocketFuzzer.swift are
#    compiled as one module (no `import WebSocket`), which also reaches internal API.
#  - -parse-as-library: without it the fuzzer file would be treated as top-level code and
#    Swift would emit its own `main`, clashing with libFuzzer's.
#  - -sanitize=fuzzer,address: swiftc adds the coverage instrumentation and links
#    libclang_rt.fuzzer and ASan from the toolchain (/opt/swift/usr/lib/clang/*/lib/linux).
#  - -I Sources/CZlib -I Sources/COpenSSL: the system-library module maps; their `link`
#    lines pull in -lz -lssl -lcrypto, which are also given explicitly.
#  - -use-ld=lld when the toolchain ships ld.lld: with the default gold linker the ASan
#    runtime makes it print thousands of "Cannot export local symbol" warnings (harmless).
#  - -swift-version 6: the package builds the module in the Swift 6 language mode.
#  - FUZZ_SWIFT_FLAGS (env) adds swiftc flags, e.g. FUZZ_SWIFT_FLAGS=-DFUZZ_SKIP_SERVER_PARTIAL
#    to step around a known, reported bug while hunting for others (see the fuzzer source).
#  - SWIFT_BACKTRACE=enable=no at run time: Swift's own crash backtracer reads the crashed
#    process's memory from a helper thread, which ASan reports as a second, bogus error;
#    libFuzzer's and ASan's handlers print the stack instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

OUT=.build/fuzz
BIN="$OUT/websocket-fuzzer"
SEEDS=Fuzz/corpus/websocket
DICT=Fuzz/websocket.dict
BUILD_ONLY=0
if [[ "${1:-}" == "--build-only" ]]; then
  BUILD_ONLY=1
  shift
fi
DURATION="${1:-${FUZZ_SECONDS:-60}}"
if ! [[ "$DURATION" =~ ^[0-9]+$ ]]; then
  echo "fuzz.sh: SECONDS must be a whole number, got '$DURATION'" >&2
  exit 2
fi

SWIFTC="${SWIFTC:-$(command -v swiftc || true)}"
if [[ -z "$SWIFTC" ]]; then
  echo "fuzz.sh: swiftc not found on PATH" >&2
  exit 1
fi
if ! pkg-config --exists openssl zlib; then
  echo "fuzz.sh: OpenSSL or zlib headers missing (apt-get install libssl-dev zlib1g-dev" \
    "pkg-config)" >&2
  exit 1
fi

mkdir -p "$OUT"
LINKER=()
if [[ -x "$(dirname "$SWIFTC")/ld.lld" ]] || command -v ld.lld >/dev/null; then
  LINKER=(-use-ld=lld)
fi
# The module's sources, sorted so the build is the same wherever the glob runs.
mapfile -t SOURCES < <(find Sources/WebSocket -maxdepth 1 -name '*.swift' | LC_ALL=C sort)
echo "fuzz.sh: building $BIN (${#SOURCES[@]} module sources)"
# shellcheck disable=SC2046,SC2086  # pkg-config output and FUZZ_SWIFT_FLAGS are flag lists
"$SWIFTC" -module-name ChatLinkFuzz -parse-as-library -swift-version 6 \
  -sanitize=fuzzer,address -g -O \
  "${SOURCES[@]}" Fuzz/WebSocketFuzzer.swift \
  -I Sources/CZlib -I Sources/COpenSSL \
  $(pkg-config --cflags-only-I openssl zlib | sed 's/-I/-Xcc -I/g') \
  $(pkg-config --libs openssl zlib) \
  "${LINKER[@]}" ${FUZZ_SWIFT_FLAGS:-} -o "$BIN"
if [[ "$BUILD_ONLY" == 1 ]]; then
  exit 0
fi

# A scratch corpus: libFuzzer adds every new interesting input to its first corpus dir.
WORK="$OUT/corpus"
ARTIFACTS="$OUT/artifacts"
rm -rf "$WORK" "$ARTIFACTS"
mkdir -p "$WORK" "$ARTIFACTS"
cp "$SEEDS"/* "$WORK"/

export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}"
SYMBOLIZER="$(dirname "$SWIFTC")/llvm-symbolizer"
if [[ -x "$SYMBOLIZER" ]]; then
  export ASAN_SYMBOLIZER_PATH="$SYMBOLIZER"
fi

echo "fuzz.sh: fuzzing for ${DURATION}s (log: $OUT/fuzz.log)"
set +e
"$BIN" -max_total_time="$DURATION" -timeout=10 -rss_limit_mb=2048 -max_len=70000 \
  -dict="$DICT" -print_final_stats=1 -artifact_prefix="$ARTIFACTS/" "$WORK" 2>&1 \
  | tee "$OUT/fuzz.log"
STATUS=${PIPESTATUS[0]}
set -e

mapfile -t FOUND < <(find "$ARTIFACTS" -type f | LC_ALL=C sort)
if [[ "$STATUS" -ne 0 || "${#FOUND[@]}" -gt 0 ]]; then
  echo "fuzz.sh: FAILED (libFuzzer exit status $STATUS)" >&2
  for artifact in "${FOUND[@]}"; do
    echo "fuzz.sh: artifact $artifact ($(wc -c <"$artifact") bytes); replay with:" >&2
    echo "  SWIFT_BACKTRACE=enable=no $BIN $artifact" >&2
    # The first 4 KiB only (od | head would die of SIGPIPE under pipefail on big inputs).
    head -c 4096 "$artifact" | od -An -tx1 -v >&2
  done
  exit 1
fi
echo "fuzz.sh: no crash in ${DURATION}s; $(find "$WORK" -type f | wc -l) inputs in $WORK"
