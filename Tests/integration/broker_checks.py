"""What the broker tests (test_mqtt.py, test_stomp.py) check the same way: whether what arrived
holds what was sent, first arrivals in order, the figures the killer scenarios print, and a
control-socket sender that keeps what the daemon acknowledged."""

from __future__ import annotations

import threading
import time
from typing import Callable

import varlink

from conftest import wait_until


def first_in_order(items: list, keys: list) -> list[str]:
    """Problems with `items` (what arrived, duplicates allowed) against `keys` (what was sent,
    in order): missing ones, and first arrivals out of order."""
    seen, first = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            first.append(x)
    problems = []
    missing = [k for k in keys if k not in seen]
    if missing:
        problems.append(f"{len(missing)} of {len(keys)} missing, e.g. {missing[:5]}")
    want = set(keys)
    got = [x for x in first if x in want]
    if not missing and got != list(keys):
        bad = next(i for i, (a, b) in enumerate(zip(got, keys)) if a != b)
        problems.append(f"out of order from #{bad}: {got[bad:bad + 5]} where {keys[bad:bad + 5]} was sent")
    return problems


def attempts(d, since: float) -> list[float]:
    """When the daemon began each connection attempt (its log)."""
    return [t for t, line in d.log_lines(since) if "state=connecting" in line]


def flood_figures(d, sent: list[tuple[str, str]], redelivered: Callable[[dict], bool]) -> dict:
    """What the store holds of `sent` ((room, text) pairs): missing ones, duplicates, those the
    broker marked as redelivered (`redelivered(record)`: MQTT's DUP flag, STOMP's header), and
    whether each room's first arrivals are in send order. Checks that seq strictly increases."""
    records = d.records()
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "seq not strictly increasing"
    want = {text for _, text in sent}
    mine = [r for r in records if r["dir"] == "in" and r["data"] in want]
    counts: dict[str, int] = {}
    for r in mine:
        counts[r["data"]] = counts.get(r["data"], 0) + 1
    problems = []
    for room in sorted({t for t, _ in sent}):
        problems += [f"{room}: {p}" for p in first_in_order(
            [r["data"] for r in mine if r["room"] == room], [x for t, x in sent if t == room])]
    return {
        "sent": len(sent), "stored": len(mine), "distinct": len(counts),
        "missing": len(want) - len(counts), "duplicates": len(mine) - len(counts),
        "redelivered": sum(1 for r in mine if redelivered(r)),
        "max_copies": max(counts.values(), default=0), "problems": problems,
    }


def wait_all_stored(d, sent, timeout: float, redelivered: Callable[[dict], bool]) -> dict:
    """Waits until every text of `sent` is stored inbound; then its `flood_figures`."""
    want = {text for _, text in sent}

    def done():
        return want <= {r["data"] for r in d.records() if r["dir"] == "in"}

    wait_until(done, timeout, interval=0.5, message=f"all {len(sent)} sent messages in the store")
    return flood_figures(d, sent, redelivered)


class RoomSender(threading.Thread):
    """Sends over one control connection to `room` until stopped; keeps what was acknowledged
    (the Send reply, state "queued": durable in the outbox)."""

    def __init__(self, d, room: str, tag: str):
        super().__init__(daemon=True)
        self.d, self.room, self.tag = d, room, tag
        self.acked: list[str] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.refused = 0  # sends refused with OutboxFull, then sent again

    def run(self):
        try:
            with self.d.ctl() as c:
                i = 0
                while not self.stop.is_set():
                    text = f"{self.tag}-{i:05d}"
                    try:
                        reply = c.Send(room=self.room, text=text)
                    except varlink.VarlinkError as e:
                        # A full outbox (the backend down long enough) is backpressure: a
                        # client waits and sends the same text again (`send -` has the
                        # daemon wait instead).
                        if e.error() != "io.chatlink.Daemon.OutboxFull":
                            raise
                        self.refused += 1
                        time.sleep(0.1)
                        continue
                    assert reply["state"] == "queued"
                    self.acked.append(text)
                    i += 1
                    time.sleep(0.002)
        except BaseException as e:  # noqa: BLE001
            self.error = e
