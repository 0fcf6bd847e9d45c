"""Metrics: GetMetrics and `chatlinkctl metrics` print OpenMetrics text, and with --format
prometheus the classic text format that promtool check metrics reads (promtool 2.42 parses
only that one); both carry counters that match what happened (sends confirmed, messages
pushed and stored)."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

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
    wait_until(lambda: (s := daemon.status())["durable_seq"] == s["last_seq"], 10, message="all durable")
    # The two formats carry the same samples. Two reads are two moments, and a group commit or
    # a keepalive ping between them moves a histogram: a mismatch is read again (the daemon is
    # idle by now, so two reads soon agree).
    for _ in range(5):
        classic = chatlinkctl_metrics(daemon, "--format", "prometheus")
        text = chatlinkctl_metrics(daemon)
        mismatched = [line for line in classic.splitlines()
                      if not line.startswith("#") and line not in text.splitlines()
                      and not line.startswith(("chatlink_outbox_oldest", "chatlink_last_connect"))]
        if not mismatched:
            break
        time.sleep(0.2)
    assert not mismatched, mismatched
    promtool_check(classic)
    assert text.endswith("# EOF\n")
    assert "# TYPE chatlink_sends_queued counter\n" in text
    assert "# UNIT chatlink_received_bytes bytes\n" in text
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


# ---------------------------------------------------------------------------- the HTTP endpoint


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port: int, path: str = "/metrics", method: str = "GET", accept: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, headers={"Accept": accept} if accept else {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        conn.close()


@pytest.fixture
def metrics_daemon(make_daemon):
    port = free_port()
    d = make_daemon({"Metrics": {"Listen": f"127.0.0.1:{port}"}})
    d.metrics_port = port
    return d


@needs_promtool
def test_the_http_endpoint_serves_get_metrics_in_both_formats_and_nothing_else(metrics_daemon, backend):
    d = metrics_daemon
    d.wait_state("open")
    send_many(d, 3)
    wait_until(lambda: d.status()["confirmed"] >= 3, 10, message="3 confirmed sends")
    status, headers, classic = http_get(d.metrics_port)
    assert status == 200
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    promtool_check(classic)
    assert value(classic, "chatlink_sends_queued_total") == 3
    status, headers, text = http_get(d.metrics_port, accept="application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
    assert status == 200
    assert headers["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
    assert text.endswith("# EOF\n") and "# UNIT chatlink_sent_bytes bytes\n" in text
    assert http_get(d.metrics_port, "/")[0] == 404
    assert http_get(d.metrics_port, "/metrics/../x")[0] == 404
    status, headers, _ = http_get(d.metrics_port, method="POST")
    assert status == 405 and headers["Allow"] == "GET, HEAD"


def test_connections_beyond_the_limit_are_closed_at_once_and_the_loop_goes_on(metrics_daemon):
    d = metrics_daemon
    d.wait_state("open")
    idle = [socket.create_connection(("127.0.0.1", d.metrics_port), timeout=5) for _ in range(4)]
    try:
        time.sleep(0.2)
        extra = socket.create_connection(("127.0.0.1", d.metrics_port), timeout=5)
        extra.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        started = time.monotonic()
        try:
            assert extra.recv(1024) == b"", "a fifth connection must be closed without an answer"
        except ConnectionResetError:
            pass
        assert time.monotonic() - started < 2
        extra.close()
        # The idle ones hold their slots, yet the daemon answers on its control socket at once.
        started = time.monotonic()
        assert d.status(timeout=2)["state"] == "open"
        assert time.monotonic() - started < 1
    finally:
        for s in idle:
            s.close()
    wait_until(lambda: http_get(d.metrics_port)[0] == 200, 5, message="a free slot after the idle ones left")


def test_a_client_that_sends_no_complete_request_is_closed_after_the_idle_limit(metrics_daemon):
    d = metrics_daemon
    d.wait_state("open")
    slow = socket.create_connection(("127.0.0.1", d.metrics_port), timeout=10)
    slow.sendall(b"GET /metr")
    started = time.monotonic()
    try:
        assert slow.recv(1024) == b""
    except ConnectionResetError:
        pass
    elapsed = time.monotonic() - started
    slow.close()
    assert 4 <= elapsed < 8, elapsed


def test_an_oversized_request_head_is_refused_with_431(metrics_daemon):
    d = metrics_daemon
    d.wait_state("open")
    with socket.create_connection(("127.0.0.1", d.metrics_port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 9000 + b"\r\n\r\n")
        answer = b""
        try:
            while chunk := s.recv(4096):
                answer += chunk
        except ConnectionResetError:
            pass
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]


def test_a_busy_port_stops_the_start_with_a_clear_error(make_daemon):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        d = make_daemon({"Metrics": {"Listen": f"127.0.0.1:{port}"}}, start=False)
        d.start(wait=False)
        assert d.proc.wait(timeout=10) != 0
        wait_until(lambda: "Address already in use" in d.log_text(), 5, message="the bind error in the log")
        assert f"[Metrics] Listen=127.0.0.1:{port}: bind" in d.log_text()


def test_a_bad_listen_address_is_a_config_error(make_daemon):
    d = make_daemon({"Metrics": {"Listen": "localhost:9105"}}, start=False)
    run = subprocess.run([str(BIN / "chatlinkd"), "--check-config", "--config", str(d.config_path)],
                         capture_output=True, text=True, timeout=10)
    assert run.returncode != 0
    assert "[Metrics] Listen" in run.stderr and "not a numeric IPv4 address" in run.stderr, run.stderr


# ---------------------------------------------------------------------------- a real Prometheus


PROMETHEUS = shutil.which("prometheus")


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus (Debian package prometheus) is not installed")
def test_a_real_prometheus_scrapes_the_counts_of_sends_and_pushes(metrics_daemon, backend, tmp_path):
    d = metrics_daemon
    d.wait_state("open")
    web_port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: chatlink\n    scrape_interval: 1s\n    scrape_timeout: 1s\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{d.metrics_port}']\n")
    log = open(tmp_path / "prometheus.log", "wb")
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{web_port}"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{web_port}"

        def query(expr: str):
            with urllib.request.urlopen(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}), timeout=5) as r:
                result = json.load(r)["data"]["result"]
            return [float(sample["value"][1]) for sample in result]

        def equals(expr: str, expected: float):
            try:
                return query(expr) == [expected]
            except OSError:
                return False

        wait_until(lambda: equals('up{job="chatlink"}', 1), 30, interval=0.5, message="Prometheus scraping chatlinkd")
        sends, pushes = 4, 3
        send_many(d, sends)
        for i in range(pushes):
            backend.push("ops", f"pushed-{i}")
        wait_until(lambda: d.status()["confirmed"] >= sends, 10, message="the sends confirmed")
        # The backend echoes each send (stored too) and the pushes are stored: all inbound.
        wait_until(lambda: d.status()["received"] >= sends + pushes, 10, message="the pushes stored")
        stored = d.status()["received"]
        for expr, expected in [
            ('chatlink_sends_queued_total{job="chatlink"}', sends),
            ('chatlink_sends_confirmed_total{job="chatlink"}', sends),
            ('chatlink_messages_stored_total{job="chatlink"}', stored),
            ('chatlink_connection_state{job="chatlink",state="open"}', 1),
            ('chatlink_connects_total{job="chatlink"}', 1),
        ]:
            wait_until(lambda: equals(expr, expected), 10, interval=0.5, message=f"{expr} == {expected}")
        # OpenMetrics metadata reached Prometheus too: the unit and help of a histogram.
        with urllib.request.urlopen(f"{base}/api/v1/metadata?metric=chatlink_ping_rtt_seconds", timeout=5) as r:
            metadata = json.load(r)["data"]["chatlink_ping_rtt_seconds"][0]
        assert metadata["type"] == "histogram" and metadata["unit"] == "seconds", metadata
    finally:
        proc.kill()
        proc.wait(timeout=10)
        log.close()
