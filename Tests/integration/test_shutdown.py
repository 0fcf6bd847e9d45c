"""SIGTERM (and SIGINT): close 1001, make everything durable, exit 0 within a few seconds,
whatever state the connection is in."""

from __future__ import annotations

import signal
import time

import pytest

from conftest import send_many, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stop_signal_closes_with_1001_and_exits_0_within_seconds(daemon, backend, sig):
    daemon.wait_state("open")
    acked = send_many(daemon, 5)
    wait_delivered(backend, acked)
    conn = backend.open_connections()[0]
    t0 = time.monotonic()
    rc = daemon.stop(sig, timeout=10)
    elapsed = time.monotonic() - t0
    assert rc == 0, daemon.log_text()
    assert elapsed < 5, f"took {elapsed:.2f} s to exit"
    wait_until(lambda: not conn.open, 3, message="the backend seeing the close")
    assert conn.close_code == 1001, (conn.close_code, conn.close_reason)
    assert "stopped" in daemon.log_text()
    status_lines = [line for _, line in daemon.log_lines() if "info stopped" in line]
    assert status_lines and "last_seq=" in status_lines[-1]


def test_sigterm_exits_0_within_5_s_even_when_the_backend_never_answers_the_close(daemon, backend):
    daemon.wait_state("open")
    backend.blackhole()
    t0 = time.monotonic()
    rc = daemon.stop(signal.SIGTERM, timeout=10)
    assert rc == 0 and time.monotonic() - t0 <= 5.5, (rc, time.monotonic() - t0)


def test_sigterm_while_waiting_to_reconnect_exits_0_and_keeps_the_outbox(make_daemon, backend):
    backend.refuse(503)
    daemon = make_daemon()
    acked = send_many(daemon, 10, prefix="pending")
    t0 = time.monotonic()
    assert daemon.stop(signal.SIGTERM) == 0
    assert time.monotonic() - t0 < 3
    backend.accept()
    daemon.start()
    wait_delivered(backend, acked)
