"""The envelope's catch-up extension and the store's dedupe window, end to end: chatlinkd with
`[Envelope] IDField=msg_id` and `SinceField=since` against backends that keep history (the
Python backend's history mode, `chatlink-devserver --history`), through kill -9s, outages, a
history too short for an outage, a backend replaying from the start, restarts and bad input.

Every test prints its figures: messages published and stored, missing, duplicates, gaps.
"""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time

import pytest

from backend import Backend, Publisher
from conftest import BIN, CHATLINKD, Daemon, quiet_store, read_store, wait_until

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


def wait_stored(daemon: Daemon, published: dict, timeout: float) -> dict:
    """Waits until every published message is in the store (or the timeout); the audit."""
    want = sum(len(v) for v in published.values())
    deadline = time.monotonic() + timeout
    while True:
        result = audit(daemon.records(), published)
        if result["stored"] - result["duplicates"] >= want or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


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
    for d in made:
        d.cleanup()
    for d in made:
        if d.log_path.exists():
            print(f"--- {d.log_path}")
            print(d.log_path.read_text()[-20000:])


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
        seconds = len(rest) * cycle + sum(OUTAGE_SECONDS for a in rest if a != "kill") + 3
        publisher.set_rate(min(5000.0, max(200.0, (publisher.total - publisher.published) / seconds)))


def test_twenty_kill_9s_and_three_outages_during_a_flood_leave_every_message_stored_once(
        history_backend, new_daemon):
    total = 100_000
    backend = history_backend(history=total, replay_overlap=50)
    daemon = new_daemon(backend.url, merged(CATCH_UP, {
        "Backend": {"Rooms": "1 2 3"}, "Store": {"MaxFileSize": "4M", "MaxFiles": "1000"}}))
    daemon.wait_state("open")
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
    result = wait_stored(daemon, published, timeout=90)
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
