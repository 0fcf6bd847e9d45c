"""kill -9 in the middle of an inbound flood, again and again: after every restart no torn
line, seq strictly increasing with no repeat (and no gap) across every file, fsynced records
never lost, and every acknowledged outbox message still delivered."""

from __future__ import annotations

import random
import threading

import pytest

from conftest import Sender, quiet_store, read_store, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(150)

ROUNDS = 5
FLOOD = 20000
RECORD_BYTES = 330  # about what one flood message takes in messages.jsonl


def store_bytes(store_dir) -> int:
    total = 0
    for p in store_dir.glob("messages.jsonl*"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            pass  # rotated away between glob and stat
    return total


def test_kill_9_during_an_inbound_flood_loses_nothing_durable_and_tears_no_line(make_daemon, backend):
    rng = random.Random(4242)
    # Small files, so the kills also land around rotations; keep them all to check every seq.
    daemon = make_daemon({"Store": {"MaxFileSize": "1M", "MaxFiles": "1000"}}, start=False)
    acked: list[dict] = []
    mid_flood = 0
    last_conn = 0
    kept = 0  # records on disk before this round's flood
    durable = 0  # the durable_seq the daemon reported just before it was killed
    for round in range(ROUNDS):
        # Alternate compressed and plain floods: both framings go through the kill.
        daemon.configure({"Store": {"MaxFileSize": "1M", "MaxFiles": "1000"},
                          "Backend": {"Compression": "yes" if round % 2 == 0 else "no"}})
        daemon.start()
        daemon.wait_state("open", timeout=10)
        conn = wait_until(lambda: [c for c in backend.open_connections()
                                   if c.id > last_conn and backend.members(7) >= {c.id}], 10,
                          message="the new connection in room 7")[0]
        last_conn = conn.id
        records, bad = quiet_store(daemon)
        assert not bad, f"round {round}: torn or corrupt lines after restart: {bad[:3]}"
        seqs = [r["seq"] for r in records]
        assert seqs == list(range(1, len(seqs) + 1)), f"round {round}: a seq gap or repeat"
        assert len(seqs) >= kept, f"round {round}: records that were on disk before the flood are gone"
        assert len(seqs) >= durable, f"round {round}: fsynced records (up to seq {durable}) are gone"
        kept = len(seqs)

        sender = Sender(daemon.socket_path, f"round{round}")
        sender.start()
        wait_until(lambda: len(sender.acked) >= 3, 5, message="the first acknowledged sends")
        flood = backend.flood(FLOOD, size=200, room=7, tag=f"-r{round}")
        # Kill at a random moment of the flood, judged by the store's growth on disk (the
        # control socket may be slow to answer while the daemon takes a flood in).
        start_size = store_bytes(daemon.store_dir)
        grow = rng.uniform(0.1, 0.7) * FLOOD * RECORD_BYTES
        wait_until(lambda: store_bytes(daemon.store_dir) - start_size >= grow, 30, interval=0.002,
                   message=f"the store growing by {grow:.0f} bytes (round {round})")
        try:  # what the daemon says is fsynced, if it answers quickly mid-flood
            durable = daemon.status(timeout=0.3)["durable_seq"]
        except (OSError, ValueError):
            durable = 0
        daemon.kill()
        sender.stop.set()
        sender.join(10)
        acked += sender.acked
        flood.result(30)
        records, _ = read_store(daemon.store_dir)
        got = sum(1 for r in records if r["type"] == "json" and
                  str(r["data"].get("data", {}).get("message", "")).startswith(f"flood-r{round} "))
        if 0 < got < FLOOD:
            mid_flood += 1

    daemon.start()
    daemon.wait_state("open", timeout=10)
    wait_delivered(backend, acked, timeout=30)
    records, bad = quiet_store(daemon)
    assert not bad, f"torn or corrupt lines after the last restart: {bad[:3]}"
    seqs = [r["seq"] for r in records]
    assert seqs == list(range(1, len(seqs) + 1)), "a seq gap or repeat"
    assert len(seqs) >= kept
    for r in records:
        assert r["dir"] in ("in", "out") and r["type"] in ("json", "text", "binary")
    assert mid_flood >= ROUNDS - 1, f"only {mid_flood} of {ROUNDS} kills landed in the middle of the flood"
    assert len(acked) >= 3 * ROUNDS
    assert list(daemon.store_dir.glob("messages.jsonl.*")), "the floods should have rotated files"
    torn = daemon.log_text().count("store recovery cut a torn last line")
    print(f"{len(seqs)} records, {len(acked)} acknowledged sends, {torn} torn lines cut at start")
