"""Scenario 3: kill -9 at random moments: while the daemon starts (store recovery), and during
an inbound flood with outbound sends in flight (two control-socket senders; every
acknowledged send is recorded with its client id). Small store files, so kills also land
around rotations. After each restart:

  - no torn line survives (every line of every store file parses);
  - seq is strictly increasing with no repeat (and no gap) across all store files;
  - records the daemon reported durable before the kill are still there;
  - every send acknowledged so far reaches the backend at least once (duplicates counted).
"""

from __future__ import annotations

import random
import time

from lib import (
    Backend,
    Scenario,
    Sender,
    StoreChecker,
    audit_scenario,
    frozen,
    log,
    make_daemon,
    message_of,
    q,
    settle,
    wait_joined,
)

ROUNDS = int(q(50, 10))
QUICK_DEBUG = False
FLOOD = q(20000, 10000)
RECORD_BYTES = 330  # about what one flood message takes in messages.jsonl


def store_bytes(store_dir) -> int:
    total = 0
    for p in store_dir.glob("messages.jsonl*"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            pass  # rotated away between glob and stat
    return total


def run(sc: Scenario) -> None:
    backend = Backend().start()
    sc.backends.append(backend)
    try:
        _run(sc, backend)
    finally:
        audit_scenario(sc)
        backend.stop()


def ready(d, timeout=15):
    return settle(lambda: d.try_status(timeout=2), timeout, interval=0.02)


def verify(sc: Scenario, d, checker: StoreChecker, backend: Backend, acked: list[dict], durable: int | None,
           round_no: int, problems: dict, t_start: float) -> int:
    """The after-restart checks; returns the last seq on disk."""
    # Read with the daemon stopped (no write or rotation under the reader); a bad line must
    # still be there on a second look.
    for _ in range(3):
        with frozen(d):
            r = checker.read()
        if not r["bad"] and not r["problems"]:
            break
        time.sleep(0.05)
    if r["bad"]:
        problems["torn"].append(f"round {round_no}: {r['bad'][:2]}")
    if r["problems"]:
        problems["seq"].append(f"round {round_no}: {r['problems']}")
    if durable is not None and r["last"] < durable:
        problems["durable"].append(f"round {round_no}: durable_seq {durable} before the kill, last seq {r['last']} after")
        sc.in_lost += durable - r["last"]
    want = {a["id"] for a in acked}
    ok = settle(lambda: want <= set(backend.delivered_ids()), 20)
    if not ok:
        missing = want - set(backend.delivered_ids())
        problems["delivery"].append(f"round {round_no}: {len(missing)} acknowledged sends not delivered")
    else:
        sc.time("restart → every acknowledged send delivered", time.monotonic() - t_start)
    return r["last"]


def _run(sc: Scenario, backend: Backend) -> None:
    rng = random.Random(random.random())
    d = make_daemon(sc, "crash", backend.url, {"Store": {"MaxFileSize": "1M", "MaxFiles": "1000"}}, start=False)
    checker = StoreChecker(d.store_dir)
    acked: list[dict] = []
    problems = {"torn": [], "seq": [], "durable": [], "delivery": []}
    kinds = {"startup": 0, "flood": 0}
    in_flight = 0
    mid_flood = 0
    durable = None
    last_conn = 0
    pushed = 0
    kill_delays = []
    for k in range(ROUNDS):
        t_start = time.monotonic()
        d.start(wait=False)
        kind = "startup" if rng.random() < 0.1 else "flood"
        if kind == "startup":
            # During start: store recovery, the control socket coming up, the first connect.
            time.sleep(rng.uniform(0.0, 0.3))
            d.kill()
            kinds[kind] += 1
            sc.fault("kill -9", "kill -9 while starting")
            continue
        if not ready(d):
            sc.check(f"round {k}: the daemon starts after a kill -9", False, d.log_text()[-2000:])
            d.kill()
            break
        verify(sc, d, checker, backend, acked, durable, k, problems, t_start)
        conn = wait_joined(backend, 7, after_conn=last_conn, timeout=15)
        if conn is None:
            sc.check(f"round {k}: reconnects and joins after a kill -9", False)
            d.kill()
            break
        last_conn = conn.id
        before = checker.read()["last"]
        senders = [Sender(d, f"r{k}s{j}", interval=0.002) for j in range(2)]
        for s in senders:
            s.start()
        settle(lambda: all(len(s.acked) >= 2 for s in senders), 5, interval=0.01)
        size0 = store_bytes(d.store_dir)
        t_flood = time.monotonic()
        flood = backend.flood(FLOOD, size=200, room=7, tag=f"-r{k}")
        if rng.random() < 0.35:
            time.sleep(rng.uniform(0.0, 0.15))  # a random instant early in the flood
        else:
            grow = rng.uniform(0.05, 0.9) * FLOOD * RECORD_BYTES  # a random point of its progress
            settle(lambda: store_bytes(d.store_dir) - size0 >= grow, 30, interval=0.002)
        kill_delays.append(time.monotonic() - t_flood)
        st = d.try_status(timeout=0.3)
        durable = st["durable_seq"] if st else None
        d.kill()
        kinds[kind] += 1
        sc.fault("kill -9", "kill -9 during an inbound flood with sends in flight")
        for s in senders:
            s.stop()
            acked += s.acked
            in_flight += s.in_flight
        try:
            pushed += flood.result(30)
        except Exception:  # noqa: BLE001
            pass
        r = checker.read(f"flood-r{k} ")  # the daemon is dead: the files are still
        got = len(r["records"])
        if 0 < got < FLOOD:
            mid_flood += 1
        log(f"crash: round {k}: killed {kill_delays[-1]:.2f} s into the flood, {got}/{FLOOD} stored") if QUICK_DEBUG else None
        if k % 10 == 0:
            log(f"crash: round {k}/{ROUNDS}: {len(acked)} acknowledged sends so far, "
                f"{r['last']} records, last flood {got}/{FLOOD} stored before the kill")

    # The last restart: everything must be there.
    t_start = time.monotonic()
    d.start(wait=False)
    if ready(d):
        last = verify(sc, d, checker, backend, acked, durable, ROUNDS, problems, t_start)
        settle(lambda: (s := d.try_status()) and s["outbox"] == 0 and s["durable_seq"] == s["last_seq"], 20)
        with frozen(d):
            r = checker.read("flood-r")
        sc.in_pushed = pushed
        sc.in_stored = len(r["records"])
        sc.figure("store", f"{len(r['seqs'])} records in {r['files']} files, last seq {r['last']}")
    sc.ack(acked)
    torn_cut = d.log_count("store recovery cut a torn last line")
    sc.figure("kills", f"{sum(kinds.values())} (during start {kinds['startup']}, during a flood {kinds['flood']}; "
                       f"{mid_flood} landed mid-flood), kill moments {min(kill_delays or [0]):.2f}..{max(kill_delays or [0]):.2f} s "
                       f"into the flood")
    sc.figure("sends", f"{len(acked)} acknowledged, {in_flight} in flight at a kill (unacknowledged, not counted)")
    sc.figure("torn last lines cut at start (and logged)", torn_cut)
    sc.figure("rotated files", len(list(d.store_dir.glob("messages.jsonl.*"))))
    sc.check(f"{ROUNDS} kill -9 rounds ran", sum(kinds.values()) == ROUNDS, kinds)
    sc.check("after every restart: no torn or corrupt line", not problems["torn"], "; ".join(problems["torn"][:3]))
    sc.check("after every restart: seq strictly increasing, no repeat, no gap, across all files",
             not problems["seq"], "; ".join(problems["seq"][:3]))
    sc.check("after every restart: records reported durable before the kill survive", not problems["durable"],
             "; ".join(problems["durable"][:3]))
    sc.check("after every restart: every acknowledged send delivered at least once", not problems["delivery"],
             "; ".join(problems["delivery"][:3]))
    sc.check("most flood kills landed mid-flood", mid_flood >= kinds["flood"] * 0.6,
             f"{mid_flood} of {kinds['flood']}")
