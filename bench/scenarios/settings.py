"""The run's settings (BENCH_QUICK, BENCH_REPS) and what every scenario shares: the message
size, the group-commit interval, and where trials work and keep their inputs."""

from __future__ import annotations

import os

from harness import CACHE

QUICK = os.environ.get("BENCH_QUICK") == "1"
REPS = int(os.environ.get("BENCH_REPS", "3"))
SCALE = 10 if QUICK else 1

MESSAGE_SIZE = 200
SYNC_INTERVAL_MS = 50

RUN = CACHE / "run"
BLOBS = CACHE / "blobs"
