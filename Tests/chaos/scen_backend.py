"""Scenario 2: backend behaviour. The backend refuses the upgrade with 401, 403, 503/429 with
Retry-After (seconds, an HTTP-date, more than an hour) and 503 without; it closes with 1008,
1011, 1012, 1013 and 1001; it floods pings. For each, the retry delays are measured at the
backend (the time between upgrade requests) and compared with what README.md documents
("What happens when…"); the outbox queued meanwhile is delivered once the backend accepts."""

from __future__ import annotations

import asyncio
import email.utils
import struct
import time

from lib import (
    Backend,
    Scenario,
    StatusPoller,
    StoreChecker,
    audit_scenario,
    latency_summary,
    log,
    make_daemon,
    message_of,
    q,
    retry_in_values,
    rss_kib,
    send_batch,
    settle,
    wait_all_delivered,
    wait_joined,
    wait_open,
)

MIN = 0.5
MAX = q(3.0, 2.0)
RA = q(5, 3)  # Retry-After seconds: longer than ReconnectMaxSec, so only the server's word explains it
SLACK = 0.6  # connect + handshake + scheduling on a loaded machine


def refused_attempts(backend: Backend, since: float, status: int):
    return [a for a in backend.attempts() if a.t >= since and a.refused == status]


def gaps_of(times):
    return [b - a for a, b in zip(times, times[1:])]


def fmt(gaps):
    return "[" + ", ".join(f"{g:.2f}" for g in gaps) + "] s"


def run(sc: Scenario) -> None:
    backend = Backend().start()
    sc.backends.append(backend)
    try:
        _run(sc, backend)
    finally:
        audit_scenario(sc)
        backend.stop()


def accept_and_deliver(sc: Scenario, backend: Backend, d, acked, what: str, within: float | None):
    t1 = time.monotonic()
    backend.accept()
    st = wait_open(d, (within or MAX) + 10)
    took = time.monotonic() - t1
    if within is not None:
        sc.check(f"{what}: reconnects within {within:.1f} s once the backend accepts", st and took <= within,
                 f"{took:.2f} s")
    sc.time(f"{what}: accepted → open", took)
    done = wait_all_delivered(backend, acked, 15)
    sc.check(f"{what}: the outbox queued meanwhile is delivered", done is not None, f"{len(acked)} sends")


def refusal(sc: Scenario, backend: Backend, d, status: int, retry_after, n: int, lo: float, hi: float,
            what: str, expect_text: list[str] | None = None, first_only: bool = False):
    wait_open(d, 15)
    t0 = time.monotonic()
    backend.refuse(status, retry_after)
    backend.drop_all()
    sc.fault(f"HTTP {status}", f"HTTP {status}" + (f" with Retry-After: {retry_after}" if retry_after is not None else ""))
    acked, _ = send_batch(d, 3, f"http{status}")
    sc.ack(acked)
    got = settle(lambda: len(refused_attempts(backend, t0, status)) >= n and True, n * hi + 10)
    times = [a.t for a in refused_attempts(backend, t0, status)][:n]
    gaps = gaps_of(times)
    if first_only:
        gaps = gaps[:1]
    st = d.try_status() or {}
    sc.figure(f"{what}: delays between attempts", fmt(gaps))
    for g in gaps:
        sc.time(f"{what}: retry delay", g)
    sc.check(f"{what}: retried after {lo:.1f}..{hi:.1f} s each time", got and gaps and all(lo <= g <= hi for g in gaps),
             fmt(gaps))
    for needle in expect_text or []:
        sc.check(f"{what}: status says {needle!r}", needle in (st.get("last_error") or "") and needle in st.get("text", ""),
                 st.get("last_error"))
    return acked, st


def close_with(sc: Scenario, backend: Backend, d, code: int, lo: float, hi: float, what: str, rounds: int = 1):
    delays = []
    acked_all = []
    failures = []
    for _ in range(rounds):
        wait_open(d, 15)
        conn = wait_joined(backend, 7, timeout=10)
        t0 = time.monotonic()
        backend.close_all(code, f"chaos {code}")
        sc.fault(f"close {code}")
        waiting = settle(lambda: (s := d.try_status()) and s["state"] != "open" and s, 5) or {}
        acked, _ = send_batch(d, 3, f"close{code}")
        sc.ack(acked)
        acked_all += acked
        nxt = settle(lambda: [a for a in backend.attempts() if a.t > t0], hi + 10)
        if nxt:
            delays.append(nxt[0].t - t0)
            sc.time(f"{what}: retry delay", nxt[0].t - t0)
        wait_open(d, 15, min_connects=0)
        failures += [f for _, _, f in retry_in_values(d, t0)][:1]
    sc.figure(f"{what}: delays before the reconnect", fmt(delays))
    sc.check(f"{what}: reconnects after {lo:.1f}..{hi:.1f} s", len(delays) == rounds and all(lo <= x <= hi for x in delays),
             fmt(delays))
    done = wait_all_delivered(backend, acked_all, 15)
    sc.check(f"{what}: the outbox is delivered after the close", done is not None, f"{len(acked_all)} sends")
    return delays, failures, waiting


def _run(sc: Scenario, backend: Backend) -> None:
    d = make_daemon(sc, "backend", backend.url, {"Backend": {"ReconnectMinSec": MIN, "ReconnectMaxSec": MAX}})
    if not sc.check("daemon connects", wait_open(d, 15)):
        return
    wait_joined(backend, 7)

    # ------------------------------------------------------------------ HTTP refusals
    for status in (401, 403):
        log(f"backend: HTTP {status}")
        acked, st = refusal(sc, backend, d, status, None, q(3, 2), MAX - 0.05, MAX + SLACK,
                            f"HTTP {status}", [f"HTTP {status}", "TokenFile"])
        logged = [line for _, line in d.log_lines() if line.startswith("<3>") and f"HTTP {status}" in line]
        sc.check(f"HTTP {status}: an error-level log line names the cause", logged, logged[-1:] if logged else "")
        accept_and_deliver(sc, backend, d, acked, f"HTTP {status}", MAX + SLACK)

    log("backend: HTTP 503 with Retry-After (seconds)")
    acked, st = refusal(sc, backend, d, 503, RA, q(3, 2), RA - 0.05, RA + SLACK, f"503 Retry-After: {RA}",
                        ["HTTP 503"])
    sc.check("503 Retry-After: the daemon logs that it honours it", d.log_count("honouring Retry-After") > 0)
    accept_and_deliver(sc, backend, d, acked, "503 Retry-After", None)

    log("backend: HTTP 429 with Retry-After (seconds)")
    acked, st = refusal(sc, backend, d, 429, RA, 2, RA - 0.05, RA + SLACK, f"429 Retry-After: {RA}", ["HTTP 429"])
    accept_and_deliver(sc, backend, d, acked, "429 Retry-After", None)

    log("backend: HTTP 503 with Retry-After as an HTTP-date")
    wait_open(d, 15)
    ahead = RA + 2
    date = email.utils.formatdate(time.time() + ahead, usegmt=True)
    t0 = time.monotonic()
    backend.refuse(503, date)
    backend.drop_all()
    sc.fault("HTTP 503", f"HTTP 503 with Retry-After: <HTTP-date {ahead} s ahead>")
    acked, _ = send_batch(d, 3, "http503date")
    sc.ack(acked)
    settle(lambda: len(refused_attempts(backend, t0, 503)) >= 2, ahead + MAX + 5)
    times = [a.t for a in refused_attempts(backend, t0, 503)]
    first_gap = times[1] - times[0] if len(times) >= 2 else None
    want = ahead - (times[0] - t0) - 1.0 if times else ahead - 1
    sc.figure("503 Retry-After: HTTP-date: first delay", f"{first_gap:.2f} s (the date was {ahead} s ahead)"
              if first_gap is not None else "no second attempt")
    sc.check(f"503 Retry-After: HTTP-date: waits until the date (README: 'waits as long as the server asks')",
             first_gap is not None and first_gap >= want, f"waited {first_gap:.2f} s, the server asked for ≥ {want:.1f} s"
             if first_gap is not None else "no second attempt")
    accept_and_deliver(sc, backend, d, acked, "503 Retry-After: HTTP-date", None)

    log("backend: HTTP 503 with Retry-After: 100000 (capped at an hour)")
    wait_open(d, 15)
    t0 = time.monotonic()
    backend.refuse(503, 100000)
    backend.drop_all()
    sc.fault("HTTP 503", "HTTP 503 with Retry-After: 100000")
    settle(lambda: refused_attempts(backend, t0, 503), 10)
    st = settle(lambda: (s := d.try_status()) and s.get("retry_in") and s, 5) or {}
    sc.check("503 Retry-After: 100000: the wait is capped at an hour", st.get("retry_in") is not None
             and 3000 <= st["retry_in"] <= 3600, f"retry_in {st.get('retry_in')}")
    backend.accept()
    t1 = time.monotonic()
    d.call("io.chatlink.Daemon.Reconnect")
    st = wait_open(d, 10)
    sc.figure("503 Retry-After: 100000: `Reconnect` cuts the wait short", f"open after {time.monotonic() - t1:.2f} s"
              if st else "no (still waiting)")
    if not st:
        d.stop()
        d.start()
        wait_open(d, 15)

    log("backend: HTTP 503 without Retry-After")
    wait_open(d, 15)
    acked, st = refusal(sc, backend, d, 503, None, q(5, 4), MIN - 0.05, MAX + SLACK, "503 without Retry-After",
                        ["HTTP 503"])
    accept_and_deliver(sc, backend, d, acked, "503 without Retry-After", MAX + SLACK)

    # ------------------------------------------------------------------ close codes
    log("backend: close codes")
    _, _, st = close_with(sc, backend, d, 1008, MAX - 0.05, MAX + SLACK, "close 1008 (policy violation: retries slowly)")
    sc.check("close 1008: status names it while waiting", "1008" in (st.get("last_error") or ""), st.get("last_error"))
    close_with(sc, backend, d, 1011, MIN - 0.05, MAX + SLACK, "close 1011 (internal error: backoff)")
    delays, failures, _ = close_with(sc, backend, d, 1012, MIN - 0.05, 2 * MIN + SLACK,
                                  "close 1012 (restart: short jittered delay)", rounds=3)
    sc.check("close 1012: not counted as a failure (failures stays the same)", len(set(failures)) <= 1,
             f"failures= {failures}")
    close_with(sc, backend, d, 1001, MIN - 0.05, 2 * MIN + SLACK, "close 1001 (going away: short jittered delay)")
    close_with(sc, backend, d, 1013, min(10.0, MAX) - 0.05, max(10.0, MAX) + SLACK,
               "close 1013 (try again later; README silent, code waits ≥ min(10 s, ReconnectMaxSec))")

    # ------------------------------------------------------------------ ping flood
    log("backend: ping flood")
    st = wait_open(d, 15)
    conn = wait_joined(backend, 7)
    connects = st["connects"]
    checker = StoreChecker(d.store_dir)
    n = q(200000, 50000)
    poller = StatusPoller(d.socket_path, q(10, 6), 0.05)
    time.sleep(0.3)
    rss0 = rss_kib(d.pid)
    peak = [rss0]
    sc.fault("ping flood", f"ping flood: {n} pings (8 and 125 byte payloads) with 1 message per 100 pings")

    async def flood():
        waiters = []
        pushed = 0
        t0 = time.monotonic()
        for i in range(n):
            payload = struct.pack("!I", i) + (b"p" * 121 if i % 2 else b"\0" * 4)
            try:
                waiters.append(await conn.ws.ping(payload))
            except Exception:  # noqa: BLE001 - connection closed
                break
            if i % 200 == 0:
                # Let the backend's own loop read the pongs coming back: a Python peer that
                # only writes stops answering the daemon's keepalive ping for longer than
                # PongTimeoutSec, and the daemon then rightly drops it as dead.
                await asyncio.sleep(0.005)
            if i % 100 == 0:
                try:
                    await conn.ws.send(f'{{"event":"message","data":{{"room_id":7,"message":"pingflood {i}","sender":"pf"}}}}')
                    pushed += 1
                except Exception:  # noqa: BLE001
                    break
        sent_in = time.monotonic() - t0
        try:
            await asyncio.wait_for(asyncio.shield(waiters[-1]), 15)
        except Exception:  # noqa: BLE001
            pass
        answered = sum(1 for w in waiters if w.done() and not w.cancelled() and w.exception() is None)
        return len(waiters), answered, pushed, sent_in, time.monotonic() - t0

    fut = asyncio.run_coroutine_threadsafe(flood(), backend._loop)
    while not fut.done():
        peak.append(rss_kib(d.pid))
        time.sleep(0.1)
    sent, answered, pushed, sent_in, total = fut.result()
    report = poller.result()
    st = d.try_status() or {}
    sc.figure("ping flood", f"{sent} pings in {sent_in:.1f} s ({sent / max(sent_in, 1e-3):.0f}/s), "
                            f"{answered} acknowledged by pongs, last pong after {total:.1f} s")
    sc.figure("ping flood: GetStatus latency", latency_summary(report))
    sc.figure("ping flood: RSS", f"{rss0} KiB before, {max(peak)} KiB peak")
    sc.check("ping flood: every ping answered (the last pong arrives)", answered == sent and sent == n,
             f"{answered}/{sent}")
    sc.check("ping flood: the connection stays up", st.get("connects") == connects and st.get("state") == "open",
             f"connects {connects} → {st.get('connects')}")
    r = settle(lambda: (r := checker.read("pingflood "))
               and len(r["records"]) >= pushed and r, 10) or checker.read("pingflood ")
    sc.in_pushed += pushed
    sc.in_stored += len(r["records"])
    sc.in_lost += max(0, pushed - len(r["records"]))
    sc.in_strict = True
    sc.check("ping flood: messages between the pings all stored", len(r["records"]) >= pushed,
             f"{len(r['records'])}/{pushed}")
    sc.check("ping flood: the control socket keeps answering (max GetStatus < 1 s)",
             report.get("max") is not None and report["max"] < 1.0 and not report.get("failures"),
             latency_summary(report))
    sc.check("ping flood: memory stays bounded (< 64 MiB growth)", max(peak) - rss0 < 64 * 1024,
             f"+{max(peak) - rss0} KiB")
    acked, _ = send_batch(d, 5, "after-pingflood")
    sc.ack(acked)
    sc.check("ping flood: sends afterwards delivered", wait_all_delivered(backend, acked, 10) is not None)
