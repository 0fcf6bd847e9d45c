"""The steps trials of every kind take: interleaved repetitions, a settled disk, a fresh work
directory, counting stored lines, the flood source, timing a command, waiting for a connection."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from harness import BENCH, PYTHON, Lines, spawn
from scenarios.settings import RUN


def interleaved(subjects, reps):
    """Rep 0 runs a, b, c; rep 1 runs b, c, a; …: no subject always goes first or last."""
    for rep in range(reps):
        k = rep % len(subjects)
        for subject in subjects[k:] + subjects[:k]:
            yield rep, subject


def settle_disk() -> None:
    """Writes back what earlier trials left dirty (a peer's 200 MB of lines, say) before the
    next one starts: chatlinkd fsyncs and the peers do not, so that writeback would otherwise
    land in chatlinkd's fsyncs, in whichever trial happens to come next."""
    os.sync()


def fresh(name: str) -> Path:
    path = RUN / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def count_lines(paths) -> int:
    total = 0
    for path in paths:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 22):
                total += chunk.count(b"\n")
    return total


def last_line(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.seek(max(0, f.seek(0, 2) - 4096))
        return f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]


def source_proc(*args) -> tuple:
    proc = spawn([PYTHON, BENCH / "source.py", *args])
    lines = Lines(proc)
    return proc, lines, lines.json("port", 15)


def wait_open(client, timeout=15):
    deadline = time.monotonic() + timeout
    while client.status()["state"] != "open":
        if time.monotonic() > deadline:
            raise TimeoutError("chatlinkd did not connect")
        time.sleep(0.01)


def timed(args) -> float:
    t0 = time.perf_counter()
    result = subprocess.run([str(a) for a in args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if result.returncode != 0:
        raise RuntimeError(f"{args[0]} failed: {result.stderr.decode()[-300:]}")
    return elapsed
