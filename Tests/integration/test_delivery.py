"""Outbound delivery: every acknowledged Send reaches the backend, at least once and in order
per room, across TCP drops and daemon restarts, whether the backend confirms by echoing the
client id or only by answering pings (written is not delivered)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time

import pytest

from conftest import BIN, send_many, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(90)

ECHO = pytest.mark.parametrize("echo", [True, False], ids=["echo-confirms", "pong-confirms"])


def wait_outbox_empty(daemon, timeout: float = 15):
    return wait_until(lambda: (s := daemon.status())["outbox"] == 0 and s, timeout,
                      message="an empty outbox (everything confirmed)")


def out_records(daemon):
    return {r["id"]: r for r in daemon.records() if r["dir"] == "out"}


@ECHO
def test_every_acknowledged_send_is_delivered_in_order_across_tcp_drops(daemon, backend, echo):
    backend.echo = echo
    daemon.wait_state("open")
    acked = send_many(daemon, 100, prefix="a")
    backend.drop_all()
    acked += send_many(daemon, 100, prefix="b")
    backend.drop_all()
    # And drops while sends are arriving, so some die written but unconfirmed.
    for round in range(5):
        wait_until(backend.open_connections, 10, message="an open connection")
        out: list = []
        t = threading.Thread(target=lambda: out.extend(send_many(daemon, 80, prefix=f"c{round}")))
        t.start()
        time.sleep(0.02 + 0.01 * round)
        backend.drop_all()
        t.join(30)
        acked += out
    wait_delivered(backend, acked)
    status = wait_outbox_empty(daemon)
    assert status["confirmed"] >= len(acked)
    # Each confirmed message is stored once as an "out" record carrying its id and room.
    wait_until(lambda: len(out_records(daemon)) == len(acked), 5, message="an out record per message")
    out_list = [r for r in daemon.records() if r["dir"] == "out"]
    assert len(out_list) == len(acked), "a message was confirmed (stored as out) twice"
    outs = out_records(daemon)
    for a in acked:
        r = outs[a["id"]]
        assert str(r["room"]) == a["room"] and r["type"] == "json"
        assert r["data"]["data"]["message"] == a["text"] and r["data"]["data"]["client_id"] == a["id"]


@ECHO
def test_sends_queued_while_the_backend_refuses_are_delivered_once_it_accepts(daemon, backend, echo):
    backend.echo = echo
    daemon.wait_state("open")
    backend.refuse(503)
    backend.drop_all()
    wait_until(lambda: daemon.status()["state"] != "open", 5, message="the daemon noticing the drop")
    acked = send_many(daemon, 30, prefix="offline")
    assert daemon.status()["outbox"] == 30
    backend.accept()
    wait_delivered(backend, acked)
    wait_outbox_empty(daemon)


@ECHO
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_acknowledged_sends_survive_a_daemon_restart(make_daemon, backend, echo, sig):
    """Messages acknowledged while the backend read nothing (written into a socket whose bytes
    are then lost) are delivered by the restarted daemon."""
    backend.echo = echo
    daemon = make_daemon()
    daemon.wait_state("open")
    acked = send_many(daemon, 20, prefix="before")
    wait_delivered(backend, acked)
    wait_outbox_empty(daemon)

    backend.blackhole()
    stranded = send_many(daemon, 20, prefix="stranded")
    held = [c.id for c in backend.open_connections()]
    rc = daemon.stop(sig, timeout=10)
    if sig == signal.SIGTERM:
        assert rc == 0
    backend.unblackhole(discard=True)  # what the old daemon wrote is lost unread
    assert not any(d.get("client_id") in {s["id"] for s in stranded} for d in backend.sends())

    daemon.start()
    daemon.wait_state("open")
    after = send_many(daemon, 20, prefix="after")
    acked += stranded + after
    wait_delivered(backend, acked)
    # The stranded ones came from the restarted daemon, on a connection opened after the restart.
    stranded_ids = {s["id"] for s in stranded}
    new_conns = [c for c in backend.connections() if c.id > max(held)]
    assert stranded_ids <= {d.get("client_id") for c in new_conns for d in c.sends()}
    wait_outbox_empty(daemon)


def test_a_full_outbox_refuses_sends_clearly_until_messages_are_delivered(make_daemon, backend):
    backend.refuse(503)
    daemon = make_daemon({"Outbox": {"MaxMessages": 5}})
    acked = send_many(daemon, 5, prefix="fits")
    reply = daemon.call("io.chatlink.Daemon.Send", {"room": "7", "text": "one too many"})
    assert reply.get("error") == "io.chatlink.Daemon.OutboxFull", reply
    assert reply["parameters"]["limit"] == 5
    assert daemon.status()["outbox"] == 5
    backend.accept()
    wait_delivered(backend, acked)
    wait_outbox_empty(daemon)
    acked += send_many(daemon, 5, prefix="again")
    wait_delivered(backend, acked)
    assert "one too many" not in [d.get("message") for d in backend.sends()]


def test_chatlinkctl_send_dash_waits_for_room_in_a_full_outbox_and_delivers_every_line_in_order(
        make_daemon, backend, tmp_path):
    # The backend is away, so nothing is confirmed and the outbox (MaxMessages=2300) fills:
    # chatlinkctl waits for room instead of failing (its SendBatch calls ask to). Once the
    # backend is back, its confirmations make room, and every line is queued, has its receipt,
    # and arrives, in order.
    backend.refuse(503)
    daemon = make_daemon({"Outbox": {"MaxMessages": 2300}})
    lines = tmp_path / "lines"
    lines.write_text("".join(f"line {i}\n" for i in range(5000)))
    with open(lines) as stdin:
        ctl = subprocess.Popen([str(BIN / "chatlinkctl"), "--socket", daemon.socket_path, "--json",
                                "send", "--room", "ops", "-"], stdin=stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: daemon.status()["outbox"] >= 2048, 15, message="the outbox filling")
        time.sleep(0.5)
        assert ctl.poll() is None, f"chatlinkctl gave up: {ctl.communicate()}"
        assert 2048 <= daemon.status()["outbox"] <= 2300
        backend.accept()
        out, err = ctl.communicate(timeout=60)
    finally:
        if ctl.poll() is None:
            ctl.kill()
    assert ctl.returncode == 0, err
    receipts = [json.loads(line) for line in out.splitlines()]
    assert len(receipts) == 5000
    counts = [r["count"] for r in receipts]
    assert counts == list(range(counts[0], counts[0] + 5000))
    acked = [{**r, "room": "ops", "text": f"line {i}"} for i, r in enumerate(receipts)]
    wait_delivered(backend, acked, timeout=40)
    wait_outbox_empty(daemon)


def test_chatlinkctl_send_dash_stops_at_a_call_the_outbox_could_never_hold(make_daemon, backend):
    # A call of more lines than MaxMessages= can never fit, so waiting would be forever: it is
    # refused whole, chatlinkctl says why and exits 1, and nothing of it was queued.
    backend.refuse(503)
    daemon = make_daemon({"Outbox": {"MaxMessages": 5}})
    lines = "".join(f"line {i}\n" for i in range(20))
    run = subprocess.run([str(BIN / "chatlinkctl"), "--socket", daemon.socket_path, "--json", "send",
                          "--room", "ops", "-"], input=lines, capture_output=True, text=True, timeout=30)
    assert run.returncode == 1, run
    assert "outbox is full (5 messages)" in run.stderr, run.stderr
    assert run.stdout == ""
    assert daemon.status()["outbox"] == 0


def test_a_client_id_given_twice_while_pending_is_queued_once(make_daemon, backend):
    backend.refuse(503)
    daemon = make_daemon()
    first = daemon.call("io.chatlink.Daemon.Send", {"room": "7", "text": "once", "id": "deploy-42.a_b:c"})
    again = daemon.call("io.chatlink.Daemon.Send", {"room": "7", "text": "once", "id": "deploy-42.a_b:c"})
    assert first["parameters"]["id"] == again["parameters"]["id"] == "deploy-42.a_b:c"
    assert first["parameters"]["count"] == again["parameters"]["count"]
    assert daemon.status()["outbox"] == 1
    backend.accept()
    wait_until(lambda: "deploy-42.a_b:c" in backend.delivered_ids(), 10, message="delivery")
    wait_outbox_empty(daemon)
    assert backend.delivered_ids().count("deploy-42.a_b:c") == 1
