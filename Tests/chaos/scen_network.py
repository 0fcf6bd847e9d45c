"""Scenario 1: network faults through the fault proxy (and, below TCP, in a network namespace).

Faults: black hole, a cut in the middle of a frame (both directions, FIN and RST), delay and
throttle, refused connections, a long outage (connections reset at accept), an upgrade that
is answered slowly (within and beyond ConnectTimeoutSec, and dribbled byte by byte); then, with
the daemon in a network namespace: a veth that drops every packet (no ACK, no RST: a true
half-open connection) and a congested veth (rate limit with tail drops).

Checks: the dead peer is detected within PingIntervalSec + PongTimeoutSec; reconnects follow
the backoff policy (no hot loop: attempts per minute counted during the long outage); the
outbox is delivered after every fault; a cut frame is never stored, every complete one is.
"""

from __future__ import annotations

import math
import random
import time

from faultproxy import FaultProxy
from lib import (
    Backend,
    Scenario,
    StoreChecker,
    audit_scenario,
    connecting_times,
    delivery_problems,
    log,
    make_daemon,
    message_of,
    q,
    random_text,
    send_batch,
    settle,
    wait_all_delivered,
    wait_joined,
    wait_open,
)
from netns import NetNS

P, T, CT = 2.0, 3.0, 3.0  # PingIntervalSec, PongTimeoutSec, ConnectTimeoutSec
MIN, MAX = 0.5, 4.0  # ReconnectMinSec, ReconnectMaxSec
MARGIN = 0.6  # scheduling slack on a loaded 2-core machine (debug build)


def first_log(d, needle: str, since: float, timeout: float) -> float | None:
    def find():
        for t, line in d.log_lines(since):
            if needle in line:
                return t
        return None
    return settle(find, timeout, interval=0.02)


def outbox_after(sc: Scenario, backend, d, acked: list[dict], fault_end: float, what: str,
                 timeout: float = 30) -> None:
    took = wait_all_delivered(backend, acked, timeout)
    ok = sc.check(f"{what}: the outbox is delivered after the fault", took is not None,
                  f"{len(acked)} sends" if took is not None else
                  f"{sum(1 for a in acked if a['id'] not in set(backend.delivered_ids()))} of {len(acked)} missing after {timeout} s")
    if ok:
        sc.time(f"{what}: fault end → outbox delivered", time.monotonic() - fault_end)


def backoff_analysis(sc: Scenario, times: list[float], duration: float, what: str) -> None:
    gaps = [b - a for a, b in zip(times, times[1:])]
    n = len(times)
    per_min = n / duration * 60 if duration > 0 else 0
    # Full jitter: once saturated, each delay is uniform in [MIN, MAX].
    mean_expected = (MIN + MAX) / 2
    sigma = (MAX - MIN) / math.sqrt(12)
    saturated = gaps[3:]
    sc.figure(f"{what}: attempts", f"{n} in {duration:.0f} s = {per_min:.1f}/min "
              f"(policy: ≤ {60 / MIN:.0f}/min hot-loop bound, ≈ {60 / mean_expected:.1f}/min expected at saturation)")
    if gaps:
        sc.figure(f"{what}: gaps", f"min {min(gaps):.2f} s, mean {sum(gaps) / len(gaps):.2f} s, max {max(gaps):.2f} s")
    # Per-minute counts (the windows that fit in the outage).
    windows = []
    if times:
        start = times[0]
        k = 0
        while start + 60 * (k + 1) <= times[0] + duration + 0.01:
            windows.append(sum(1 for t in times if start + 60 * k <= t < start + 60 * (k + 1)))
            k += 1
    if windows:
        sc.figure(f"{what}: attempts in each minute", windows)
    sc.check(f"{what}: no hot loop (no retry sooner than ReconnectMinSec)",
             gaps and min(gaps) >= MIN - 0.05, f"shortest gap {min(gaps):.3f} s" if gaps else "no gaps")
    sc.check(f"{what}: keeps trying (no gap beyond ReconnectMaxSec)",
             gaps and max(gaps) <= MAX + MARGIN, f"longest gap {max(gaps):.2f} s" if gaps else "no gaps")
    sc.check(f"{what}: attempts per minute within the policy", 60 / (MAX + MARGIN) <= per_min <= 60 / MIN,
             f"{per_min:.1f}/min, bounds {60 / (MAX + MARGIN):.1f}..{60 / MIN:.0f}")
    if len(saturated) >= 5:
        mean = sum(saturated) / len(saturated)
        band = 3 * sigma / math.sqrt(len(saturated)) + 0.15
        sc.check(f"{what}: saturated delays have the full-jitter mean (MIN+MAX)/2",
                 mean_expected - band <= mean <= mean_expected + band + 0.2,
                 f"mean {mean:.2f} s over {len(saturated)} gaps, expected {mean_expected:.2f} ± {band:.2f}")


def sh_drops(ns: NetNS) -> str:
    import re
    import subprocess

    out = []
    for cmd in (["tc", "-s", "qdisc", "show", "dev", ns.host_if],
                ["ip", "netns", "exec", ns.name, "tc", "-s", "qdisc", "show", "dev", ns.ns_if]):
        text = subprocess.run(cmd, capture_output=True, text=True).stdout
        m = re.search(r"dropped (\d+)", text)
        out.append(m.group(1) if m else "?")
    return ", ".join(out)


def run(sc: Scenario) -> None:
    backend = Backend().start()
    sc.backends.append(backend)
    proxy = FaultProxy(backend.host, backend.port).start()
    ns = None
    backend2 = None
    try:
        d = make_daemon(sc, "proxied", proxy.url)
        if not sc.check("daemon connects through the proxy", wait_open(d, 15)):
            return
        wait_joined(backend, 7)
        acked, _ = send_batch(d, 10, "warm")
        sc.ack(acked)
        wait_all_delivered(backend, acked, 10)

        # ---------------------------------------------------------- black hole (proxy)
        log("network: black hole")
        connects = d.try_status()["connects"]
        time.sleep(P + 0.3)  # a healthy ping/pong round first
        t0 = time.monotonic()
        proxy.blackhole(True)
        sc.fault("black hole", "proxy black hole: nothing forwarded either way, connections held open")
        during, _ = send_batch(d, 10, "blackhole")
        sc.ack(during)
        t = first_log(d, "backend stopped answering", t0, P + T + 5)
        if sc.check("black hole: dead peer detected", t is not None, "" if t else "no 'backend stopped answering' line"):
            sc.time("black hole: dead-peer detection", t - t0)
            sc.check(f"black hole: detected within PingIntervalSec + PongTimeoutSec ({P + T:.0f} s)",
                     t - t0 <= P + T + MARGIN, f"{t - t0:.2f} s")
        # The reconnect attempt goes into the black hole too: the upgrade is never answered.
        held = settle(lambda: [l for l in proxy.links if l.held and l.closed_by == "client"], CT + MAX + 3)
        sc.check("black hole: a reconnect into the black hole gives up after ConnectTimeoutSec",
                 held and all(l.closed_at - l.accepted_at <= CT + MARGIN for l in held),
                 [f"{l.closed_at - l.accepted_at:.2f} s" for l in held or []])
        t1 = time.monotonic()
        proxy.blackhole(False)
        outbox_after(sc, backend, d, during, t1, "black hole")
        st = wait_open(d, 10)
        sc.check("black hole: reconnected", st and st["connects"] > connects)

        # ---------------------------------------------------------- cut mid-frame, downstream, FIN
        log("network: cut mid-frame (backend → daemon, FIN)")
        conn = wait_joined(backend, 7, timeout=10)
        checker = StoreChecker(d.store_dir)
        skip = random.randint(3, 15)
        proxy.cut("down", "fin", after_frames=skip)
        sc.fault("cut mid-frame", f"cut inside a frame backend→daemon after {skip} frames, then FIN")
        texts = []
        for i in range(40):
            text = f"cutdown {i} " + random_text(16000)
            texts.append(text)
            try:
                if backend.push(7, text) == 0:
                    break
            except Exception:  # noqa: BLE001
                break
        cut = proxy.wait_cut(10)
        if sc.check("cut downstream: the proxy cut a frame in the middle", cut is not None):
            complete = cut["frames_through"]
            sc.figure("cut downstream", f"{complete} complete frames through, then frame of {cut['frame_len']} bytes "
                                        f"cut after {cut['offset_in_frame']}")
            t = first_log(d, "disconnected", cut["at"] - 0.05, 5)
            if sc.check("cut downstream: the daemon notices at once", t is not None):
                sc.time("cut downstream: detection", max(0.0, t - cut["at"]))
            wait_open(d, 15)
            got = settle(lambda: (r := checker.read("cutdown "))
                         and len(r["records"]) >= complete and r, 10)
            r = got or checker.read("cutdown ")
            stored = [message_of(x) for x in r["records"]]
            sc.in_pushed += complete
            sc.in_stored += min(len(stored), complete)
            sc.in_lost += max(0, complete - len(stored))
            sc.in_strict = True
            sc.check("cut downstream: every complete frame stored, the cut one not",
                     stored == texts[:complete], f"stored {len(stored)}, expected {complete}")
            sc.check("cut downstream: store has no torn line and seq is strictly increasing",
                     not r["bad"] and not r["problems"], "; ".join(r["bad"][:2] + r["problems"]))
        after, _ = send_batch(d, 5, "cutdown-after")
        sc.ack(after)
        outbox_after(sc, backend, d, after, time.monotonic(), "cut downstream")

        # ---------------------------------------------------------- cut mid-frame, upstream, RST
        log("network: cut mid-frame (daemon → backend, RST)")
        wait_open(d, 10)
        proxy.cut("up", "rst")
        sc.fault("cut mid-frame", "cut inside a 20 kB frame daemon→backend, then RST")
        big, _ = send_batch(d, 3, "cutup", size=20000)
        sc.ack(big)
        cut = proxy.wait_cut(10)
        t1 = time.monotonic()
        if sc.check("cut upstream: the proxy cut a frame in the middle", cut is not None):
            sc.figure("cut upstream", f"frame of {cut['frame_len']} bytes cut after {cut['offset_in_frame']}")
            t = first_log(d, "disconnected", cut["at"] - 0.05, 5)
            if sc.check("cut upstream: the daemon notices the reset at once", t is not None):
                sc.time("cut upstream: detection", max(0.0, t - cut["at"]))
        outbox_after(sc, backend, d, big, t1, "cut upstream")
        probs = [p for p in delivery_problems(backend, big) if "altered" in p]
        sc.check("cut upstream: the backend never got a torn or altered message", not probs, "; ".join(probs[:2]))

        # ---------------------------------------------------------- delay and throttle
        log("network: delay and throttle")
        st = wait_open(d, 10)
        wait_joined(backend, 7)
        connects = st["connects"]
        t0 = time.monotonic()
        proxy.set_delay(0.25, 0.25)
        proxy.set_rate(down=40_000, up=20_000)
        sc.fault("delay+throttle", "delay 250 ms each way, throttle 40 kB/s down, 20 kB/s up")
        checker = StoreChecker(d.store_dir)
        n_flood = q(3000, 1500)
        flood = backend.flood(n_flood, size=200, room=7, tag="-thr")
        thr, _ = send_batch(d, 20, "throttled")
        sc.ack(thr)
        time.sleep(q(4, 2))
        proxy.set_rate(down=3_000, up=3_000)
        sc.fault("delay+throttle", "throttle 3 kB/s both ways during a flood")
        time.sleep(q(2 * (P + T), P + T + 1))
        proxy.set_rate()
        proxy.set_delay()
        t1 = time.monotonic()
        sent = flood.result(60)
        outbox_after(sc, backend, d, thr, t1, "delay/throttle")
        st = d.try_status()
        stayed = st and st["connects"] == connects and not d.log_count("stopped answering", t0)
        sc.check("delay/throttle: the connection stays up (no false dead-peer detection)", stayed,
                 f"connects {connects} → {st and st['connects']}")
        r = settle(lambda: (r := checker.read("flood-thr "))
                   and len(r["records"]) >= sent and r, 30) or checker.read("flood-thr ")
        sc.in_pushed += sent
        sc.in_stored += len(r["records"])
        if stayed:
            sc.in_lost += max(0, sent - len(r["records"]))
        sc.check("delay/throttle: every flood message stored", len(r["records"]) >= sent,
                 f"{len(r['records'])} of {sent}")
        lat = []
        first = {}
        for f in backend.frames():
            if isinstance(f.json, dict) and f.json.get("event") == "send-message":
                cid = f.json["data"].get("client_id")
                first.setdefault(cid, f.t)
        for a in thr:
            if a["id"] in first:
                lat.append(first[a["id"]] - a["t"])
        if lat:
            sc.figure("delay/throttle: send → backend latency", f"max {max(lat):.2f} s, mean {sum(lat) / len(lat):.2f} s")

        # ---------------------------------------------------------- refused connections
        log("network: connections refused")
        wait_open(d, 10)
        proxy.refuse(True)
        proxy.abort_all()
        sc.fault("refused", "connections refused (listener closed)")
        t0 = time.monotonic()
        ref, _ = send_batch(d, 5, "refused")
        sc.ack(ref)
        time.sleep(q(10, 6))
        att = connecting_times(d, t0)
        st = d.try_status()
        sc.check("refused: status names the error", st and "refused" in (st.get("last_error") or "").lower(),
                 st and st.get("last_error"))
        sc.figure("refused: attempts (daemon log)", f"{len(att)} in {time.monotonic() - t0:.0f} s")
        t1 = time.monotonic()
        proxy.refuse(False)
        outbox_after(sc, backend, d, ref, t1, "refused")

        # ---------------------------------------------------------- long outage: reset at accept
        outage = q(90, 25)
        log(f"network: long outage ({outage} s, every connection reset at accept)")
        wait_open(d, 10)
        proxy.reset_new(True)
        proxy.abort_all()
        sc.fault(f"{outage} s outage", f"{outage} s outage: every connection reset at accept")
        t0 = time.monotonic()
        out_sends, _ = send_batch(d, 10, "outage")
        sc.ack(out_sends)
        time.sleep(outage)
        t1 = time.monotonic()
        proxy.reset_new(False)
        attempts = [a for a in proxy.accepts if t0 < a < t1]
        backoff_analysis(sc, attempts, t1 - t0, "long outage")
        logged = [t for t in connecting_times(d, t0) if t < t1]
        sc.check("long outage: the daemon's log shows every attempt the proxy saw",
                 abs(len(logged) - len(attempts)) <= 1, f"log {len(logged)}, proxy {len(attempts)}")
        outbox_after(sc, backend, d, out_sends, t1, "long outage")

        # ---------------------------------------------------------- slow upgrade
        log("network: slow upgrade")
        st = wait_open(d, 15)
        connects = st["connects"] if st else 0
        proxy.upgrade_delay = CT - 1.5
        t0 = time.monotonic()
        proxy.abort_all()
        sc.fault("slow upgrade", f"upgrade answered after {CT - 1.5:.1f} s (within ConnectTimeoutSec)")
        st = wait_open(d, MAX + CT + 5, min_connects=connects + 1)
        ok = sc.check("slow upgrade within ConnectTimeoutSec: connects", st is not None)
        if ok:
            starts = connecting_times(d, t0)
            opened = first_log(d, "state=open", t0, 1)
            if starts and opened:
                sc.figure("slow upgrade within the timeout: connect took", f"{opened - starts[-1]:.2f} s")
        sc.check("slow upgrade within ConnectTimeoutSec: no timeout logged",
                 not d.log_count("timed out", t0))
        connects = st["connects"] if st else connects

        proxy.upgrade_delay = CT + 3
        t0 = time.monotonic()
        proxy.abort_all()
        sc.fault("slow upgrade", f"upgrade answered after {CT + 3:.0f} s (beyond ConnectTimeoutSec)")
        slow, _ = send_batch(d, 5, "slowupgrade")
        sc.ack(slow)
        gave_up = settle(lambda: (ls := [l for l in proxy.links if l.accepted_at > t0 and l.closed_by == "client"])
                         and len(ls) >= 2 and ls, 2 * (CT + MAX) + 5)
        durations = [l.closed_at - l.accepted_at for l in gave_up or []]
        sc.check("slow upgrade beyond ConnectTimeoutSec: each attempt given up at ConnectTimeoutSec",
                 durations and all(CT - 0.3 <= x <= CT + MARGIN for x in durations),
                 [f"{x:.2f} s" for x in durations])
        proxy.upgrade_delay = 0
        t1 = time.monotonic()
        outbox_after(sc, backend, d, slow, t1, "slow upgrade")

        st = wait_open(d, 15)
        proxy.upgrade_dribble = 0.25
        t0 = time.monotonic()
        proxy.abort_all()
        sc.fault("slow upgrade", "upgrade dribbled 1 byte / 250 ms")
        drib, _ = send_batch(d, 5, "dribble")
        sc.ack(drib)
        gave_up = settle(lambda: (ls := [l for l in proxy.links if l.accepted_at > t0 and l.closed_by == "client"])
                         and ls, CT + MAX + 5)
        durations = [l.closed_at - l.accepted_at for l in gave_up or []]
        sc.check("dribbled upgrade: given up at ConnectTimeoutSec (bytes arriving do not extend it)",
                 durations and all(x <= CT + MARGIN for x in durations), [f"{x:.2f} s" for x in durations])
        proxy.upgrade_dribble = 0
        t1 = time.monotonic()
        outbox_after(sc, backend, d, drib, t1, "dribbled upgrade")
        probs = [p for p in delivery_problems(backend, list(sc.acked.values())) if "out of order" in p]
        sc.check("proxied daemon: first deliveries in outbox order per room", not probs, "; ".join(probs[:2]))

        # ---------------------------------------------------------- below TCP, in a netns
        log("network: netns black hole and congested link")
        ns = NetNS(0).create()
        backend2 = Backend()
        backend2.host = ns.host_ip
        backend2.start()
        sc.backends.append(backend2)
        d2 = make_daemon(sc, "netns", backend2.url, {"Backend": {"Compression": "no"}}, wrapper=ns.wrapper)
        if not sc.check("netns daemon connects over the veth", wait_open(d2, 15)):
            return
        wait_joined(backend2, 7)
        warm, _ = send_batch(d2, 5, "ns-warm")
        sc.ack(warm)
        wait_all_delivered(backend2, warm, 10)
        time.sleep(P + 0.3)
        connects = d2.try_status()["connects"]
        t0 = time.monotonic()
        ns.blackhole(True)
        sc.fault("netns black hole", "veth drops every packet both ways (pfifo limit 0): a true half-open connection")
        during, _ = send_batch(d2, 10, "ns-blackhole")
        sc.ack(during)
        t = first_log(d2, "backend stopped answering", t0, P + T + 5)
        if sc.check("netns black hole: dead peer detected", t is not None):
            sc.time("netns black hole: dead-peer detection", t - t0)
            sc.check(f"netns black hole: detected within PingIntervalSec + PongTimeoutSec ({P + T:.0f} s)",
                     t - t0 <= P + T + MARGIN, f"{t - t0:.2f} s")
        timed = first_log(d2, "timed out", t0 if t is None else t, CT + MAX + 3)
        sc.check("netns black hole: a reconnect (SYN lost) times out", timed is not None)
        t1 = time.monotonic()
        ns.blackhole(False)
        outbox_after(sc, backend2, d2, during, t1, "netns black hole")
        st = wait_open(d2, 15)
        sc.check("netns black hole: reconnected", st and st["connects"] > connects)

        wait_joined(backend2, 7)
        connects = d2.try_status()["connects"]
        checker = StoreChecker(d2.store_dir)
        t0 = time.monotonic()
        ns.qdisc("tbf rate 2mbit burst 4kb limit 8kb")
        sc.fault("netns congestion", "veth congested: tbf 2 Mbit/s, 8 kB queue, tail drops, uncompressed flood")
        n_flood = q(4000, 1500)
        flood = backend2.flood(n_flood, size=200, room=7, tag="-lossy")
        lossy, _ = send_batch(d2, 30, "lossy")
        sc.ack(lossy)
        sent = flood.result(90)
        time.sleep(1)
        drops = sh_drops(ns)
        ns.qdisc(None)
        sc.figure("congested link: packets dropped by the qdisc (host side, namespace side)", drops)
        t1 = time.monotonic()
        outbox_after(sc, backend2, d2, lossy, t1, "congested link")
        st = d2.try_status()
        stayed = st and st["connects"] == connects
        sc.figure("congested link: reconnects", (st["connects"] - connects) if st else "?")
        r = settle(lambda: (r := checker.read("flood-lossy "))
                   and len(r["records"]) >= sent and r, 30) or checker.read("flood-lossy ")
        sc.in_pushed += sent
        sc.in_stored += len(r["records"])
        if stayed:
            sc.in_lost += max(0, sent - len(r["records"]))
            sc.check("congested link: every flood message stored (TCP retransmits, no reconnect)",
                     len(r["records"]) >= sent, f"{len(r['records'])} of {sent}")
        sc.check("congested link: store whole", not r["bad"] and not r["problems"], "; ".join(r["bad"][:2] + r["problems"]))
    finally:
        audit_scenario(sc)
        proxy.stop()
        backend.stop()
        if backend2 is not None:
            backend2.stop()
        if ns is not None:
            # Daemons in the namespace are stopped by the caller's cleanup before it goes.
            for d in sc.daemons:
                if d.wrapper and d.running():
                    d.stop()
            ns.delete()
