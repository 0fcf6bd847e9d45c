"""Power cuts, simulated with the lazy FUSE file system of Tests/powerloss (only what was
fsynced survives): a short run of every scenario must break no durability rule, and a daemon
that skips a directory fsync (a debug build's CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC) must be
caught, one kind of directory fsync at a time. `make powerloss` runs the long version."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import pytest

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
]


@pytest.mark.parametrize("reasons,name", BROKEN)
def test_the_simulator_catches_a_daemon_that_skips_a_directory_fsync(tmp_path, monkeypatch, reasons, name):
    monkeypatch.setenv("CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC", reasons)
    tally = run(tmp_path, name, cuts=8, seconds=60, seed=16, stop=True)
    assert tally.violations, f"skipping the {reasons} directory fsync went unnoticed in {tally.cuts} cuts"
