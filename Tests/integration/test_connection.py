"""Connection lifecycle: the handshake, rooms joined after every (re)connect, and how the
daemon comes back after the backend drops or restarts."""

from __future__ import annotations

import time

import pytest

from conftest import wait_until

pytestmark = pytest.mark.timeout(60)


def joined_rooms(backend, conn_id):
    return [room for _, cid, room in backend.joins() if cid == conn_id]


def wait_for_connection(backend, after: int, timeout: float = 10):
    """Waits for an open connection with id > `after` that has joined both rooms."""
    def find():
        for c in backend.open_connections():
            if c.id > after and sorted(map(str, joined_rooms(backend, c.id))) == ["7", "ops"]:
                return c
        return None
    return wait_until(find, timeout, message=f"a new connection (after #{after}) that joined 7 and ops")


def test_handshake_carries_the_bearer_token_and_rooms_are_joined_first(daemon, backend):
    conn = wait_for_connection(backend, 0)
    assert conn.authorization == f"Bearer {daemon.token}"
    assert conn.extensions and "permessage-deflate" in conn.extensions
    # Rooms are the first frames on the connection, in the configured order, numbers as numbers.
    first = [f.json for f in conn.frames[:2]]
    assert first == [
        {"event": "join-room", "data": {"room_id": 7}},
        {"event": "join-room", "data": {"room_id": "ops"}},
    ]
    status = daemon.wait_state("open")
    assert status["rooms"] == ["7", "ops"] and status["connects"] == 1


def test_rooms_are_rejoined_after_every_tcp_drop(daemon, backend):
    conn = wait_for_connection(backend, 0)
    for _ in range(3):
        assert backend.drop_all() >= 1
        conn = wait_for_connection(backend, conn.id)
    # Every connection joined both rooms, and a message pushed now arrives.
    for c in backend.connections():
        if c.frames:
            assert sorted(map(str, joined_rooms(backend, c.id))) == ["7", "ops"], c.id
    assert backend.push(7, "after the drops") == 1
    wait_until(
        lambda: any(r["type"] == "json" and r["data"]["data"].get("message") == "after the drops"
                    for r in daemon.records()),
        5, message="the pushed message in the store")
    assert daemon.status()["connects"] >= 4


def test_service_restart_close_1012_reconnects_quickly_without_counting_a_failure(daemon, backend):
    conn = wait_for_connection(backend, 0)
    for _ in range(3):
        t0 = time.monotonic()
        assert backend.close_all(1012, "service restart") >= 1
        conn = wait_for_connection(backend, conn.id, timeout=5)
        # ReconnectMinSec=0.2: a short jittered delay (at most 2 x minimum), not the backoff.
        assert conn.opened_at - t0 < 0.2 * 2 + 0.5
    status = daemon.wait_state("open")
    assert status.get("last_error") is None, status
    # The daemon's reply to our close frame echoed the code.
    closed = [c for c in backend.connections() if c.close_sent_code == 1012]
    assert closed and all(c.close_code == 1012 for c in closed), [(c.close_code, c.close_reason) for c in closed]
    disconnects = [line for _, line in daemon.log_lines() if "info disconnected" in line]
    assert len(disconnects) >= 3 and all("failures=0" in line for line in disconnects), disconnects


def test_going_away_close_1001_reconnects(daemon, backend):
    conn = wait_for_connection(backend, 0)
    backend.close_all(1001, "backend shutting down")
    wait_for_connection(backend, conn.id, timeout=5)


def test_reconnect_method_opens_a_new_connection_and_rejoins(daemon, backend):
    conn = wait_for_connection(backend, 0)
    with daemon.ctl() as c:
        assert c.Reconnect() == {}
    new = wait_for_connection(backend, conn.id, timeout=5)
    wait_until(lambda: not conn.open, 5, message="the old connection closed")
    assert conn.close_code == 1001
    assert new.authorization == f"Bearer {daemon.token}"


def test_join_and_leave_at_runtime_apply_now_and_after_reconnects(daemon, backend):
    conn = wait_for_connection(backend, 0)
    with daemon.ctl() as c:
        c.Join(room="lobby")
        wait_until(lambda: "lobby" in joined_rooms(backend, conn.id), 5, message="join of lobby")
        assert c.ListRooms()["rooms"] == ["7", "ops", "lobby"]
        c.Leave(room="ops")
        wait_until(lambda: any(r == "ops" and cid == conn.id for _, cid, r in backend.leaves()), 5,
                   message="leave of ops")
        assert c.ListRooms()["rooms"] == ["7", "lobby"]
    backend.drop_all()

    def rejoined():
        for c in backend.open_connections():
            if c.id > conn.id and sorted(map(str, joined_rooms(backend, c.id))) == ["7", "lobby"]:
                return c
        return None
    new = wait_until(rejoined, 10, message="reconnect joining 7 and lobby (not ops)")
    time.sleep(0.3)
    assert "ops" not in joined_rooms(backend, new.id)
