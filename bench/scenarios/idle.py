"""5. Idle: chatlinkd and the peers connected to chatlink-devserver and doing nothing, their
memory and CPU; and the size of the binaries."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from harness import (
    BENCH, CHATLINKCTL, CHATLINKD, DEVSERVER, GOPEER, PYTHON, Chatlinkd, LoadMeter, Lines, cpu_ns, hwm_mb,
    median, rss_mb, spawn, status_kb, stop,
)
from report import Report, check, fmt, ratio_text
from scenarios.settings import QUICK, REPS, RUN
from scenarios.steps import fresh, wait_open

IDLE_SECONDS = float(os.environ.get("BENCH_IDLE_SECONDS", 10 if QUICK else 60))


def idle_trial() -> dict:
    work = fresh("idle")
    dev = spawn([DEVSERVER, "--port", 0])
    port = Lines(dev).expect(lambda l: int(l.rsplit(":", 1)[1].strip("/")) if "listening on" in l else None, 15, "port")
    url = f"ws://127.0.0.1:{port}/"
    daemon = Chatlinkd(work, url, Backend={"Rooms": "7", "PingIntervalSec": 10})
    procs = {"chatlinkd": daemon.start(),
             "Go gorilla": spawn([GOPEER, "client", "-url", url, "-n", 0, "-out", work / "go.jsonl"]),
             "Python websockets": spawn([PYTHON, BENCH / "peers" / "py_client.py", url, 0, work / "py.jsonl"])}
    client = daemon.client()
    wait_open(client)
    client.close()
    time.sleep(2)  # settle: connected, room joined, start-up allocations done
    before = {k: cpu_ns(p.pid) for k, p in procs.items()}
    t0 = time.monotonic()
    time.sleep(IDLE_SECONDS)
    wall = time.monotonic() - t0
    values = {k: {"cpu_percent": 100 * (cpu_ns(p.pid) - before[k]) / 1e9 / wall, "rss": rss_mb(p.pid),
                  "hwm": hwm_mb(p.pid), "anon": status_kb(p.pid, "RssAnon") / 1024,
                  "file": status_kb(p.pid, "RssFile") / 1024} for k, p in procs.items()}
    for p in procs.values():
        stop(p)
    stop(dev)
    shutil.rmtree(work, ignore_errors=True)
    return values


def stripped_size(path: Path) -> float:
    out = RUN / "stripped" / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, out)
    subprocess.run(["strip", "--strip-unneeded", "--remove-section=.comment", "--remove-section=.note", out], check=True)
    return out.stat().st_size / 1e6


def run(report: Report) -> None:
    meter = LoadMeter()
    trials = []
    for rep in range(REPS):
        trials.append(idle_trial())
        report.progress(f"idle rep {rep + 1}: " + ", ".join(
            f"{k} {v['rss']:.1f} MB {v['cpu_percent']:.3f}%" for k, v in trials[-1].items()))
    load = meter.stop()
    subjects = list(trials[0])

    def med(subject, key):
        return median(t[subject][key] for t in trials)

    rows = [[s, fmt(med(s, "rss"), 2), fmt(med(s, "anon"), 2), fmt(med(s, "file"), 2), fmt(med(s, "hwm"), 2),
             f"{med(s, 'cpu_percent'):.3f}%",
             ratio_text(med("Go gorilla", "rss"), med(s, "rss"))] for s in subjects]
    report.table(
        f"5a. Idle: connected to chatlink-devserver, PingIntervalSec=10, {IDLE_SECONDS:g} s windows, median of {REPS}",
        ["client", "RSS MB", "of it anon MB", "of it file MB", "peak RSS MB", "CPU", "Go RSS ÷ RSS"],
        rows,
    )
    rss, cpu = med("chatlinkd", "rss"), med("chatlinkd", "cpu_percent")
    report.targets([check(f"idle RSS ≤ 6 MB: {rss:.2f} MB", rss <= 6),
                    check(f"idle CPU < 0.1%: {cpu:.3f}%", cpu < 0.1)])
    rows = [[name, fmt(path.stat().st_size / 1e6, 1), fmt(stripped_size(path), 1)]
            for name, path in (("chatlinkd", CHATLINKD), ("chatlinkctl", CHATLINKCTL),
                               ("chatlink-devserver", DEVSERVER), ("Go peer (gorilla), for scale", GOPEER))]
    report.table("5b. Binary size (static Swift runtime, chatlinkctl a static PIE; strip --strip-unneeded)", ["binary", "built MB", "stripped MB"], rows)
    report.note("CPU is the sum of every thread's schedstat run time over the window. The Go peer "
                "sends no pings of its own; the Python peer pings every 20 s (its default).")
    report.load(load)
