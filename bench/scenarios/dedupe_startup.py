"""10c. Start-up with a big store whose records carry message ids (issue 33: "start-up with a
5M-record store and ids on stays within 2× of today's"): chatlinkd with ids on, which fills its
dedupe window from the store's tail before the link connects, against the same store with ids
off, and against an older build (BENCH_BASELINE_BIN, a directory with its chatlinkd) when given.

"The window rebuilt" is observable without a hook: the daemon starts its link only once the
window holds what the store held (Daemon.swift, `whenDedupeReady`), and until then GetStatus
says `idle`. So each trial times spawn → READY=1 (sd_notify), → the first GetStatus reply, →
the first reply whose state is past `idle` (the link started: the window rebuilt), → `open`.

A clean stop writes the window to `dedupe-window` in the store's directory, and so does a running
daemon every `DedupeSnapshotSec=` (60 s) while records come; a start reads it back and then the
records stored after it, instead of the tail. "ids on" is the start after a clean stop (the
snapshot its untimed first start's stop wrote, put back before each trial, since the other
subjects share the store); "after a crash, a checkpoint behind" starts from a snapshot taken
`CHECKPOINT_BEHIND` records before the store's end (by a daemon started on the store without
them: hard links to the rotated files and the live file cut short), as a crash a while after the
last checkpoint does; "after a crash, no snapshot" and "every room" start without one (a store
whose snapshot was deleted, or the first start with ids)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import gen_store
from harness import CACHE, CHATLINKD, GOPEER, Chatlinkd, LoadMeter, Lines, median, spawn, stop
from report import Report, check, fmt, ratio_text
from scenarios.settings import REPS, RUN, SCALE
from scenarios.steps import interleaved
from scenarios.store import NotifyListener

STARTUP_RECORDS = 5_000_000 // SCALE
STARTUP_MAX_FILES = 32  # more than the id store's files: the retention removes nothing
CHECKPOINT_BEHIND = 10_000 // SCALE  # records stored after the last checkpoint
STARTUP_LIMIT = 2.0  # ids on within 2× of ids off (and of the baseline build)
BASELINE = os.environ.get("BENCH_BASELINE_BIN")
MILESTONES = ["READY=1", "control socket answers", "link started (window rebuilt)", "open"]
SNAPSHOT = "dedupe-window"
EVERY_ROOM = ",".join(str(r) for r in [*range(1, 21), gen_store.RARE_ROOM])
LABELS = {
    "ids off": "ids off (no IDField=): no window to fill",
    "ids on": "ids on (`IDField=msg_id`), after a clean stop: the window read from its snapshot",
    "ids on, checkpoint behind": f"ids on, after a crash {CHECKPOINT_BEHIND:,} records after the last checkpoint: "
                                 "its snapshot and the records after it",
    "ids on, after a crash": "ids on, after a crash, no snapshot: the window filled from the newest records",
    "ids on, every room": f"ids on, `Rooms={EVERY_ROOM}`, after a crash: the rare room's ids looked up "
                          "through the room indexes, back to the store's oldest file (the worst case)",
    "baseline": f"baseline build ({BASELINE}), no IDField=",
}


def startup_trial(daemon: Chatlinkd, binary: Path, notify: NotifyListener) -> dict[str, float]:
    """One start: the milestones' times after spawn, in seconds; then a clean stop."""
    clean = {k: v for k, v in os.environ.items() if k not in ("LISTEN_FDS", "LISTEN_PID")}
    clean["NOTIFY_SOCKET"] = notify.path
    t0 = time.monotonic()
    daemon.proc = spawn([binary, "--config", daemon.config], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, env=clean)
    times = {"READY=1": notify.wait_ready() - t0}
    client = daemon.client()
    state = client.status()["state"]
    times["control socket answers"] = time.monotonic() - t0
    deadline = t0 + 120
    while state == "idle" and time.monotonic() < deadline:
        time.sleep(0.0005)
        state = client.status()["state"]
    times["link started (window rebuilt)"] = time.monotonic() - t0
    while state != "open" and time.monotonic() < deadline:
        time.sleep(0.0005)
        state = client.status()["state"]
    times["open"] = time.monotonic() - t0
    client.close()
    daemon.stop()
    if state != "open":
        raise RuntimeError(f"{binary}: not connected within 120 s of its start")
    return times


def checkpoint_behind(store_dir: Path, work: Path, url: str, store: dict, notify: NotifyListener) -> bytes:
    """The snapshot a checkpoint `CHECKPOINT_BEHIND` records before the store's end leaves: a
    clean stop of a daemon with ids on a copy of the store without those records (hard links to
    the rotated files, the live file cut short)."""
    early = work / "early-store"
    shutil.rmtree(early, ignore_errors=True)
    early.mkdir(parents=True)
    for f in store_dir.glob("messages.jsonl.*"):
        os.link(f, early / f.name)
    live = (store_dir / "messages.jsonl").read_bytes()
    end = len(live) - 1  # the last line's newline
    for _ in range(CHECKPOINT_BEHIND):
        end = live.rindex(b"\n", 0, end)
    (early / "messages.jsonl").write_bytes(live[:end + 1])
    daemon = Chatlinkd(work / "early", url, Store={**store, "Directory": early}, Envelope={"IDField": "msg_id"})
    daemon.store = early
    startup_trial(daemon, CHATLINKD, notify)
    saved = (early / SNAPSHOT).read_bytes()
    shutil.rmtree(early, ignore_errors=True)
    return saved


def run(report: Report) -> None:
    store_dir = CACHE / "bigstore-ids" / "state"
    t0 = time.monotonic()
    files = gen_store.generate(store_dir, STARTUP_RECORDS, ids=True)
    size = sum(f.stat().st_size for f in files)
    report.progress(f"id store: {len(files)} files, {size / 1e9:.2f} GB "
                    f"({time.monotonic() - t0:.0f} s to generate or find)")
    meter = LoadMeter()
    work = RUN / "dedupe-startup"
    shutil.rmtree(work, ignore_errors=True)
    backend = spawn([GOPEER, "count", "-n", 0])
    port = Lines(backend).expect(lambda l: int(l.split()[1]) if l.startswith("port ") else None, 15, "port")
    url = f"ws://127.0.0.1:{port}/"
    store = {"Directory": store_dir, "MaxFiles": STARTUP_MAX_FILES}
    subjects = {
        "ids off": (CHATLINKD, Chatlinkd(work / "off", url, Store=store)),
        "ids on": (CHATLINKD, Chatlinkd(work / "on", url, Store=store, Envelope={"IDField": "msg_id"})),
        "ids on, checkpoint behind": (CHATLINKD, Chatlinkd(work / "behind", url, Store=store,
                                                           Envelope={"IDField": "msg_id"})),
        "ids on, after a crash": (CHATLINKD, Chatlinkd(work / "crash", url, Store=store,
                                                       Envelope={"IDField": "msg_id"})),
        "ids on, every room": (CHATLINKD, Chatlinkd(work / "rooms", url, Store=store, Backend={"Rooms": EVERY_ROOM},
                                                    Envelope={"IDField": "msg_id"})),
    }
    if BASELINE:
        subjects["baseline"] = (Path(BASELINE) / "chatlinkd", Chatlinkd(work / "baseline", url, Store=store))
    for _, daemon in subjects.values():
        daemon.store = store_dir
    subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)  # a warm page cache
    notify = NotifyListener(RUN / "notify-dedupe.sock")
    # Untimed first starts: the live file's room index, and the rotated files' ones the worst
    # case looks up, are written once (as a store that has run before has them).
    snapshot = store_dir / SNAPSHOT
    for binary, daemon in subjects.values():
        snapshot.unlink(missing_ok=True)
        startup_trial(daemon, binary, notify)
    snapshot.unlink(missing_ok=True)
    startup_trial(subjects["ids on"][1], CHATLINKD, notify)
    saved = snapshot.read_bytes()  # the window as a clean stop of "ids on" leaves it
    behind = checkpoint_behind(store_dir, work, url, store, notify)
    reps = max(REPS, 5)
    times: dict[str, list[dict[str, float]]] = {s: [] for s in subjects}
    for rep, subject in interleaved(list(subjects), reps):
        binary, daemon = subjects[subject]
        snapshot.unlink(missing_ok=True)
        if subject in ("ids on", "ids on, checkpoint behind"):
            snapshot.write_bytes(saved if subject == "ids on" else behind)
            snapshot.chmod(0o600)
        times[subject].append(startup_trial(daemon, binary, notify))
        if subject == "ids on" and not snapshot.exists():
            raise RuntimeError("a clean stop of chatlinkd with ids left no dedupe window snapshot")
        report.progress(f"dedupe start-up rep {rep + 1} {subject}: " + ", ".join(
            f"{k} {v * 1000:.1f} ms" for k, v in times[subject][-1].items()))
    stop(backend)
    load = meter.stop()

    def med(subject, milestone):
        return median(t[milestone] for t in times[subject]) * 1000

    rows = [[LABELS[s], *(fmt(med(s, m), 1) for m in MILESTONES),
             ratio_text(med(s, MILESTONES[2]), med("ids off", MILESTONES[2]))] for s in subjects]
    report.table(
        f"10c. Start-up with {STARTUP_RECORDS:,} records with ids in {len(files)} files ({size / 1e9:.2f} GB, "
        f"20 rooms and a rare one), warm cache: ms from spawn, median of {reps}",
        ["chatlinkd", *(f"{m} ms" for m in MILESTONES), "link started ÷ ids off"],
        rows,
    )
    checks = []
    references = ["ids off"] + (["baseline"] if BASELINE else [])
    for subject in ("ids on", "ids on, checkpoint behind", "ids on, after a crash"):
        for reference in references:
            for milestone in (MILESTONES[0], MILESTONES[2]):
                ours, theirs = med(subject, milestone), med(reference, milestone)
                checks.append(check(f"start-up with {subject} ≤ {STARTUP_LIMIT:.0f}× {reference}'s, {milestone}: "
                                    f"{ours:.1f} vs {theirs:.1f} ms = {ours / theirs:.2f}×",
                                    ours <= STARTUP_LIMIT * theirs))
    report.targets(checks)
    report.note(
        "The store is `gen_store.py --ids`: every record has the backend's id (`\"id\":\"m-…\"` after its "
        "`\"type\"`, and `\"msg_id\"` in the event's data). With ids on the daemon reads its window's snapshot "
        "(written by the last clean stop or checkpoint, about 3 MB for 20 rooms × 10,000 ids) and the records "
        "after it or, with no snapshot, the newest 200,000 records, on its disk thread, before its link starts; READY=1 does not wait for that, the "
        "link does. The link-started time is the first GetStatus "
        "reply (polled every 0.5 ms on one connection) whose state is past `idle`: with ids off that is the "
        "first reply. `open` adds the WebSocket handshake with a local Go backend. "
        + ("" if BASELINE else "No baseline build was given (BENCH_BASELINE_BIN=DIR adds one)."))
    report.load(load)
