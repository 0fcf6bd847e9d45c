"""[MQTT] QoS=2 against real brokers: the protocol's own exactly-once, with kill -9.

- Inbound against a private Mosquitto (MQTT 5 and 3.1.1): a paho peer publishes at QoS 2 while
  chatlinkd is killed twenty times; every message is in the store exactly once (0 missing, 0
  duplicates, in order per topic); the journal of packet ids stored and not yet released
  (mqtt-qos2.jsonl) is what makes a redelivery an answer without a record.
- Outbound against Mosquitto: sends at QoS 2 across kill -9s reach a QoS 2 subscriber with a
  persistent session exactly once each (the outbox keeps an entry the broker holds as
  released: only its PUBREL is sent again).
- RabbitMQ's web-mqtt grants QoS 1 for QoS 2: the daemon logs it once per room and says so in
  status (session_note), and delivery is still at least once across kill -9.

The figures are printed (FIGURES …; run with -s to see them).
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time

import pytest

from broker_checks import RoomSender, first_in_order, wait_all_stored
from conftest import wait_until
from test_mqtt import (  # noqa: F401 (fixtures used by name)
    REDELIVERED, Broker, _broker, inbound, mosquitto, mqtt_daemon, peers, probe, rabbitmq, wait_open)

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def broker(request) -> Broker:
    kind, version = request.param.split("-", 1)
    return _broker(request, kind, version)


def on(*names):
    return pytest.mark.parametrize("broker", names, indirect=True)


def qos2_daemon(make_daemon, broker: Broker, rooms=(), overrides: dict | None = None, **kwargs):
    o = {"MQTT": {"QoS": 2}}
    for section, keys in (overrides or {}).items():
        o.setdefault(section, {}).update(keys)
    return mqtt_daemon(make_daemon, broker, rooms=rooms, overrides=o, **kwargs)


class QoS2Flood(threading.Thread):
    """Publishes n QoS 2 messages with paho, `rate` a second, over `topics` in turn; done once
    the broker completed every one (PUBCOMP to paho: the broker holds each exactly once)."""

    def __init__(self, peer, topics: list[str], n: int, rate: float, tag: str = "q"):
        super().__init__(daemon=True)
        self.peer, self.topics, self.n, self.rate = peer, topics, n, rate
        self.sent = [(topics[i % len(topics)], f"{tag}-{i:06d}") for i in range(n)]
        self.error: BaseException | None = None
        self.seconds = 0.0

    def run(self):
        try:
            t0 = time.monotonic()
            infos = []
            batch = max(1, int(self.rate / 20))
            for start in range(0, self.n, batch):
                for topic, text in self.sent[start:start + batch]:
                    infos.append(self.peer.client.publish(topic, text, qos=2))
                pause = t0 + (start + batch) / self.rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            for info in infos:
                info.wait_for_publish(90)
                assert info.is_published()
            self.seconds = time.monotonic() - t0
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e


# (messages, kills, messages a second): the twenty kills during 50,000 on MQTT 5; a
# shorter run on 3.1.1 for its packet layouts.
KILLS = {"mosquitto-5": (50000, 20, 3000), "mosquitto-3.1.1": (6000, 5, 1500)}


@pytest.mark.timeout(240)
@on("mosquitto-5", "mosquitto-3.1.1")
def test_kill_9_twenty_times_during_a_qos2_flood_stores_every_message_exactly_once(make_daemon, broker, peers):
    """kill -9 chatlinkd again and again while a peer publishes at QoS 2 into its rooms: every
    message is in the store once (no duplicate, none missing), in order per topic; the
    redeliveries of messages stored before a kill (DUP=1, a packet id still pending) were
    answered without a record."""
    n, kills, rate = KILLS[broker.name]
    d = qos2_daemon(make_daemon, broker, rooms=["q2/#"])
    wait_open(d)
    # Mosquitto takes at most max_inflight_messages (20) QoS 2 messages from a client at once
    # and drops what a client sends beyond (measured: a peer with 1000 in flight lost half).
    peer = peers(broker, max_inflight=20)
    probe(d, peer, "q2/probe")
    flood = QoS2Flood(peer, [f"q2/{k}" for k in range(4)], n, rate)
    t0 = time.monotonic()
    flood.start()
    # Kills at evenly spaced points of the delivery (by the store's last seq), whatever its
    # pace: every one while the broker still has messages for the daemon.
    step = n // (kills + 1)
    during = 0
    deadline = time.monotonic() + 150
    while during < kills and time.monotonic() < deadline:
        if d.status()["last_seq"] < (during + 1) * step:
            time.sleep(0.05)
            continue
        d.kill()
        d.start()
        during += 1
    flood.join(120)
    assert not flood.is_alive() and flood.error is None, flood.error
    figures = wait_all_stored(d, flood.sent, 120, REDELIVERED)
    # Wait for the last PUBCOMPs: the broker then has nothing left to send us.
    time.sleep(1.0)
    figures = wait_all_stored(d, flood.sent, 5, REDELIVERED)
    journal = (d.store_dir / "mqtt-qos2.jsonl").read_text()
    figures.update(kills=kills, seconds=round(time.monotonic() - t0, 1), publish_seconds=round(flood.seconds, 1),
                   pending_at_each_start=_pending_logged(d), journal_bytes=len(journal))
    print(f"FIGURES qos2-kill-9 {broker.name}: {figures}")
    assert figures["missing"] == 0 and figures["duplicates"] == 0 and not figures["problems"], figures
    assert d.runs == kills + 1 and during == kills, f"only {during} of {kills} kills came during the flood"


def _pending_logged(d) -> list[str]:
    """What each start found pending (its log line), for the figures."""
    return [line.split("pending=")[1].split()[0] for _, line in d.log_lines() if "pending release" in line
            and "pending=" in line]


@on("mosquitto-5", "mosquitto-3.1.1")
def test_a_redelivery_of_messages_stored_but_not_yet_durable_is_answered_without_a_second_record(
        make_daemon, broker, peers, lazy_store):
    """What QoS 2 adds to QoS 1's test_puback_waits_for_fsync: messages written to the store but
    not yet fsynced (the lazy file system holds the fsyncs) have no PUBREC; after a kill -9 the
    broker sends them again with DUP, and the ones whose records survived are answered from the
    rebuilt receipts, without a second record: each message is in the store once."""
    d = qos2_daemon(make_daemon, broker, rooms=["held/#"], start=False,
                    overrides={"Store": {"Sync": "batch", "SyncIntervalMSec": 20}})
    mount = lazy_store(d)
    d.start()
    wait_open(d)
    peer = peers(broker)
    probe(d, peer, "held/probe", timeout=20)
    peer.client.publish("held/x", "lead", qos=2).wait_for_publish(10)
    wait_until(lambda: (s := d.status())["durable_seq"] == s["last_seq"] and any(
        r["data"] == "lead" for r in inbound(d)), 5, message="the lead message durable")
    time.sleep(0.5)  # its PUBREC, the broker's PUBREL and our PUBCOMP
    mount.command("hold")
    held = [f"held-{i}" for i in range(5)]
    for text in held:
        peer.client.publish("held/x", text, qos=2)
    wait_until(lambda: {r["data"] for r in inbound(d)} & set(held), 5, message="a held message written")
    time.sleep(0.5)
    status = d.status()
    assert status["durable_seq"] < status["last_seq"], f"fsynced though the fsync is held: {status}"
    d.send_signal(signal.SIGKILL)
    time.sleep(0.5)
    mount.command("release")
    d.kill()
    written = {t for t in held if any(r["data"] == t for r in inbound(d))}
    assert written, "nothing of the held messages reached the store"
    d.start()
    wait_until(lambda: all(any(r["data"] == t for r in inbound(d)) for t in held), 15,
               message="every held message stored")
    wait_open(d)
    probe(d, peer, "held/probe", timeout=20)
    counts = {t: [r["data"] for r in inbound(d)].count(t) for t in held + ["lead"]}
    pending = _pending_logged(d)
    print(f"FIGURES qos2-held {broker.name}: written before the kill {len(written)}, copies {counts}, "
          f"pending at each start {pending}")
    assert counts == {t: 1 for t in held + ["lead"]}, counts
    assert int(pending[-1]) >= len(written), pending
    records = [r for r in inbound(d) if r["data"] in held]
    assert all(r["meta"]["qos"] == 2 and "packet_id" in r["meta"] for r in records), records


OUT_KILLS = 8


@pytest.mark.timeout(180)
@on("mosquitto-5", "mosquitto-3.1.1")
def test_qos2_sends_across_kill_9_reach_a_qos2_subscriber_exactly_once(make_daemon, broker, peers):
    """Sends at QoS 2 from two control connections while chatlinkd is killed again and again:
    every acknowledged send reaches a QoS 2 subscriber with a persistent session exactly once,
    in order per room; the outbox empties."""
    sub = peers(broker, client_id=f"clit-q2sub-{random.getrandbits(32):08x}", persistent=True)
    sub.subscribe("q2out/#", qos=2)
    d = qos2_daemon(make_daemon, broker)
    wait_open(d)
    senders = [RoomSender(d, f"q2out/{room}", room) for room in ("a", "b")]
    t0 = time.monotonic()
    for s in senders:
        s.start()
    rng = random.Random(7)
    released = []
    for _ in range(OUT_KILLS):
        time.sleep(rng.uniform(0.3, 0.8))
        d.kill()
        released.append(_released_in_outbox(d))
        for s in senders:
            s.join(10)
        d.start()
        wait_open(d, timeout=20)
        acked = {s.room: s.acked for s in senders}
        senders = [RoomSender(d, s.room, s.tag + "x") for s in senders]
        for s, old in zip(senders, acked.values()):
            s.acked = list(old)
            s.start()
    time.sleep(0.5)
    for s in senders:
        s.stop.set()
    for s in senders:
        s.join(10)
        assert s.error is None, s.error
    wait_until(lambda: d.status()["outbox"] == 0, 60, message="every send confirmed")
    # An "out" record may come twice, as with every protocol: a kill can take the outbox's ack
    # line (written without an fsync) after the record was written; the PUBCOMP that answers
    # the PUBREL sent again confirms the send again. The subscriber still gets it once.
    out = [r["data"] for r in d.records() if r["dir"] == "out"]
    figures = {"kills": OUT_KILLS, "seconds": round(time.monotonic() - t0, 1),
               "released_pending_at_each_kill": released, "out_records_again": len(out) - len(set(out))}
    for s in senders:
        def arrived(s=s):
            got = [p.decode() for p in sub.payloads(s.room)]
            return set(s.acked) <= set(got)
        wait_until(arrived, 30, interval=0.2, message=f"every acknowledged send to {s.room} at the subscriber")
        time.sleep(0.5)
        got = [p.decode() for p in sub.payloads(s.room)]
        mine = [x for x in got if x in set(s.acked)]
        figures[s.room] = {"acknowledged": len(s.acked), "refused_full": s.refused, "received": len(mine),
                           "duplicates": len(mine) - len(set(mine))}
        assert not first_in_order(mine, s.acked), first_in_order(mine, s.acked)
    print(f"FIGURES qos2-send-kill-9 {broker.name}: {figures}")
    assert all(figures[r]["duplicates"] == 0 for r in ("q2out/a", "q2out/b")), figures


def _released_in_outbox(d) -> int:
    """How many outbox entries the broker holds and we released (PUBREL due, never a PUBLISH)."""
    released, acked = set(), set()
    for line in (d.store_dir / "outbox.jsonl").read_text().splitlines():
        if '"op":"released"' in line:
            released.add(json.loads(line)["id"])
        elif '"op":"ack","id"' in line:
            acked.add(json.loads(line)["id"])
    return len(released - acked)


@pytest.mark.timeout(150)
def test_rabbitmq_grants_qos1_for_qos2_says_so_and_still_delivers_at_least_once(make_daemon, rabbitmq, peers):
    """RabbitMQ's MQTT plugin downgrades a QoS 2 subscription to 1: the SUBACK's grant is logged
    once per room and shown in status; messages still arrive at least once across kill -9s."""
    broker = _broker_for_rabbitmq(rabbitmq)
    ns = broker.ns
    d = qos2_daemon(make_daemon, broker, rooms=["r2/#"])
    status = wait_open(d)
    note = f"QoS 2 asked, broker granted 1 for {ns}r2/#"
    wait_until(lambda: d.status().get("session_note") == note, 10, message="the grant in status")
    assert note in d.status()["text"], d.status()
    peer = peers(broker)
    probe(d, peer, ns + "r2/probe")
    sent = [(ns + f"r2/{i % 2}", f"r-{i:05d}") for i in range(600)]
    for k in range(3):
        for topic, text in sent[k * 200:(k + 1) * 200]:
            peer.client.publish(topic, text, qos=1)
        d.kill()
        d.start()
    figures = wait_all_stored(d, sent, 60, REDELIVERED)
    grants = [line for _, line in d.log_lines() if "granted a lower QoS than asked" in line]
    figures.update(grant_log_lines=len(grants), runs=d.runs)
    print(f"FIGURES qos2-rabbitmq: {figures}")
    assert figures["missing"] == 0 and not figures["problems"], figures
    assert status["protocol"] == "mqtt"
    assert grants and all(f"topic={ns}r2/#" in line for line in grants), grants
    assert len(grants) <= d.runs, "logged once per room (per run of the daemon)"
    assert not (d.store_dir / "mqtt-qos2.jsonl").read_text().count("released"), "nothing at QoS 2"
    # A send at QoS 2: RabbitMQ answers it as QoS 1 (a PUBACK, no PUBREC to release), which
    # confirms it, and it arrives.
    out = peers(broker, subscribe=[ns + "r2out/#"])
    d.send("sent at qos 2", room=ns + "r2out/1")
    wait_until(lambda: d.status()["outbox"] == 0, 15, message="the send confirmed")
    wait_until(lambda: out.payloads() == [b"sent at qos 2"], 10, message="the send at the subscriber")
    assert d.status()["failed"] == 0, d.status()
    assert '"op":"released"' not in (d.store_dir / "outbox.jsonl").read_text()


def _broker_for_rabbitmq(r) -> Broker:
    return Broker("rabbitmq-3.1.1", "3.1.1", r.web_mqtt_url, r.host, r.mqtt_port, r.username, r.password, r,
                  ns=f"q2t{os.getpid()}n{random.getrandbits(16)}/")


@pytest.mark.timeout(60)
def test_a_lower_qos_removes_the_journal_and_qos_to_or_from_2_waits_for_a_restart(make_daemon, mosquitto):
    broker = Broker("mosquitto-5", "5", mosquitto.ws_url, mosquitto.host, mosquitto.tcp_port,
                    mosquitto.username, mosquitto.password, mosquitto)
    d = qos2_daemon(make_daemon, broker, rooms=["x/#"])
    wait_open(d)
    journal = d.store_dir / "mqtt-qos2.jsonl"
    assert journal.exists()
    d.sections["MQTT"]["QoS"] = "1"
    d.write_config()
    d.send_signal(signal.SIGHUP)
    wait_until(lambda: "some settings apply only after a restart" in d.log_text(), 5, message="the restart note")
    assert "[MQTT] QoS" in d.log_text()
    assert d.status()["connects"] == 1, "QoS to or from 2 does not apply live"
    assert d.stop() == 0
    d.start()
    wait_open(d)
    assert not journal.exists()
    assert "removed the QoS 2 receipts journal" in d.log_text()

