"""Control-socket abuse: malformed, oversized and invalid requests, unknown methods, wrong
parameter types, hundreds of concurrent clients, and subscribers that never read. Each bad
request gets an error reply or a closed connection, never a crash; the daemon keeps serving
everyone else and keeps receiving from the backend, with bounded memory."""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import raw_call, rss_kib, wait_until

pytestmark = pytest.mark.timeout(90)

POLLER = Path(__file__).with_name("poll_status.py")


class Client:
    """A raw control-socket client: bytes in, NUL-terminated JSON replies out."""

    def __init__(self, path: str, timeout: float = 5):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def reply(self, timeout: float = 5):
        """The next reply as a dict, or None if the daemon closed the connection."""
        self.sock.settimeout(timeout)
        while b"\0" not in self.buf:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                return None
            self.buf += data
        one, _, self.buf = self.buf.partition(b"\0")
        return json.loads(one)

    def call(self, method: str, parameters=None, **flags):
        msg = {"method": method, **flags}
        if parameters is not None:
            msg["parameters"] = parameters
        self.sendall(json.dumps(msg).encode() + b"\0")
        return self.reply()

    def close(self) -> None:
        self.sock.close()


def connect(path: str, timeout: float = 5) -> Client:
    return Client(path, timeout)


def assert_error_or_closed(s: Client, timeout: float = 5):
    """The daemon either answered with a Varlink error, or closed the connection (and then it
    must really be closed: EOF follows)."""
    reply = s.reply(timeout)
    if reply is not None:
        assert "error" in reply and isinstance(reply["error"], str), reply
    return reply


def assert_alive(daemon):
    assert daemon.running(), daemon.log_text()
    t0 = time.monotonic()
    status = daemon.status(timeout=5)
    assert time.monotonic() - t0 < 1.0
    return status


@pytest.mark.parametrize(
    "request_bytes",
    [
        b'{"method": nope}\0',
        b"not json at all\0",
        b"[1, 2, 3]\0",
        b"{}\0",
        b'{"method": 42}\0',
        b'{"method":"io.chatlink.Daemon.GetStatus","parameters":[1]}\0',
        b'{"method":"io.chatlink.Daemon.GetStatus","more":"yes"}\0',
        b'{"method":"io.chatlink.Daemon.GetStatus"\0',
        b"\0",
    ],
    ids=["bad-token", "text", "array", "no-method", "method-number", "params-array", "more-string",
         "truncated", "empty"],
)
def test_malformed_requests_get_an_error_reply_or_a_closed_connection(daemon, request_bytes):
    s = connect(daemon.socket_path)
    s.sendall(request_bytes)
    reply = assert_error_or_closed(s)
    if reply is not None:
        assert reply["error"].startswith("org.varlink.service."), reply
    s.close()
    assert_alive(daemon)


def test_a_request_over_64_kib_without_nul_is_refused_and_the_connection_closed(daemon):
    s = connect(daemon.socket_path)
    payload = b'{"method":"io.chatlink.Daemon.Send","parameters":{"text":"' + b"a" * (70 * 1024)
    try:
        s.sendall(payload)
        s.sendall(b"b" * (1 << 20))  # and keep going
    except (BrokenPipeError, ConnectionResetError):
        pass  # closed while we were still writing: fine
    reply = assert_error_or_closed(s)
    if reply is not None:
        assert s.reply() is None, "the connection must be closed after an oversized request"
    s.close()
    assert_alive(daemon)
    # A request just under the limit is fine.
    s = connect(daemon.socket_path)
    reply = s.call("io.chatlink.Daemon.GetStatus", {"padding": "p" * (60 * 1024)})
    assert reply is not None and ("parameters" in reply or "error" in reply), reply
    s.close()


@pytest.mark.parametrize(
    "request_bytes",
    [
        b'{"method":"io.chatlink.Daemon.Send","parameters":{"room":"7","text":"\xff\xfe bad"}}\0',
        b'{"method":"io.chatlink.Daemon.GetStat\xc3\x28"}\0',
        b'{"method":"io.chatlink.Daemon.GetStatus","parameters":{"x":"\xed\xa0\x80"}}\0',
    ],
    ids=["invalid-byte-in-text", "invalid-sequence-in-method", "surrogate"],
)
def test_invalid_utf8_gets_an_error_reply_or_a_closed_connection(daemon, backend, request_bytes):
    s = connect(daemon.socket_path)
    s.sendall(request_bytes)
    reply = assert_error_or_closed(s)
    s.close()
    assert reply is None or reply["error"].startswith("org.varlink.service."), reply
    assert_alive(daemon)
    # Nothing invalid was queued for the backend.
    assert daemon.status()["outbox"] == 0


def test_unknown_methods_get_method_not_found_and_the_connection_stays_usable(daemon):
    s = connect(daemon.socket_path)
    reply = s.call("io.chatlink.Daemon.Explode", {})
    assert reply["error"] == "org.varlink.service.MethodNotFound", reply
    assert reply["parameters"]["method"] == "io.chatlink.Daemon.Explode"
    reply = s.call("io.example.Other.Method", {})
    assert reply["error"] == "org.varlink.service.InterfaceNotFound", reply
    reply = s.call("io.chatlink.Daemon.GetStatus", {})
    assert "error" not in reply and reply["parameters"]["status"]["state"], reply
    # Pipelined: three requests in one write, three replies in order.
    s.sendall(b"".join(json.dumps(m).encode() + b"\0" for m in [
        {"method": "io.chatlink.Daemon.ListRooms"},
        {"method": "io.chatlink.Daemon.Nope"},
        {"method": "org.varlink.service.GetInfo"},
    ]))
    replies = [s.reply() for _ in range(3)]
    assert replies[0]["parameters"]["rooms"] == ["7", "ops"]
    assert replies[1]["error"] == "org.varlink.service.MethodNotFound"
    assert replies[2]["parameters"]["product"] == "chatlinkd"
    s.close()


def test_replies_to_pipelined_calls_come_in_call_order_when_earlier_calls_finish_later(make_daemon):
    # Varlink has no request ids: a client matches replies to calls by their order. Send is
    # answered once the outbox is fsynced (Sync=always makes that slow), History on the
    # reader thread, Send with "more" only when confirmed; the calls after each must wait.
    daemon = make_daemon({"Store": {"Sync": "always"}, "Backend": {"PingIntervalSec": 1}})
    daemon.wait_state("open")
    s = connect(daemon.socket_path)
    calls = [
        {"method": "io.chatlink.Daemon.Send", "parameters": {"room": "7", "text": "first"}},
        {"method": "io.chatlink.Daemon.ListRooms"},
        {"method": "io.chatlink.Daemon.History", "parameters": {"limit": 1}},
        {"method": "io.chatlink.Daemon.GetStatus", "oneway": True},
        {"method": "io.chatlink.Daemon.GetStatus"},
        {"method": "io.chatlink.Daemon.Send", "parameters": {"room": "7", "text": "watched"}, "more": True},
        {"method": "io.chatlink.Daemon.Nope"},
        {"method": "io.chatlink.Daemon.ListRooms"},
    ]
    s.sendall(b"".join(json.dumps(m).encode() + b"\0" for m in calls))
    replies = []
    while len(replies) < 12:
        reply = s.reply(timeout=20)
        replies.append(reply)
        if reply.get("error") == "org.varlink.service.MethodNotFound":
            replies.append(s.reply(timeout=20))
            break
    s.close()
    kinds = []
    for r in replies:
        p = r.get("parameters", {})
        kinds.append(
            "error" if "error" in r else "rooms" if "rooms" in p else "records" if "records" in p
            else "status" if "status" in p else f"send:{p.get('state')}" if "state" in p else repr(r))
    # The watched send's replies (queued, sent, confirmed) all come before the calls after it.
    watched = kinds[4:-2]
    assert kinds[:4] == ["send:queued", "rooms", "records", "status"], kinds
    assert watched[0] == "send:queued" and watched[-1] == "send:confirmed", kinds
    assert all(k.startswith("send:") for k in watched), kinds
    assert kinds[-2:] == ["error", "rooms"], kinds


INVALID = [
    ("io.chatlink.Daemon.Send", {"room": "7", "text": 5}, "text"),
    ("io.chatlink.Daemon.Send", {"room": "7"}, "text"),
    ("io.chatlink.Daemon.Send", {"room": ["7"], "text": "x"}, "room"),
    ("io.chatlink.Daemon.Send", {"room": "7", "text": "x", "id": 17}, "id"),
    ("io.chatlink.Daemon.Send", {"room": "7", "text": "x", "id": "no spaces allowed"}, "id"),
    ("io.chatlink.Daemon.SendBatch", {"room": "7"}, "texts"),
    ("io.chatlink.Daemon.SendBatch", {"room": "7", "texts": "one"}, "texts"),
    ("io.chatlink.Daemon.SendBatch", {"room": "7", "texts": []}, "texts"),
    # All or none: one bad text refuses the good ones before it too.
    ("io.chatlink.Daemon.SendBatch", {"room": "7", "texts": ["good", 5]}, "texts"),
    ("io.chatlink.Daemon.SendBatch", {"room": "7", "texts": ["good", ""]}, "texts"),
    ("io.chatlink.Daemon.SendBatch", {"room": "7", "texts": ["x"] * 10_001}, "texts"),
    ("io.chatlink.Daemon.SendBatch", {"room": ["7"], "texts": ["x"]}, "room"),
    ("io.chatlink.Daemon.History", {"limit": "ten"}, "limit"),
    ("io.chatlink.Daemon.History", {"limit": 0}, "limit"),
    ("io.chatlink.Daemon.History", {"since_seq": -1}, "since_seq"),
    ("io.chatlink.Daemon.History", {"since_time": "yesterday"}, "since_time"),
    ("io.chatlink.Daemon.Join", {}, "room"),
    ("io.chatlink.Daemon.Join", {"room": {"a": 1}}, "room"),
    ("io.chatlink.Daemon.Subscribe", {"room": True}, None),
    ("org.varlink.service.GetInterfaceDescription", {"interface": 5}, "interface"),
]


def test_wrong_parameter_types_get_invalid_parameter_and_the_connection_stays_usable(daemon):
    s = connect(daemon.socket_path)
    for method, params, name in INVALID:
        more = {"more": True} if method.endswith("Subscribe") else {}
        reply = s.call(method, params, **more)
        assert reply is not None, (method, params)
        assert reply.get("error") in ("org.varlink.service.InvalidParameter",
                                      "io.chatlink.Daemon.InvalidParameter"), (method, params, reply)
        if name is not None:
            assert reply["parameters"].get("parameter") == name, (method, params, reply)
    reply = s.call("io.chatlink.Daemon.GetStatus", {})
    assert "error" not in reply
    assert reply["parameters"]["status"]["outbox"] == 0, "an invalid Send was queued"
    s.close()


def test_500_concurrent_connections_each_get_their_status(daemon):
    n = 500
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 200), hard))
    daemon.wait_state("open")
    socks = []
    try:
        for _ in range(n):
            socks.append(connect(daemon.socket_path).sock)
        # Every connection is open at once; now each asks, then all replies are collected.
        for s in socks:
            s.sendall(b'{"method":"io.chatlink.Daemon.GetStatus"}\0')
        t0 = time.monotonic()
        pending = {s.fileno(): (s, b"") for s in socks}
        replies = {}
        while pending and time.monotonic() - t0 < 20:
            ready, _, _ = select.select([s for s, _ in pending.values()], [], [], 1)
            for s in ready:
                fd = s.fileno()
                data = s.recv(65536)
                sock, buf = pending[fd]
                buf += data
                if not data or buf.endswith(b"\0"):
                    del pending[fd]
                    replies[fd] = buf
                else:
                    pending[fd] = (sock, buf)
        assert not pending, f"{len(pending)} of {n} connections got no reply within 20 s"
        ok = [json.loads(b[:-1]) for b in replies.values() if b.endswith(b"\0")]
        assert len(ok) == n and all(r["parameters"]["status"]["state"] == "open" for r in ok)
        # A 501st client is served at once, while the 500 are still connected.
        assert_alive(daemon)
    finally:
        for s in socks:
            s.close()
    assert_alive(daemon)


def open_silent_subscribers(daemon, count: int) -> list[socket.socket]:
    subs = []
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(daemon.socket_path)
        s.sendall(b'{"method":"io.chatlink.Daemon.Subscribe","more":true}\0')
        subs.append(s)
    return subs


def flood_and_watch(daemon, backend, n: int, poll_seconds: float):
    """Floods room 7 with n messages while another process polls GetStatus; returns the
    poller's report and the largest RSS seen (KiB)."""
    wait_until(lambda: backend.members(7), 5, message="room 7 joined")
    poller = subprocess.Popen([sys.executable, str(POLLER), daemon.socket_path, str(poll_seconds)],
                              stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    start = daemon.status()["received"]
    flood = backend.flood(n, size=200, room=7)
    peak = rss_kib(daemon.pid)
    while poller.poll() is None:
        peak = max(peak, rss_kib(daemon.pid))
        time.sleep(0.05)
    report = json.loads(poller.stdout.read())
    flood.result(60)
    wait_until(lambda: daemon.status()["received"] >= start + n, 30,
               message="the daemon receiving the whole flood")
    return report, peak


def drained_to_eof(sock: socket.socket, limit: int = 64 << 20, timeout: float = 3) -> int | None:
    """Reads what the daemon had queued for a silent client; returns the byte count if the
    stream then ends (the daemon dropped the client), None if it is still connected."""
    sock.settimeout(timeout)
    total = 0
    while total < limit:
        try:
            data = sock.recv(1 << 20)
        except (socket.timeout, TimeoutError):
            return None
        except ConnectionResetError:
            return total
        if not data:
            return total
        total += len(data)
    pytest.fail(f"the daemon queued more than {limit} bytes for one silent subscriber")


def test_a_subscriber_that_never_reads_is_dropped_without_stalling_anything(make_daemon, backend):
    n = 100_000
    daemon = make_daemon({"Backend": {"Compression": "no"}})
    daemon.wait_state("open")
    [silent] = open_silent_subscribers(daemon, 1)
    time.sleep(0.3)
    baseline = rss_kib(daemon.pid)
    start = daemon.status()["received"]
    report, peak = flood_and_watch(daemon, backend, n, poll_seconds=5)

    # Other clients were served while the flood was arriving, not only after it.
    assert not report["failures"], report["failures"][:5]
    during = [s for s in report["samples"] if start < s[2] < start + n]
    assert len(during) >= 3, f"GetStatus was not answered during the flood: {report['samples'][:10]}"
    # Generous, so a debug build on a busy machine passes; a stall for the whole flood does not.
    assert report["max"] < 5.0, f"GetStatus took up to {report['max']:.2f} s during the flood"
    # The backend connection kept going: every message stored, no reconnect.
    status = daemon.wait_state("open")
    assert status["connects"] == 1 and status["last_seq"] >= start + n
    # Memory stayed bounded (the silent client's buffer is capped, then it is dropped).
    assert peak - baseline < 128 * 1024, f"RSS grew from {baseline} KiB to {peak} KiB"
    # The silent subscriber was dropped: after what had been queued for it, its stream ends.
    queued = drained_to_eof(silent)
    assert queued is not None, "the silent subscriber is still connected after the flood"
    assert queued <= 64 << 20
    daemon.wait_log("dropping a control client", timeout=1)
    assert daemon.running()


def test_control_socket_answers_promptly_when_a_compressed_backlog_arrives(make_daemon, backend):
    # Keepalive out of the way: the daemon is stopped for a while on purpose.
    daemon = make_daemon({"Backend": {"Compression": "yes", "PingIntervalSec": 30, "PongTimeoutSec": 60}})
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7), 5, message="room 7 joined")
    # A backlog builds up in the kernel's buffers while the daemon is stopped ...
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        flood = backend.flood(150_000, size=2000, room=7)
        time.sleep(1.5)
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    # ... and the first control request after it resumes must not wait for all of it.
    t0 = time.monotonic()
    reply = raw_call(daemon.socket_path, "io.chatlink.Daemon.GetStatus", {}, timeout=60)
    latency = time.monotonic() - t0
    flood.cancel()
    received = reply[0]["parameters"]["status"]["received"]
    # Uncompressed, one wake-up's budget of such messages is milliseconds of work, so alone on
    # the machine this answers almost at once. The bound leaves room for a debug build on a
    # 2-core machine running other suites; draining the whole backlog first, the bug this
    # guards against, keeps the socket waiting for as long as the backlog lasts.
    assert latency < 2.0, f"GetStatus took {latency:.2f} s; the daemon took in {received} messages first"
