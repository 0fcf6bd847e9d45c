"""Scenario 9: kill -9 during an XMPP flood, against a private Prosody (Tests/Fixtures/prosody.py)
with a slixmpp peer posting into two MUC rooms (Tests/integration/xmpp_peer.py). chatlinkd is
killed each time the store has taken another share of the flood; each start is a new session
(the killed one cannot be resumed by a new process), which catches each room up from its archive
after the newest stanza-id stored. At the end:

  - every message the peer posted is in the store: stored of pushed is 100 %;
  - none twice (by body and by stanza-id), and each room's messages in the order posted;
  - no history gap (the archive still held every newest stored id).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time

import prosody as prosody_fixture
from lib import Scenario, audit_scenario, log, make_daemon, q, settle
from xmpp_peer import Peer

FLOOD = int(q(50_000, 5_000))
KILLS = int(q(20, 5))
BATCH = 250


def run(sc: Scenario) -> None:
    # On tmpfs, readable by Prosody's own user; the rooms' archive in SQLite, which keeps up
    # with a flood (the default file store slows down with every message archived).
    directory = tempfile.mkdtemp(prefix="chaos-prosody-", dir="/dev/shm")
    os.chmod(directory, 0o755)
    server = prosody_fixture.Prosody.start(directory, muc_extra=prosody_fixture.SQL_ARCHIVE)
    try:
        _run(sc, server)
    finally:
        audit_scenario(sc)
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


def ready(d, timeout: float = 60) -> dict | None:
    """The status once the session is open and every room's join confirmed."""
    def joined():
        st = d.try_status(timeout=2)
        return st if st and st["state"] == "open" and "joining" not in (st.get("session_note") or "") else None
    return settle(joined, timeout, interval=0.05)


def flood_records(d) -> list[dict]:
    return [r for r in d.records() if r["dir"] == "in" and isinstance(r.get("data"), dict)
            and str(r["data"].get("body", "")).startswith("x-")]


def _run(sc: Scenario, server) -> None:
    rooms = [f"chaos-{i}@{server.muc}" for i in range(2)]
    peer = Peer(server, rooms)
    try:
        d = make_daemon(sc, "xmpp", server.ws_url,
                        {"Backend": {"Protocol": "xmpp", "Rooms": ",".join(rooms)},
                         "XMPP": {"JID": f"chaosbot@{server.domain}"}}, start=False)
        server.register("chaosbot", d.token)
        d.start()
        if not sc.check("the first session opens and joins both rooms", ready(d) is not None):
            return
        sent = [(rooms[i % 2], f"x-{i}") for i in range(FLOOD)]
        failure: list[str] = []

        def flood():
            try:
                for start in range(0, len(sent), BATCH):
                    peer.post(sent[start:start + BATCH])
            except BaseException as error:  # noqa: BLE001 (reported as a check below)
                failure.append(repr(error))
        poster = threading.Thread(target=flood, daemon=True)
        t0 = time.monotonic()
        poster.start()
        kills = 0
        while kills < KILLS and poster.is_alive():
            # The next kill once the store holds another share of the flood.
            target = FLOOD * (kills + 1) // (KILLS + 1)
            settle(lambda: (d.try_status(timeout=1) or {}).get("last_seq", 0) >= target or not poster.is_alive(),
                   120, interval=0.05)
            if not poster.is_alive():
                break
            d.kill()
            kills += 1
            sc.fault("kill -9", "kill -9 during an XMPP flood into two MUC rooms")
            d.start(wait=False)
            if ready(d) is None:
                sc.check(f"kill {kills}: a new session opens and joins the rooms", False, d.log_text()[-1500:])
                return
        poster.join(600)
        sc.check("the peer posted the whole flood", not poster.is_alive() and not failure, failure[:1])
        settle(lambda: len({r["data"]["body"] for r in flood_records(d)}) >= FLOOD, 180, interval=1)
        elapsed = time.monotonic() - t0
        records = flood_records(d)
        bodies = [r["data"]["body"] for r in records]
        missing = FLOOD - len(set(bodies))
        twice = len(bodies) - len(set(bodies))
        ids = [r.get("id") for r in records]
        out_of_order = 0
        for room in rooms:
            numbers = [int(r["data"]["body"][2:]) for r in records if r["room"] == room]
            out_of_order += sum(1 for a, b in zip(numbers, numbers[1:]) if b <= a)
        st = d.try_status() or {}
        sc.in_pushed = FLOOD
        sc.in_stored = len(set(bodies))
        sc.in_strict = True
        sc.in_lost += missing
        sc.figure("kills", f"{kills} during a {FLOOD}-message flood into {len(rooms)} rooms")
        sc.figure("inbound", f"{FLOOD} posted, {len(set(bodies))} stored, {missing} missing, {twice} stored twice, "
                             f"{out_of_order} out of order; duplicates dropped {st.get('duplicates_dropped', '?')} "
                             f"(this process), history gaps {st.get('history_gaps', '?')}; {elapsed:.0f} s")
        sc.time("flood with kills → every message stored", elapsed)
        sc.check(f"{KILLS} kills landed during the flood", kills == KILLS, kills)
        sc.check("every message stored once", missing == 0 and twice == 0, f"{missing} missing, {twice} twice")
        sc.check("each stanza-id once", all(ids) and len(set(ids)) == len(ids))
        sc.check("each room in the order posted", out_of_order == 0, out_of_order)
        sc.check("no history gap", st.get("history_gaps") == 0, st.get("history_gaps"))
        log(f"xmpp: {kills} kills, {len(set(bodies))}/{FLOOD} stored in {elapsed:.0f} s")
    finally:
        peer.close()
