"""The message store: every inbound frame lands as one JSON line with a strictly increasing
seq, direction, room and a lossless payload; seq continues across restarts; rotation and
crash recovery keep the files whole."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import time

import pytest

from conftest import quiet_store, read_store, wait_until

pytestmark = pytest.mark.timeout(60)

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def inbound(daemon):
    return [r for r in daemon.records() if r["dir"] == "in"]


def wait_records(daemon, n: int, timeout: float = 10):
    return wait_until(lambda: (r := inbound(daemon)) and len(r) >= n and r, timeout,
                      message=f"{n} inbound records in the store")


def wait_durable(daemon, timeout: float = 5):
    return wait_until(lambda: (s := daemon.status())["durable_seq"] == s["last_seq"] and s, timeout,
                      message="durable_seq == last_seq")


def assert_strictly_increasing(records):
    seqs = [r["seq"] for r in records]
    assert all(isinstance(s, int) and s > 0 for s in seqs)
    assert all(a < b for a, b in zip(seqs, seqs[1:])), f"seq not strictly increasing: {seqs}"


def test_every_pushed_message_is_a_line_with_increasing_seq_dir_room_and_the_frame(daemon, backend):
    daemon.wait_state("open")
    wait_until(lambda: len(backend.members(7)) == 1 and len(backend.members("ops")) == 1, 5,
               message="both rooms joined")
    sent = []
    for i in range(60):
        room = 7 if i % 2 == 0 else "ops"
        text = f"message {i}: grüße, 日本語, \"quotes\", \\ backslash, tab\t, emoji 🎉"
        assert backend.push(room, text, sender=f"user{i % 3}") == 1
        sent.append((room, text))
    records = wait_records(daemon, len(sent))
    assert len(records) == len(sent)
    assert_strictly_increasing(records)
    assert [r["seq"] for r in records] == list(range(records[0]["seq"], records[0]["seq"] + len(sent)))
    for r, (room, text) in zip(records, sent):
        assert r["dir"] == "in" and r["type"] == "json"
        assert r["room"] == room  # 7 stays a number, "ops" a string
        assert TIME.match(r["time"]), r["time"]
        assert r["data"]["event"] == "message"
        assert r["data"]["data"]["room_id"] == room and r["data"]["data"]["message"] == text
    assert [r["time"] for r in records] == sorted(r["time"] for r in records)
    status = wait_durable(daemon)
    assert status["last_seq"] == records[-1]["seq"] and status["received"] == len(sent)
    assert os.stat(daemon.store_dir / "messages.jsonl").st_mode & 0o777 == 0o640


def test_frames_that_are_not_envelopes_are_stored_losslessly(daemon, backend):
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7), 5, message="room 7 joined")
    blob = bytes(range(256)) * 3
    frames = [
        ("text", "this is not JSON {"),
        ("text", 'a "quoted" \\ line\nwith a newline and \x01 control'),
        ("binary", blob),
        ("binary", b""),
        ("text", "[1, 2, 3]"),
        ("text", '{\n  "event": "message",\n  "data": {"room_id": 7, "message": "pretty"}\n}'),
        ("text", '{"event":"message","data":{"room_id":{"nested":true},"message":"odd room"}}'),
        ("text", '{"event":"message","data":{"room_id":"7","message":"string seven"}}'),
        ("text", ""),
    ]
    for kind, payload in frames:
        n = backend.send_binary(payload) if kind == "binary" else backend.send_raw(payload)
        assert n == 1
    records = wait_records(daemon, len(frames))
    assert len(records) == len(frames)
    assert_strictly_increasing(records)
    got = {i: r for i, r in enumerate(records)}
    assert got[0]["type"] == "text" and got[0]["data"] == "this is not JSON {" and got[0]["room"] is None
    assert got[1]["type"] == "text" and got[1]["data"] == frames[1][1]
    assert got[2]["type"] == "binary" and base64.b64decode(got[2]["data"]) == blob and got[2]["room"] is None
    assert got[3]["type"] == "binary" and got[3]["data"] == ""
    assert got[4]["type"] == "json" and got[4]["data"] == [1, 2, 3] and got[4]["room"] is None
    assert got[5]["type"] == "json" and got[5]["data"] == json.loads(frames[5][1]) and got[5]["room"] == 7
    assert got[6]["type"] == "json" and got[6]["room"] is None
    assert got[7]["type"] == "json" and got[7]["room"] == "7"
    assert got[8]["type"] == "text" and got[8]["data"] == ""
    # One line per record: the multi-line frame was minified.
    raw = (daemon.store_dir / "messages.jsonl").read_bytes()
    assert raw.count(b"\n") == len(records)
    # The daemon is still connected and still storing.
    backend.push(7, "still here")
    wait_records(daemon, len(frames) + 1)
    assert daemon.status()["state"] == "open"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_seq_continues_after_a_restart(make_daemon, backend, sig):
    daemon = make_daemon()
    daemon.wait_state("open")
    for round in range(3):
        wait_until(lambda: backend.members(7), 5, message="room 7 joined")
        before = len(inbound(daemon))
        for i in range(10):
            backend.push(7, f"round {round} message {i}")
        wait_records(daemon, before + 10)
        last = wait_durable(daemon)["last_seq"]
        daemon.stop(sig)
        daemon.start()
        status = daemon.wait_state("open")
        assert status["last_seq"] == last, "seq must continue after the last durable record"
        assert f"last_seq={last}" in daemon.log_text()
    records = daemon.records()
    assert len(records) == 30
    assert_strictly_increasing(records)


def test_a_torn_last_line_is_cut_and_seq_continues(make_daemon, backend):
    daemon = make_daemon()
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7), 5, message="room 7 joined")
    for i in range(5):
        backend.push(7, f"before {i}")
    wait_records(daemon, 5)
    last = wait_durable(daemon)["last_seq"]
    daemon.kill()
    path = daemon.store_dir / "messages.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"seq":%d,"time":"2026-01-01T00:00:00.000000Z","dir":"in","room":7,"type":"js' % (last + 1))
    daemon.start()
    daemon.wait_state("open")
    daemon.wait_log("store recovery cut a torn last line", timeout=5)
    wait_until(lambda: backend.members(7), 5, message="room 7 joined again")
    backend.push(7, "after")
    records, bad = read_store(daemon.store_dir)
    wait_until(lambda: len(read_store(daemon.store_dir)[0]) == 6, 5, message="the new record")
    records, bad = read_store(daemon.store_dir)
    assert not bad
    assert_strictly_increasing(records)
    assert records[-1]["seq"] == last + 1 and records[-1]["data"]["data"]["message"] == "after"


def test_a_corrupt_store_file_does_not_stop_the_daemon(make_daemon, backend):
    daemon = make_daemon(start=False)
    daemon.store_dir.mkdir(parents=True)
    (daemon.store_dir / "messages.jsonl").write_bytes(b"\x00\xff garbage\nnot a record\n{\"seq\":\n")
    daemon.start()
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7), 5, message="room 7 joined")
    backend.push(7, "fresh")
    wait_until(lambda: b"fresh" in (daemon.store_dir / "messages.jsonl").read_bytes(), 5,
               message="the new record appended")
    assert daemon.running()


def test_rotation_keeps_max_files_and_seq_increasing_across_them(make_daemon, backend):
    daemon = make_daemon({"Store": {"MaxFileSize": "4096", "MaxFiles": "3"}})
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7), 5, message="room 7 joined")
    # Groups of 5, each stored before the next is pushed, so they are written one by one
    # (a write that arrives in one batch rotates once, however large it is).
    for i in range(200):
        backend.push(7, f"rotation message {i:04d} " + "r" * 60)
        if i % 5 == 4:
            wait_until(lambda: daemon.status()["received"] >= i + 1, 5, interval=0.01,
                       message=f"message {i} received")
            time.sleep(0.03)
    wait_until(lambda: any(r["data"]["data"]["message"].startswith("rotation message 0199")
                           for r in inbound(daemon)), 10, message="the last message stored")
    quiet_store(daemon)  # no write (and so no rotation) under way
    names = sorted(p.name for p in daemon.store_dir.glob("messages.jsonl*"))
    assert names == ["messages.jsonl", "messages.jsonl.1", "messages.jsonl.2"], names
    # A file rotates once a write takes it to MaxFileSize; a write is one batch of whole
    # lines (at most 1 MiB), so a rotated file is at least MaxFileSize and at most one batch more.
    for name in names[1:]:
        assert 4096 <= (daemon.store_dir / name).stat().st_size <= 4096 + (1 << 20), name
    records = daemon.records()
    assert_strictly_increasing(records)
    # Retention dropped the oldest; what is kept ends with the newest and has no gap.
    seqs = [r["seq"] for r in records]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert records[-1]["data"]["data"]["message"].startswith("rotation message 0199")
