"""The envelope's catch-up extension and the store's dedupe window, end to end: chatlinkd with
`[Envelope] IDField=msg_id` and `SinceField=since` against backends that keep history (the
Python backend's history mode, `chatlink-devserver --history`), through kill -9s, outages, a
history too short for an outage, a backend replaying from the start, restarts and bad input.

Every test prints its figures: messages published and stored, missing, duplicates, gaps.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import connect as ws_connect

from backend import Backend, Publisher
from conftest import BIN, CHATLINKD, Daemon, finish_daemons, quiet_store, wait_until

pytestmark = pytest.mark.timeout(420)

ROOMS = (1, 2, 3)
CATCH_UP = {"Envelope": {"IDField": "msg_id", "SinceField": "since"}}
OUTAGE_SECONDS = 10


# ---------------------------------------------------------------------------- helpers


def id_number(value) -> int:
    """The counter in a backend's id: "42" (the Python backend) or "<epoch>-42" (the devserver)."""
    return int(str(value).rsplit("-", 1)[-1])


def messages_by_room(records: list[dict]) -> dict:
    """The inbound message records' ids per room, in store order."""
    out: dict = {}
    for r in records:
        if r["dir"] == "in" and r["type"] == "json" and r["data"].get("event") == "message" and "id" in r:
            out.setdefault(r["room"], []).append(id_number(r["id"]))
    return out


def audit(records: list[dict], published: dict) -> dict:
    """Compares the store with what the backend published, per room: missing ids, ids stored
    more than once, rooms whose ids are not in publication order."""
    stored = messages_by_room(records)
    missing = duplicates = 0
    disordered = []
    for room, want in published.items():
        got = stored.get(room, [])
        missing += len(set(want) - set(got))
        duplicates += len(got) - len(set(got))
        if got != sorted(set(got)):
            disordered.append(room)
    total = sum(len(v) for v in stored.values())
    return {"stored": total, "missing": missing, "duplicates": duplicates, "disordered": disordered}


def wait_stored(daemon: Daemon, published: dict, timeout: float, strict: bool = True) -> dict:
    """Waits until every published message is in the store; returns the audit. At the
    timeout, fails the test, or with `strict=False` returns the audit (for the caller to
    print its figures before it asserts)."""
    want = sum(len(v) for v in published.values())
    deadline = time.monotonic() + timeout
    while True:
        result = audit(daemon.records(), published)
        if result["stored"] - result["duplicates"] >= want:
            return result
        if time.monotonic() > deadline:
            if strict:
                pytest.fail(f"after {timeout} s, not every published message is stored: {result}")
            return result
        time.sleep(0.5)


def wait_joined(daemon: Daemon, backend: Backend, rooms) -> None:
    """Waits until the daemon is connected and has joined every room: a message published
    before its first join is not for it (it had nothing stored, so it joined without since)."""
    daemon.wait_state("open")
    wait_until(lambda: all(backend.members(room) for room in rooms), 10, message=f"joins of {list(rooms)}")


def wait_devserver_joined(daemon: Daemon, server: "DevServer", joins: int) -> None:
    """`wait_joined` for the devserver, which logs every join."""
    daemon.wait_state("open")
    wait_until(lambda: server.log_path.read_text().count("info joined") >= joins, 10, message=f"{joins} joins")


def join_sinces(backend: Backend, after_conn: int = 0) -> list:
    """The `since` of every join on connections after `after_conn` (None: the join had none)."""
    return [data.get("since") for _, conn, data in backend.join_data() if conn > after_conn]


def gaps_metric(daemon: Daemon) -> float:
    reply = daemon.call("io.chatlink.Daemon.GetMetrics")
    assert "error" not in reply, reply
    text = reply["parameters"]["text"]
    values = [line.split()[-1] for line in text.splitlines() if line.startswith("chatlink_history_gaps_total")]
    assert values, "chatlink_history_gaps_total is not in the metrics"
    return float(values[0])


@pytest.fixture
def history_backend():
    """A Python backend in history mode, factory style: history_backend(**options)."""
    made: list[Backend] = []

    def make(**options) -> Backend:
        options.setdefault("history", 1000)
        options.setdefault("compression", None)
        b = Backend(**options).start()
        made.append(b)
        return b

    yield make
    for b in made:
        b.stop()


@pytest.fixture
def new_daemon(tmp_path):
    """new_daemon(url, overrides) -> Daemon, started; all cleaned up at teardown."""
    made: list[Daemon] = []

    def make(url: str, overrides: dict | None = None, start: bool = True) -> Daemon:
        d = Daemon(tmp_path / f"d{len(made)}", url, overrides)
        made.append(d)
        if start:
            d.start()
        return d

    yield make
    finish_daemons(made)


def merged(*configs: dict) -> dict:
    out: dict = {}
    for config in configs:
        for section, keys in config.items():
            out.setdefault(section, {}).update(keys)
    return out


# ---------------------------------------------------------------------------- kill -9 and outages


class Chaos:
    """Kills and outages of a daemon while a publisher runs, with the figures."""

    def __init__(self, daemon: Daemon, backend: Backend | None, rng: random.Random):
        self.daemon, self.backend, self.rng = daemon, backend, rng
        self.kills = 0
        self.kills_while_publishing = 0
        self.outages: list[str] = []
        self.dropped_seen = 0  # duplicates_dropped read before each kill or stop (a lower bound)

    def note_dropped(self) -> None:
        try:
            self.dropped_seen += self.daemon.status(timeout=0.5)["duplicates_dropped"]
        except (OSError, ValueError, AssertionError):
            pass

    def wait_open(self) -> None:
        self.daemon.wait_state("open", timeout=30)

    def kill(self, publishing: bool) -> None:
        self.note_dropped()
        self.daemon.kill()
        self.kills += 1
        self.kills_while_publishing += publishing
        self.daemon.start()

    def outage(self, kind: str) -> None:
        """`OUTAGE_SECONDS` without chatlinkd on the backend: stopped, killed, or blocked."""
        if kind == "blocked":
            assert self.backend is not None
            self.backend.blackhole()
            time.sleep(OUTAGE_SECONDS)
            self.backend.unblackhole(discard=True)
        else:
            self.note_dropped()
            self.daemon.stop() if kind == "stopped" else self.daemon.kill()
            time.sleep(OUTAGE_SECONDS)
            self.daemon.start()
        self.outages.append(kind)

    def run(self, kills: int, outages: list[str], publisher: Publisher | None = None) -> None:
        """`kills` kill -9s with the outages spread among them, each at a random moment after
        the daemon is connected again (some during its catch-up). A `publisher` is paced so
        that its flood lasts until the last of them, however long restarts take on this
        machine (a debug build's start reads the store's tail much more slowly as it grows)."""
        plan = ["kill"] * kills
        for i, kind in enumerate(outages):
            plan.insert((i + 1) * len(plan) // (len(outages) + 1), kind)
        cycles: list[float] = []
        for n, action in enumerate(plan):
            began = time.monotonic()
            self.wait_open()
            time.sleep(self.rng.uniform(0.2, 1.5))
            publishing = publisher is not None and not publisher.done.is_set()
            if action == "kill":
                self.kill(publishing)
            else:
                self.outage(action)
            cycles.append(time.monotonic() - began - (0 if action == "kill" else OUTAGE_SECONDS))
            if publisher is not None:
                # Restarts slow down as the store grows: the latest cycles say best what
                # the next ones cost.
                self.pace(publisher, plan[n + 1:], 1.25 * max(cycles[-2:]))

    @staticmethod
    def pace(publisher: Publisher, rest: list[str], cycle: float) -> None:
        """Sets the rate at which what is left of the flood ends with the last action, plus a
        margin (the last catch-up happens with the flood still running)."""
        seconds = len(rest) * cycle + sum(OUTAGE_SECONDS for a in rest if a != "kill") + 5
        publisher.set_rate(min(5000.0, max(200.0, (publisher.total - publisher.published) / seconds)))


def test_twenty_kill_9s_and_three_outages_during_a_flood_leave_every_message_stored_once(
        history_backend, new_daemon):
    total = 100_000
    backend = history_backend(history=total, replay_overlap=50)
    daemon = new_daemon(backend.url, merged(CATCH_UP, {
        "Backend": {"Rooms": "1 2 3"}, "Store": {"MaxFileSize": "4M", "MaxFiles": "1000"}}))
    wait_joined(daemon, backend, ROOMS)
    started = time.monotonic()
    # The first rate guesses two seconds a kill and its restart; `Chaos.run` corrects it as
    # it goes. Either way it is a rate the daemon and the backend sustain several times over
    # on a shared 2-core machine, so catch-ups finish between the kills.
    publisher = Publisher(backend, list(ROOMS), total, rate=total / (20 * 2 + 3 * (OUTAGE_SECONDS + 2)),
                          size=40, tag="f")
    publisher.start()
    chaos = Chaos(daemon, backend, random.Random(3333))
    chaos.run(20, ["stopped", "killed", "blocked"], publisher)
    publisher.done.wait(120)
    flood_seconds = time.monotonic() - started
    daemon.wait_state("open", timeout=30)
    published = {room: backend.published(room) for room in ROOMS}
    result = wait_stored(daemon, published, timeout=90, strict=False)
    records, bad = quiet_store(daemon, timeout=30)
    assert not bad, bad[:3]
    result = audit(records, published)
    status = daemon.status()
    truncated = sum(1 for r in records if r["type"] == "json" and r["data"].get("event") == "history-truncated")
    print(f"catch-up (Python history backend): {total} messages over {len(ROOMS)} rooms in "
          f"{flood_seconds:.0f} s, {chaos.kills} kill -9s ({chaos.kills_while_publishing} while publishing), "
          f"outages of {OUTAGE_SECONDS} s: {', '.join(chaos.outages)}; stored {result['stored']}, "
          f"missing {result['missing']}, duplicates {result['duplicates']}, out of order "
          f"{result['disordered'] or 'none'}; duplicates dropped at least {chaos.dropped_seen + status['duplicates_dropped']} "
          f"(each replay overlapped {backend.replay_overlap}), history gaps {status['history_gaps']}, "
          f"truncated events {truncated}, {daemon.runs} runs")
    assert chaos.kills == 20 and len(chaos.outages) == 3
    assert chaos.kills_while_publishing == chaos.kills, "every kill must land during the flood"
    assert sum(len(v) for v in published.values()) == total
    assert result["missing"] == 0
    assert result["duplicates"] == 0
    assert result["disordered"] == []
    assert result["stored"] == total
    assert truncated == 0 and status["history_gaps"] == 0
    assert chaos.dropped_seen + status["duplicates_dropped"] > 0, "the overlapping replays must be dropped"


# ---------------------------------------------------------------------------- chatlink-devserver


class DevServer:
    """chatlink-devserver (envelope) as a subprocess on a port of its choosing."""

    def __init__(self, workdir: Path, *args: str):
        self.log_path = workdir / "devserver.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([str(BIN / "chatlink-devserver"), "--port", "0", *args],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.proc.stdout.readline()
        match = re.search(r"listening on (ws://\S+)", line)
        assert match, f"no endpoint line from the devserver: {line!r}"
        self.url = match.group(1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stdout.close()


@pytest.fixture
def devserver(tmp_path):
    started: list[DevServer] = []

    def start(*args) -> DevServer:
        server = DevServer(tmp_path, *map(str, args))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
        print(f"--- devserver log (tail)\n{server.log_path.read_text()[-5000:]}")


class DevPublisher(threading.Thread):
    """A chat member of the devserver that sends `total` messages round-robin over `rooms` at
    `rate` a second (adjustable, as `Publisher`), and reads its own messages back from the
    server to learn the id each got."""

    def __init__(self, url: str, rooms: list, total: int, rate: float):
        super().__init__(daemon=True, name="dev-publisher")
        self.url, self.rooms, self.total, self.rate = url, list(rooms), total, rate
        self.published = 0
        self.ids: dict = {room: [] for room in rooms}
        self.echoed = 0
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._pace = threading.Lock()
        self._base = (time.monotonic(), 0)

    def set_rate(self, rate: float) -> None:
        with self._pace:
            self._base = (time.monotonic(), self.published)
            self.rate = rate

    def run(self):
        try:
            asyncio.run(self._main())
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e
        finally:
            self.done.set()

    async def _read(self, ws) -> None:
        async for text in ws:
            data = json.loads(text)["data"]
            self.ids[data["room_id"]].append(id_number(data["msg_id"]))
            self.echoed += 1
            if self.echoed == self.total:
                return

    async def _main(self) -> None:
        async with ws_connect(self.url, compression=None, max_queue=None) as ws:
            reader = asyncio.ensure_future(self._read(ws))
            with self._pace:
                self._base = (time.monotonic(), 0)
            while self.published < self.total:
                with self._pace:
                    (since, then), rate = self._base, self.rate
                due = min(self.total, then + int((time.monotonic() - since) * rate) + 1)
                for k in range(self.published, due):
                    room = self.rooms[k % len(self.rooms)]
                    await ws.send(json.dumps({"event": "send-message", "data": {
                        "room_id": room, "message": f"d{k} " + "x" * 40, "sender": "dev-publisher"}}))
                # A `set_rate` during the sends above counts from the `published` before them:
                # `due` may then lie behind it, and going back would send those messages again.
                self.published = max(self.published, due)
                await asyncio.sleep(0.005)
            await asyncio.wait_for(reader, 60)


def test_the_devserver_s_history_survives_five_kill_9s_and_an_outage_with_every_message_stored_once(
        devserver, new_daemon):
    total = 20_000
    server = devserver("--history", total)
    daemon = new_daemon(server.url, merged(CATCH_UP, {"Backend": {"Rooms": "1 2 3"}}))
    wait_devserver_joined(daemon, server, 3)
    started = time.monotonic()
    publisher = DevPublisher(server.url, list(ROOMS), total, rate=total / (5 * 2 + OUTAGE_SECONDS + 2))
    publisher.start()
    chaos = Chaos(daemon, None, random.Random(555))
    chaos.run(5, ["stopped"], publisher)
    assert publisher.done.wait(120) and publisher.error is None, publisher.error
    flood_seconds = time.monotonic() - started
    published = publisher.ids
    assert {room: sorted(ids) for room, ids in published.items()} == {
        room: list(range(1, len(ids) + 1)) for room, ids in published.items()}, "the devserver numbers each room from 1"
    daemon.wait_state("open", timeout=30)
    wait_stored(daemon, published, timeout=60, strict=False)
    records, bad = quiet_store(daemon, timeout=30)
    assert not bad, bad[:3]
    result = audit(records, published)
    status = daemon.status()
    joins = server.log_path.read_text().count("joined")
    after = len(re.findall(r"joined .*since=[0-9a-f]{8}-\d+", server.log_path.read_text()))
    print(f"catch-up (chatlink-devserver): {total} messages over {len(ROOMS)} rooms in {flood_seconds:.0f} s, "
          f"{chaos.kills} kill -9s ({chaos.kills_while_publishing} while publishing), outages of "
          f"{OUTAGE_SECONDS} s: {', '.join(chaos.outages)}; stored {result['stored']}, missing {result['missing']}, "
          f"duplicates {result['duplicates']}, out of order {result['disordered'] or 'none'}; history gaps "
          f"{status['history_gaps']}; {after} of {joins} joins after a stored id")
    assert chaos.kills == 5 and chaos.outages == ["stopped"]
    assert chaos.kills_while_publishing == chaos.kills, "every kill must land during the flood"
    assert result["missing"] == 0
    assert result["duplicates"] == 0
    assert result["disordered"] == []
    assert result["stored"] == total
    assert status["history_gaps"] == 0


def test_a_devserver_history_shorter_than_the_outage_is_reported_as_a_gap(devserver, new_daemon):
    server = devserver("--history", 20)
    daemon = new_daemon(server.url, merged(CATCH_UP, {"Backend": {"Rooms": "1"}}))
    wait_devserver_joined(daemon, server, 1)
    publisher = DevPublisher(server.url, [1], 10, rate=1000)
    publisher.run()
    wait_stored(daemon, publisher.ids, timeout=20)
    daemon.stop()
    publisher = DevPublisher(server.url, [1], 100, rate=1000)
    publisher.run()
    daemon.start()
    daemon.wait_state("open")
    daemon.wait_log("history no longer reaches back", timeout=10)
    status = wait_until(lambda: (s := daemon.status())["history_gaps"] >= 1 and s, 10, message="history_gaps")
    wait_until(lambda: len(messages_by_room(daemon.records()).get(1, [])) >= 30, 10, message="the replay")
    records, _ = quiet_store(daemon)
    truncated = [r["data"]["data"] for r in records if r["type"] == "json" and r["data"].get("event") == "history-truncated"]
    stored = messages_by_room(records)[1]
    print(f"devserver --history 20, 100 messages while stopped: truncated events {truncated}, "
          f"history_gaps {status['history_gaps']}, stored ids {stored[:3]}..{stored[-3:]} ({len(stored)}), "
          f"missing {110 - len(stored)} (announced)")
    assert len(truncated) == 1 and truncated[0]["room_id"] == 1 and id_number(truncated[0]["since"]) == 10
    assert id_number(truncated[0]["first"]) == 91
    assert stored == list(range(1, 11)) + list(range(91, 111))


# ---------------------------------------------------------------------------- gaps, redeliveries, restarts


def test_an_outage_longer_than_the_backend_s_history_is_detected_counted_and_logged(history_backend, new_daemon):
    backend = history_backend(history=50)
    daemon = new_daemon(backend.url, merged(CATCH_UP, {"Backend": {"Rooms": "1"}}))
    wait_joined(daemon, backend, [1])
    for k in range(20):
        backend.publish(1, f"before {k}")
    wait_stored(daemon, {1: backend.published(1)}, timeout=20)
    daemon.stop()
    for k in range(200):
        backend.publish(1, f"while away {k}")
    t0 = time.monotonic()
    daemon.start()
    daemon.wait_log("history no longer reaches back to the newest stored message", since=t0, timeout=10)
    status = wait_until(lambda: (s := daemon.status())["history_gaps"] >= 1 and s, 10, message="history_gaps >= 1")
    wait_until(lambda: len(messages_by_room(daemon.records()).get(1, [])) >= 70, 10, message="the replay")
    records, _ = quiet_store(daemon)
    truncated = [r for r in records if r["type"] == "json" and r["data"].get("event") == "history-truncated"]
    stored = messages_by_room(records)[1]
    metric = gaps_metric(daemon)
    text = subprocess.run([str(BIN / "chatlinkctl"), "--socket", daemon.socket_path, "status"],
                          capture_output=True, text=True, timeout=10).stdout
    warning = [line for _, line in daemon.log_lines(t0) if "history no longer reaches back" in line]
    print(f"history of 50, 200 published while stopped: history_gaps {status['history_gaps']}, "
          f"chatlink_history_gaps_total {metric:.0f}, truncated events stored {len(truncated)} "
          f"({truncated[0]['data']['data'] if truncated else None}), {len(stored)} messages stored "
          f"({220 - len(stored)} missing, announced); log: {warning[0] if warning else None}")
    assert backend.truncations == 1
    assert status["history_gaps"] == 1 and metric == 1
    assert len(truncated) == 1 and truncated[0]["room"] == 1
    assert truncated[0]["data"]["data"] == {"room_id": 1, "since": "20", "first": "171"}
    assert stored == list(range(1, 21)) + list(range(171, 221)), "after the gap, everything the backend has, once"
    assert "room=1" in warning[0]
    assert "History gaps" in text and "1" in text.split("History gaps", 1)[1].splitlines()[0], text
    # A truncated event is a record like any other: the seq after it holds the first replayed message.
    assert truncated[0]["seq"] < next(r["seq"] for r in records if r.get("id") == "171")


def follow(daemon: Daemon, room: str) -> subprocess.Popen:
    return subprocess.Popen([str(BIN / "chatlinkctl"), "--socket", daemon.socket_path, "--json", "follow",
                             "--room", room], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def test_five_hundred_stored_messages_sent_again_store_nothing_and_show_nowhere(history_backend, new_daemon):
    backend = history_backend(history=1000)
    daemon = new_daemon(backend.url, merged(CATCH_UP, {"Backend": {"Rooms": "7"}}))
    wait_joined(daemon, backend, [7])
    backend.publish_many([(7, f"first time {k}") for k in range(500)])
    wait_stored(daemon, {7: backend.published(7)}, timeout=20)
    before, _ = quiet_store(daemon)
    follower = follow(daemon, "7")
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(follower.stdout), daemon=True)
    reader.start()
    try:
        wait_until(lambda: any('"status"' in line for line in lines), 10, message="follow's first event")
        assert backend.rewind(7) == 1  # the backend replays the room from its start
        status = wait_until(lambda: (s := daemon.status())["duplicates_dropped"] >= 500 and s, 20,
                            message="500 duplicates dropped")
        backend.publish(7, "after the replay")
        wait_until(lambda: any("after the replay" in line for line in lines), 10, message="the new message in follow")
    finally:
        follower.terminate()
        follower.wait(5)
        reader.join(5)
    after, _ = quiet_store(daemon)
    followed = [json.loads(line) for line in lines if line.strip()]
    followed_ids = [e["record"].get("id") for e in followed if e.get("event") == "message"]
    history = subprocess.run([str(BIN / "chatlinkctl"), "--socket", daemon.socket_path, "--json", "history",
                              "--room", "7", "--limit", "2000"], capture_output=True, text=True, timeout=20)
    history_ids = [json.loads(line).get("id") for line in history.stdout.splitlines()]
    print(f"500 stored messages sent again: {len(after) - len(before)} new records (the one message after), "
          f"duplicates_dropped {status['duplicates_dropped']}, follow showed {followed_ids}, history shows "
          f"{len(history_ids)} records, {len(history_ids) - len(set(history_ids))} repeated")
    assert len(after) - len(before) == 1
    assert status["duplicates_dropped"] == 500
    assert followed_ids == ["501"], "follow must show the new message and none of the redelivered"
    assert history.returncode == 0 and len(history_ids) == 501 and len(set(history_ids)) == 501
    m = daemon.call("io.chatlink.Daemon.GetMetrics")["parameters"]["text"]
    assert "chatlink_inbound_duplicates_total 500" in m, [l for l in m.splitlines() if "duplicates" in l]


def test_ids_without_since_drop_duplicates_and_join_without_since(history_backend, new_daemon):
    backend = history_backend(history=1000)
    daemon = new_daemon(backend.url, {"Envelope": {"IDField": "msg_id"}, "Backend": {"Rooms": "7"}})
    wait_joined(daemon, backend, [7])
    backend.publish_many([(7, f"m{k}") for k in range(100)])
    wait_stored(daemon, {7: backend.published(7)}, timeout=20)
    daemon.kill()
    backend.publish_many([(7, f"while away {k}") for k in range(50)])  # missed: no since
    first_conn = max(c.id for c in backend.connections())
    daemon.start()
    status = daemon.wait_state("open")
    wait_until(lambda: [c for c in backend.open_connections() if c.id > first_conn and backend.members(7) >= {c.id}],
               10, message="the join after the restart")
    time.sleep(0.5)
    missed = len(messages_by_room(daemon.records()).get(7, []))
    backend.rewind(7)  # the whole history again: the 100 stored are dropped, the 50 missed stored
    wait_until(lambda: daemon.status()["duplicates_dropped"] >= 100, 10, message="100 duplicates dropped")
    wait_stored(daemon, {7: backend.published(7)}, timeout=20)
    records, _ = quiet_store(daemon)
    result = audit(records, {7: backend.published(7)})
    sinces = join_sinces(backend)
    print(f"IDField without SinceField: joins {sinces} (no since), {missed} stored after the restart "
          f"(50 sent while away missed), then the whole history sent again: {daemon.status()['duplicates_dropped']} "
          f"dropped, {result}; delivery: {status['delivery']!r}")
    assert sinces and all(s is None for s in sinces)
    assert missed == 100
    assert daemon.status()["duplicates_dropped"] == 100
    assert result == {"stored": 150, "missing": 0, "duplicates": 0, "disordered": []}


@pytest.mark.parametrize("stop", ["clean", "kill-9", "kill-9 after a clean stop"])
def test_a_restart_rebuilds_the_window_from_the_store_across_rotated_files(history_backend, new_daemon, stop):
    """A clean stop leaves the window in a snapshot (0600: it holds the hash's secret) that the
    next start reads; after a kill -9 the start reads the last snapshot and the records stored
    since, or with no snapshot the store's tail."""
    backend = history_backend(history=2000)
    daemon = new_daemon(backend.url, merged(CATCH_UP, {"Backend": {"Rooms": "7"}, "Store": {"MaxFileSize": "64K"}}))
    wait_joined(daemon, backend, [7])
    snapshot = daemon.store_dir / "dedupe-window"
    # In five batches, each stored before the next: the store rotates between writes, and one
    # burst may go out in a write or two however many files' worth it holds.
    for batch in range(5):
        if batch == 4 and stop == "kill-9 after a clean stop":
            assert daemon.stop() == 0
            daemon.start()
            wait_joined(daemon, backend, [7])
        backend.publish_many([(7, f"m{k} " + "y" * 100) for k in range(batch * 200, (batch + 1) * 200)])
        wait_stored(daemon, {7: backend.published(7)}, timeout=30)
    if stop == "clean":
        assert daemon.stop() == 0
        assert snapshot.stat().st_mode & 0o777 == 0o600
        expected_log = "dedupe window read from its snapshot"
    elif stop == "kill-9":
        daemon.kill()
        # A run of more than a minute writes a checkpoint: this case is the start without one.
        snapshot.unlink(missing_ok=True)
        expected_log = "dedupe window read from the store's tail"
    else:
        daemon.kill()
        assert snapshot.exists()
        expected_log = "dedupe window read from its snapshot"
    logged_before = len(daemon.log_text())
    files = sorted(p.name for p in daemon.store_dir.glob("messages.jsonl*"))
    conn = max(c.id for c in backend.connections())
    daemon.start()
    daemon.wait_state("open")
    started = daemon.log_text()[logged_before:]
    assert expected_log in started, started[-2000:]
    if stop == "kill-9 after a clean stop":
        assert re.search(r"records_after[^0-9]*200\b", started), started[-2000:]
    wait_until(lambda: join_sinces(backend, conn), 10, message="the join after the restart")
    assert join_sinces(backend, conn) == ["1000"], "the join after a restart carries the newest stored id"
    backend.rewind(7)
    status = wait_until(lambda: (s := daemon.status())["duplicates_dropped"] >= 1000 and s, 20,
                        message="1000 duplicates dropped")
    records, _ = quiet_store(daemon)
    result = audit(records, {7: backend.published(7)})
    print(f"{stop} restart over {len(files)} store files: join since {join_sinces(backend, conn)}, the 1000 stored "
          f"messages sent again: {status['duplicates_dropped']} dropped, {result}")
    assert len(files) >= 3, files
    assert status["duplicates_dropped"] == 1000
    assert result == {"stored": 1000, "missing": 0, "duplicates": 0, "disordered": []}


# ---------------------------------------------------------------------------- bad input


def test_ids_that_are_not_strings_or_numbers_are_no_ids_and_a_100_kb_id_works(backend, new_daemon):
    daemon = new_daemon(backend.url, merged(CATCH_UP, {"Backend": {"Rooms": "7"}}))
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7), 10, message="the join")
    no_ids = [{"a": 1}, [1, 2], None, "", True, {}, []]
    for value in no_ids:
        for copy in range(2):
            backend.push(7, f"no id {json.dumps(value)} #{copy}", extra={"msg_id": value})
    big = "b" * 100_000
    for copy in range(2):
        backend.push(7, f"big id #{copy}", extra={"msg_id": big})
    backend.push(7, "number id", extra={"msg_id": 42})
    backend.push(7, "string id", extra={"msg_id": "42"})
    backend.push(7, "the end", extra={"msg_id": "end"})
    wait_until(lambda: any(r.get("id") == "end" for r in daemon.records()), 10, message="the last message")
    records, _ = quiet_store(daemon)
    texts = [r["data"]["data"]["message"] for r in records]
    status = daemon.status()
    print(f"bad ids: {len(records)} records for {2 * len(no_ids) + 5} messages, duplicates_dropped "
          f"{status['duplicates_dropped']}; records with an id: {[(r['id'][:8], len(r['id'])) for r in records if 'id' in r]}")
    for value in no_ids:
        stored = [r for r in records if r["data"]["data"]["message"].startswith(f"no id {json.dumps(value)} ")]
        assert len(stored) == 2 and all("id" not in r for r in stored), (value, stored)
    assert texts.count("big id #0") == 1 and "big id #1" not in texts
    assert next(r for r in records if r["data"]["data"]["message"] == "big id #0")["id"] == big
    assert "number id" in texts and "string id" not in texts, "42 and \"42\" are one id"
    assert status["duplicates_dropped"] == 2


@pytest.mark.parametrize("value", ["-1", "abc", "2000000"])
def test_a_bad_dedupe_window_is_refused_by_check_config_and_by_a_reload(backend, new_daemon, value):
    daemon = new_daemon(backend.url, merged(CATCH_UP, {"Backend": {"Rooms": "7"}}))
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7), 10, message="the join")
    for k in range(5):
        backend.push(7, f"kept {k}", extra={"msg_id": f"k{k}"})
    wait_until(lambda: len(daemon.records()) == 5, 10, message="5 records")
    good = daemon.config_path.read_text()
    daemon.write_config(good.replace("[Store]\n", f"[Store]\nDedupeWindow={value}\n"))
    check = subprocess.run([str(CHATLINKD), "--check-config", "--config", str(daemon.config_path)],
                           capture_output=True, text=True, timeout=10)
    t0 = time.monotonic()
    daemon.send_signal(1)  # SIGHUP
    daemon.wait_log("reload failed; keeping the running configuration", since=t0)
    backend.push(7, "kept 0 again", extra={"msg_id": "k0"})
    backend.push(7, "after", extra={"msg_id": "after"})
    wait_until(lambda: any(r.get("id") == "after" for r in daemon.records()), 10, message="the message after")
    records, _ = quiet_store(daemon)
    print(f"DedupeWindow={value}: --check-config exit {check.returncode}: {check.stderr.strip()}; after the "
          f"refused reload {len(records)} records, duplicates_dropped {daemon.status()['duplicates_dropped']}")
    assert check.returncode != 0
    assert "DedupeWindow" in check.stderr and value in check.stderr and "0 to 1000000" in check.stderr
    assert daemon.running() and daemon.status()["state"] == "open"
    assert [r["id"] for r in records] == ["k0", "k1", "k2", "k3", "k4", "after"], "nothing lost, the window kept"
