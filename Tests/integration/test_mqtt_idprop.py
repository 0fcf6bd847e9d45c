"""[MQTT] IDProperty= against a private Mosquitto 2 (MQTT 5): publishers set a stable id in a
user property (or the Correlation Data), and the store keeps each message once.

- The same 500 messages published twice (QoS 1, and 200 at QoS 2): stored once each, the
  second copies counted as duplicates_dropped and acknowledged (a message published after
  them still arrives: nothing waits on an acknowledgement held back).
- kill -9 chatlinkd five times during a 10,000-message QoS 1 flood with ids: 0 missing and
  0 duplicates in the store (the broker redelivers what was not acknowledged; the window,
  rebuilt at start, drops what was stored already).
- Bad input: Version=3.1.1 with IDProperty= refused by --check-config, at start and on reload
  (the running daemon keeps its configuration and loses nothing); messages without the
  property, with an empty or overlong one, or the id in another property: stored, without an
  id, every copy; Correlation Data as text or as hex.

The figures are printed (FIGURES …; run with -s to see them).
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from broker_checks import wait_all_stored
from conftest import BIN, CHATLINKD, wait_until
from test_mqtt import (  # noqa: F401 (fixtures used by name)
    REDELIVERED, Broker, _broker, inbound, mosquitto, mqtt_daemon, peers, probe, wait_open)

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def broker(request) -> Broker:
    return _broker(request, "mosquitto", "5")


def id_daemon(make_daemon, broker: Broker, rooms=("ids/#",), id_property: str = "msg-id", qos: int = 1):
    return mqtt_daemon(make_daemon, broker, rooms=rooms,
                       overrides={"MQTT": {"IDProperty": id_property, "QoS": qos}})


def props(msg_id: str | None = None, correlation: bytes | None = None, **user: str) -> Properties:
    p = Properties(PacketTypes.PUBLISH)
    pairs = ([("msg-id", msg_id)] if msg_id is not None else []) + list(user.items())
    if pairs:
        p.UserProperty = pairs
    if correlation is not None:
        p.CorrelationData = correlation
    return p


def publish_all(peer, messages: list[tuple[str, str, str]], qos: int = 1) -> None:
    """Publishes (topic, text, id) at `qos` with the id as msg-id; returns once the broker
    acknowledged every one."""
    infos = [peer.client.publish(topic, text, qos=qos, properties=props(msg_id))
             for topic, text, msg_id in messages]
    for info in infos:
        info.wait_for_publish(30)
        assert info.is_published()


def counts(d, texts: set[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in inbound(d):
        if r["data"] in texts:
            out[r["data"]] = out.get(r["data"], 0) + 1
    return out


def twice(make_daemon, broker, peers, n: int, qos: int) -> dict:
    """Publishes n messages with ids, then the same n again; checks each is stored once and
    the second copies were all dropped and acknowledged. Returns the status."""
    d = id_daemon(make_daemon, broker, qos=qos)
    status = wait_open(d)
    # Mosquitto takes at most max_inflight_messages (20) QoS 2 messages from a client at once
    # and drops the rest.
    peer = peers(broker, max_inflight=20 if qos == 2 else 1000)
    probe(d, peer, "ids/probe")
    messages = [(f"ids/{i % 2}", f"m-{i:04d}", f"id-{i:04d}") for i in range(n)]
    texts = {text for _, text, _ in messages}
    publish_all(peer, messages, qos)
    wait_until(lambda: len(counts(d, texts)) == n, 30, interval=0.2, message=f"all {n} stored")
    publish_all(peer, messages, qos)
    wait_until(lambda: d.status()["duplicates_dropped"] >= n, 30, interval=0.2,
               message=f"{n} duplicates dropped")
    # Every second copy was acknowledged: a new message behind them is delivered and stored.
    peer.publish("ids/0", "after", qos=qos, properties=props("id-after"))
    wait_until(lambda: any(r["data"] == "after" for r in inbound(d)), 15, message="the message after")
    stored = counts(d, texts)
    status = d.status()
    records = [r for r in inbound(d) if r["data"] in texts]
    figures = {"published": 2 * n, "stored": sum(stored.values()), "distinct": len(stored),
               "duplicates_dropped": status["duplicates_dropped"], "delivery": status.get("delivery")}
    print(f"FIGURES published twice at QoS {qos}: {figures}")
    assert figures["stored"] == n and figures["distinct"] == n, figures
    assert status["duplicates_dropped"] == n, status
    assert all(r["id"] == "id-" + r["data"][2:] for r in records), records[:3]
    metrics = d.call("io.chatlink.Daemon.GetMetrics")["parameters"]["text"]
    metric = [line.split()[-1] for line in metrics.splitlines()
              if line.startswith("chatlink_inbound_duplicates_total")]
    assert metric and float(metric[0]) == n, metric
    text = subprocess.run([str(BIN / "chatlinkctl"), "--socket", d.socket_path, "status"],
                          capture_output=True, text=True, timeout=10).stdout
    assert status["delivery"] in text and f"{n} dropped" in text, text
    return status


@pytest.mark.parametrize("broker", ["mosquitto-5"], indirect=True)
def test_the_same_500_messages_published_twice_are_stored_once_each(make_daemon, broker, peers):
    status = twice(make_daemon, broker, peers, 500, 1)
    promise = ("exactly once within the dedupe window: QoS 1, acknowledged once durable; "
               "duplicates dropped by user property msg-id")
    assert status["delivery"] == promise, status


@pytest.mark.parametrize("broker", ["mosquitto-5"], indirect=True)
def test_at_qos2_the_same_200_messages_published_twice_are_stored_once_and_all_completed(make_daemon, broker,
                                                                                         peers):
    status = twice(make_daemon, broker, peers, 200, 2)
    assert status["delivery"].startswith("exactly once: QoS 2") and "msg-id" in status["delivery"], status


class IDFlood(threading.Thread):
    """Publishes n QoS 1 messages with ids, `rate` a second, over `topics` in turn; done once
    the broker acknowledged every one."""

    def __init__(self, peer, topics: list[str], n: int, rate: float):
        super().__init__(daemon=True)
        self.peer, self.n, self.rate = peer, n, rate
        self.sent = [(topics[i % len(topics)], f"k-{i:06d}") for i in range(n)]
        self.error: BaseException | None = None

    def run(self):
        try:
            t0 = time.monotonic()
            infos = []
            batch = max(1, int(self.rate / 20))
            for start in range(0, self.n, batch):
                for topic, text in self.sent[start:start + batch]:
                    infos.append(self.peer.client.publish(topic, text, qos=1, properties=props("id-" + text)))
                pause = t0 + (start + batch) / self.rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            for info in infos:
                info.wait_for_publish(60)
                assert info.is_published()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e


@pytest.mark.timeout(180)
@pytest.mark.parametrize("broker", ["mosquitto-5"], indirect=True)
def test_kill_9_five_times_during_a_flood_with_ids_leaves_none_missing_and_none_twice(make_daemon, broker,
                                                                                      peers):
    n, kills, rate = 10_000, 5, 2000
    d = id_daemon(make_daemon, broker, rooms=("flood/#",))
    wait_open(d)
    peer = peers(broker, max_inflight=1000)
    probe(d, peer, "flood/probe")
    flood = IDFlood(peer, [f"flood/{k}" for k in range(4)], n, rate)
    t0 = time.monotonic()
    flood.start()
    spacing = n / rate / kills
    during = 0
    dropped = 0  # counted per run: summed over the runs
    for k in range(kills):
        time.sleep((0.5 + 0.1 * k) * spacing)
        during += flood.is_alive()
        dropped += d.status()["duplicates_dropped"]
        d.kill()
        d.start()
    flood.join(60)
    assert not flood.is_alive() and flood.error is None, flood.error
    figures = wait_all_stored(d, flood.sent, 60, REDELIVERED)
    ids = [r.get("id") for r in inbound(d, "flood/") if str(r["data"]).startswith("k-")]
    figures.update(kills=kills, seconds=round(time.monotonic() - t0, 1), records_with_id=len(ids),
                   distinct_ids=len(set(ids)), duplicates_dropped=dropped + d.status()["duplicates_dropped"])
    print(f"FIGURES kill-9 with ids: {figures}")
    assert figures["missing"] == 0 and figures["duplicates"] == 0 and not figures["problems"], figures
    assert len(ids) == len(set(ids)) == n and None not in ids, figures
    assert d.runs == kills + 1 and during == kills, f"only {during} of {kills} kills came during the flood"


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("broker", ["mosquitto-5"], indirect=True)
def test_an_id_property_under_311_is_refused_at_check_config_start_and_reload_and_nothing_is_lost(
        make_daemon, broker, peers):
    expected = "needs Version=5: MQTT 3.1.1 has no properties to carry an id"
    d = id_daemon(make_daemon, broker, rooms=("ids/#",))
    wait_open(d)
    peer = peers(broker)
    probe(d, peer, "ids/probe")
    peer.publish("ids/0", "before", properties=props("id-before"))
    good = d.config_path.read_text()
    bad = good.replace("Version=5", "Version=3.1.1")
    assert bad != good
    d.write_config(bad)
    check = subprocess.run([str(CHATLINKD), "--check-config", "--config", str(d.config_path)],
                           capture_output=True, text=True, timeout=10)
    assert check.returncode != 0 and "[MQTT] IDProperty" in check.stderr and expected in check.stderr, check
    t0 = time.monotonic()
    d.send_signal(signal.SIGHUP)
    d.wait_log("reload failed; keeping the running configuration", since=t0)
    line = [line for _, line in d.log_lines(t0) if "reload failed" in line][0]
    assert "[MQTT] IDProperty" in line and expected in line, line
    # The running configuration goes on: ids still read, duplicates still dropped.
    peer.publish("ids/0", "after", properties=props("id-after"))
    peer.publish("ids/0", "after", properties=props("id-after"))
    peer.publish("ids/0", "before", properties=props("id-before"))
    peer.publish("ids/1", "last", properties=props("id-last"))
    wait_until(lambda: any(r["data"] == "last" for r in inbound(d)), 15, message="the last message")
    assert counts(d, {"before", "after", "last"}) == {"before": 1, "after": 1, "last": 1}
    status = d.status()
    assert status["state"] == "open" and status["connects"] == 1 and status["duplicates_dropped"] == 2, status
    # Nor does a start take the file.
    d.stop()
    start = subprocess.run([str(CHATLINKD), "--config", str(d.config_path)], capture_output=True, text=True,
                           timeout=10)
    assert start.returncode != 0 and expected in start.stderr, start
    d.write_config(good)
    d.start()
    wait_open(d)
    assert counts(d, {"before", "after", "last"}) == {"before": 1, "after": 1, "last": 1}


@pytest.mark.parametrize("broker", ["mosquitto-5"], indirect=True)
def test_messages_without_a_usable_id_are_stored_every_time_without_one(make_daemon, broker, peers):
    d = id_daemon(make_daemon, broker)
    wait_open(d)
    peer = peers(broker)
    probe(d, peer, "ids/probe")
    cases = {
        "none": props(),
        "other-name": props(**{"Msg-Id": "x1"}),
        "empty": props(""),
        "overlong": props("x" * 1025),
        "in-correlation-data": props(correlation=b"c-1"),
    }
    for _ in range(2):
        for text, p in cases.items():
            peer.publish("ids/0", text, properties=p)
    peer.publish("ids/0", "longest", properties=props("y" * 1024))
    peer.publish("ids/0", "longest", properties=props("y" * 1024))
    wait_until(lambda: sum(counts(d, set(cases) | {"longest"}).values()) == 11, 15, message="every copy")
    got = counts(d, set(cases) | {"longest"})
    print(f"FIGURES no usable id: {got}")
    assert got == {**{text: 2 for text in cases}, "longest": 1}, got
    assert all("id" not in r for r in inbound(d) if r["data"] in cases)
    assert d.status()["duplicates_dropped"] == 1


@pytest.mark.parametrize("broker", ["mosquitto-5"], indirect=True)
def test_correlation_data_is_the_id_as_text_or_as_hex(make_daemon, broker, peers):
    d = id_daemon(make_daemon, broker, id_property="correlation-data")
    status = wait_open(d)
    assert status["delivery"].endswith("duplicates dropped by correlation data"), status
    peer = peers(broker)
    probe(d, peer, "ids/probe")
    for _ in range(2):
        peer.publish("ids/0", "text", properties=props(correlation=b"req-1"))
        peer.publish("ids/0", "binary", properties=props(correlation=b"\xff\x00\x10"))
        peer.publish("ids/0", "user-property", properties=props("req-2"))
    wait_until(lambda: sum(counts(d, {"text", "binary", "user-property"}).values()) == 4, 15,
               message="one of each with an id, both without")
    by_text = {r["data"]: r.get("id") for r in inbound(d)}
    assert by_text["text"] == "req-1" and by_text["binary"] == "ff0010" and by_text["user-property"] is None
    assert counts(d, {"text", "binary", "user-property"}) == {"text": 1, "binary": 1, "user-property": 2}
    assert d.status()["duplicates_dropped"] == 2
