"""Scenario 6: soak. For CHAOS_SOAK_SECONDS (default 1200 s; 60 s with CHAOS_QUICK) the
daemon runs against a flapping backend, with steady inbound traffic and periodic sends.

Every 20–40 s (6–10 s quick) the backend flaps, in turn: its TCP connections are aborted, it
closes with 1012 (restart) or 1011 (error), it refuses upgrades with 503 for a few seconds, it
goes silent (a black hole: the daemon must detect the dead peer), or the backend server is
stopped and started again on the same port. Inbound pushes pause for a moment around each
flap, so every message pushed must be stored (a message still in the backend's buffers when
its TCP connection is aborted would be the network's loss, not the daemon's). Sends go on
through every flap, each must reach the backend.

The daemon's RSS, anonymous memory, open fd count, threads and CPU time are sampled every
10 s (2 s quick; Tests/soak/procstat.py). Start is the first sample after a warm-up (a tenth
of the soak, at most 60 s); peak and end follow. Flat is the verdict of `make soak`
(Tests/soak/fit.py), a least-squares line through the second half: RSS grows at most 64 KiB/h
per 1,000 inbound msg/s (3.2 KiB/h at this soak's 50 msg/s, so in practice: not beyond its
noise) and anonymous memory not at all beyond its noise; a soak under 10 minutes (the quick
one) reports that fit without judging it. End fd count at most start + 1,
peak at most start + 6 (a flap can be under way at either sample); threads at the end not
above the start; CPU below 25 % of a core on average.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "soak"))
import fit  # noqa: E402
import procstat  # noqa: E402
from lib import (  # noqa: E402
    QUICK,
    Backend,
    Scenario,
    Sender,
    StoreChecker,
    audit_scenario,
    log,
    make_daemon,
    q,
    settle,
    wait_all_delivered,
    wait_joined,
    wait_open,
)

P, T, CT = 2.0, 3.0, 3.0  # PingIntervalSec, PongTimeoutSec, ConnectTimeoutSec (lib.CHAOS_DEFAULTS)
MAX = 4.0  # ReconnectMaxSec
FLAPS = ["drop", "restart", "close 1012", "refuse 503", "black hole", "close 1011"]


class SoakPusher(threading.Thread):
    """Pushes `rate` messages a second to room 7; pause() waits for a push in progress."""

    def __init__(self, backend: Backend, rate: float):
        super().__init__(daemon=True)
        self.backend, self.rate = backend, rate
        self.pushed = 0
        self.missed = 0
        self.stop_event = threading.Event()
        self.running = threading.Event()
        self.running.set()
        self.lock = threading.Lock()
        self.pad = "s" * 150

    def pause(self):
        self.running.clear()
        with self.lock:
            pass

    def resume(self):
        self.running.set()

    def stop(self):
        self.stop_event.set()
        self.running.set()
        self.join(15)

    def run(self):
        i = 0
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            self.running.wait()
            if self.stop_event.is_set():
                return
            with self.lock:
                if self.running.is_set():
                    try:
                        n = self.backend.push(7, f"soak {i} {self.pad}", sender="soak")
                    except Exception:  # noqa: BLE001 - the backend is restarting
                        n = 0
                    if n:
                        self.pushed += 1
                        i += 1
                    else:
                        self.missed += 1
            next_t += 1.0 / self.rate
            delay = next_t - time.monotonic()
            if delay > 0:
                self.stop_event.wait(delay)
            else:
                next_t = time.monotonic()


class Sampler(threading.Thread):
    def __init__(self, d, interval: float):
        super().__init__(daemon=True)
        self.d, self.interval = d, interval
        self.samples: list[dict] = []  # {"t", "rss_kib", "anon_kib", "fds", "threads", "cpu_s"}
        self.stop_event = threading.Event()
        self.t0 = time.monotonic()

    def sample(self):
        self.samples.append({"t": time.monotonic() - self.t0, **procstat.sample(self.d.pid)})

    def run(self):
        while not self.stop_event.is_set():
            try:
                self.sample()
            except OSError:
                pass
            self.stop_event.wait(self.interval)

    def stop(self):
        self.stop_event.set()
        self.join(5)


def run(sc: Scenario) -> None:
    backend = Backend().start()
    sc.backends.append(backend)
    try:
        _run(sc, backend)
    finally:
        audit_scenario(sc)
        backend.stop()


def flap(sc: Scenario, backend: Backend, d, kind: str, rng: random.Random) -> tuple[float, str]:
    """Injects one flap; returns (how long the daemon took to be open and joined again, detail)."""
    last_conn = max((c.id for c in backend.connections()), default=0)
    t0 = time.monotonic()
    detail = kind
    if kind == "drop":
        backend.drop_all()
    elif kind.startswith("close "):
        backend.close_all(int(kind.split()[1]), "soak flap")
    elif kind == "refuse 503":
        hold = rng.uniform(2, 5)
        backend.refuse(503)
        backend.drop_all()
        time.sleep(hold)
        backend.accept()
        detail = f"503 for {hold:.1f} s"
    elif kind == "black hole":
        backend.blackhole()
        t = settle(lambda: [tt for tt, line in d.log_lines(t0) if "backend stopped answering" in line], P + T + 5)
        if t:
            sc.time("black hole: dead-peer detection", t[0] - t0)
            detail = f"black hole, detected after {t[0] - t0:.2f} s"
        else:
            detail = "black hole, NOT detected"
        backend.unblackhole(discard=True)
    elif kind == "restart":
        backend.stop()
        time.sleep(rng.uniform(0.5, 2))
        backend.start()
        detail = "backend server restarted on the same port"
    conn = wait_joined(backend, 7, after_conn=last_conn, timeout=30)
    took = time.monotonic() - t0
    return (took if conn else float("inf")), detail


def _run(sc: Scenario, backend: Backend) -> None:
    seconds = float(os.environ.get("CHAOS_SOAK_SECONDS", "60" if QUICK else "1200"))
    rng = random.Random(random.random())
    d = make_daemon(sc, "soak", backend.url, {"Store": {"MaxFileSize": "4M", "MaxFiles": "1000"}})
    st = wait_open(d, 15)
    if not sc.check("daemon connects", st is not None):
        return
    wait_joined(backend, 7)
    pid = d.pid
    connects0 = st["connects"]
    checker = StoreChecker(d.store_dir)
    interval = q(10.0, 2.0)
    sampler = Sampler(d, interval)
    pusher = SoakPusher(backend, rate=q(50, 50))
    sender = Sender(d, "soak-send", interval=0.5, persistent=True)
    log(f"soak: {seconds:.0f} s, a flap every {q('20–40', '6–10')} s, 50 inbound messages/s, a send every 0.5 s")
    sampler.start()
    pusher.start()
    sender.start()
    t_start = time.monotonic()
    t_end = t_start + seconds
    flaps: list[tuple[str, float, str]] = []
    not_stored_at_flap = []
    k = 0
    try:
        while True:
            wait = rng.uniform(*q((20, 40), (6, 10)))
            if time.monotonic() + wait + 8 > t_end:
                break
            time.sleep(wait)
            kind = FLAPS[k % len(FLAPS)]
            k += 1
            # Everything pushed so far reaches the store before the flap.
            pusher.pause()
            got = settle(lambda: len(checker.read("soak ")["records"]) >= pusher.pushed, 10, interval=0.2)
            if not got:
                not_stored_at_flap.append((kind, pusher.pushed, len(checker.read("soak ")["records"])))
            took, detail = flap(sc, backend, d, kind, rng)
            pusher.resume()
            flaps.append((kind, took, detail))
            sc.fault(kind, None)
            sc.time(f"{kind}: flap → open and joined again", took)
            if not d.running():
                break
        remaining = t_end - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
    finally:
        sender.stop()
        pusher.stop()
        sampler.stop()
    sc.fault_details[:] = [f"{len(flaps)} flaps: " + "; ".join(f"{kd}" for _, _, kd in flaps)]
    alive = d.running() and d.pid == pid
    st = d.try_status() or {}
    sc.check("the daemon ran the whole soak (same pid, still answering)", alive and st, f"pid {pid}")

    # -------------------------------------------------- deliveries and the store
    acked = sender.snapshot()
    sc.ack(acked)
    sc.check("every acknowledged send reached the backend", wait_all_delivered(backend, acked, 30) is not None,
             f"{len(acked)} sends, errors {sender.errors}")
    r = settle(lambda: (r := checker.read("soak ")) and len(r["records"]) >= pusher.pushed and r, 20) \
        or checker.read("soak ")
    sc.in_pushed += pusher.pushed
    sc.in_stored += len(r["records"])
    sc.in_lost += max(0, pusher.pushed - len(r["records"]))
    sc.in_strict = True
    sc.check("every inbound message pushed was stored", len(r["records"]) >= pusher.pushed and not not_stored_at_flap,
             f"{len(r['records'])} of {pusher.pushed}" + (f"; behind at a flap: {not_stored_at_flap[:3]}"
                                                         if not_stored_at_flap else ""))
    texts = [x["data"]["data"]["message"] for x in r["records"]]
    sc.check("no inbound message stored twice", len(texts) == len(set(texts)), f"{len(texts) - len(set(texts))} twice")
    whole = checker.read()
    sc.check("store whole (every line parses, seq strictly increasing, no gap) across rotations",
             not whole["bad"] and not whole["problems"], "; ".join(whole["bad"][:2] + whole["problems"])
             or f"{len(whole['seqs'])} records in {whole['files']} files")
    reconnects = st.get("connects", 0) - connects0
    sc.check("one reconnect per flap", reconnects == len(flaps), f"{reconnects} reconnects, {len(flaps)} flaps")
    slow = [(kd, f"{tk:.1f} s") for kd, tk, _ in flaps if tk > 30]
    sc.check("every flap recovered (open and joined again within 30 s)", flaps and not slow, slow or f"{len(flaps)} flaps")
    sc.figure("flaps", ", ".join(f"{kd} {tk:.1f} s" for kd, tk, _ in flaps))
    sc.figure("traffic", f"{pusher.pushed} inbound pushed ({pusher.missed} pushes found no connection), "
                         f"{len(acked)} sends acknowledged, {sum(sender.errors.values())} refused {sender.errors}")

    # -------------------------------------------------- resources
    s = sampler.samples
    if len(s) < 4:
        sc.check("enough resource samples", False, f"{len(s)} samples")
        return
    warm = min(60.0, seconds / 10)
    steady = [x for x in s if x["t"] >= warm] or s
    first, start, end = s[0], steady[0], steady[-1]
    rss_peak = max(x["rss_kib"] for x in steady)
    anon_peak = max(x["anon_kib"] for x in steady)
    fd_peak = max(x["fds"] for x in steady)
    cpu = (end["cpu_s"] - start["cpu_s"]) / max(end["t"] - start["t"], 1e-3)
    sc.figure("samples", f"{len(s)} every {interval:.0f} s; warm-up {warm:.0f} s (first sample: RSS "
                         f"{first['rss_kib']} KiB, {first['fds']} fds)")
    sc.figure("RSS (KiB): start, peak, end", f"{start['rss_kib']}, {rss_peak}, {end['rss_kib']}")
    sc.figure("anonymous memory (KiB): start, peak, end", f"{start['anon_kib']}, {anon_peak}, {end['anon_kib']}")
    sc.figure("open fds: start, peak, end", f"{start['fds']}, {fd_peak}, {end['fds']}")
    sc.figure("threads: start, end", f"{start['threads']}, {end['threads']}")
    sc.figure("CPU", f"{cpu * 100:.2f} % of a core on average ({end['cpu_s'] - start['cpu_s']:.1f} s over "
                     f"{end['t'] - start['t']:.0f} s)")
    # The verdict of make soak (Tests/soak/fit.py) at the rate measured.
    # A leak verdict needs a fitted half of some minutes (a 30 s half of the quick soak would
    # call the first arena growth after a flap a leak of megabytes an hour): shorter soaks
    # report the fit as a figure only.
    rate = pusher.pushed / max(seconds, 1.0)
    judged = seconds >= 2 * fit.MIN_FIT_SECONDS
    for v in fit.judge(s, rate):
        if judged:
            sc.check(f"flat: {v.name}", v.ok, v.detail)
        else:
            sc.figure(f"flat, not judged (a soak under {2 * fit.MIN_FIT_SECONDS / 60:.0f} min): {v.name}", v.detail)
    sc.check("open fds flat: end ≤ start + 1, peak ≤ start + 6",
             end["fds"] <= start["fds"] + 1 and fd_peak <= start["fds"] + 6,
             f"start {start['fds']}, peak {fd_peak}, end {end['fds']}")
    sc.check("threads: end not above start", end["threads"] <= start["threads"],
             f"start {start['threads']}, end {end['threads']}")
    sc.check("CPU: no hot loop (< 25 % of a core on average)", cpu < 0.25, f"{cpu * 100:.2f} %")
