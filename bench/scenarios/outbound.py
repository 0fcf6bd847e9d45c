"""3. Outbound: `chatlinkctl send -` streaming a million lines to the Go counting backend, and
single `status` and `send` calls beside the Python varlink package's."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from harness import (
    BENCH, CHATLINKCTL, GOPEER, PYTHON, Chatlinkd, LoadMeter, Lines, Trial, cpu_seconds, median, percentile,
    spawn, stop,
)
from report import Report, check, fmt, ratio_text
from scenarios.settings import QUICK, REPS, RUN, SCALE
from scenarios.steps import fresh, interleaved, settle_disk, timed, wait_open

# What the target names: a stream of 1M lines, each acknowledged once durable.
STREAM_N = 1_000_000 // SCALE
# Each streaming run takes about a second, so a single slow one (a busy moment of the VM)
# moves a median of 3 a lot: take at least 5.
STREAM_REPS = max(REPS, 5)
SINGLE_CALLS = 10 if QUICK else 50


def stream_trial(lines_file: Path, n: int) -> Trial:
    settle_disk()
    work = fresh("outbound")
    meter = LoadMeter()
    backend = spawn([GOPEER, "count", "-n", n])
    backend_lines = Lines(backend)
    port = backend_lines.expect(lambda l: int(l.split()[1]) if l.startswith("port ") else None, 15, "port")
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Rooms": "1"})
    proc = daemon.start()
    client = daemon.client()
    wait_open(client)
    cpu0 = cpu_seconds(proc.pid)
    with open(lines_file, "rb") as stdin:
        t0 = time.monotonic()
        ctl = spawn([CHATLINKCTL, "--socket", daemon.socket, "send", "--room", "1", "-"], stdin=stdin,
                    stdout=subprocess.DEVNULL)
        done = backend_lines.done(max(120, n / 2000))
        rc = ctl.wait(60)
        ctl_done = time.monotonic()
    cpu = cpu_seconds(proc.pid) - cpu0
    status = client.status()
    client.close()
    daemon.stop()
    stop(backend)
    load = meter.stop()
    if rc != 0:
        raise RuntimeError(f"chatlinkctl send - exited with {rc}")
    shutil.rmtree(work, ignore_errors=True)
    values = {"rate": n / (done - t0), "seconds": done - t0, "ctl_seconds": ctl_done - t0,
              "cpu": cpu, "confirmed": status["confirmed"]}
    return Trial("stream", values, load.others_percent)


def run(report: Report) -> None:
    meter = LoadMeter()
    lines_file = RUN / f"send-{STREAM_N}.txt"
    RUN.mkdir(parents=True, exist_ok=True)
    lines_file.write_text("".join(f"bench line {i:07d}: the build is green, deploy at 14:00\n" for i in range(STREAM_N)))
    # One short untimed run first: the scenario's first run came out slow every time (116k
    # and 170k msgs/s where the runs after it gave 180k-270k); that is warm-up, not what a
    # stream costs.
    warm_file = RUN / f"send-{STREAM_N // 10}.txt"
    warm_file.write_text("".join(f"warm-up line {i:07d}\n" for i in range(STREAM_N // 10)))
    stream_trial(warm_file, STREAM_N // 10)
    streams = []
    for rep in range(STREAM_REPS):
        trial = stream_trial(lines_file, STREAM_N)
        streams.append(trial)
        report.progress(f"streaming send rep {rep + 1}: {trial.values['rate']:,.0f} msg/s")

    # Single calls: one daemon, process wall time of each call, interleaved.
    work = fresh("single")
    backend = spawn([GOPEER, "count", "-n", 0])
    port = Lines(backend).expect(lambda l: int(l.split()[1]) if l.startswith("port ") else None, 15, "port")
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Rooms": "1"})
    daemon.start()
    client = daemon.client()
    wait_open(client)
    client.close()
    sock = daemon.socket
    calls = {
        ("status", "chatlinkctl"): [CHATLINKCTL, "--socket", sock, "status"],
        ("status", "Python varlink"): [PYTHON, BENCH / "peers" / "varlink_call.py", sock, "status"],
        ("send", "chatlinkctl"): [CHATLINKCTL, "--socket", sock, "send", "--room", "1", "hello from the bench"],
        ("send", "Python varlink"): [PYTHON, BENCH / "peers" / "varlink_call.py", sock, "send", "1", "hello from the bench"],
    }
    times: dict = {key: [] for key in calls}
    for key in calls:  # warm the page cache once
        timed(calls[key])
    for _, key in interleaved(list(calls), SINGLE_CALLS):
        times[key].append(timed(calls[key]))
    daemon.stop()
    stop(backend)
    shutil.rmtree(work, ignore_errors=True)
    load = meter.stop()

    rate = median(t.values["rate"] for t in streams)
    rates = [t.values["rate"] for t in streams]
    report.table(
        f"3a. Outbound streaming: `chatlinkctl send -` with {STREAM_N:,} lines, until the backend "
        f"(Go gorilla counting server) has them all",
        ["client", "msgs/s", "range", "time s", "chatlinkctl exits after s", "daemon CPU s", "others' CPU"],
        [["chatlinkctl send -", f"{rate:,.0f}", f"{min(rates):,.0f}–{max(rates):,.0f}",
          fmt(median(t.values["seconds"] for t in streams), 2),
          fmt(median(t.values["ctl_seconds"] for t in streams), 2),
          fmt(median(t.values["cpu"] for t in streams), 2),
          fmt(median(t.others_percent for t in streams), 0) + "%"]],
    )
    report.targets([check(f"streaming send ≥ 1,000,000 msgs/s: {rate:,.0f}", rate >= 1_000_000)])
    rows, checks = [], []
    for verb in ("status", "send"):
        ours = median(times[(verb, "chatlinkctl")]) * 1000
        peer = median(times[(verb, "Python varlink")]) * 1000
        for who, value in (("chatlinkctl", ours), ("Python varlink", peer)):
            samples = sorted(times[(verb, who)])
            rows.append([f"{verb}: {who}", fmt(value, 1), fmt(samples[0] * 1000, 1),
                         fmt(percentile(samples, 90) * 1000, 1), ratio_text(peer, value)])
        checks.append(check(f"single `{verb}` ≥ 10× faster than Python varlink: {ours:.1f} ms vs {peer:.1f} ms = {peer / ours:.1f}×", peer >= 10 * ours))
    report.table(
        f"3b. Single calls: process wall time, median of {SINGLE_CALLS} (interleaved)",
        ["call", "median ms", "min ms", "p90 ms", "Python varlink ÷ this"],
        rows,
    )
    report.targets(checks)
    report.note("`send` replies once the message is fsynced in the outbox, so both clients wait for "
                "one fsync; the Python peer's time includes its interpreter start, as a user's would.")
    report.load(load)
