"""The bearer token is sent to the backend and nowhere else: not in logs (at any level),
status, errors, Subscribe events, History, the store, the outbox, argv or the environment."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import CHATLINKD, Subscription, send_many, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(60)


def test_token_never_appears_outside_the_authorization_header(make_daemon, backend):
    daemon = make_daemon({"Daemon": {"LogLevel": "trace"}})
    token = daemon.token
    daemon.wait_state("open")
    with Subscription(daemon) as sub:
        acked = send_many(daemon, 5)
        wait_delivered(backend, acked)
        backend.push(7, "hello")
        backend.send_raw("not json")
        # Every kind of failure the daemon reports: refusals, drops, a close with 1008, a reload.
        backend.refuse(401)
        backend.drop_all()
        wait_until(lambda: "401" in (daemon.status().get("last_error") or ""), 5, message="the 401 error")
        status_401 = daemon.status()
        backend.refuse(403)
        wait_until(lambda: "403" in (daemon.status().get("last_error") or ""), 5, message="the 403 error")
        backend.accept()
        daemon.wait_state("open", timeout=5)
        backend.close_all(1008, "policy")
        daemon.wait_log("1008", timeout=5)
        daemon.send_signal(signal.SIGHUP)
        daemon.wait_log("configuration reloaded")
        daemon.wait_state("open", timeout=5)
        with daemon.ctl() as c:
            history = c.History(limit=1000)
            status = c.GetStatus()
        events = sub.snapshot()
    assert all(a.authorization == f"Bearer {token}" for a in backend.attempts()), "the token was not sent"
    places = {
        "stderr": daemon.log_text(),
        "status": repr(status),
        "status during 401": repr(status_401),
        "subscribe events": repr(events),
        "history": repr(history),
        "argv": Path(f"/proc/{daemon.pid}/cmdline").read_bytes().decode("utf-8", "replace"),
        "environment": Path(f"/proc/{daemon.pid}/environ").read_bytes().decode("utf-8", "replace"),
    }
    for path in daemon.store_dir.rglob("*"):  # the store, the outbox, the room indexes
        if path.is_file():
            places[str(path.relative_to(daemon.store_dir))] = path.read_bytes().decode("utf-8", "replace")
    assert len(places["stderr"]) > 1000, "trace logging produced almost nothing"
    leaked = [where for where, text in places.items() if token in text]
    assert not leaked, f"the token leaked into: {leaked}"


def test_a_bad_token_file_is_refused_naming_the_file_not_the_token(make_daemon, backend, tmp_path):
    daemon = make_daemon(start=False)
    secret = "tok-secret part-after-a-space"
    daemon.token_file.write_text(secret + "\n")
    check = subprocess.run([str(CHATLINKD), "--check-config", "--config", str(daemon.config_path)],
                           capture_output=True, text=True, timeout=10)
    assert check.returncode != 0
    assert str(daemon.token_file) in check.stderr and "tok-secret" not in check.stderr + check.stdout
    start = subprocess.run([str(CHATLINKD), "--config", str(daemon.config_path)],
                           capture_output=True, text=True, timeout=10)
    assert start.returncode != 0
    assert str(daemon.token_file) in start.stderr and "tok-secret" not in start.stderr + start.stdout


def test_reload_with_an_unreadable_token_keeps_the_old_token(daemon, backend):
    daemon.wait_state("open")
    old = backend.open_connections()[0]
    daemon.token_file.write_text("has a space and a secret-XYZ\n")
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    daemon.wait_log("reload failed", since=t0)
    assert "secret-XYZ" not in daemon.log_text()
    assert old.open and daemon.status()["state"] == "open"
    backend.drop_all()
    new = wait_until(lambda: [c for c in backend.open_connections() if c.id > old.id], 10,
                     message="the reconnect")[0]
    assert new.authorization == f"Bearer {daemon.token}"
