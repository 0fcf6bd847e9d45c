"""1. Inbound flood: chatlinkd taking N messages at once, beside the write limit and the Go and
Python peers, at two N (the issue names its targets at 200k and at 2M messages)."""

from __future__ import annotations

import shutil
import socket
import threading
import urllib.request

from harness import (
    BENCH, GOPEER, NCPU, PYTHON, Chatlinkd, DurablePoller, LoadMeter, Lines, Trial, cpu_seconds, hwm_mb, median,
    spawn, stop, thread_io,
)
from report import Report, check, fmt, ratio_text
import source
from scenarios.settings import BLOBS, MESSAGE_SIZE, REPS, SCALE, SYNC_INTERVAL_MS
from scenarios.steps import count_lines, fresh, interleaved, last_line, settle_disk, source_proc
from scenarios.write_limit import WRITE_SIZES, keep_stored, write_limit_trial

INBOUND_N = 2_000_000 // SCALE
INBOUND_SMALL_N = 200_000 // SCALE

# Each chatlinkd variant comes before its write limit: in the first repetition (the list's own
# order) the writer needs the stored bytes and write sizes of a chatlinkd trial of the run.
INBOUND_SUBJECTS = ["chatlinkd", "write limit", "chatlinkd scraped", "chatlinkd deflate", "chatlinkd always",
                    "write limit always", "Go gorilla", "Go gorilla buffered", "Python websockets",
                    "drain", "chatlinkd deflate nct", "Go gorilla deflate"]
# Subjects fed the blob compressed message by message (no context takeover), the only
# permessage-deflate gorilla/websocket speaks: the deflate target compares these two.
NO_CONTEXT_TAKEOVER = {"chatlinkd deflate nct", "Go gorilla deflate"}
# Subjects whose peak RSS says nothing about a client (a Python interpreter, a writer that holds
# the whole input in memory).
NO_RSS = {"drain", "write limit", "write limit always"}
GO_FLUSH_EVERY = 1000
LABELS = {
    "chatlinkd": "chatlinkd (Compression=no)",
    "write limit": f"write limit: the same bytes appended in chatlinkd's write sizes, fdatasync every {SYNC_INTERVAL_MS} ms",
    "chatlinkd scraped": "chatlinkd (Compression=no), its /metrics scraped every second",
    "chatlinkd deflate": "chatlinkd (Compression=yes, deflated frames)",
    "chatlinkd always": "chatlinkd (Compression=no, Sync=always)",
    "write limit always": "write limit, Sync=always: an fdatasync after each of chatlinkd's writes",
    "Go gorilla": "Go gorilla/websocket peer (a write per line)",
    "Go gorilla buffered": f"Go gorilla/websocket peer (a write per {GO_FLUSH_EVERY:,} lines)",
    "Python websockets": "Python websockets peer",
    "drain": "drain-only baseline (reads bytes)",
    "chatlinkd deflate nct": "chatlinkd (Compression=yes, each frame deflated on its own: no context takeover)",
    "Go gorilla deflate": "Go gorilla/websocket peer with compression (the same frames; a write per line)",
}


class Scraper(threading.Thread):
    """GET /metrics every second, as a Prometheus with a 1 s scrape interval would."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.done = threading.Event()
        self.scrapes = 0

    def run(self):
        while not self.done.wait(1.0):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                    r.read()
                self.scrapes += 1
            except OSError:
                pass


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inbound_trial(subject: str, n: int) -> Trial:
    if subject.startswith("write limit"):
        return write_limit_trial(subject, n)
    nct = subject in NO_CONTEXT_TAKEOVER
    deflate = subject == "chatlinkd deflate" or nct
    blob = source.build_flood(n, MESSAGE_SIZE, deflate, BLOBS, no_context_takeover=nct)
    settle_disk()
    work = fresh("inbound")
    meter = LoadMeter()
    src, src_lines, port = source_proc("flood", blob)
    url = f"ws://127.0.0.1:{port}/"
    timeout = max(120, n / 10_000)
    expected_text = f'"message":"#{n - 1:07d} '.encode()
    poller = None
    scraper = None
    disk_io: dict[str, int] = {}
    if subject.startswith("chatlinkd"):
        sync = "always" if subject == "chatlinkd always" else "batch"
        extra = {}
        if subject == "chatlinkd scraped":
            metrics_port = free_tcp_port()
            extra["Metrics"] = {"Listen": f"127.0.0.1:{metrics_port}"}
        # MaxFiles= past the default 8: 2M records take about ten 64 MB files, and every one
        # of them is counted after the run.
        daemon = Chatlinkd(work, url, Backend={"Compression": "yes" if deflate else "no"},
                           Store={"Sync": sync, "SyncIntervalMSec": SYNC_INTERVAL_MS,
                                  "MaxFiles": 16}, **extra)
        proc = daemon.start()
        if subject == "chatlinkd scraped":
            scraper = Scraper(metrics_port)
            scraper.start()
        poller = DurablePoller(daemon.client(), interval=0.002, target=n)
        poller.start()
        connected = src_lines.json("connected", 30)
        if not poller.reached.wait(timeout) or poller.error:
            raise RuntimeError(f"chatlinkd did not make {n} records durable: {poller.error}")
        done = poller.samples[-1][0]
        disk_io = thread_io(proc.pid, "chatlink-disk")
        newest = daemon.store / "messages.jsonl"
    else:
        out = work / "out.jsonl"
        if subject.startswith("Go gorilla"):
            flush = GO_FLUSH_EVERY if subject == "Go gorilla buffered" else 1
            args = [GOPEER, "client", "-url", url, "-n", n, "-out", out, "-flush", flush]
            if subject == "Go gorilla deflate":
                args.append("-compress")
        elif subject == "Python websockets":
            args = [PYTHON, BENCH / "peers" / "py_client.py", url, n, out]
        else:
            args = [PYTHON, BENCH / "peers" / "drain.py", "127.0.0.1", port, blob.stat().st_size]
        proc = spawn(args)
        connected = src_lines.json("connected", 30)
        done = Lines(proc).done(timeout)
        files, newest = ([out], out) if subject != "drain" else ([], None)
    seconds = done - connected
    cpu, hwm, src_cpu = cpu_seconds(proc.pid), hwm_mb(proc.pid), cpu_seconds(src.pid)
    if scraper:
        scraper.done.set()
        scraper.join(5)
    if poller:
        poller.stop()
        poller.client.close()
    stop(proc)
    stop(src)
    load = meter.stop()
    if subject.startswith("chatlinkd"):
        files = sorted(daemon.store.glob("messages.jsonl*"))
    if files:  # the same records, each exactly once, the last one last
        lines = count_lines(files)
        tail = last_line(newest)
        if lines != n or expected_text not in tail:
            raise RuntimeError(f"{subject}: {lines} lines of {n}, last line {tail[:120]!r}")
    values = {"seconds": seconds, "rate": n / seconds, "cpu": cpu, "hwm": hwm, "source_cpu": src_cpu}
    if disk_io.get("syscw"):
        # The disk thread's writes: the store's lines (and the room index's few blocks).
        values["write_size"] = disk_io["wchar"] / disk_io["syscw"]
        if subject in ("chatlinkd", "chatlinkd always"):
            WRITE_SIZES.setdefault((n, sync), []).append(values["write_size"])
        if subject == "chatlinkd":
            keep_stored(n, files)
    shutil.rmtree(work, ignore_errors=True)
    return Trial(subject, values, load.others_percent)


def run(report: Report) -> None:
    meter = LoadMeter()
    for n in (INBOUND_N, INBOUND_SMALL_N):  # build the blobs before timing anything
        source.build_flood(n, MESSAGE_SIZE, False, BLOBS)
        source.build_flood(n, MESSAGE_SIZE, True, BLOBS)
        source.build_flood(n, MESSAGE_SIZE, True, BLOBS, no_context_takeover=True)
    results: dict[int, dict[str, list[Trial]]] = {}
    for n in (INBOUND_N, INBOUND_SMALL_N):
        results[n] = {s: [] for s in INBOUND_SUBJECTS}
        for rep, subject in interleaved(INBOUND_SUBJECTS, REPS):
            trial = inbound_trial(subject, n)
            results[n][subject].append(trial)
            v = trial.values
            report.progress(f"inbound N={n} rep {rep + 1} {subject}: {v['rate']:,.0f} msg/s, "
                            f"{v['cpu']:.2f} CPU s, {v['hwm']:.1f} MB, others {trial.others_percent:.0f}%")
    load = meter.stop()

    def med(n, subject, key):
        return median(t.values[key] for t in results[n][subject])

    big = INBOUND_N
    go_rate, go_cpu = med(big, "Go gorilla", "rate"), med(big, "Go gorilla", "cpu")
    py_rate = med(big, "Python websockets", "rate")

    def limit_of(subject):
        """The write limit a subject is measured against: Sync=always's for that variant."""
        return "write limit always" if subject.endswith("always") else "write limit"

    rows = []
    for subject in INBOUND_SUBJECTS:
        rate, cpu, hwm = med(big, subject, "rate"), med(big, subject, "cpu"), med(big, subject, "hwm")
        rates = [t.values["rate"] for t in results[big][subject]]
        rows.append([
            LABELS[subject], fmt(med(big, subject, "seconds"), 2), f"{rate:,.0f}",
            f"{min(rates):,.0f}–{max(rates):,.0f}",
            f"{100 * rate / med(big, limit_of(subject), 'rate'):.0f}%" if subject != "drain" else "—",
            fmt(cpu, 2), fmt(hwm, 1) if subject not in NO_RSS else "—",
            ratio_text(rate, go_rate), ratio_text(go_cpu, cpu) if subject != "drain" else "—",
            ratio_text(rate, py_rate),
            fmt(median(t.others_percent for t in results[big][subject]), 0) + "%",
        ])
    report.table(
        f"1. Inbound flood: N = {big:,} messages of ~{MESSAGE_SIZE} B, time from connect until "
        f"every message is a line (chatlinkd: durable, fsynced; peers: written, no fsync)",
        ["client", "time s", "msgs/s", "range", "% of write limit", "CPU s", "peak RSS MB",
         "× Go msgs/s", "Go CPU ÷ CPU", "× Python msgs/s", "others' CPU"],
        rows,
    )
    limit_rows = []
    for size in (big, INBOUND_SMALL_N):
        for subject, limit in (("chatlinkd", "write limit"), ("chatlinkd always", "write limit always")):
            d, w = med(size, subject, "rate"), med(size, limit, "rate")
            limit_rows.append([
                f"{size:,}", LABELS[subject], f"{d:,.0f}", f"{w:,.0f}", f"{100 * d / w:.0f}%",
                f"{med(size, subject, 'write_size') / 1024:.1f}", f"{med(size, limit, 'syncs'):,.0f}",
                ratio_text(d, med(size, "Go gorilla", "rate")),
            ])
    report.table(
        "1a. Against the write limit: chatlinkd's durable inbound beside a minimal writer "
        "(bench/peers/writelimit.c) that appends the bytes chatlinkd stored in this run, in the mean "
        "write size of chatlinkd's disk thread, with the same sync policy, and does nothing else",
        ["N", "chatlinkd", "msgs/s", "write limit msgs/s", "% of it", "mean write KiB",
         "writer's fdatasyncs", "× Go msgs/s"],
        limit_rows,
    )
    d_rate, d_cpu, d_hwm = med(big, "chatlinkd", "rate"), med(big, "chatlinkd", "cpu"), med(big, "chatlinkd", "hwm")
    per_rep = ", ".join(f"{a.values['rate'] / b.values['rate']:.2f}×"
                        for a, b in zip(results[big]["chatlinkd"], results[big]["Go gorilla"]))
    a_rate, a_limit = med(big, "chatlinkd always", "rate"), med(big, "write limit always", "rate")
    s_rate = med(big, "chatlinkd scraped", "rate")
    n_rate, gz_rate = med(big, "chatlinkd deflate nct", "rate"), med(big, "Go gorilla deflate", "rate")
    z_rate = med(big, "chatlinkd deflate", "rate")
    z_per_rep = ", ".join(f"{a.values['rate'] / b.values['rate']:.2f}×" for a, b in
                          zip(results[big]["chatlinkd deflate"], results[big]["Go gorilla deflate"]))
    gz_per_rep = ", ".join(f"{a.values['rate'] / b.values['rate']:.2f}×" for a, b in
                           zip(results[big]["chatlinkd deflate nct"], results[big]["Go gorilla deflate"]))
    plain_rates = [t.values["rate"] for t in results[big]["chatlinkd"]]
    report.targets([
        check(f"inbound msgs/s ≥ 7× Go: {d_rate:,.0f} vs {go_rate:,.0f} = {d_rate / go_rate:.2f}× "
              f"(repetition by repetition: {per_rep})", d_rate >= 7 * go_rate),
    ] + [
        check(f"durable inbound (Sync=batch) at {size:,} ≥ 30 % of the write limit: "
              f"{med(size, 'chatlinkd', 'rate'):,.0f} vs {med(size, 'write limit', 'rate'):,.0f} "
              f"= {100 * med(size, 'chatlinkd', 'rate') / med(size, 'write limit', 'rate'):.0f} %",
              med(size, "chatlinkd", "rate") >= 0.3 * med(size, "write limit", "rate"))
        for size in (big, INBOUND_SMALL_N)
    ] + [
        check(f"a scrape of /metrics every second leaves inbound within the noise: {s_rate:,.0f} msgs/s "
              f"scraped vs {d_rate:,.0f} (unscraped repetitions {min(plain_rates):,.0f}–{max(plain_rates):,.0f})",
              min(plain_rates) * 0.95 <= s_rate),
        # Each client as a server that offers both would serve it: chatlinkd negotiates context
        # takeover (the RFC 7692 default), gorilla can only ask for none. The same frames for
        # both (each deflated on its own) are shown beside it: there zlib's work dominates.
        check(f"permessage-deflate inbound ≥ 5× Go with compression, each with the deflate it negotiates: "
              f"{z_rate:,.0f} (context takeover) vs {gz_rate:,.0f} (none: all gorilla speaks) = "
              f"{z_rate / gz_rate:.2f}× (by repetition: {z_per_rep}); on the same frames, each deflated on "
              f"its own: {n_rate:,.0f} = {n_rate / gz_rate:.2f}× (by repetition: {gz_per_rep})",
              z_rate >= 5 * gz_rate),
        check(f"Sync=always inbound ≥ 3× Go: {a_rate:,.0f} vs {go_rate:,.0f} = {a_rate / go_rate:.2f}× "
              f"({100 * a_rate / a_limit:.0f} % of its write limit, {a_limit:,.0f} msgs/s)", a_rate >= 3 * go_rate),
        check(f"inbound CPU ≤ 1/5 of Go's: {d_cpu:.2f} s vs {go_cpu:.2f} s = {d_cpu / go_cpu:.2f} of it", d_cpu <= go_cpu / 5),
    ] + [
        # Peak RSS against both Go peers, at both sizes: the buffered one is how an independent
        # harness ran it, and the leaner of the two.
        check(f"peak RSS at {size:,} ≤ {LABELS[peer]}'s: {med(size, 'chatlinkd', 'hwm'):.1f} MB vs "
              f"{med(size, peer, 'hwm'):.1f} MB", med(size, "chatlinkd", "hwm") <= med(size, peer, "hwm"))
        for size in (big, INBOUND_SMALL_N) for peer in ("Go gorilla", "Go gorilla buffered")
    ])
    small = INBOUND_SMALL_N
    flat_rows, flat_ok = [], True
    for subject in (s for s in INBOUND_SUBJECTS if s not in NO_RSS):
        a, b = med(small, subject, "hwm"), med(big, subject, "hwm")
        flat_rows.append([LABELS[subject], fmt(a, 1), fmt(b, 1), f"{b / a:.2f}", f"{med(small, subject, 'rate'):,.0f}"])
        if subject == "chatlinkd":
            flat_ok = b <= a * 1.10
            d_flat = (a, b)
    report.table(
        f"1b. Memory with N: peak RSS (VmHWM) at {small:,} and {big:,} messages",
        ["client", f"MB at {small:,}", f"MB at {big:,}", "ratio", f"msgs/s at {small:,}"],
        flat_rows,
    )
    report.targets([check(f"chatlinkd RSS flat from {small:,} to {big:,} (≤ +10%): "
                          f"{d_flat[0]:.1f} → {d_flat[1]:.1f} MB", flat_ok)])
    src_cpu = median(t.values["source_cpu"] for t in results[big]["chatlinkd"])
    drain = med(big, "drain", "rate")
    report.note(
        f"The source is never the bottleneck: the drain baseline takes the same {big:,} frames at "
        f"{drain:,.0f} frames/s ({drain / d_rate:.0f}× chatlinkd's rate); the source used "
        f"{src_cpu:.2f} CPU s while feeding chatlinkd. Peak RSS of the drain is a Python "
        f"interpreter's and not shown. chatlinkd's time ends at the first GetStatus reply "
        f"(polled every 2 ms on one connection) with durable_seq = N; the peers' at their own "
        f"clock read after writing line N. 'others' CPU' is the CPU the rest of the machine used "
        f"during the trial, as a share of {NCPU} CPUs.")
    report.load(load)
