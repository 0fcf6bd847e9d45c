"""4. Big store: `chatlinkctl history` on millions of records beside grep, and chatlinkd's
start-up with that store beside `wc -l`."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from harness import CACHE, CHATLINKCTL, GOPEER, Chatlinkd, LoadMeter, Lines, median, rss_mb, spawn, stop
from report import Report, check, fmt, ratio_text
import gen_store
from scenarios.settings import REPS, RUN, SCALE
from scenarios.steps import interleaved, timed

STORE_RECORDS = 5_000_000 // SCALE
STORE_MAX_FILES = 24


class NotifyListener:
    """A tiny NOTIFY_SOCKET for sd_notify: a datagram socket we read READY=1 from."""

    def __init__(self, path: Path):
        path.unlink(missing_ok=True)
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(30)

    def wait_ready(self) -> float:
        while True:
            data = self.sock.recv(4096)
            if b"READY=1" in data.split(b"\n"):
                return time.monotonic()


def run(report: Report) -> None:
    store_dir = CACHE / "bigstore" / "state"
    t0 = time.monotonic()
    files = gen_store.generate(store_dir, STORE_RECORDS)
    report.progress(f"big store: {len(files)} files, {sum(f.stat().st_size for f in files) / 1e9:.2f} GB "
                    f"({time.monotonic() - t0:.0f} s to generate or find)")
    oldest_first = [str(f) for f in reversed(files)]
    meter = LoadMeter()
    work = RUN / "store"
    shutil.rmtree(work, ignore_errors=True)
    backend = spawn([GOPEER, "count", "-n", 0])
    port = Lines(backend).expect(lambda l: int(l.split()[1]) if l.startswith("port ") else None, 15, "port")
    # gen_store writes the files directly, as a store from before room indexes would be: the
    # rotated files get theirs from the first query that needs them (timed below, once), the
    # live file from the daemon's disk thread at start. Start from none at all every run.
    shutil.rmtree(store_dir / ".index", ignore_errors=True)
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Store={"Directory": store_dir, "MaxFiles": STORE_MAX_FILES})
    daemon.store = store_dir
    proc = daemon.start()
    daemon.client().close()
    subprocess.run(["cat", *[str(f) for f in files]], stdout=subprocess.DEVNULL, check=True)  # warm cache
    first_rare = timed([CHATLINKCTL, "--socket", daemon.socket, "history", "--room", gen_store.RARE_ROOM, "--limit", 100])
    quoted = " ".join(f"'{f}'" for f in oldest_first)
    queries = {}
    for room in (gen_store.COMMON_ROOM, gen_store.RARE_ROOM):
        queries[(room, "chatlinkctl history")] = [CHATLINKCTL, "--socket", daemon.socket, "history", "--room", room, "--limit", 100]
        queries[(room, "grep | tail")] = ["sh", "-c", f"LC_ALL=C grep -h '\"room\":{room}' {quoted} | tail -n 100"]
    for key, args in queries.items():  # warm the page cache, and check both give 100 records
        out = subprocess.run([str(a) for a in args], capture_output=True, check=True).stdout
        count = sum(1 for line in out.splitlines() if line.strip()) if "grep" in key[1] else None
        if count is not None and count != 100:
            raise RuntimeError(f"{key}: {count} lines")
    json_out = subprocess.run([str(CHATLINKCTL), "--socket", daemon.socket, "--json", "history", "--room",
                               str(gen_store.RARE_ROOM), "--limit", "100"], capture_output=True, check=True).stdout
    if len(json_out.splitlines()) != 100:
        raise RuntimeError(f"history --json gave {len(json_out.splitlines())} records, not 100")
    times: dict = {key: [] for key in queries}
    reps = max(REPS, 5)
    for _, key in interleaved(list(queries), reps):
        times[key].append(timed(queries[key]))
    history_rss = rss_mb(proc.pid)
    daemon.stop()

    # Start-up with that store: spawn → READY=1 (sd_notify), and → first GetStatus reply.
    notify = NotifyListener(RUN / "notify.sock")
    startup = {"chatlinkd READY=1": [], "chatlinkd control socket answers": [], "wc -l": []}
    wc = ["wc", "-l", *oldest_first]
    subprocess.run(wc, capture_output=True, check=True)
    for rep, what in interleaved(["chatlinkd", "wc"], reps):
        if what == "wc":
            startup["wc -l"].append(timed(wc))
            continue
        t0 = time.monotonic()
        daemon.start(env={"NOTIFY_SOCKET": notify.path})
        ready = notify.wait_ready() - t0
        client = daemon.client()
        client.status()
        answered = time.monotonic() - t0
        client.close()
        daemon.stop()
        startup["chatlinkd READY=1"].append(ready)
        startup["chatlinkd control socket answers"].append(answered)
    stop(backend)
    load = meter.stop()

    rows, checks = [], []
    for room, label in ((gen_store.COMMON_ROOM, "common room (5% of records)"),
                        (gen_store.RARE_ROOM, "rare room, worst case (100 records spread over the store)")):
        ours = median(times[(room, "chatlinkctl history")]) * 1000
        peer = median(times[(room, "grep | tail")]) * 1000
        rows.append([f"room {room}, {label}", fmt(ours, 1), fmt(peer, 1), ratio_text(peer, ours)])
        checks.append(check(f"history room {room} ≥ 10× faster than grep: {ours:.1f} ms vs {peer:.1f} ms = {peer / ours:.1f}×", peer >= 10 * ours))
    size = sum(f.stat().st_size for f in files)
    report.table(
        f"4a. Big store: {STORE_RECORDS:,} records in {len(files)} files ({size / 1e9:.2f} GB, "
        f"MaxFileSize=64M, MaxFiles={STORE_MAX_FILES}), `history --room R --limit 100`, median of {reps}, warm cache",
        ["query", "chatlinkctl history ms", "grep + tail ms", "grep ÷ history"],
        rows,
    )
    report.targets(checks)
    wc_ms = median(startup["wc -l"]) * 1000
    rows = [[k, fmt(median(v) * 1000, 1), fmt(min(v) * 1000, 1), ratio_text(wc_ms, median(v) * 1000)]
            for k, v in startup.items()]
    report.table(f"4b. Start-up with that store, median of {reps}", ["what", "median ms", "min ms", "wc -l ÷ this"], rows)
    ready_ms = median(startup["chatlinkd READY=1"]) * 1000
    report.targets([check(f"start-up ≥ 10× faster than wc -l: READY=1 after {ready_ms:.1f} ms vs {wc_ms:.1f} ms = {wc_ms / ready_ms:.1f}×",
                          wc_ms >= 10 * ready_ms)])
    report.note(f"Before the first query no rotated file had a room index (the store was written by gen_store.py, "
                f"as by a chatlinkd without indexes): that query, which indexes the {len(files) - 1} rotated files, took "
                f"{first_rare * 1000:.0f} ms; every later one reads only the blocks that may hold the room.")
    report.note(f"The peer is `LC_ALL=C grep -h '\"room\":R' FILES… | tail -n 100` over the files oldest first; "
                f"the rare room is the worst case for a reader that goes backwards from the end; both read from a warm page cache. "
                f"chatlinkd's RSS after the history queries: {history_rss:.1f} MB.")
    report.load(load)
