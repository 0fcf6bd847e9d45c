"""chatlinkd and chatlinkctl built with AddressSanitizer (and UBSan on the C it compiles) and
with ThreadSanitizer, each driven through what exercises every thread at once; any report
fails the test that caused it, with the report in full. Run by `make sanitize`
(Tests/sanitize/run.sh), which builds the binaries, sets the sanitizers' options (halt on the
first error, reports written to a folder per build) and names both builds in
CHATLINK_SANITIZE ("address=BIN thread=BIN"); every other run skips this module.

- A busy daemon: an inbound flood that rotates the store many times, `chatlinkctl send -`
  confirmed by the backend's echoes, reconnects when the fault proxy cuts a frame or resets
  the connection, 4 `chatlinkctl follow` clients, a metrics scrape every 100 ms, history
  queries, a reload that changes the rooms, and SIGTERM: every thread of the daemon at work.
- MQTT against a private Mosquitto and STOMP against a private RabbitMQ: messages in and out,
  then SIGTERM.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import conftest
from conftest import REPO, quiet_store, wait_delivered, wait_until

# The chaos suite's fault proxy, the one place its folder is named.
FAULT_PROXY_DIR = REPO / "Tests" / "chaos"
sys.path.insert(0, str(FAULT_PROXY_DIR))
sys.path.insert(0, str(REPO / "Tests" / "sanitize"))
sys.path.insert(0, str(REPO / "Tests" / "Fixtures"))
import brokers  # noqa: E402
from faultproxy import FaultProxy  # noqa: E402
from reports import describe, report_files  # noqa: E402

BUILDS = dict(item.split("=", 1) for item in os.environ.get("CHATLINK_SANITIZE", "").split())
REPORTS = Path(os.environ.get("CHATLINK_SANITIZE_REPORTS", "/nonexistent"))

pytestmark = [
    pytest.mark.skipif(not BUILDS, reason="needs sanitizer builds: run by `make sanitize`"),
    pytest.mark.timeout(300),
]


@dataclass
class Build:
    """One sanitizer build: its name ("address", "thread") and its binaries."""

    name: str
    bin: Path

    def ctl(self, daemon, *args: str) -> list[str]:
        return [str(self.bin / "chatlinkctl"), "--socket", daemon.socket_path, *args]


@pytest.fixture(params=sorted(BUILDS) or ["none"])
def build(request, monkeypatch):
    """The build under test: its chatlinkd is the one `make_daemon` starts. Fails the test
    with every report its processes wrote while it ran."""
    name = request.param
    monkeypatch.setattr(conftest, "CHATLINKD", Path(BUILDS[name]) / "chatlinkd")
    folder = REPORTS / name
    before = set(report_files(folder))
    yield Build(name, Path(BUILDS[name]))
    new = [f for f in report_files(folder) if f not in before]
    if new:
        pytest.fail(f"{len(new)} sanitizer report(s) under {name}:\n{describe(new)}", pytrace=False)


@pytest.fixture(scope="module", autouse=True)
def rabbitmq_booting(tmp_path_factory):
    """RabbitMQ takes half a minute to boot: it boots while the first scenarios run."""
    box: dict = {}
    folder = tmp_path_factory.mktemp("rabbitmq")  # here: pytest's temp folders are not thread-safe

    def boot():
        try:
            box["broker"] = brokers.RabbitMQ.start(folder)
        except BaseException as e:  # noqa: BLE001 - reported to the test that needs it
            box["error"] = e

    thread = threading.Thread(target=boot, name="rabbitmq-boot", daemon=True)
    thread.start()
    yield (thread, box)
    thread.join(120)
    if "broker" in box:
        box["broker"].stop()


@pytest.fixture
def rabbitmq(rabbitmq_booting):
    thread, box = rabbitmq_booting
    thread.join(150)
    if "broker" not in box:
        pytest.fail(f"RabbitMQ did not start: {box.get('error', 'still booting after 150 s')}")
    return box["broker"]


def stop_cleanly(d) -> None:
    """SIGTERM; the daemon must exit 0 (a sanitizer halting it exits otherwise)."""
    rc = d.stop(signal.SIGTERM, timeout=60)
    assert rc == 0, f"chatlinkd exited with {rc} on SIGTERM:\n{d.log_text()[-4000:]}"


# ---------------------------------------------------------------------------- helpers


class Follower(threading.Thread):
    """`chatlinkctl --json follow`, counting the events it prints by kind."""

    def __init__(self, build: Build, daemon, *args: str):
        super().__init__(daemon=True)
        self.proc = subprocess.Popen(build.ctl(daemon, "--json", "follow", *args), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.counts: dict[str, int] = {}
        self.start()

    def run(self):
        for line in self.proc.stdout:
            kind = json.loads(line).get("event", "?")
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def finish(self, timeout: float = 30) -> int:
        """Waits for the stream to end with the daemon; returns the exit code."""
        rc = self.proc.wait(timeout)
        self.join(5)
        return rc


class Scraper(threading.Thread):
    """GET /metrics every `interval` seconds (or once the previous answer is in, when that
    takes longer) until stopped; counts answers and failures."""

    def __init__(self, port: int, interval: float = 0.1):
        super().__init__(daemon=True)
        self.port, self.interval = port, interval
        self.ok, self.failures = 0, []
        self.halt = threading.Event()
        self.start()

    def run(self):
        while not self.halt.wait(self.interval):
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                conn.request("GET", "/metrics")
                response = conn.getresponse()
                body = response.read()
                if response.status == 200 and b"chatlink_connects_total" in body:
                    self.ok += 1
                else:
                    self.failures.append(f"HTTP {response.status}")
            except OSError as e:
                self.failures.append(repr(e))
            finally:
                conn.close()


def free_port() -> int:
    return brokers.free_ports(1)[0]


def reconnect_through(d, fault, timeout: float = 60) -> None:
    """Runs `fault` and waits until the daemon has connected again."""
    connects = d.status()["connects"]
    fault()
    wait_until(lambda: (s := d.status())["connects"] > connects and s["state"] == "open", timeout,
               message="a reconnect after the fault")


# ---------------------------------------------------------------------------- the scenarios

FLOOD = 10000  # inbound messages of about 300 bytes per flood; two floods
SENDS = 2000  # lines of `chatlinkctl send -`


def test_a_busy_daemon_through_faults_follows_scrapes_a_reload_and_sigterm_with_no_report(
        build, make_daemon, backend, tmp_path):
    proxy = FaultProxy(backend.host, backend.port).start()
    try:
        port = free_port()
        overrides = {"Store": {"MaxFileSize": "64K", "MaxFiles": "1000"},
                     "Metrics": {"Listen": f"127.0.0.1:{port}"},
                     "Backend": {"ConnectTimeoutSec": "10", "PongTimeoutSec": "10"}}
        d = make_daemon(overrides, url=proxy.url)
        d.wait_state("open", timeout=30)
        # Two follow everything (and may fall 4 MB behind the floods and be dropped: that path
        # runs too), two follow the room of the sends (their confirmations).
        everything = [Follower(build, d) for _ in range(2)]
        ops = [Follower(build, d, "--room", "ops") for _ in range(2)]
        scraper = Scraper(port, 0.1)
        lines = tmp_path / "lines"
        lines.write_text("".join(f"line {i}\n" for i in range(SENDS)))
        with open(lines) as stdin:
            sender = subprocess.Popen(build.ctl(d, "--json", "send", "--room", "ops", "-"), stdin=stdin,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The floods go into room 7 (the backend's default is a joined room, which may be ops:
        # the ops followers must see the sends' events, not fall behind a flood and be
        # dropped), and only once the open connection has joined it: the backend floods the
        # room's members as they are when the flood starts.
        def joined_7():
            return any(c.id in backend.members(7) for c in backend.open_connections())

        # The first flood is cut in the middle of a frame, a third of the way in.
        wait_until(joined_7, 30, message="room 7 joined")
        reconnect_through(d, lambda: (proxy.cut("down", "rst", after_frames=FLOOD // 3),
                                      backend.flood(FLOOD, size=300, room=7, tag="a")))
        received = d.status()["received"]
        wait_until(joined_7, 30, message="room 7 joined again after the reconnect")
        backend.flood(FLOOD, size=300, room=7, tag="b")
        overrides["Backend"]["Rooms"] = "7 ops lobby"
        d.configure(overrides)
        t0 = time.monotonic()
        d.send_signal(signal.SIGHUP)
        d.wait_log("configuration reloaded", since=t0, timeout=30)
        # History queries (the reading thread) while the store rotates under them.
        for room in ("7", "ops", "7"):
            history = subprocess.run(build.ctl(d, "--json", "history", "--room", room, "--limit", "500"),
                                     capture_output=True, text=True, timeout=60)
            assert history.returncode == 0, history.stderr
        wait_until(lambda: d.status()["received"] >= received + FLOOD, 120, message="the second flood")
        reconnect_through(d, proxy.abort_all)
        out, err = sender.communicate(timeout=120)
        assert sender.returncode == 0, err
        receipts = [json.loads(line) for line in out.splitlines()]
        assert len(receipts) == SENDS
        wait_delivered(backend, [{**r, "room": "ops", "text": f"line {i}"} for i, r in enumerate(receipts)], 120)
        records, bad = quiet_store(d, timeout=60)
        assert not bad, bad[:5]
        assert len(list(d.store_dir.glob("messages.jsonl.*"))) >= 5, "the store should have rotated"
        seqs = [r["seq"] for r in records]
        assert seqs == sorted(set(seqs))
        scraper.halt.set()
        scraper.join(15)
        stop_cleanly(d)
        for f in everything + ops:
            f.finish()
        assert all(f.counts.get("message", 0) > 0 for f in everything), [f.counts for f in everything]
        assert all(f.counts.get("confirmed", 0) > 0 for f in ops), [f.counts for f in ops]
        assert scraper.ok >= 10 and not scraper.failures, (scraper.ok, scraper.failures[:5])
    finally:
        proxy.stop()


def test_mqtt_against_mosquitto_in_and_out_then_sigterm_with_no_report(build, make_daemon, tmp_path):
    from test_mqtt import Broker, Peer, mqtt_daemon, probe  # noqa: PLC0415 - its peer and daemon

    m = brokers.Mosquitto.start(tmp_path / "mosquitto")
    try:
        broker = Broker("mosquitto-5", "5", m.ws_url, m.host, m.tcp_port, m.username, m.password, m)
        d = mqtt_daemon(make_daemon, broker, rooms=["in/#"], overrides={"MQTT": {"TopicPrefix": "out/"}})
        d.wait_state("open", timeout=30)
        peer = Peer(broker, subscribe=["out/#"])
        try:
            probe(d, peer, "in/probe", timeout=30)
            for i in range(300):
                peer.publish(f"in/{i % 3}", f"inbound {i}", wait=False)
            lines = "".join(f"outbound {i}\n" for i in range(300))
            run = subprocess.run(build.ctl(d, "send", "--room", "r1", "-"), input=lines, capture_output=True,
                                 text=True, timeout=120)
            assert run.returncode == 0, run.stderr
            wait_until(lambda: sum(1 for r in d.records() if str(r.get("data", "")).startswith("inbound ")) >= 300,
                       60, message="300 inbound messages stored")
            wait_until(lambda: len(peer.payloads("out/r1")) >= 300, 60, message="300 sends at the peer")
            wait_until(lambda: d.status()["outbox"] == 0, 60, message="every send confirmed by its PUBACK")
        finally:
            peer.close()
        stop_cleanly(d)
    finally:
        m.stop(cleanup=True)


def test_stomp_against_rabbitmq_in_and_out_then_sigterm_with_no_report(build, make_daemon, rabbitmq):
    from test_stomp import Peer, probe, stomp_daemon  # noqa: PLC0415 - its peer and daemon

    ns = f"san{os.getpid()}{build.name}{random.getrandbits(16):04x}"
    d = stomp_daemon(make_daemon, rabbitmq, rooms=[f"/topic/{ns}.in"])
    d.wait_state("open", timeout=30)
    peer = Peer(rabbitmq)
    try:
        peer.subscribe(f"/topic/{ns}.out")
        probe(d, peer, f"/topic/{ns}.in", timeout=30)
        for i in range(200):
            peer.send(f"/topic/{ns}.in", f"inbound {i}", wait=False)
        lines = "".join(f"outbound {i}\n" for i in range(200))
        run = subprocess.run(build.ctl(d, "send", "--room", f"/topic/{ns}.out", "-"), input=lines,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        wait_until(lambda: sum(1 for r in d.records() if str(r.get("data", "")).startswith("inbound ")) >= 200,
                   60, message="200 inbound messages stored")
        wait_until(lambda: d.status()["outbox"] == 0, 60, message="every send confirmed by its RECEIPT")
    finally:
        peer.close()
    stop_cleanly(d)
