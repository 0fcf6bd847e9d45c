"""Instructions per inbound message: chatlinkd under valgrind's callgrind during an inbound flood,
for A/B decisions on changes too small for the VM's timing noise.

    .venv/bin/python bench/instructions.py [N] [BINARY...]      (N default 100000)

Each BINARY (default: the release chatlinkd that `make bench` and `make profile` build) takes a
flood of N and one of 2N frames of 200 B (`Sync=batch`, the same frames as scenario 1); the
difference of the two totals over N is the instructions one message costs, start-up and shutdown
subtracted. Counts are of user-space instructions (the kernel's work, and time spent waiting, are
not in them) and change little from run to run, where this VM's timings move by ±5 %; it has no
hardware counters for `perf stat`. Prints one line per binary and, for the last one, the
functions that cost most at 2N (callgrind_annotate, inclusive of nothing).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import source  # noqa: E402
from harness import BENCH, CACHE, CHATLINKD, PYTHON, Chatlinkd, DurablePoller, Lines, spawn, stop  # noqa: E402


def total_instructions(binary: Path, n: int, out: Path) -> int:
    """callgrind's total Ir for chatlinkd taking a flood of n, from start to a clean stop."""
    blob = source.build_flood(n, 200, False, CACHE / "blobs")
    work = CACHE / "run" / "instructions"
    shutil.rmtree(work, ignore_errors=True)
    src = spawn([PYTHON, BENCH / "source.py", "flood", blob])
    src_lines = Lines(src)
    port = src_lines.json("port", 15)
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Compression": "no"},
                       Store={"Sync": "batch", "SyncIntervalMSec": 50})
    wrapper = work / "chatlinkd-under-callgrind"
    wrapper.write_text(f'#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={out} {binary} "$@"\n')
    wrapper.chmod(0o755)
    proc = spawn([wrapper, "--config", daemon.config], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    daemon.proc = proc
    poller = DurablePoller(daemon.client(timeout=60), interval=0.05, target=n)
    poller.start()
    src_lines.json("connected", 60)
    if not poller.reached.wait(600):
        raise RuntimeError(f"{binary}: {n} records not durable under callgrind")
    poller.stop()
    poller.client.close()
    stop(proc)  # SIGTERM: chatlinkd stops cleanly and callgrind writes its totals
    stop(src)
    shutil.rmtree(work, ignore_errors=True)
    for _ in range(50):
        for line in out.read_text().splitlines() if out.exists() else []:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
        time.sleep(0.1)
    raise RuntimeError(f"{out}: no totals")


def main() -> None:
    args = sys.argv[1:]
    n = int(args.pop(0)) if args and args[0].isdigit() else 100_000
    binaries = [Path(a).resolve() for a in args] or [CHATLINKD]
    if not shutil.which("valgrind"):
        sys.exit("instructions: valgrind is missing (Debian: valgrind)")
    out = CACHE / "callgrind-flood.out"
    for binary in binaries:
        one = total_instructions(binary, n, out)
        two = total_instructions(binary, 2 * n, out)
        print(f"{binary}: {(two - one) / n:,.0f} instructions a message "
              f"(totals {one / 1e6:,.0f}M at {n:,}, {two / 1e6:,.0f}M at {2 * n:,})", flush=True)
    top = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True).stdout
    rows = [line for line in top.splitlines() if "(" in line and "%)" in line][1:21]
    demangled = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(rows),
                               capture_output=True, text=True).stdout
    print(f"\nTop functions by own instructions at {2 * n:,} messages ({binaries[-1].name}):")
    print(demangled)


if __name__ == "__main__":
    main()
