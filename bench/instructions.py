"""Instructions per message: chatlinkd under valgrind's callgrind during an inbound flood (or a
streamed send), for A/B decisions on changes too small for the VM's timing noise.

    .venv/bin/python bench/instructions.py [--send | --ids=off|nowindow|on] [N] [BINARY...]  (N 100000)

With --ids=off, --ids=nowindow and --ids=on, the flood's messages carry message ids round 10
rooms, and chatlinkd leaves them in the data (IDField= unset), reads and stores them without a
dedupe window (IDField=msg_id, DedupeWindow=0), or reads them into its window too (IDField=msg_id):
on against off is what ids cost a message in all, on against nowindow what the window alone costs.

With --send, each run streams N (then 2N) lines through `chatlinkctl send -` (the release
chatlinkctl next to the first BINARY's default) to the Go counting backend, as scenario 3a does.

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
from harness import (  # noqa: E402
    BENCH, CACHE, CHATLINKCTL, CHATLINKD, GOPEER, PYTHON, Chatlinkd, DurablePoller, Lines, spawn, stop,
)


def under_callgrind(binary: Path, daemon: Chatlinkd, work: Path, out: Path) -> subprocess.Popen:
    wrapper = work / "chatlinkd-under-callgrind"
    wrapper.write_text(f'#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={out} {binary} "$@"\n')
    wrapper.chmod(0o755)
    proc = spawn([wrapper, "--config", daemon.config], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    daemon.proc = proc
    return proc


def totals(out: Path) -> int:
    for _ in range(50):
        for line in out.read_text().splitlines() if out.exists() else []:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
        time.sleep(0.1)
    raise RuntimeError(f"{out}: no totals")


def flood_instructions(binary: Path, n: int, out: Path, ids: str | None = None) -> int:
    """callgrind's total Ir for chatlinkd taking a flood of n, from start to a clean stop. With
    `ids`, the flood's messages carry ids round 10 rooms, and chatlinkd reads them into its
    dedupe window when `ids` is "on" (IDField=msg_id), reads them without a window when it is
    "nowindow" (DedupeWindow=0 too), and leaves them in the data when it is "off"."""
    if ids is None:
        blob = source.build_flood(n, 200, False, CACHE / "blobs")
    else:
        blob = source.build_id_flood(n, 200, 10, CACHE / "blobs")
    work = CACHE / "run" / "instructions"
    shutil.rmtree(work, ignore_errors=True)
    src = spawn([PYTHON, BENCH / "source.py", "flood", blob])
    src_lines = Lines(src)
    port = src_lines.json("port", 15)
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Compression": "no"},
                       Store={"Sync": "batch", "SyncIntervalMSec": 50,
                              **({"DedupeWindow": 0} if ids == "nowindow" else {})},
                       **({"Envelope": {"IDField": "msg_id"}} if ids in ("on", "nowindow") else {}))
    work.mkdir(parents=True, exist_ok=True)
    proc = under_callgrind(binary, daemon, work, out)
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
    return totals(out)


def send_instructions(binary: Path, n: int, out: Path) -> int:
    """callgrind's total Ir for chatlinkd sending n lines of `chatlinkctl send -` to the Go
    counting backend, from start to a clean stop."""
    lines_file = CACHE / "run" / f"send-{n}.txt"
    lines_file.parent.mkdir(parents=True, exist_ok=True)
    lines_file.write_text("".join(f"bench line {i:07d}: the build is green, deploy at 14:00\n" for i in range(n)))
    work = CACHE / "run" / "instructions"
    shutil.rmtree(work, ignore_errors=True)
    backend = spawn([GOPEER, "count", "-n", n])
    backend_lines = Lines(backend)
    port = backend_lines.expect(lambda l: int(l.split()[1]) if l.startswith("port ") else None, 15, "port")
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Rooms": "1"})
    work.mkdir(parents=True, exist_ok=True)
    proc = under_callgrind(binary, daemon, work, out)
    client = daemon.client(timeout=60)
    deadline = time.monotonic() + 60
    while client.status()["state"] != "open":
        if time.monotonic() > deadline:
            raise RuntimeError(f"{binary}: not connected under callgrind")
        time.sleep(0.05)
    client.close()
    with open(lines_file, "rb") as stdin:
        ctl = spawn([CHATLINKCTL, "--socket", daemon.socket, "send", "--room", "1", "-"], stdin=stdin,
                    stdout=subprocess.DEVNULL)
        backend_lines.done(600)
        if ctl.wait(600) != 0:
            raise RuntimeError("chatlinkctl send - failed under callgrind")
    stop(proc)
    stop(backend)
    shutil.rmtree(work, ignore_errors=True)
    return totals(out)


def main() -> None:
    args = sys.argv[1:]
    send = bool(args) and args[0] == "--send"
    if send:
        args.pop(0)
    ids = None
    if args and args[0].startswith("--ids="):
        ids = args.pop(0).split("=", 1)[1]
    total_instructions = send_instructions if send else (
        (lambda b, n, o: flood_instructions(b, n, o, ids)) if ids else flood_instructions)
    n = int(args.pop(0)) if args and args[0].isdigit() else 100_000
    binaries = [Path(a).resolve() for a in args] or [CHATLINKD]
    if not shutil.which("valgrind"):
        sys.exit("instructions: valgrind is missing (Debian: valgrind)")
    out = CACHE / ("callgrind-send.out" if send else "callgrind-flood.out")
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
