"""SIGHUP: rooms apply live, a new URL reconnects, an invalid file keeps the running
configuration."""

from __future__ import annotations

import signal
import time

import pytest

from backend import Backend
from conftest import send_many, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(60)


def rooms_of(backend, conn_id):
    return [r for _, cid, r in backend.joins() if cid == conn_id]


def test_sighup_with_changed_rooms_joins_the_new_room_and_leaves_the_removed_one(daemon, backend):
    daemon.wait_state("open")
    conn = wait_until(lambda: [c for c in backend.open_connections() if len(rooms_of(backend, c.id)) == 2], 5,
                      message="rooms joined")[0]
    daemon.configure({"Backend": {"Rooms": "7 lobby"}})
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    wait_until(lambda: "lobby" in rooms_of(backend, conn.id), 5, message="join of lobby")
    wait_until(lambda: any(cid == conn.id and r == "ops" for _, cid, r in backend.leaves()), 5,
               message="leave of ops")
    daemon.wait_log("configuration reloaded", since=t0)
    with daemon.ctl() as c:
        assert c.ListRooms()["rooms"] == ["7", "lobby"]
    assert conn.open and daemon.status()["connects"] == 1, "a rooms change must not reconnect"
    # Traffic follows the new rooms.
    assert backend.push("lobby", "hello lobby") == 1
    assert backend.push("ops", "nobody here") == 0
    wait_until(lambda: any(r["room"] == "lobby" for r in daemon.records()), 5, message="lobby message stored")
    # And the new rooms are the ones joined after a reconnect.
    backend.drop_all()
    new = wait_until(lambda: [c for c in backend.open_connections()
                              if c.id > conn.id and len(rooms_of(backend, c.id)) == 2], 10,
                     message="reconnect with the new rooms")[0]
    assert sorted(map(str, rooms_of(backend, new.id))) == ["7", "lobby"]


def test_invalid_config_on_reload_keeps_the_daemon_running_with_the_old_config(daemon, backend):
    daemon.wait_state("open")
    conn = backend.open_connections()[0]
    good = daemon.config_path.read_text()
    daemon.write_config(good.replace("Rooms=7 ops", "Rooms=7 ops other\nNoSuchKey=1"))
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    t = daemon.wait_log("reload failed; keeping the running configuration", since=t0)
    line = [line for tt, line in daemon.log_lines(t0) if "reload failed" in line][0]
    assert "NoSuchKey" in line and "chatlinkd.conf" in line, line
    time.sleep(0.5)
    assert daemon.running()
    status = daemon.status()
    assert status["state"] == "open" and status["rooms"] == ["7", "ops"] and status["connects"] == 1
    assert "other" not in map(str, rooms_of(backend, conn.id))
    acked = send_many(daemon, 3)
    wait_delivered(backend, acked)
    # A file that is not even INI, and a bad value, are refused the same way.
    for text in ("\x00\x01 this is not a config", good.replace("PingIntervalSec=1", "PingIntervalSec=soon")):
        daemon.write_config(text)
        t0 = time.monotonic()
        daemon.send_signal(signal.SIGHUP)
        daemon.wait_log("reload failed", since=t0)
        assert daemon.running() and daemon.status()["state"] == "open"
    # Fixing the file and reloading again applies it.
    daemon.write_config(good.replace("Rooms=7 ops", "Rooms=7 ops other"))
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    daemon.wait_log("configuration reloaded", since=t0)
    wait_until(lambda: "other" in map(str, rooms_of(backend, conn.id)), 5, message="join of other")
    assert daemon.token not in daemon.log_text()


def test_sighup_with_a_new_url_reconnects_to_the_new_backend(daemon, backend):
    daemon.wait_state("open")
    old = backend.open_connections()[0]
    other = Backend().start()
    try:
        daemon.configure({"Backend": {"URL": other.url}})
        daemon.send_signal(signal.SIGHUP)
        conn = wait_until(lambda: [c for c in other.open_connections() if len(rooms_of(other, c.id)) == 2], 10,
                          message="a connection to the new backend with both rooms")[0]
        assert conn.authorization == f"Bearer {daemon.token}"
        wait_until(lambda: not old.open, 5, message="the old connection closed")
        assert daemon.status()["url"] == other.url
        acked = send_many(daemon, 3)
        wait_delivered(other, acked)
    finally:
        other.stop()


def test_sighup_with_a_new_token_reconnects_with_it(daemon, backend):
    daemon.wait_state("open")
    old = backend.open_connections()[0]
    new_token = "tok-rotated-" + daemon.token[-8:]
    daemon.token_file.write_text(new_token + "\n")
    daemon.send_signal(signal.SIGHUP)
    conn = wait_until(lambda: [c for c in backend.open_connections() if c.id > old.id], 10,
                      message="a reconnect after the token changed")[0]
    assert conn.authorization == f"Bearer {new_token}"
    log = daemon.log_text()
    assert new_token not in log and daemon.token not in log



def test_sighup_applies_a_new_log_level_live(daemon, backend):
    daemon.wait_state("open")
    backend.send_raw("not json, before")
    wait_until(lambda: len(daemon.records()) == 1, 5, message="the first frame stored")
    time.sleep(0.2)
    assert "inbound frame is not JSON" not in daemon.log_text()  # LogLevel=info
    # Raising the level to debug shows the session's debug messages.
    daemon.configure({"Daemon": {"LogLevel": "debug"}})
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    daemon.wait_log("configuration reloaded", since=t0)
    backend.send_raw("not json, after")
    wait_until(lambda: len(daemon.records()) == 2, 5, message="the second frame stored")
    daemon.wait_log("inbound frame is not JSON", since=t0, timeout=3)
    # Lowering it to warning silences the session's info messages (connected, disconnected).
    daemon.configure({"Daemon": {"LogLevel": "warning"}})
    t1 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    backend.drop_all()
    daemon.wait_state("open", min_connects=2)
    time.sleep(0.3)
    chatty = [line for t, line in daemon.log_lines(t1 + 0.4) if line.startswith(("<6>", "<7>"))]
    assert not chatty, chatty


def test_sighup_applies_a_new_sender_to_later_sends_without_reconnecting(daemon, backend):
    daemon.wait_state("open")
    first = send_many(daemon, 1, rooms=("7",), prefix="before")
    wait_delivered(backend, first)
    daemon.configure({"Backend": {"Sender": "renamed-bot"}})
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    daemon.wait_log("configuration reloaded", since=t0)
    second = send_many(daemon, 1, rooms=("7",), prefix="after")
    wait_delivered(backend, second)
    senders = {d["client_id"]: d["sender"] for d in backend.sends()}
    assert senders[second[0]["id"]] == "renamed-bot"
    assert senders[first[0]["id"]] != "renamed-bot"
    assert daemon.status()["connects"] == 1, "a sender change must not reconnect"
