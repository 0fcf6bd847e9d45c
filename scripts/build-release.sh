#!/usr/bin/env bash
# Builds the release binaries that the package ships and the benchmark measures, and copies
# them into DEST:
#
#   scripts/build-release.sh DEST PRODUCT...      e.g. dist/bin chatlinkd chatlinkctl
#   RELEASE_SCRATCH=DIR                           SwiftPM's scratch path (default .build)
#
# Every product links the Swift runtime statically (--static-swift-stdlib), so it needs only
# Debian's libraries. chatlinkctl goes one step further: it is a static PIE, glibc included.
# It is started once per command, often from scripts, and a dynamic executable spends most of
# its short run in the kernel's exec, the dynamic loader and libstdc++'s start-up; the
# static PIE needs no dynamic loader and keeps ASLR (a plain -static build would start a
# little faster still, at the price of fixed addresses; bench/README.md has the
# figures). chatlinkctl calls nothing that glibc can only provide through dlopen (NSS,
# iconv); chatlinkd resolves host names and group names, so it stays dynamic.
#
# A static PIE needs lld (gold cannot link one; the toolchain ships lld) and no DT_RUNPATH:
# glibc's start-up code asserts that a static PIE has none, and SwiftPM adds $ORIGIN unless
# told not to. So chatlinkctl has a scratch path of its own, and each binary is run once here
# (`--version`, for the two that ship) before it is copied, so a build that cannot start never ships.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: scripts/build-release.sh DEST PRODUCT..." >&2; exit 2; }
dest=$1
shift
scratch=${RELEASE_SCRATCH:-$repo/.build}
cd "$repo"
mkdir -p "$dest"

# Every product: lld, and DT_RELR (glibc 2.36): the statically linked Swift runtime brings many
# relative relocations, which the dynamic loader would otherwise read from a large table at
# every start; packed as a bitmap the table is small, so a daemon starts with fewer pages
# resident (its peak RSS is its start-up's; bench/README.md has the figures).
relr=(
  -Xswiftc -use-ld=lld
  -Xlinker -z -Xlinker pack-relative-relocs
)
static_pie=(
  -Xswiftc -static-executable
  -Xswiftc -Xclang-linker -Xswiftc -static-pie
)

# chatlinkd: every function in a section of its own, linked in the order of
# scripts/chatlinkd.order (scripts/make-order-file.sh says why: the functions an idle daemon
# runs sit together, so far fewer of its code pages are resident). lld places the functions the
# file does not name, or that it cannot move, in their usual order. And no exported symbols
# (--no-export-dynamic): nothing is ever loaded into the daemon that would look its functions
# up, and the table of thousands of them only made the file larger.
order=$repo/scripts/chatlinkd.order
ordered=(
  -Xswiftc -Xfrontend -Xswiftc -function-sections
  -Xlinker "--symbol-ordering-file=$order"
  -Xlinker --no-warn-symbol-ordering
  -Xlinker --no-export-dynamic
)

# order_found BINARY: how many of the order file's functions BINARY defines, as "N of M".
order_found() {
  local names found
  names=$(grep -v '^#' "$order" | sort -u)
  found=$(nm --defined-only "$1" | awk '{print $3}' | sort -u | comm -12 - <(echo "$names") | wc -l)
  echo "$found of $(echo "$names" | wc -l)"
}

for product in "$@"; do
  # No $ORIGIN RUNPATH (Debian policy 10.2: packaged binaries carry no RPATH or RUNPATH; with
  # the Swift runtime linked in, nothing is looked up beside the binary anyway).
  flags=(-c release --static-swift-stdlib --disable-local-rpath -Xswiftc -warnings-as-errors "${relr[@]}")
  where=$scratch
  if [ "$product" = chatlinkctl ]; then
    flags+=("${static_pie[@]}")
    where=$scratch/static-pie
  fi
  if [ "$product" = chatlinkd ]; then
    flags+=("${ordered[@]}")
    where=$scratch/ordered
  fi
  swift build "${flags[@]}" --scratch-path "$where" --product "$product"
  bin="$(swift build "${flags[@]}" --scratch-path "$where" --show-bin-path)/$product"
  case $product in
  chatlinkd | chatlinkctl)
    "$bin" --version >/dev/null || { echo "build-release: $bin does not start" >&2; exit 1; } ;;
  esac
  if [ "$product" = chatlinkd ] && command -v nm >/dev/null; then
    # A stale order costs memory, not correctness; say when it has drifted.
    found=$(order_found "$bin")
    echo "build-release: chatlinkd defines $found functions of scripts/chatlinkd.order"
    if [ "${found%% *}" -lt $(( $(echo "$found" | awk '{print $3}') * 9 / 10 )) ]; then
      echo "build-release: warning: the order has drifted from the code; rerun scripts/make-order-file.sh" >&2
    fi
  fi
  install -m 0755 "$bin" "$dest/$product"
done
