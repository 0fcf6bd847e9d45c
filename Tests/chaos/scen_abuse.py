"""Scenario 5: control-socket abuse, while steady inbound traffic flows and another process
polls GetStatus the whole time.

A. Fuzzed requests: thousands of mutations of valid Varlink calls (bit flips, truncations,
   insertions, random bytes, invalid UTF-8, wrong types, deep nesting, huge numbers, stray
   NULs, pipelined mixes), each on its own connection. Every reply must be a well-formed
   Varlink reply; every connection must end with a reply or a close, never hang (a probe
   follows each silent one); sends the fuzzer happened to get acknowledged must be delivered;
   no fd is leaked.
B. Oversized requests: a request that never ends (16 MiB, no NUL) is cut off near the 64 KiB
   limit and closed; a 1 MiB request with a NUL is refused and nothing is queued; a request
   just under the limit works (a 60 KiB send is delivered intact); 5000 calls pipelined in
   one write all get their replies, in order.
C. Subscribers that never read during an inbound flood: each is dropped once 4 MiB of events
   wait for it; a subscriber that reads gets every message of the flood; the backend
   connection stays up and every message is stored.
D. Hundreds of concurrent clients, each pipelining GetStatus, Send and ListRooms; then more
   clients than the 1024 the daemon serves: the extra ones are refused at once (closed), the
   others are served, and afterwards a new client is served and no fd is left behind.
E. A daemon whose fd limit runs out (RLIMIT_NOFILE 64) while 200 clients queue at the
   socket: it must not spin on accept() (CPU time measured), must keep its backend
   connection, and must serve clients again once the others have gone.
"""

from __future__ import annotations

import json
import os
import random
import resource
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from lib import (
    Backend,
    Pusher,
    Scenario,
    StatusPoller,
    StoreChecker,
    audit_scenario,
    latency_summary,
    log,
    make_daemon,
    q,
    rss_kib,
    send_batch,
    settle,
    wait_all_delivered,
    wait_joined,
    wait_open,
)

LIMIT = 64 * 1024  # ControlServer.requestLimit (README: "A request is at most 64 KiB")
OUTPUT_LIMIT = 4 << 20  # README: "may leave 4 MiB of replies unread; then it is dropped"
MAX_CLIENTS = 1024  # README: "At most 1024 clients are served at once"

BASES = [
    {"method": "io.chatlink.Daemon.GetStatus"},
    {"method": "io.chatlink.Daemon.GetStatus", "parameters": {}},
    {"method": "io.chatlink.Daemon.ListRooms", "parameters": {}},
    {"method": "org.varlink.service.GetInfo"},
    {"method": "org.varlink.service.GetInterfaceDescription", "parameters": {"interface": "io.chatlink.Daemon"}},
    {"method": "io.chatlink.Daemon.History", "parameters": {"room": "7", "limit": 3}},
    {"method": "io.chatlink.Daemon.History", "parameters": {"since_seq": 1, "limit": 2}},
    {"method": "io.chatlink.Daemon.Send", "parameters": {"room": "7", "text": "fuzz send"}},
    {"method": "io.chatlink.Daemon.Send", "parameters": {"room": "ops", "text": "fuzz ünïcødé ✓", "id": "fz1"}},
    {"method": "io.chatlink.Daemon.Ping", "parameters": {}},
    {"method": "io.chatlink.Daemon.Subscribe", "parameters": {"room": "7"}, "more": True},
    {"method": "io.chatlink.Daemon.GetStatus", "oneway": True},
]
# Never fuzzed into existence on purpose: methods that change the daemon's connection or rooms
# (Reconnect, Leave, Join), so the inbound stream this scenario checks keeps flowing.
FORBIDDEN = (b"Reconnect", b"Leave", b"Join")
PROBE = b'{"method":"org.varlink.service.GetInfo"}\0'


def raise_nofile(n: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, n)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, want), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def proc_limit(pid: int, name: str = "Max open files") -> str:
    try:
        for line in open(f"/proc/{pid}/limits"):
            if line.startswith(name):
                return line[len(name):].split()[0]
    except OSError:
        pass
    return "?"


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------- fuzzing


def random_json(rng: random.Random, depth: int = 0):
    k = rng.randrange(12 if depth < 4 else 7)
    if k == 0:
        return None
    if k == 1:
        return rng.choice([True, False])
    if k == 2:
        return rng.choice([0, -1, 2**63, -(2**63) - 1, 10**30, 1.5e308, -0.0, 7])
    if k == 3:
        return rng.choice(["", "7", "ops", "x" * rng.randrange(1, 3000), "\u0000", "\ud7ff\ue000", "é✓🙂",
                           "a\nb", "\\", '"', "\u2028"])
    if k == 4:
        return rng.randrange(-5, 100)
    if k == 5:
        return "r" + str(rng.randrange(1000))
    if k == 6:
        return rng.random()
    if k in (7, 8):
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["room", "text", "id", "limit", "since_seq", "since_time", "interface", "x", ""]):
            random_json(rng, depth + 1) for _ in range(rng.randrange(4))}


def mutate(rng: random.Random) -> tuple[str, bytes]:
    """One fuzz case: (kind, bytes to write)."""
    base = dict(rng.choice(BASES))
    enc = json.dumps(base, ensure_ascii=rng.random() < 0.5).encode()
    kind = rng.choice(["bitflip", "bitflip", "truncate", "insert", "delete", "random", "utf8", "types",
                       "types", "deep", "keys", "nul", "pipeline", "whitespace", "number", "escape"])
    if kind == "bitflip":
        b = bytearray(enc)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        out = bytes(b) + b"\0"
    elif kind == "truncate":
        out = enc[:rng.randrange(len(enc))] + (b"\0" if rng.random() < 0.5 else b"")
    elif kind == "insert":
        b = bytearray(enc)
        for _ in range(rng.randint(1, 5)):
            b[rng.randrange(len(b) + 1):0] = bytes([rng.choice(b'{}[]",:\\0 \x00\xff\xc3tfn')])
        out = bytes(b) + b"\0"
    elif kind == "delete":
        b = bytearray(enc)
        for _ in range(rng.randint(1, 5)):
            if len(b) > 1:
                del b[rng.randrange(len(b))]
        out = bytes(b) + b"\0"
    elif kind == "random":
        out = os.urandom(rng.randrange(1, 3000)) + (b"\0" if rng.random() < 0.7 else b"")
    elif kind == "utf8":
        bad = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xc0\xaf",
                          b"\xf0\x9f\x98"])
        i = rng.randrange(len(enc))
        out = enc[:i] + bad + enc[i:] + b"\0"
    elif kind == "types":
        if "parameters" in base and isinstance(base["parameters"], dict) and base["parameters"] and rng.random() < 0.6:
            p = dict(base["parameters"])
            p[rng.choice(list(p))] = random_json(rng)
            base["parameters"] = p
        else:
            field = rng.choice(["method", "parameters", "more", "oneway", "upgrade"])
            base[field] = random_json(rng)
        out = json.dumps(base).encode() + b"\0"
    elif kind == "deep":
        n = rng.choice([63, 64, 65, 100, 1000, 20000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        nested = opener * n + "1" + closer * n
        out = (b'{"method":"io.chatlink.Daemon.GetStatus","parameters":{"x":' + nested.encode() + b"}}\0")
    elif kind == "keys":
        out = (b'{"method":"io.chatlink.Daemon.GetStatus","method":"io.chatlink.Daemon.Nope",'
               b'"parameters":{},"parameters":[],"' + b"k" * rng.randrange(1, 5000) + b'":1}\0')
    elif kind == "nul":
        i = rng.randrange(1, len(enc))
        out = enc[:i] + b"\0" + enc[i:] + b"\0"
    elif kind == "pipeline":
        parts = []
        for _ in range(rng.randint(2, 8)):
            if rng.random() < 0.5:
                parts.append(json.dumps(rng.choice(BASES[:7])).encode() + b"\0")
            else:
                parts.append(mutate(rng)[1])
        out = b"".join(parts)
    elif kind == "whitespace":
        out = rng.choice([b"\xef\xbb\xbf", b" \t\r\n", b"\n"]) + enc + rng.choice([b"", b" ", b"\n"]) + b"\0"
    elif kind == "number":
        out = json.dumps({"method": "io.chatlink.Daemon.History",
                          "parameters": {rng.choice(["limit", "since_seq"]):
                                         rng.choice([1e400, -1e400, 2**64, 2**70, 1.0000001, "1", -0.0])}}
                         ).replace("Infinity", "1e999").encode() + b"\0"
    else:  # escape
        esc = rng.choice([r"\u0000", r"\ud800", r"\udc00\ud800", r"\uZZZZ", r"\x41", "\\", r"\u00e9"])
        out = ('{"method":"io.chatlink.Daemon.Send","parameters":{"room":"7","text":"e' + esc + '"}}').encode() + b"\0"
    for word in FORBIDDEN:
        if word in out:
            return mutate(rng)
    return kind, out


def well_formed(reply) -> bool:
    if not isinstance(reply, dict):
        return False
    if "error" in reply:
        return isinstance(reply["error"], str) and isinstance(reply.get("parameters", {}), dict)
    return isinstance(reply.get("parameters"), dict)


def read_replies(s: socket.socket, buf: bytes, until: float, want: int | None = None):
    """Reads until EOF, `until`, or `want` replies; returns (replies, raw bad, closed, buf)."""
    replies, bad = [], []
    closed = False
    while True:
        while b"\0" in buf:
            one, _, buf = buf.partition(b"\0")
            try:
                replies.append(json.loads(one.decode("utf-8")))
            except (ValueError, UnicodeDecodeError):
                bad.append(one[:200])
        if want is not None and len(replies) >= want:
            break
        left = until - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            data = s.recv(65536)
        except (socket.timeout, TimeoutError):
            break
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            closed = True
            break
        buf += data
    return replies, bad, closed, buf


def run_case(path: str, payload: bytes) -> dict:
    res = {"replies": [], "bad": [], "closed": False, "probe": None, "stream": False}
    s = socket.socket(socket.AF_UNIX)
    try:
        s.settimeout(5)
        s.connect(path)
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            res["closed"] = True
            return res
        replies, bad, closed, buf = read_replies(s, b"", time.monotonic() + 0.4)
        res["replies"], res["bad"], res["closed"] = replies, bad, closed
        if any(r.get("continues") for r in replies if isinstance(r, dict)):
            res["stream"] = True
            return res
        if not closed:
            # Still open: whatever was pending is ended by a NUL, then a simple call must get
            # an answer (or the connection closes). Silence here would be a hang.
            try:
                s.sendall(b"\0" + PROBE)
                r2, b2, c2, _ = read_replies(s, buf, time.monotonic() + 5, want=2)
            except (BrokenPipeError, ConnectionResetError):
                r2, b2, c2 = [], [], True
            res["bad"] += b2
            res["probe_replies"] = r2
            res["probe"] = "answered" if r2 else ("closed" if c2 else "hang")
            res["replies"] += r2
    except OSError as e:
        res["error"] = repr(e)
    finally:
        s.close()
    return res


def part_fuzz(sc: Scenario, d, backend, rng: random.Random) -> None:
    n = q(4000, 1200)
    log(f"abuse: {n} fuzzed requests")
    sc.fault("fuzzed requests", f"{n} fuzzed requests (mutations of valid calls), one connection each", n)
    fd0 = d.fd_count()
    cases = [mutate(rng) for _ in range(n)]
    poller = StatusPoller(d.socket_path, 3600, 0.05)
    t0 = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda c: run_case(d.socket_path, c[1]), cases))
    took = time.monotonic() - t0
    report = poller.stop()
    kinds: dict[str, dict[str, int]] = {}
    outcomes = {"error reply": 0, "success reply": 0, "closed": 0, "silent, then the probe answered": 0,
                "stream": 0}
    hangs, bad, errors, acked = [], [], [], []
    for (kind, payload), r in zip(cases, results):
        k = kinds.setdefault(kind, {"n": 0, "closed": 0})
        k["n"] += 1
        if r.get("error"):
            errors.append(f"{kind}: {r['error']}")
        if r["bad"] or not all(well_formed(x) for x in r["replies"]):
            bad.append((kind, payload[:120], r["bad"][:1] or [x for x in r["replies"] if not well_formed(x)][:1]))
        if r["probe"] == "hang":
            hangs.append((kind, payload[:160]))
        if r["stream"]:
            outcomes["stream"] += 1
        elif r["closed"] or r["probe"] == "closed":
            outcomes["closed"] += 1
            k["closed"] += 1
        elif r["probe"] == "answered" and not [x for x in r["replies"] if x not in r.get("probe_replies", [])]:
            outcomes["silent, then the probe answered"] += 1
        elif any("error" in x for x in r["replies"] if isinstance(x, dict)):
            outcomes["error reply"] += 1
        else:
            outcomes["success reply"] += 1
        for x in r["replies"]:
            p = x.get("parameters") if isinstance(x, dict) else None
            if isinstance(p, dict) and p.get("state") == "queued" and isinstance(p.get("id"), str):
                acked.append({"id": p["id"], "t": time.monotonic()})
    sc.ack(acked)
    sc.figure("A: fuzz", f"{n} cases in {took:.1f} s ({n / took:.0f}/s, 16 at a time); outcomes {outcomes}")
    sc.figure("A: fuzz cases by kind (closed by the daemon / total)",
              ", ".join(f"{k} {v['closed']}/{v['n']}" for k, v in sorted(kinds.items())))
    sc.figure("A: GetStatus from another process during the fuzz", latency_summary(report))
    sc.check("A: the daemon survives every fuzzed request", d.running(), d.log_text()[-1500:] if not d.running() else
             f"pid {d.pid} still running")
    sc.check("A: every reply is a well-formed Varlink reply (JSON object with parameters or an error name)",
             not bad, bad[:3])
    sc.check("A: no connection hangs: each ends with a reply or a close (probe after silent ones)",
             not hangs and not errors, (hangs[:3], errors[:3]))
    sc.check("A: fuzzed requests are really refused: most malformed cases get an error reply or a close",
             outcomes["closed"] + outcomes["error reply"] >= n * 0.5, outcomes)
    sc.check("A: the control socket kept answering others (GetStatus max < 1 s, no failure)",
             report.get("max") is not None and report["max"] < 1.0 and not report.get("failures"),
             latency_summary(report))
    fd1 = settle(lambda: (f := d.fd_count()) <= fd0 + 1 and f, 5) or d.fd_count()
    sc.check("A: no fd leaked (the daemon's open fds are back to where they were)", fd1 <= fd0 + 1,
             f"{fd0} before, {fd1} after")
    if acked:
        sc.check("A: sends the fuzzer got acknowledged are delivered", wait_all_delivered(backend, acked, 15) is not None,
                 f"{len(acked)} sends")


# ---------------------------------------------------------------------------- oversized


def part_oversized(sc: Scenario, d, backend) -> None:
    log("abuse: oversized requests")
    st0 = d.try_status() or {}
    # 1. A request that never ends.
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(d.socket_path)
    written = 0
    t0 = time.monotonic()
    chunk = b"a" * 65536
    reset = False
    try:
        s.sendall(b'{"method":"io.chatlink.Daemon.Send","parameters":{"room":"7","text":"')
        while written < 16 << 20:
            s.sendall(chunk)
            written += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        reset = True
    except (socket.timeout, TimeoutError):
        pass
    replies, bad, closed, _ = read_replies(s, b"", time.monotonic() + 5)
    took = time.monotonic() - t0
    s.close()
    sc.fault("oversized request", "a request that never ends (no NUL, up to 16 MiB)")
    sc.figure("B: endless request", f"the daemon closed after {written // 1024} KiB had been written "
                                    f"({took:.2f} s), reply {replies[:1]}")
    sc.check("B: an endless request is cut off and the connection closed (long before 16 MiB)",
             (reset or closed) and written < 4 << 20, f"{written // 1024} KiB written, reset {reset}, closed {closed}")
    sc.check("B: ... with an error reply or a bare close", all(well_formed(r) and "error" in r for r in replies),
             replies[:1])
    # 2. A 1 MiB request with its NUL.
    big = json.dumps({"method": "io.chatlink.Daemon.Send", "parameters": {"room": "7", "text": "B" * (1 << 20)}})
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(d.socket_path)
    try:
        s.sendall(big.encode() + b"\0")
    except (BrokenPipeError, ConnectionResetError):
        pass
    replies, _, closed, _ = read_replies(s, b"", time.monotonic() + 5)
    s.close()
    sc.fault("oversized request", "a 1 MiB Send with its NUL")
    st = d.try_status() or {}
    sc.check("B: a 1 MiB request is refused (error or close) and nothing is queued",
             (closed or any("error" in r for r in replies)) and not any("id" in r.get("parameters", {}) for r in replies)
             and st.get("outbox") == st0.get("outbox", 0), f"replies {replies[:1]}, closed {closed}, outbox {st.get('outbox')}")
    # 3. Just under the limit.
    text = "U" * (60 * 1024)
    acked = []
    reply = d.call("io.chatlink.Daemon.Send", {"room": "7", "text": text})
    ok = "error" not in reply
    if ok:
        a = {**reply["parameters"], "room": "7", "text": text, "t": time.monotonic()}
        acked.append(a)
    sc.ack(acked)
    delivered = wait_all_delivered(backend, acked, 15)
    intact = [x for x in backend.sends() if x.get("client_id") == (reply.get("parameters") or {}).get("id")]
    sc.check("B: a 60 KiB send (just under the limit) is acknowledged and delivered intact",
             ok and delivered is not None and intact and intact[0].get("message") == text,
             f"{len(text)} bytes" if ok else reply)
    # 4. 5000 calls pipelined in one write.
    n = 5000
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(d.socket_path)
    methods = ["io.chatlink.Daemon.GetStatus", "io.chatlink.Daemon.ListRooms", "org.varlink.service.GetInfo"]
    payload = b"".join(json.dumps({"method": methods[i % 3]}).encode() + b"\0" for i in range(n))
    got: list = []

    def reader():
        r, _, _, _ = read_replies(s, b"", time.monotonic() + 30, want=n)
        got.extend(r)
    th = threading.Thread(target=reader, daemon=True)
    t0 = time.monotonic()
    th.start()
    s.sendall(payload)
    th.join(35)
    took = time.monotonic() - t0
    s.close()
    in_order = all(("status" if i % 3 == 0 else "rooms" if i % 3 == 1 else "interfaces") in (r.get("parameters") or {})
                   for i, r in enumerate(got))
    sc.fault("pipelined flood", f"{n} calls pipelined in one {len(payload) // 1024} KiB write")
    sc.figure("B: pipelined calls", f"{len(got)}/{n} replies in {took:.2f} s ({len(got) / max(took, 1e-3):.0f}/s)")
    sc.check(f"B: {n} pipelined calls all answered, in order", len(got) == n and in_order,
             f"{len(got)} replies, in order {in_order}")


# ---------------------------------------------------------------------------- silent subscribers


def drained_to_eof(sock: socket.socket, limit: int = 64 << 20, timeout: float = 3) -> int | None:
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
    return None


class Reader(threading.Thread):
    """A Subscribe client that reads everything and counts the flood's message events."""

    def __init__(self, path: str, needle: bytes):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.sock.sendall(b'{"method":"io.chatlink.Daemon.Subscribe","parameters":{"room":"7"},"more":true}\0')
        self.needle = needle
        self.count = 0
        self.bytes = 0
        self.ended = False
        self.stop_event = threading.Event()

    def run(self):
        tail = b""
        self.sock.settimeout(0.5)
        while not self.stop_event.is_set():
            try:
                data = self.sock.recv(1 << 20)
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                data = b""
            if not data:
                self.ended = True
                return
            self.bytes += len(data)
            buf = tail + data
            self.count += buf.count(self.needle)
            tail = buf[-(len(self.needle) - 1):]

    def stop(self):
        self.stop_event.set()
        self.join(5)
        self.sock.close()


def part_subscribers(sc: Scenario, d, backend) -> None:
    k = q(20, 10)
    n = q(100_000, 40_000)
    log(f"abuse: {k} subscribers that never read, during a {n}-message flood")
    st = wait_open(d, 10) or {}
    connects = st.get("connects")
    wait_joined(backend, 7)
    silent = []
    for _ in range(k):
        s = socket.socket(socket.AF_UNIX)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(d.socket_path)
        s.sendall(b'{"method":"io.chatlink.Daemon.Subscribe","more":true}\0')
        silent.append(s)
    reader = Reader(d.socket_path, b'"flood-abuse ')
    reader.start()
    time.sleep(0.5)
    t_mark = time.monotonic()
    checker = StoreChecker(d.store_dir)
    rss0 = rss_kib(d.pid)
    dropped0 = d.log_count("dropping a control client")
    poller = StatusPoller(d.socket_path, 3600, 0.05)
    sc.fault("silent subscribers", f"{k} subscribers that never read (4 KiB receive buffers) during a flood of "
                                   f"{n} × 200 B messages", k)
    flood = backend.flood(n, size=200, room=7, tag="-abuse")
    peak = rss0
    while not flood.done():
        peak = max(peak, rss_kib(d.pid))
        time.sleep(0.05)
    sent = flood.result(120)
    r = settle(lambda: (r := checker.read("flood-abuse ")) and len(r["records"]) >= sent and r, 60) \
        or checker.read("flood-abuse ")
    settle(lambda: reader.count >= sent, 20)
    peak = max(peak, rss_kib(d.pid))
    report = poller.stop()
    queued = [drained_to_eof(s) for s in silent]
    for s in silent:
        s.close()
    reader.stop()
    dropped = d.log_count("dropping a control client") - dropped0
    st = d.try_status() or {}
    sc.in_pushed += sent
    sc.in_stored += len(r["records"])
    if st.get("connects") == connects:
        sc.in_lost += max(0, sent - len(r["records"]))
    sc.figure("C: flood", f"{sent} messages; RSS {rss0} KiB before, {peak} KiB peak; "
                          f"the reading subscriber got {reader.count} ({reader.bytes // 1024} KiB)")
    sc.figure("C: bytes the daemon had queued for each silent subscriber when it dropped it",
              f"min {min(x or 0 for x in queued) // 1024} KiB, max {max(x or 0 for x in queued) // 1024} KiB")
    sc.figure("C: GetStatus from another process during the flood", latency_summary(report))
    sc.check("C: every silent subscriber was dropped (its stream ends)", all(x is not None for x in queued),
             f"{sum(x is not None for x in queued)} of {k}")
    sc.check("C: each drop is logged ('dropping a control client')", dropped >= k, f"{dropped} log lines for {k}")
    sc.check("C: the subscriber that reads got every message of the flood", reader.count == sent and not reader.ended,
             f"{reader.count} of {sent}")
    sc.check("C: the backend connection stayed up", st.get("connects") == connects and st.get("state") == "open",
             f"connects {connects} → {st.get('connects')}")
    sc.check("C: every flood message stored", len(r["records"]) >= sent, f"{len(r['records'])} of {sent}")
    # 5 s as in Tests/integration/test_control_abuse.py: a debug build encoding every event for
    # 11 subscribers on a 2-core machine shared with the flooding backend; a loop stalled for
    # the whole flood (tens of seconds) fails.
    sc.check("C: the control socket kept answering during the flood (GetStatus max < 5 s, no failure)",
             report.get("max") is not None and report["max"] < 5.0 and not report.get("failures"),
             latency_summary(report))
    bound = k * (OUTPUT_LIMIT >> 10) + 96 * 1024
    sc.check(f"C: memory bounded (peak growth ≤ {k} × 4 MiB + 96 MiB)", peak - rss0 <= bound,
             f"+{peak - rss0} KiB, bound {bound} KiB")


# ---------------------------------------------------------------------------- many clients


def gather(socks: list[socket.socket], want: int, timeout: float) -> dict[int, list]:
    """Reads from every socket until each has `want` replies or closed; fd -> replies (None
    for a socket closed before any reply)."""
    pending = {s.fileno(): [s, b"", []] for s in socks}
    done: dict[int, list] = {}
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()  # epoll: more than 1024 fds
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(0.5):
            s = key.fileobj
            fd = s.fileno()
            if fd not in pending:
                continue
            entry = pending[fd]
            try:
                data = s.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                data = b""
            if not data:
                done[fd] = entry[2] if entry[2] else None
                del pending[fd]
                sel.unregister(s)
                continue
            entry[1] += data
            while b"\0" in entry[1]:
                one, _, entry[1] = entry[1].partition(b"\0")
                entry[2].append(json.loads(one))
            if len(entry[2]) >= want:
                done[fd] = entry[2]
                del pending[fd]
                sel.unregister(s)
    sel.close()
    for fd, entry in pending.items():
        done[fd] = "pending"
    return done


def connect_blocking(path: str) -> socket.socket:
    """Connects, waiting while the listen backlog is full (a timeout would turn that into
    EAGAIN on a Unix socket), then sets a timeout for the replies."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(10)
    return s


def part_clients(sc: Scenario, d, backend) -> None:
    n = q(800, 500)
    log(f"abuse: {n} concurrent clients, then more than {MAX_CLIENTS}")
    fd0 = d.fd_count()
    socks = []
    t0 = time.monotonic()
    for _ in range(n):
        socks.append(connect_blocking(d.socket_path))
    for i, s in enumerate(socks):
        s.sendall(json.dumps({"method": "io.chatlink.Daemon.GetStatus"}).encode() + b"\0"
                  + json.dumps({"method": "io.chatlink.Daemon.Send",
                                "parameters": {"room": "7" if i % 2 else "ops", "text": f"client-{i}"}}).encode() + b"\0"
                  + b'{"method":"io.chatlink.Daemon.ListRooms"}\0')
    res = gather(socks, 3, 30)
    took = time.monotonic() - t0
    ok = 0
    in_order = 0
    acked = []
    for s in socks:
        r = res.get(s.fileno())
        if not isinstance(r, list) or len(r) != 3:
            continue
        params = [x.get("parameters", {}) for x in r]
        status = [p for p in params if "status" in p]
        sends = [p for p in params if p.get("state") == "queued"]
        rooms = [p for p in params if "rooms" in p]
        if len(status) == len(sends) == len(rooms) == 1:
            ok += 1
            acked.append({**sends[0], "t": time.monotonic()})
            if "status" in params[0] and "state" in params[1] and "rooms" in params[2]:
                in_order += 1
    for s in socks:
        s.close()
    sc.ack(acked)
    sc.fault("concurrent clients", f"{n} clients connected at once, each pipelining GetStatus, Send, ListRooms")
    sc.figure("D: concurrent clients", f"{ok}/{n} got all 3 replies within {took:.2f} s of connecting; "
                                       f"{in_order} of them in call order")
    sc.check(f"D: {n} concurrent clients are all served", ok == n, f"{ok} of {n}")
    # Varlink has no request ids: replies to pipelined calls must come in call order, although
    # chatlinkd answers Send only once the outbox is fsynced (ListRooms is answered at once).
    sc.check("D: replies to pipelined calls arrive in call order (GetStatus, Send, ListRooms)",
             ok > 0 and in_order == ok,
             f"{ok - in_order} of {ok} clients got a later call's reply first")
    sc.check("D: their sends are delivered", wait_all_delivered(backend, acked, 20) is not None, f"{len(acked)} sends")

    # More than the daemon serves.
    extra = 60
    total = MAX_CLIENTS + extra
    settle(lambda: d.fd_count() <= fd0 + 1, 10)
    socks = [connect_blocking(d.socket_path) for _ in range(total)]
    sc.fault("concurrent clients", f"{total} clients at once ({extra} more than the {MAX_CLIENTS} served)")
    time.sleep(0.5)
    for s in socks:
        try:
            s.sendall(b'{"method":"io.chatlink.Daemon.GetStatus"}\0')
        except (BrokenPipeError, ConnectionResetError):
            pass
    res = gather(socks, 1, 30)
    served = sum(1 for s in socks if isinstance(res.get(s.fileno()), list))
    refused = sum(1 for s in socks if res.get(s.fileno()) is None)
    hung = sum(1 for s in socks if res.get(s.fileno()) == "pending")
    warned = d.log_count("too many control connections")
    sc.figure("D: over the limit", f"{total} clients: {served} served, {refused} closed without a reply, {hung} neither; "
                                   f"{warned} 'too many control connections' log lines")
    # Other clients (the status poller of earlier parts is gone) may hold a slot or two.
    sc.check(f"D: at most {MAX_CLIENTS} served at once, the rest refused at once (closed), none left hanging",
             MAX_CLIENTS - 4 <= served <= MAX_CLIENTS and refused == total - served and hung == 0,
             f"served {served}, refused {refused}, hanging {hung}")
    sc.check("D: the refusals are logged", warned >= refused > 0 or (refused == 0 and warned == 0), f"{warned} lines")
    for s in socks:
        s.close()
    st = settle(lambda: d.try_status(), 5)
    sc.check("D: afterwards a new client is served", st is not None)
    fd1 = settle(lambda: (f := d.fd_count()) <= fd0 + 1 and f, 10) or d.fd_count()
    sc.check("D: every connection's fd is released", fd1 <= fd0 + 1, f"{fd0} before, {fd1} after")


# ---------------------------------------------------------------------------- fd exhaustion


def part_emfile(sc: Scenario, backend) -> None:
    nofile = 64
    clients = 200
    log(f"abuse: fd limit {nofile} with {clients} clients queued")
    d = make_daemon(sc, "emfile", backend.url, start=False, wrapper=["prlimit", f"--nofile={nofile}:{nofile}", "--"])
    d.start()
    st = wait_open(d, 15)
    if not sc.check("E: a daemon with RLIMIT_NOFILE 64 connects", st is not None, proc_limit(d.pid)):
        return
    wait_joined(backend, 7, timeout=10)
    connects = st["connects"]
    checker = StoreChecker(d.store_dir)
    pusher = Pusher(backend, rate=50, tag="emfile", size=100)
    pusher.start()
    socks = []
    for _ in range(clients):
        s = socket.socket(socket.AF_UNIX)
        s.setblocking(False)
        try:
            s.connect(d.socket_path)
        except BlockingIOError:
            pass  # the listen backlog is full: the connect completes later, or never
        except OSError:
            s.close()
            continue
        socks.append(s)
    sc.fault("fd exhaustion", f"RLIMIT_NOFILE {nofile} and {clients} clients connecting at once")
    time.sleep(1)
    c0 = cpu_seconds(d.pid)
    t0 = time.monotonic()
    time.sleep(3)
    cpu = (cpu_seconds(d.pid) - c0) / (time.monotonic() - t0)
    fds = d.fd_count()
    emfile = d.log_count("Too many open files") + d.log_count("EMFILE")
    sc.figure("E: while out of fds", f"{fds} fds open (limit {proc_limit(d.pid)}), CPU {cpu * 100:.1f} % of a core, "
                                     f"{emfile} log lines naming EMFILE")
    # The listener stays readable while clients wait, so the level-triggered watch would fire
    # again at once: UnixListener gives up a reserve descriptor to accept and close each one
    # (or pauses 100 ms), and the daemon logs it at most once a second.
    sc.check("E: no hot loop on accept() while out of fds (CPU < 30 % of a core)", cpu < 0.30,
             f"{cpu * 100:.1f} % of a core while {clients} clients wait and accept() fails with EMFILE")
    sc.check("E: running out of fds is logged, at most once a second",
             1 <= d.log_count("out of file descriptors") <= 6,
             f"{d.log_count('out of file descriptors')} log lines")
    for s in socks:
        s.close()
    st2 = settle(lambda: d.try_status(timeout=2), 10)
    sc.check("E: once the clients are gone a new client is served", st2 is not None)
    pusher.stop()
    st2 = st2 or {}
    sc.check("E: the backend connection stayed up", st2.get("connects") == connects and st2.get("state") == "open",
             f"connects {connects} → {st2.get('connects')}")
    r = settle(lambda: (r := checker.read("emfile ")) and len(r["records"]) >= pusher.pushed and r, 15) \
        or checker.read("emfile ")
    sc.in_pushed += pusher.pushed
    sc.in_stored += len(r["records"])
    if st2.get("connects") == connects:
        sc.in_lost += max(0, pusher.pushed - len(r["records"]))
    sc.check("E: inbound messages kept being stored", len(r["records"]) >= pusher.pushed,
             f"{len(r['records'])} of {pusher.pushed}")
    acked, _ = send_batch(d, 5, "after-emfile")
    sc.ack(acked)
    sc.check("E: sends afterwards are delivered", wait_all_delivered(backend, acked, 10) is not None)
    d.stop()


# ----------------------------------------------------------------------------


def run(sc: Scenario) -> None:
    limit = raise_nofile(8192)  # the suite's clients, and (inherited) the daemon's own limit
    backend = Backend().start()
    sc.backends.append(backend)
    try:
        _run(sc, backend, limit)
    finally:
        audit_scenario(sc)
        backend.stop()


def _run(sc: Scenario, backend: Backend, limit: int) -> None:
    rng = random.Random(random.random())
    d = make_daemon(sc, "abuse", backend.url, {"Backend": {"Compression": "no"}})
    st = wait_open(d, 15)
    if not sc.check("daemon connects", st is not None):
        return
    wait_joined(backend, 7)
    sc.figure("fd limits", f"suite {limit}, daemon {proc_limit(d.pid)}")
    connects = st["connects"]
    checker = StoreChecker(d.store_dir)
    rss0 = rss_kib(d.pid)
    pusher = Pusher(backend, rate=q(50, 40), tag="steady", size=100)
    pusher.start()
    try:
        part_fuzz(sc, d, backend, rng)
        part_oversized(sc, d, backend)
    finally:
        pusher.stop()
    st = d.try_status() or {}
    stayed = st.get("connects") == connects
    r = settle(lambda: (r := checker.read("steady ")) and len(r["records"]) >= pusher.pushed and r, 15) \
        or checker.read("steady ")
    sc.in_pushed += pusher.pushed
    sc.in_stored += len(r["records"])
    sc.in_strict = True
    if stayed:
        sc.in_lost += max(0, pusher.pushed - len(r["records"]))
    sc.check("A+B: the backend connection stayed up under the abuse", stayed and st.get("state") == "open",
             f"connects {connects} → {st.get('connects')}")
    sc.check("A+B: every steady inbound message was stored meanwhile", len(r["records"]) >= pusher.pushed,
             f"{len(r['records'])} of {pusher.pushed}")
    part_subscribers(sc, d, backend)
    part_clients(sc, d, backend)
    with_rss = rss_kib(d.pid)
    sc.figure("RSS of the abused daemon", f"{rss0} KiB at the start, {with_rss} KiB at the end")
    r = checker.read()
    sc.check("store whole after the abuse (every line parses, seq strictly increasing)", not r["bad"] and not r["problems"],
             "; ".join(r["bad"][:2] + r["problems"]))
    d.stop()
    part_emfile(sc, backend)
