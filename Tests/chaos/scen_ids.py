"""Scenario 8: kill -9 at random moments, as scenario 3, with the envelope's catch-up
extension on (`[Envelope] IDField=msg_id`, `SinceField=since`) against the Python backend's
history mode: every message of the backend's rooms has an id, and a join carries the newest
id stored so the backend replays what came after it (a sloppy one: each replay starts some
messages early, which the dedupe window must drop). Kills land while the daemon starts and
during floods, with sends in flight. After each restart, the checks of scenario 3; at the end:

  - every message the backend published is in the store: stored of pushed is 100 %;
  - none twice, and each room's messages in the order the backend gave them ids;
  - every send acknowledged reaches the backend at least once.
"""

from __future__ import annotations

import random
import time

from backend import Publisher
from lib import (
    Backend,
    Scenario,
    Sender,
    StoreChecker,
    audit_scenario,
    frozen,
    log,
    make_daemon,
    q,
    settle,
    wait_all_delivered,
    wait_joined,
)

ROUNDS = int(q(30, 10))
# Each start reads the store's tail to rebuild the dedupe window, slowly in a debug build:
# the store is kept to what a few restarts a minute can read.
FLOOD = q(5000, 4000)
OVERLAP = 25
ROOMS = (7, "ops")
RECORD_BYTES = 380  # about what one flood message takes in messages.jsonl
IDS = {"Envelope": {"IDField": "msg_id", "SinceField": "since"},
       "Store": {"MaxFileSize": "1M", "MaxFiles": "1000"}}


def store_bytes(store_dir) -> int:
    total = 0
    for p in store_dir.glob("messages.jsonl*"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            pass  # rotated away between glob and stat
    return total


def run(sc: Scenario) -> None:
    backend = Backend(history=ROUNDS * FLOOD, replay_overlap=OVERLAP).start()
    sc.backends.append(backend)
    try:
        _run(sc, backend)
    finally:
        audit_scenario(sc)
        backend.stop()


def ready(d, timeout=60):
    return settle(lambda: d.try_status(timeout=2), timeout, interval=0.02)


def catalogue(records: list[dict]) -> dict:
    """The ids of the backend's messages per room, in store order: the floods, and our own
    sends as the backend published them (their echoes)."""
    out: dict = {}
    for r in records:
        data = r.get("data")
        if r["dir"] == "in" and isinstance(data, dict) and data.get("event") == "message" and "id" in r:
            out.setdefault(r["room"], []).append(int(r["id"]))
    return out


def check_round(sc: Scenario, d, checker: StoreChecker, durable: int | None, k: int, problems: dict) -> None:
    """After a restart: no torn line, seqs in order, what was durable still there, each room's
    ids in order and each once (so far)."""
    with frozen(d):
        r = checker.read("")
    if r["bad"]:
        problems["torn"].append(f"round {k}: {r['bad'][:2]}")
    if r["problems"]:
        problems["seq"].append(f"round {k}: {r['problems']}")
    if durable is not None and r["last"] < durable:
        problems["durable"].append(f"round {k}: durable_seq {durable} before the kill, last seq {r['last']} after")
        sc.in_lost += durable - r["last"]
    for room, ids in catalogue(r["records"]).items():
        if ids != sorted(set(ids)):
            problems["order"].append(f"round {k}: room {room}: ids repeated or out of order")


def _run(sc: Scenario, backend: Backend) -> None:
    rng = random.Random(random.random())
    d = make_daemon(sc, "ids", backend.url, IDS, start=False)
    checker = StoreChecker(d.store_dir)
    acked: list[dict] = []
    problems = {"torn": [], "seq": [], "durable": [], "order": []}
    kinds = {"startup": 0, "flood": 0}
    dropped = 0
    durable = None
    last_conn = 0
    for k in range(ROUNDS):
        d.start(wait=False)
        if rng.random() < 0.1:
            # During start: store recovery, the window's rebuild, the first connect.
            time.sleep(rng.uniform(0.0, 0.5))
            d.kill()
            kinds["startup"] += 1
            sc.fault("kill -9", "kill -9 while starting")
            continue
        if not ready(d):
            sc.check(f"round {k}: the daemon starts after a kill -9", False, d.log_text()[-2000:])
            d.kill()
            break
        check_round(sc, d, checker, durable, k, problems)
        conn = wait_joined(backend, 7, after_conn=last_conn, timeout=60)
        if conn is None:
            sc.check(f"round {k}: reconnects and joins after a kill -9", False)
            d.kill()
            break
        last_conn = conn.id
        # Every room joined before anything is published: a room with nothing stored is
        # joined without since, and only what comes after its join is for the daemon.
        settle(lambda: all(conn.id in backend.members(room) for room in ROOMS), 10)
        senders = [Sender(d, f"i{k}s{j}", interval=0.005) for j in range(2)]
        for s in senders:
            s.start()
        size0 = store_bytes(d.store_dir)
        publisher = Publisher(backend, list(ROOMS), FLOOD, rate=FLOOD * 4, tag=f"ids-r{k}-")
        publisher.start()
        if rng.random() < 0.35:
            time.sleep(rng.uniform(0.0, 0.3))  # a random instant early in the flood (or in a catch-up)
        else:
            grow = rng.uniform(0.05, 0.9) * FLOOD * RECORD_BYTES
            settle(lambda: store_bytes(d.store_dir) - size0 >= grow, 30, interval=0.002)
        st = d.try_status(timeout=0.3)
        durable = st["durable_seq"] if st else None
        dropped += st["duplicates_dropped"] if st else 0
        d.kill()
        kinds["flood"] += 1
        sc.fault("kill -9", "kill -9 during an inbound flood with catch-up, sends in flight")
        for s in senders:
            s.stop()
            acked += s.acked
        publisher.done.wait(30)
        if k % 10 == 0:
            log(f"ids: round {k}/{ROUNDS}: {len(acked)} acknowledged sends so far")

    # The last restart: every send delivered, then everything the backend published must be
    # in the store, once.
    d.start(wait=False)
    stored: dict = {}
    st = None
    published: dict = {}
    if ready(d):
        check_round(sc, d, checker, durable, ROUNDS, problems)
        waited = wait_all_delivered(backend, acked, 30)
        if waited is not None:
            sc.time("restart → every acknowledged send delivered", waited)

        def complete():
            # Sends delivered but unconfirmed at a kill go out again once the outbox is back
            # (at least once): the backend publishes each copy, so what it published is read
            # each time, once the outbox is empty.
            nonlocal stored
            status = d.try_status()
            if not status or status["outbox"] != 0:
                return False
            published.update({room: backend.published(room) for room in ROOMS})
            with frozen(d):
                stored = catalogue(checker.read("")["records"])
            return all(set(ids) <= set(stored.get(room, [])) for room, ids in published.items())
        t0 = time.monotonic()
        settle(complete, 120, interval=1)
        sc.time("restart → every published message stored", time.monotonic() - t0)
        st = d.try_status()
        dropped += st["duplicates_dropped"] if st else 0
    pushed = sum(len(v) for v in published.values())
    have = {room: set(ids) for room, ids in stored.items()}
    missing = sum(len(set(ids) - have.get(room, set())) for room, ids in published.items())
    duplicates = sum(len(ids) - len(set(ids)) for ids in stored.values())
    sc.in_pushed = pushed
    sc.in_stored = sum(len(v) for v in have.values())
    sc.in_strict = True
    sc.in_lost += missing
    sc.ack(acked)
    sc.figure("kills", f"{sum(kinds.values())} (during start {kinds['startup']}, during a flood {kinds['flood']})")
    sc.figure("inbound", f"{pushed} published over rooms {list(ROOMS)} (floods and our sends' echoes), {sc.in_stored} stored, {missing} missing, "
                         f"{duplicates} stored twice; {dropped} or more duplicates dropped (every replay starts "
                         f"{OVERLAP} early); history gaps {st['history_gaps'] if st else '?'}")
    sc.figure("sends", f"{len(acked)} acknowledged")
    sc.check(f"{ROUNDS} kill -9 rounds ran", sum(kinds.values()) == ROUNDS, kinds)
    sc.check("after every restart: no torn or corrupt line", not problems["torn"], "; ".join(problems["torn"][:3]))
    sc.check("after every restart: seq strictly increasing, no repeat, no gap", not problems["seq"],
             "; ".join(problems["seq"][:3]))
    sc.check("after every restart: records reported durable before the kill survive", not problems["durable"],
             "; ".join(problems["durable"][:3]))
    sc.check("after every restart: each room's ids once and in order", not problems["order"],
             "; ".join(problems["order"][:3]))
    sc.check("stored of pushed: 100 %", pushed > 0 and missing == 0, f"{sc.in_stored}/{pushed}")
    sc.check("no message stored twice", duplicates == 0, duplicates)
    sc.check("the overlapping replays were dropped", dropped > 0, dropped)
