#!/usr/bin/env bash
# Prints llvm-cov's line coverage per target after `swift test --enable-code-coverage`, and
# fails if a pure layer drops below its floor (the team aims for 90% there).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bin=$(swift build --show-bin-path)
profdata="$bin/codecov/default.profdata"
tests="$bin/ChatLinkPackageTests.xctest"
# The toolchain's llvm-cov matches its profile format; Debian's may be older.
llvmcov="$(dirname "$(readlink -f "$(command -v swift)")")/llvm-cov"
[ -x "$llvmcov" ] || llvmcov=llvm-cov
"$llvmcov" export -summary-only -instr-profile="$profdata" "$tests" \
  -ignore-filename-regex='(Tests/|\.build/)' >"$bin/codecov/summary.json"
python3 - "$bin/codecov/summary.json" <<'PY'
import json, sys, collections
floors = {  # pure layers, unit-tested without sockets
    "WebSocket": 90.0, "JSON": 90.0, "Varlink": 90.0, "LinkCore": 90.0, "ChatLinkAPI": 90.0,
}
data = json.load(open(sys.argv[1]))["data"][0]
per = collections.defaultdict(lambda: [0, 0])
for f in data["files"]:
    parts = f["filename"].split("/Sources/")
    if len(parts) < 2:
        continue
    target = parts[1].split("/")[0]
    lines = f["summary"]["lines"]
    per[target][0] += lines["covered"]
    per[target][1] += lines["count"]
print("%-22s %8s %8s %8s" % ("target", "lines", "covered", "cover"))
failed = []
for target in sorted(per):
    covered, count = per[target]
    pct = 100.0 * covered / count if count else 100.0
    floor = floors.get(target)
    mark = "" if floor is None else ("  (floor %.0f%%)" % floor)
    print("%-22s %8d %8d %7.2f%%%s" % (target, count, covered, pct, mark))
    if floor is not None and pct < floor:
        failed.append("%s %.2f%% < %.0f%%" % (target, pct, floor))
total = data["totals"]["lines"]
print("%-22s %8d %8d %7.2f%%" % ("TOTAL", total["count"], total["covered"], total["percent"]))
if failed:
    print("coverage below floor: " + "; ".join(failed))
    sys.exit(1)
PY
