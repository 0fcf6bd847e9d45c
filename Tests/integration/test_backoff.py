"""Reconnect backoff as the backend's answers steer it: exponential with full jitter between
ReconnectMinSec and ReconnectMaxSec, Retry-After honoured, slow retries on bad credentials,
and never a hot loop."""

from __future__ import annotations

import time

import pytest

from conftest import wait_until

pytestmark = pytest.mark.timeout(60)

SLACK = 0.35  # scheduling, connect and handshake time on a loaded machine


def attempt_gaps(backend, since: float = 0.0):
    times = [a.t for a in backend.attempts() if a.t >= since]
    return times, [b - a for a, b in zip(times, times[1:])]


def test_503_without_retry_after_backs_off_exponentially_between_min_and_max(make_daemon, backend):
    lo, hi, window = 0.2, 1.5, 8.0
    backend.refuse(503)
    daemon = make_daemon({"Backend": {"ReconnectMinSec": lo, "ReconnectMaxSec": hi}})
    t0 = time.monotonic()
    time.sleep(window)
    times, gaps = attempt_gaps(backend)
    times = [t for t in times if t <= t0 + window]
    gaps = gaps[: len(times) - 1]
    assert all(a.refused == 503 for a in backend.attempts())
    # Not a hot loop: at most one attempt per ReconnectMinSec; and it keeps trying.
    assert 5 <= len(times) <= window / lo + 1, gaps
    assert all(g >= lo - 0.02 for g in gaps), f"a retry came sooner than ReconnectMinSec: {gaps}"
    assert all(g <= hi + SLACK for g in gaps), f"a retry waited longer than ReconnectMaxSec: {gaps}"
    # Exponential: the k-th delay is at most ReconnectMinSec * 2^k (the jitter ceiling).
    for k, g in enumerate(gaps):
        assert g <= min(hi, lo * 2**k) + SLACK, f"delay {k} = {g:.2f} s exceeds its ceiling: {gaps}"
    later = gaps[3:]
    assert sum(later) / len(later) >= 1.5 * lo, f"delays did not grow: {gaps}"
    status = daemon.status()
    assert status["state"] in ("waiting", "connecting", "upgrading")
    assert "503" in (status.get("last_error") or ""), status
    assert status["connects"] == 0
    # Once the backend accepts, the daemon connects within ReconnectMaxSec.
    backend.accept()
    daemon.wait_state("open", timeout=hi + 2)


@pytest.mark.parametrize("code", [503, 429])
def test_retry_after_is_honoured(make_daemon, backend, code):
    # Retry-After (2 s) is longer than ReconnectMaxSec (0.5 s): only the server's word explains it.
    backend.refuse(code, retry_after=2)
    daemon = make_daemon({"Backend": {"ReconnectMinSec": 0.2, "ReconnectMaxSec": 0.5}})
    wait_until(lambda: len(backend.attempts()) >= 3, 10, message="three attempts")
    _, gaps = attempt_gaps(backend)
    assert all(2 - 0.05 <= g <= 2 + SLACK for g in gaps[:2]), f"Retry-After: 2 not honoured: {gaps}"
    assert 1.5 <= daemon.status()["retry_in"] <= 2.0
    status = daemon.status()
    assert str(code) in (status.get("last_error") or "")
    daemon.wait_log("honouring Retry-After", timeout=1)
    backend.accept()
    daemon.wait_state("open", timeout=5)


@pytest.mark.parametrize("code", [401, 403])
def test_refused_credentials_give_a_clear_error_and_slow_retries(make_daemon, backend, code):
    hi = 1.5
    backend.refuse(code)
    daemon = make_daemon({"Backend": {"ReconnectMinSec": 0.2, "ReconnectMaxSec": hi}})
    wait_until(lambda: len(backend.attempts()) >= 3, 3 * hi + 3, message="three attempts")
    _, gaps = attempt_gaps(backend)
    assert all(g >= hi - 0.05 for g in gaps), f"HTTP {code} retried faster than ReconnectMaxSec: {gaps}"
    status = daemon.status()
    error = status.get("last_error") or ""
    assert f"HTTP {code}" in error and "TokenFile" in error, status
    assert f"HTTP {code}" in status["text"]
    logged = [line for _, line in daemon.log_lines() if line.startswith("<3>") and f"HTTP {code}" in line]
    assert logged, daemon.log_text()
    # Every attempt carried the token; none of the messages show it.
    assert all(a.authorization == f"Bearer {daemon.token}" for a in backend.attempts())
    assert daemon.token not in daemon.log_text() and daemon.token not in str(status)
    backend.accept()
    daemon.wait_state("open", timeout=hi + 3)
    assert daemon.status().get("last_error") is None


def test_close_1008_policy_violation_is_reported_and_retried_slowly(make_daemon, backend):
    hi = 2.0
    daemon = make_daemon({"Backend": {"ReconnectMinSec": 0.2, "ReconnectMaxSec": hi}})
    daemon.wait_state("open")
    first = backend.open_connections()[0]
    t0 = time.monotonic()
    backend.close_all(1008, "token revoked")
    s = wait_until(lambda: (s := daemon.status())["state"] == "waiting" and s, 5, message="waiting")
    assert "1008" in (s.get("last_error") or ""), s
    assert s["retry_in"] >= hi - 0.05
    daemon.wait_log("1008", timeout=2)
    wait_until(lambda: any(c.id > first.id for c in backend.open_connections()), hi + 3,
               message="the reconnect")
    new = [c for c in backend.connections() if c.id > first.id][0]
    assert new.opened_at - t0 >= hi - 0.05, "reconnected faster than ReconnectMaxSec after 1008"
