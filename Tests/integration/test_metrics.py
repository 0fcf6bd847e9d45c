"""Metrics: GetMetrics and `chatlinkctl metrics` print OpenMetrics text, and with --format
prometheus the classic text format that promtool check metrics reads (promtool 2.42 parses
only that one); both carry counters that match what happened (sends confirmed, messages
pushed and stored)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import BIN, send_many, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(60)

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian package prometheus) is not installed")


def chatlinkctl_metrics(daemon, *args: str) -> str:
    run = subprocess.run([str(BIN / "chatlinkctl"), "--socket", daemon.socket_path, "metrics", *args],
                         capture_output=True, text=True, timeout=10)
    assert run.returncode == 0, run.stderr
    return run.stdout


def promtool_check(text: str) -> None:
    run = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, f"promtool check metrics: {run.stdout}{run.stderr}\n---\n{text}"


def value(text: str, sample: str) -> float | None:
    """The value of the sample line named exactly `sample` (labels included), or None."""
    for line in text.splitlines():
        name, _, rest = line.rpartition(" ")
        if name == sample:
            return float(rest)
    return None


def wait_stored(daemon, count: int) -> None:
    wait_until(lambda: daemon.status()["received"] >= count, 10, message=f"{count} stored messages")


@needs_promtool
def test_chatlinkctl_metrics_is_valid_openmetrics_with_the_counts_of_what_happened(daemon, backend):
    daemon.wait_state("open")
    acked = send_many(daemon, 5)
    wait_delivered(backend, acked)
    wait_until(lambda: daemon.status()["confirmed"] >= 5, 10, message="5 confirmed sends")
    for i in range(3):
        backend.push("7", f"pushed-{i}")
    wait_stored(daemon, 3)
    classic = chatlinkctl_metrics(daemon, "--format", "prometheus")
    promtool_check(classic)
    text = chatlinkctl_metrics(daemon)
    assert text.endswith("# EOF\n")
    assert "# TYPE chatlink_sends_queued counter\n" in text
    assert "# UNIT chatlink_received_bytes bytes\n" in text
    for line in classic.splitlines():
        if not line.startswith("#"):
            assert line in text.splitlines() or line.startswith(("chatlink_outbox_oldest", "chatlink_last_connect")), line
    assert value(text, "chatlink_sends_queued_total") == 5
    assert value(text, "chatlink_sends_confirmed_total") == 5
    assert value(text, "chatlink_sends_failed_total") == 0
    assert value(text, 'chatlink_connection_state{state="open"}') == 1
    assert value(text, 'chatlink_connection_state{state="waiting"}') == 0
    assert value(text, "chatlink_connects_total") == 1
    assert value(text, "chatlink_outbox_messages") == 0
    # Stored: the 3 pushed messages, plus the 5 echoes of our own sends (the backend echoes).
    status = daemon.status()
    assert value(text, "chatlink_messages_stored_total") == status["received"] >= 3
    assert value(text, "chatlink_received_bytes_total") > 0
    assert value(text, "chatlink_frames_sent_total") >= 5
    assert value(text, "chatlink_store_records_total") >= 8
    assert re.search(r'^chatlink_build_info\{version="[^"]+"\} 1$', text, re.M)


@needs_promtool
def test_counters_keep_counting_across_a_reconnect_and_a_reload(daemon, backend):
    daemon.wait_state("open")
    send_many(daemon, 2)
    wait_until(lambda: daemon.status()["confirmed"] >= 2, 10, message="2 confirmed sends")
    backend.drop_all()
    daemon.wait_state("open", min_connects=2)
    daemon.send_signal(__import__("signal").SIGHUP)
    send_many(daemon, 1)
    wait_until(lambda: daemon.status()["confirmed"] >= 3, 10, message="3 confirmed sends")
    text = chatlinkctl_metrics(daemon, "--format", "prometheus")
    promtool_check(text)
    assert value(text, "chatlink_sends_queued_total") == 3
    assert value(text, "chatlink_sends_confirmed_total") >= 3
    assert value(text, "chatlink_connects_total") >= 2
    assert value(text, "chatlink_connection_attempts_total") >= 2
    endings = [line for line in text.splitlines() if line.startswith("chatlink_connection_endings_total{")]
    assert endings, text
