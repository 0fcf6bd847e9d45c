"""Keepalive and dead-peer detection: a ping every PingIntervalSec, and no pong (or any
frame) within PongTimeoutSec drops the connection; messages sent meanwhile are delivered
after the reconnect."""

from __future__ import annotations

import time

import pytest

from conftest import send_many, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(60)

MARGIN = 0.5


@pytest.mark.parametrize("echo", [True, False], ids=["echo-confirms", "pong-confirms"])
def test_black_holed_backend_is_detected_in_time_and_the_outbox_is_delivered_after(make_daemon, backend, echo):
    ping, pong = 1.0, 2.0
    backend.echo = echo
    daemon = make_daemon({"Backend": {"PingIntervalSec": ping, "PongTimeoutSec": pong, "ConnectTimeoutSec": 1}})
    daemon.wait_state("open")
    before = send_many(daemon, 10, prefix="before")
    wait_delivered(backend, before)
    time.sleep(1.5)  # a few healthy ping/pong rounds
    assert daemon.status()["connects"] == 1
    held = [c.id for c in backend.open_connections()]

    t0 = time.monotonic()
    backend.blackhole()
    during = send_many(daemon, 10, prefix="during")  # written into the black hole, unconfirmed
    detected = daemon.wait_log("backend stopped answering", since=t0, timeout=ping + pong + 3)
    assert detected - t0 <= ping + pong + MARGIN, f"dead peer detected after {detected - t0:.2f} s"
    status = daemon.status()
    assert status["state"] != "open"
    assert status["outbox"] >= 10
    assert not any(d.get("client_id") in {m["id"] for m in during} for d in backend.sends())

    # The backend comes back; what went into the dead connection is lost, and is sent again.
    backend.unblackhole(discard=True)
    daemon.wait_state("open", timeout=10, min_connects=2)
    after = send_many(daemon, 10, prefix="after")
    wait_delivered(backend, before + during + after)
    new_ids = {d.get("client_id") for c in backend.connections() if c.id > max(held) for d in c.sends()}
    assert {m["id"] for m in during} <= new_ids
    wait_until(lambda: daemon.status()["outbox"] == 0, 10, message="an empty outbox")


def test_ping_method_measures_a_round_trip_and_fails_clearly_when_disconnected(daemon, backend):
    daemon.wait_state("open")
    reply = daemon.call("io.chatlink.Daemon.Ping")
    assert "error" not in reply, reply
    assert 0 < reply["parameters"]["rtt_ms"] < 1000
    backend.refuse(503)
    backend.drop_all()
    wait_until(lambda: daemon.status()["state"] != "open", 5, message="the daemon noticing the drop")
    reply = daemon.call("io.chatlink.Daemon.Ping")
    assert reply.get("error") == "io.chatlink.Daemon.NotConnected", reply
    assert reply["parameters"]["state"] != "open"


def test_healthy_connection_stays_up_when_pong_timeout_is_below_ping_interval(make_daemon, backend):
    daemon = make_daemon({"Backend": {"PingIntervalSec": 1.5, "PongTimeoutSec": 1}})
    daemon.wait_state("open")
    t0 = time.monotonic()
    time.sleep(5)
    # Pongs do arrive: the backend answers every ping (websockets does it for us).
    reply = daemon.call("io.chatlink.Daemon.Ping")
    assert "error" not in reply, reply
    dropped = [line for t, line in daemon.log_lines(t0) if "stopped answering" in line]
    assert not dropped and daemon.status()["connects"] == 1, dropped


def test_a_send_does_not_drop_the_healthy_connection_pong_timeout_later(make_daemon, backend):
    daemon = make_daemon({"Backend": {"PingIntervalSec": 30, "PongTimeoutSec": 1}})
    daemon.wait_state("open")
    acked = send_many(daemon, 1, prefix="one")
    wait_delivered(backend, acked)
    t0 = time.monotonic()
    time.sleep(2.5)
    dropped = [line for t, line in daemon.log_lines(t0) if "stopped answering" in line]
    assert not dropped and daemon.status()["connects"] == 1, dropped
