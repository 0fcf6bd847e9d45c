"""9. Scale: chatlinkd taking ten million messages while its store rotates, beside 200,000 with
the same settings and the write limit appending the same bytes."""

from __future__ import annotations

import shutil

from harness import (
    Chatlinkd, DurablePoller, LoadMeter, Trial, cpu_seconds, hwm_mb, median, stop, thread_cpu, thread_io,
)
from report import Report, check, fmt
import source
from scenarios.settings import BLOBS, MESSAGE_SIZE, REPS, SCALE, SYNC_INTERVAL_MS
from scenarios.steps import count_lines, fresh, last_line, settle_disk, source_proc
from scenarios.write_limit import STORED, WRITE_SIZES, keep_stored, write_limit_trial

SCALE_N = 10_000_000 // SCALE
SCALE_SMALL_N = 200_000 // SCALE
# A stored line of the flood is about 300 bytes: files of this size rotate at least ten times
# in SCALE_N messages, and MaxFiles keeps every one of them (so every line can be counted).
SCALE_FILE_SIZE = SCALE_N * 300 // 12
SCALE_MAX_FILES = 16


def scale_trial(subject: str, n: int) -> Trial:
    """chatlinkd taking a flood of n with small store files (rotating ≥ 10 times at SCALE_N),
    or the minimal writer appending the bytes it stored (after a chatlinkd trial at n)."""
    if subject == "write limit":
        return write_limit_trial(subject, n)
    blob = source.build_flood(n, MESSAGE_SIZE, False, BLOBS)
    settle_disk()
    work = fresh("scale")
    meter = LoadMeter()
    src, src_lines, port = source_proc("flood", blob)
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Compression": "no"},
                       Store={"Sync": "batch", "SyncIntervalMSec": SYNC_INTERVAL_MS,
                              "MaxFileSize": SCALE_FILE_SIZE, "MaxFiles": SCALE_MAX_FILES})
    proc = daemon.start()
    poller = DurablePoller(daemon.client(), interval=0.002, target=n)
    poller.start()
    connected = src_lines.json("connected", 120)
    # The threads' CPU from here on: the flood's, without the daemon's start (which would
    # weigh 50 times more per message at the small N). The first frames may already be in.
    # The disk's side is the writing thread and the one that fsyncs beside it.
    loop0 = thread_cpu(proc.pid, "chatlinkd")
    disk0 = thread_cpu(proc.pid, "chatlink-disk") + thread_cpu(proc.pid, "chatlink-sync")
    if not poller.reached.wait(max(120, n / 10_000)) or poller.error:
        raise RuntimeError(f"scale: {n} records not durable: {poller.error}")
    cpu, hwm = cpu_seconds(proc.pid), hwm_mb(proc.pid)
    loop_cpu = thread_cpu(proc.pid, "chatlinkd") - loop0
    disk_cpu = thread_cpu(proc.pid, "chatlink-disk") + thread_cpu(proc.pid, "chatlink-sync") - disk0
    disk_io = thread_io(proc.pid, "chatlink-disk")
    poller.stop()
    poller.client.close()
    stop(proc)
    stop(src)
    load = meter.stop()
    files = sorted(daemon.store.glob("messages.jsonl*"))
    lines = count_lines(files)
    tail = last_line(daemon.store / "messages.jsonl")
    if lines != n or f'"message":"#{n - 1:07d} '.encode() not in tail:
        raise RuntimeError(f"scale: {lines} lines of {n} in {len(files)} files, last {tail[:100]!r}")
    # The write limit at this N appends these bytes in these write sizes.
    WRITE_SIZES.setdefault((n, "batch"), []).append(disk_io["wchar"] / max(1, disk_io["syscw"]))
    keep_stored(n, files)
    shutil.rmtree(work, ignore_errors=True)

    def reached(count: int) -> float:
        """When durable_seq first covered `count` (the poll that saw it)."""
        return next(t for t, d in poller.samples if d >= count)

    def rate_between(a: float, b: float) -> float:
        """msgs/s from a·n to b·n durable records (0 when one poll saw both). durable_seq moves
        once per group commit (50 ms), so the span must hold many commits to mean anything."""
        seconds = reached(int(b * n)) - reached(int(a * n))
        return (b - a) * n / seconds if seconds > 0 else 0.0

    # Two fifths away from the start (the connection) and the end (the last group commit).
    done = poller.samples[-1][0]
    values = {"rate": n / (done - connected), "cpu": cpu, "hwm": hwm, "files": len(files),
              "loop": loop_cpu, "disk": disk_cpu,
              "first": rate_between(0.1, 0.3), "last": rate_between(0.7, 0.9)}
    return Trial(subject, values, load.others_percent)


def run(report: Report) -> None:
    meter = LoadMeter()
    for n in (SCALE_N, SCALE_SMALL_N):  # build the blobs before timing anything
        source.build_flood(n, MESSAGE_SIZE, False, BLOBS)
    # Other scenarios' stored bytes were taken with other store settings: not these.
    STORED.clear()
    WRITE_SIZES.clear()
    results: dict[int, dict[str, list[Trial]]] = {}
    for n in (SCALE_N, SCALE_SMALL_N):
        results[n] = {"chatlinkd": [], "write limit": []}
        # chatlinkd first in each repetition: the writer appends what it stored.
        for rep in range(REPS):
            for subject in ("chatlinkd", "write limit"):
                trial = scale_trial(subject, n)
                results[n][subject].append(trial)
                v = trial.values
                extra = (f", {v['files']} files, loop thread {1e9 * v['loop'] / n:,.0f} ns a message, disk thread "
                         f"{1e9 * v['disk'] / n:,.0f}, {v['first']:,.0f}/s at 10–30 %, {v['last']:,.0f}/s at 70–90 %"
                         if subject == "chatlinkd" else "")
                report.progress(f"scale N={n:,} rep {rep + 1} {subject}: {v['rate']:,.0f} msg/s, "
                                f"{v['cpu']:.2f} CPU s{extra}")
    load = meter.stop()

    def med(n, key, subject="chatlinkd"):
        return median(t.values[key] for t in results[n][subject])

    def per_message(n, key, subject="chatlinkd"):
        return 1e9 * med(n, key, subject) / n

    rows = []
    for n in (SCALE_SMALL_N, SCALE_N):
        rates = [t.values["rate"] for t in results[n]["chatlinkd"]]
        limit = med(n, "rate", "write limit")
        rows.append([f"{n:,}", f"{med(n, 'rate'):,.0f}", f"{min(rates):,.0f}–{max(rates):,.0f}",
                     f"{limit:,.0f}", f"{100 * med(n, 'rate') / limit:.0f}%",
                     f"{per_message(n, 'loop'):,.0f}", f"{per_message(n, 'disk'):,.0f}",
                     f"{per_message(n, 'cpu', 'write limit'):,.0f}",
                     f"{med(n, 'first'):,.0f}" if n == SCALE_N else "—",
                     f"{med(n, 'last'):,.0f}" if n == SCALE_N else "—",
                     f"{int(med(n, 'files'))}", fmt(med(n, "hwm"), 1),
                     fmt(median(t.others_percent for t in results[n]["chatlinkd"]), 0) + "%"])
    report.table(
        f"9. Scale: chatlinkd (Sync=batch) taking {SCALE_N:,} messages of ~{MESSAGE_SIZE} B with "
        f"MaxFileSize={SCALE_FILE_SIZE:,} (MaxFiles={SCALE_MAX_FILES}), beside {SCALE_SMALL_N:,} with the "
        f"same settings, and the write limit (bench/peers/writelimit.c) appending the same bytes",
        ["N", "msgs/s", "range", "write limit lines/s", "% of it", "loop thread CPU ns a message (from connect)",
         "disk and sync threads CPU ns a message", "writer's CPU ns a line", "msgs/s, 10–30 % of N",
         "msgs/s, 70–90 % of N", "store files", "peak RSS MB", "others' CPU"],
        rows,
    )
    big, small = med(SCALE_N, "rate"), med(SCALE_SMALL_N, "rate")
    loop_big, loop_small = per_message(SCALE_N, "loop"), per_message(SCALE_SMALL_N, "loop")
    report.targets([
        check(f"msgs/s at {SCALE_N:,} ≥ 90 % of msgs/s at {SCALE_SMALL_N:,}: {big:,.0f} vs {small:,.0f} "
              f"= {100 * big / small:.0f} %", big >= 0.9 * small),
        check(f"the store rotated ≥ 10 times: {int(med(SCALE_N, 'files'))} files", med(SCALE_N, "files") >= 11),
        check(f"rate flat as the store grows: {med(SCALE_N, 'last'):,.0f} msgs/s from 70 to 90 % of N, "
              f"{med(SCALE_N, 'first'):,.0f} from 10 to 30 % (≥ 90 %)",
              med(SCALE_N, "last") >= 0.9 * med(SCALE_N, "first")),
        check(f"chatlinkd's own work per message flat: the loop thread's CPU {loop_big:,.0f} ns a message at "
              f"{SCALE_N:,}, {loop_small:,.0f} at {SCALE_SMALL_N:,} (≤ +10 %)", loop_big <= 1.1 * loop_small),
    ])
    report.note(
        "Every line is counted across all store files after each trial, and the last one checked. "
        "The rates within the run are timed from the durable_seq polls (every 2 ms), between the "
        "first polls that covered 10 % and 30 % of N (and 70 % and 90 %): away from the connection's "
        f"start and the last group commit (too short to time at {SCALE_SMALL_N:,}). The disk "
        "thread's CPU is mostly the kernel's: the page-cache copy of its writes and the fsyncs; "
        "the writer's beside it shows what the same bytes cost the kernel without chatlinkd "
        "(on this VM, pages the guest touches for the first time cost much more than pages it "
        "reuses, which is why both grow with N). Peak RSS is the daemon's VmHWM.")
    report.load(load)
