"""The write limit: what the disk allows a durable log on this machine, measured by a minimal
writer (bench/peers/writelimit.c) appending the bytes a chatlinkd trial of the same N stored,
in that trial's write sizes. The inbound and scale scenarios set chatlinkd beside it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness import WRITELIMIT, LoadMeter, Lines, Trial, median, spawn, stop
from scenarios.settings import BLOBS, SYNC_INTERVAL_MS
from scenarios.steps import fresh, settle_disk


# Per N: the bytes a chatlinkd trial stored (the write limit appends them again), and the mean
# write size of chatlinkd's disk thread by sync policy, from each trial's /proc/PID/task/TID/io.
STORED: dict[int, Path] = {}
WRITE_SIZES: dict[tuple[int, str], list[float]] = {}


def keep_stored(n: int, files: list[Path]) -> None:
    """The store's lines in order (rotated files, oldest first, then the live one), once per N."""
    if n in STORED:
        return
    rotated = sorted((f for f in files if f.suffix != ".jsonl"), key=lambda f: -int(f.suffix[1:]))
    live = [f for f in files if f.suffix == ".jsonl"]
    target = BLOBS / f"stored-{n}.jsonl"
    with open(target, "wb") as out:
        for f in rotated + live:
            with open(f, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
    STORED[n] = target


def write_limit_trial(subject: str, n: int) -> Trial:
    policy = "always" if subject == "write limit always" else "batch"
    sizes = WRITE_SIZES.get((n, policy))
    if n not in STORED or not sizes:
        raise RuntimeError(f"{subject}: no chatlinkd trial with Sync={policy} before it at N={n}")
    settle_disk()
    work = fresh("inbound")
    out = work / "limit.jsonl"
    sync = "always" if policy == "always" else f"batch:{SYNC_INTERVAL_MS}"
    meter = LoadMeter()
    proc = spawn([WRITELIMIT, STORED[n], out, int(median(sizes)), sync])
    result = Lines(proc).expect(lambda line: json.loads(line) if line.startswith("{") else None, 300,
                                "the writer's result")
    stop(proc)
    load = meter.stop()
    if result["lines"] != n or out.stat().st_size != STORED[n].stat().st_size:
        raise RuntimeError(f"{subject}: wrote {result['lines']} lines, {out.stat().st_size} bytes")
    shutil.rmtree(work, ignore_errors=True)
    values = {"seconds": result["seconds"], "rate": n / result["seconds"], "cpu": result["cpu"],
              "hwm": 0.0, "source_cpu": 0.0, "writes": result["writes"], "syncs": result["syncs"],
              "write_size": result["bytes"] / result["writes"]}
    return Trial(subject, values, load.others_percent)
