"""Power cuts, simulated with the lazy FUSE file system of Tests/powerloss (only what was
fsynced survives): a short run of every scenario must break no durability rule, and a daemon
that skips a directory fsync (a debug build's CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC) must be
caught, one kind of directory fsync at a time. `make powerloss` runs the long version."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import pytest

from conftest import Subscription, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "powerloss"))
import powercut  # noqa: E402

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting the lazy FUSE file system needs root"),
]

SCENARIOS = {s.name: s for s in powercut.SCENARIOS}


def run(tmp_path: Path, name: str, cuts: int, seconds: float, seed: int, stop: bool = False) -> powercut.Tally:
    rng = random.Random(f"{seed}/{name}")
    tally = powercut.run_scenario(SCENARIOS[name], cuts, rng, tmp_path / "s", time.monotonic() + seconds,
                                  stop_at_violation=stop)
    print(powercut.table([(name, tally)]))
    return tally


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_power_cut_breaks_no_durability_rule(tmp_path, name):
    # About 60 s in all: five cuts per scenario, with a seed of its own each run (printed, to
    # replay with Tests/powerloss/powercut.py --seed).
    seed = int(time.time())
    print(f"seed {seed}")
    tally = run(tmp_path, name, cuts=5, seconds=20, seed=seed)
    assert tally.cuts >= 1
    assert not tally.violations, "\n".join(tally.violations)


# Each directory fsync the daemon makes, skipped alone, with the scenario that must notice.
BROKEN = [
    ("all", "flood always"),
    ("mkdir", "flood batch"),
    ("create", "sends batch"),
    ("rotate", "rotation always"),
    ("compact", "outbox compaction"),
    ("snapshot", "dedupe checkpoints batch"),
]


@pytest.mark.parametrize("reasons,name", BROKEN)
def test_the_simulator_catches_a_daemon_that_skips_a_directory_fsync(tmp_path, monkeypatch, reasons, name):
    monkeypatch.setenv("CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC", reasons)
    # It stops at the first violation (a few cuts, unloaded); on a busy machine fewer cuts land
    # where the skipped fsync matters, hence the margin.
    tally = run(tmp_path, name, cuts=20, seconds=90, seed=16, stop=True)
    assert tally.violations, f"skipping the {reasons} directory fsync went unnoticed in {tally.cuts} cuts"


@pytest.fixture
def lazy_daemon(tmp_path, backend):
    """lazy_daemon(sync) -> (Daemon, LazyMount): a daemon whose store is on the lazy file system,
    which can hold fsyncs open; both ended at teardown (the mount unmounted) whatever happens."""
    made: list = []

    def make(sync: str):
        mount = powercut.LazyMount(tmp_path / "disk", tmp_path / "mnt", tmp_path / "lazyfs.sock")
        (tmp_path / "disk").mkdir()
        made.append(mount)
        mount.start()
        daemon = powercut.PowerDaemon(tmp_path / "daemon", backend.url, tmp_path / "mnt" / "state",
                                      {"Store": {"Sync": sync, "SyncIntervalMSec": "20"}})
        made.append(daemon)
        daemon.start()
        daemon.wait_state("open")
        return daemon, mount

    yield make
    for thing in reversed(made):
        if isinstance(thing, powercut.LazyMount):
            try:
                thing.command("release")
            except (OSError, RuntimeError):
                pass
            thing.stop()
        else:
            thing.cleanup()


def message_events(sub: Subscription) -> list[dict]:
    return [e for e in sub.snapshot() if e.get("event") == "message"]


def test_under_sync_always_a_message_event_waits_for_the_fsync_of_its_record(lazy_daemon, backend):
    daemon, mount = lazy_daemon("always")
    with Subscription(daemon) as sub:
        sub.wait_for(lambda e: e["event"] == "status", 5)  # the stream is in place
        backend.push(7, "before the hold")
        wait_until(lambda: message_events(sub), 10, message="the first message event")
        mount.command("hold")
        backend.push(7, "while the fsync is held")
        # Written, not durable: GetStatus says so, and no event claims otherwise.
        status = wait_until(lambda: (s := daemon.status())["last_seq"] > s["durable_seq"] and s, 10,
                            message="a record written and not yet durable")
        time.sleep(1.0)
        assert len(message_events(sub)) == 1, f"a message event before its fsync: {message_events(sub)}"
        assert json.loads(mount.command("stats"))["held"] >= 1, "the fsync was never held"
        mount.command("release")
        wait_until(lambda: len(message_events(sub)) == 2, 10, message="the event after the fsync")
        assert daemon.status()["durable_seq"] >= status["last_seq"]


def test_under_sync_batch_a_message_event_may_precede_its_fsync(lazy_daemon, backend):
    # The documented difference: Sync=batch tells subscribers at once; durable_seq tells
    # whether the record is on disk yet.
    daemon, mount = lazy_daemon("batch")
    with Subscription(daemon) as sub:
        sub.wait_for(lambda e: e["event"] == "status", 5)  # the stream is in place
        backend.push(7, "before the hold")
        wait_until(lambda: message_events(sub), 10, message="the first message event")
        wait_until(lambda: (s := daemon.status())["last_seq"] == s["durable_seq"], 10, message="all durable")
        mount.command("hold")
        backend.push(7, "while the fsync is held")
        wait_until(lambda: len(message_events(sub)) == 2, 10, message="the event before the fsync")
        status = daemon.status()
        assert status["durable_seq"] < status["last_seq"], status
        mount.command("release")
        wait_until(lambda: (s := daemon.status())["last_seq"] == s["durable_seq"], 10, message="durable")
