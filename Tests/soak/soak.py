"""`make soak` (issue 35): the release chatlinkd under a realistic mixed load for SOAK_MINUTES
(default 60), sampled every 10 s, with the leak verdict of Tests/soak/fit.py. See
Tests/soak/run.sh for how it is started and bench/README.md ("Soak") for the figures.

The load, all at once for the whole run:

- inbound: a Python backend (Tests/Fixtures/backend.py in history mode, envelope protocol
  with catch-up: IDField=msg_id, SinceField=since) publishes SOAK_RATE (1,000) messages a
  second round-robin over SOAK_ROOMS (20) rooms, whether or not the daemon is connected;
- sends: SOAK_SENDS (50) a second over one control connection (Varlink Send), over the rooms;
- history queries: `chatlinkctl --json history` every 2 s, a room's last 100, or every fifth
  a room's last 1,000 since a seq;
- follow clients: `chatlinkctl --json follow --room R` started every 5-15 s, each living
  10-90 s (interrupted with SIGINT), at most 6 at a time;
- a metrics scrape every 5 s (HTTP GET /metrics, [Metrics] Listen=), and `chatlinkctl
  metrics` every minute;
- a reconnect every 2 minutes, in turn `chatlinkctl reconnect`, the backend aborting its TCP
  connections, and the backend closing with 1012;
- store rotation by size (MaxFileSize=SOAK_ROTATE, default 64M: every 3-4 minutes at 1,000
  msg/s);
- a reload (SIGHUP, the configuration rewritten unchanged) every 10 minutes.

Samples (/proc: VmRSS, RssAnon, fds, threads, utime+stime) every SOAK_SAMPLE_SECONDS (10) go
to samples.jsonl in the run directory. Open fds and threads are compared between two quiet
samples, taken with no client but the sender connected: one after the warm-up (a tenth of
the run, 30 s to 5 min) and one at the end.

Checks besides the leak verdict: the same daemon process throughout; every message published
is stored exactly once (read from the store as it is written, across rotations; counted per
room against what the backend published); every send acknowledged reaches the backend and
the outbox ends empty; the achieved inbound and send rates are at least 95 % of the targets;
every history query, follow client, scrape, reconnect and reload worked; the store rotated.
Exits 1 on any failure, 2 when it cannot start.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "Tests" / "integration"))
sys.path.insert(0, str(REPO / "Tests" / "Fixtures"))

import fit  # noqa: E402
import procstat  # noqa: E402
from backend import Backend, Publisher  # noqa: E402
from conftest import CHATLINKD, Daemon  # noqa: E402

MINUTES = float(os.environ.get("SOAK_MINUTES", "60"))
RATE = float(os.environ.get("SOAK_RATE", "1000"))
ROOMS = int(os.environ.get("SOAK_ROOMS", "20"))
SENDS = float(os.environ.get("SOAK_SENDS", "50"))
ROTATE = os.environ.get("SOAK_ROTATE", "64M")
SAMPLE_S = float(os.environ.get("SOAK_SAMPLE_SECONDS", "10"))
RUN_DIR = Path(os.environ.get("SOAK_DIR", f"/tmp/chatlink-soak-{time.strftime('%Y%m%d-%H%M%S')}"))
CHATLINKCTL = Path(os.environ.get("CHATLINKCTL", str(CHATLINKD.parent / "chatlinkctl")))
RECONNECT_S = float(os.environ.get("SOAK_RECONNECT_SECONDS", "120"))
RELOAD_S = float(os.environ.get("SOAK_RELOAD_SECONDS", "600"))
SCRAPE_S = 5.0
HISTORY_S = 2.0
MIN_RATE = 0.95  # of the target, achieved
PAD = "x" * 150  # a message of about 160 characters: "in<k> xxx…"
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[soak {time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------------------- the store


class StoreTailer(threading.Thread):
    """Reads messages.jsonl as the daemon writes it, across rotations: the file stays open,
    so a rotated (renamed, later deleted) file is still read to its end before the new live
    file. Marks every inbound message "in<k>" seen (k: the Publisher's counter), so the run
    can say which were stored once, twice or never, per room, however many files rotated away."""

    def __init__(self, store_dir: Path):
        super().__init__(daemon=True, name="tailer")
        self.path = Path(store_dir) / "messages.jsonl"
        self.seen = bytearray()  # seen[k]: how many times in<k> was stored (saturating at 255)
        self.per_room: dict[str, int] = {}
        self.records = 0
        self.bad: list[str] = []
        self.rotations = 0
        self.last_seq = 0
        self.seq_problems = 0
        self.stop_event = threading.Event()
        self.lock = threading.Lock()

    def stored(self) -> int:
        with self.lock:
            return sum(self.per_room.values())

    def run(self):
        while not self.path.exists() and not self.stop_event.is_set():
            time.sleep(0.1)
        f = open(self.path, "rb")
        buf = b""
        while True:
            chunk = f.read(1 << 20)
            if chunk:
                buf = self._lines(buf + chunk)
                continue
            try:
                moved = os.stat(self.path).st_ino != os.fstat(f.fileno()).st_ino
            except FileNotFoundError:
                moved = False  # between the rename and the new file
            if moved:
                rest = f.read()  # whatever was written before the rename
                buf = self._lines(buf + rest)
                if buf:
                    self._bad(f"a rotated file ends in a partial line: {buf[:100]!r}")
                    buf = b""
                f.close()
                f = open(self.path, "rb")
                self.rotations += 1
                continue
            if self.stop_event.is_set():
                break
            time.sleep(0.05)
        f.close()

    def _bad(self, what: str) -> None:
        if len(self.bad) < 20:
            self.bad.append(what)

    def _lines(self, data: bytes) -> bytes:
        *lines, rest = data.split(b"\n")
        with self.lock:
            for line in lines:
                try:
                    r = json.loads(line)
                    seq = r["seq"]
                except (ValueError, KeyError, TypeError):
                    self._bad(f"unparsable line {line[:100]!r}")
                    continue
                if seq != self.last_seq + 1 and self.last_seq:
                    self.seq_problems += 1
                self.last_seq = seq
                self.records += 1
                d = r.get("data", {}).get("data", {}) if isinstance(r.get("data"), dict) else {}
                msg = d.get("message") if isinstance(d, dict) else None
                if not isinstance(msg, str) or not msg.startswith("in"):
                    continue
                try:
                    k = int(msg[2:msg.index(" ")])
                except ValueError:
                    continue
                if k >= len(self.seen):
                    self.seen.extend(bytes(max(k + 1 - len(self.seen), 1 << 16)))
                if self.seen[k] < 255:
                    self.seen[k] += 1
                room = str(d.get("room_id"))
                self.per_room[room] = self.per_room.get(room, 0) + 1
        return rest

    def stop(self):
        self.stop_event.set()
        self.join(30)


# ---------------------------------------------------------------------------- sends


class PacedSender(threading.Thread):
    """`rate` Varlink Sends a second over one control connection, on a fixed schedule, round
    robin over the rooms; keeps every acknowledged client id."""

    def __init__(self, socket_path: str, rooms: list[str], rate: float):
        super().__init__(daemon=True, name="sender")
        self.socket_path, self.rooms, self.rate = socket_path, rooms, rate
        self.acked: list[str] = []
        self.errors: dict[str, int] = {}
        self.stop_event = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        i = 0
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            try:
                s = socket.socket(socket.AF_UNIX)
                s.settimeout(10)
                s.connect(self.socket_path)
            except OSError as e:
                self._error(f"connect: {e}")
                self.stop_event.wait(1)
                continue
            buf = b""
            try:
                while not self.stop_event.is_set():
                    room = self.rooms[i % len(self.rooms)]
                    call = {"method": "io.chatlink.Daemon.Send",
                            "parameters": {"room": room, "text": f"out-{i} {PAD[:60]}"}}
                    s.sendall(json.dumps(call).encode() + b"\0")
                    i += 1
                    while b"\0" not in buf:
                        data = s.recv(65536)
                        if not data:
                            raise OSError("the daemon closed the control connection")
                        buf += data
                    one, _, buf = buf.partition(b"\0")
                    reply = json.loads(one)
                    if "error" in reply:
                        self._error(reply["error"])
                    else:
                        with self.lock:
                            self.acked.append(reply["parameters"]["id"])
                    next_t += 1.0 / self.rate
                    delay = next_t - time.monotonic()
                    if delay > 0:
                        self.stop_event.wait(delay)
                    elif delay < -1:
                        next_t = time.monotonic()  # more than a second behind: do not burst
            except (OSError, ValueError) as e:
                self._error(f"connection: {e}")
            finally:
                s.close()

    def _error(self, what: str) -> None:
        with self.lock:
            self.errors[what] = self.errors.get(what, 0) + 1

    def count(self) -> int:
        with self.lock:
            return len(self.acked)

    def stop(self):
        self.stop_event.set()
        self.join(15)


# ---------------------------------------------------------------------------- clients


def _default_sigint() -> None:
    """A job started in the background (nohup make soak &) inherits SIGINT ignored, and an
    ignored signal stays ignored across exec: give follow the terminal's Ctrl-C back."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Follower:
    """`chatlinkctl --json follow --room R` as a subprocess; counts its lines."""

    def __init__(self, room: str, lifetime: float, socket_path: str):
        self.room, self.until = room, time.monotonic() + lifetime
        self.lines = 0
        self.messages = 0
        self.proc = subprocess.Popen([str(CHATLINKCTL), "--socket", socket_path, "--json", "follow", "--room", room],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     preexec_fn=_default_sigint)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines += 1
            if b'"message"' in line[:40]:
                self.messages += 1

    def stop(self) -> tuple[int | None, str]:
        """SIGINT, as a person ends it; returns (exit code, stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            return None, "did not exit within 10 s of SIGINT"
        self.reader.join(5)
        return self.proc.returncode, self.proc.stderr.read().decode(errors="replace")[-300:]


class Churn(threading.Thread):
    """History queries, follow clients, scrapes, reconnects and reloads on their schedules."""

    def __init__(self, d: Daemon, backend: Backend, rooms: list[str], metrics_url: str):
        super().__init__(daemon=True, name="churn")
        self.d, self.backend, self.rooms, self.metrics_url = d, backend, rooms, metrics_url
        self.rng = random.Random(int(os.environ.get("SOAK_SEED", "35")))
        self.stop_event = threading.Event()
        self.paused = threading.Event()
        self.idle = threading.Event()  # set while paused and nothing is running
        self.followers: list[Follower] = []
        self.counts = {k: 0 for k in ("history", "follow", "scrape", "ctl-metrics", "reconnect", "reload")}
        self.failures: list[str] = []
        self.follow_messages = 0
        self.reconnect_kinds: list[str] = []

    def fail(self, what: str) -> None:
        log(f"FAIL {what}")
        if len(self.failures) < 50:
            self.failures.append(what)

    def ctl(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([str(CHATLINKCTL), "--socket", self.d.socket_path, *args],
                              capture_output=True, timeout=timeout)

    def pause(self) -> None:
        """Stops every follow client and waits until nothing is running."""
        self.idle.clear()
        self.paused.set()
        self.idle.wait(60)

    def resume(self) -> None:
        self.paused.clear()

    def run(self):
        now = time.monotonic()
        due = {"history": now + 1, "follow": now + 2, "scrape": now + 3, "ctl-metrics": now + 30,
               "reconnect": now + RECONNECT_S, "reload": now + RELOAD_S}
        k = 0
        while not self.stop_event.is_set():
            if self.paused.is_set():
                self.end_followers(all_of_them=True)
                self.idle.set()
                self.stop_event.wait(0.2)
                continue
            now = time.monotonic()
            self.end_followers()
            for what, t in sorted(due.items(), key=lambda x: x[1]):
                if t > now or self.paused.is_set() or self.stop_event.is_set():
                    continue
                try:
                    getattr(self, "do_" + what.replace("-", "_"))(k)
                except Exception as e:  # noqa: BLE001 - a harness error is a failure too
                    self.fail(f"{what}: {e!r}")
                self.counts[what] += 1
                k += 1
                step = {"history": HISTORY_S, "follow": self.rng.uniform(5, 15), "scrape": SCRAPE_S,
                        "ctl-metrics": 60.0, "reconnect": RECONNECT_S, "reload": RELOAD_S}[what]
                due[what] = max(t + step, now)
            self.stop_event.wait(0.2)
        self.end_followers(all_of_them=True)

    def end_followers(self, all_of_them: bool = False) -> None:
        now = time.monotonic()
        for f in [f for f in self.followers if all_of_them or f.until <= now]:
            self.followers.remove(f)
            rc, err = f.stop()
            self.follow_messages += f.messages
            if rc not in (0, 130, -2) or f.messages == 0:
                self.fail(f"follow --room {f.room}: exit {rc}, {f.lines} lines, {f.messages} messages: {err.strip()}")

    def do_history(self, k: int) -> None:
        room = self.rng.choice(self.rooms)
        if k % 5 == 0:
            last = self.d.status(timeout=10)["last_seq"]
            args = ["--json", "history", "--room", room, "--since", str(max(0, last - 50000)), "--limit", "1000"]
        else:
            args = ["--json", "history", "--room", room, "--limit", "100"]
        r = self.ctl(*args)
        lines = r.stdout.count(b"\n")
        if r.returncode != 0 or lines == 0:
            self.fail(f"history {' '.join(args)}: exit {r.returncode}, {lines} lines: {r.stderr[-200:]!r}")

    def do_follow(self, k: int) -> None:
        if len(self.followers) >= 6:
            return
        self.followers.append(Follower(self.rng.choice(self.rooms), self.rng.uniform(10, 90), self.d.socket_path))

    def do_scrape(self, k: int) -> None:
        with urllib.request.urlopen(self.metrics_url, timeout=10) as r:
            body = r.read()
            if r.status != 200 or b"chatlink" not in body:
                self.fail(f"scrape: HTTP {r.status}, {len(body)} bytes")

    def do_ctl_metrics(self, k: int) -> None:
        r = self.ctl("metrics")
        if r.returncode != 0 or b"chatlink" not in r.stdout:
            self.fail(f"chatlinkctl metrics: exit {r.returncode}: {r.stderr[-200:]!r}")

    def do_reconnect(self, k: int) -> None:
        kind = ["chatlinkctl reconnect", "backend drop", "backend close 1012"][self.counts["reconnect"] % 3]
        self.reconnect_kinds.append(kind)
        before = self.d.status()["connects"]
        if kind == "chatlinkctl reconnect":
            r = self.ctl("reconnect")
            if r.returncode != 0:
                self.fail(f"chatlinkctl reconnect: exit {r.returncode}: {r.stderr[-200:]!r}")
        elif kind == "backend drop":
            self.backend.drop_all()
        else:
            self.backend.close_all(1012, "soak")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            st = self.d.status()
            if st["state"] == "open" and st["connects"] > before:
                return
            time.sleep(0.1)
        self.fail(f"{kind}: not open again within 30 s")

    def do_reload(self, k: int) -> None:
        since = time.monotonic()
        self.d.write_config()
        self.d.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            lines = [line for _, line in self.d.log_lines(since)]
            if any("reload failed" in line for line in lines):
                self.fail(f"reload: {[x for x in lines if 'reload failed' in x][0]}")
                return
            if any("configuration reloaded" in line for line in lines):
                return
            time.sleep(0.1)
        self.fail("reload: no \"configuration reloaded\" within 10 s")

    def stop(self) -> None:
        self.stop_event.set()
        self.join(60)


# ---------------------------------------------------------------------------- sampling


class Sampler(threading.Thread):
    def __init__(self, pid: int, path: Path, interval: float, counters):
        super().__init__(daemon=True, name="sampler")
        self.pid, self.path, self.interval, self.counters = pid, path, interval, counters
        self.samples: list[dict] = []
        self.stop_event = threading.Event()

    def take(self, label: str | None = None) -> dict:
        s = {"t": round(time.monotonic() - T0, 3), **procstat.sample(self.pid), **self.counters()}
        if label:
            s["label"] = label
        with open(self.path, "a") as f:
            f.write(json.dumps(s) + "\n")
        return s

    def run(self):
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            try:
                s = self.take()
            except OSError:
                return
            self.samples.append(s)
            if len(self.samples) % max(1, int(60 / self.interval)) == 0:
                log(f"RSS {s['rss_kib']} KiB, anon {s['anon_kib']} KiB, {s['fds']} fds, {s['threads']} threads, "
                    f"cpu {s['cpu_s']:.0f} s, stored {s['stored']} of {s['published']}, {s['sent']} sends")
            next_t += self.interval
            self.stop_event.wait(max(0.0, next_t - time.monotonic()))

    def stop(self):
        self.stop_event.set()
        self.join(10)


# ---------------------------------------------------------------------------- the run


def main() -> int:
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    if not CHATLINKCTL.exists():
        print(f"soak: no chatlinkctl at {CHATLINKCTL}", file=sys.stderr)
        return 2
    seconds = MINUTES * 60
    warm = min(300.0, max(30.0, seconds / 10))
    rooms = [str(100 + i) for i in range(ROOMS)]
    backend = Backend(history=max(5000, int(RATE / ROOMS * 120))).start()
    port = free_port()
    d = Daemon(RUN_DIR / "daemon", backend.url, {
        "Backend": {"Rooms": " ".join(rooms), "Sender": "soak", "PingIntervalSec": "10", "PongTimeoutSec": "10",
                    "ConnectTimeoutSec": "10", "ReconnectMinSec": "0.2", "ReconnectMaxSec": "2"},
        "Envelope": {"IDField": "msg_id", "SinceField": "since"},
        "Store": {"MaxFileSize": ROTATE, "MaxFiles": "4", "SyncIntervalMSec": None},
        "Metrics": {"Listen": f"127.0.0.1:{port}"},
    })
    checks: list[tuple[str, bool, str]] = []

    def check(name: str, ok, detail: str = "") -> None:
        checks.append((name, bool(ok), detail))
        log(f"  {'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")

    log(f"soak: {MINUTES:g} min, {RATE:g} msg/s inbound over {ROOMS} rooms, {SENDS:g} sends/s, samples every "
        f"{SAMPLE_S:g} s, warm-up {warm:.0f} s; daemon {CHATLINKD}, run dir {RUN_DIR}")
    tailer = publisher = sender = churn = sampler = None
    try:
        d.start()
        pid = d.pid
        deadline = time.monotonic() + 30
        while not (d.status()["state"] == "open" and all(backend.members(int(r)) for r in rooms)):
            if time.monotonic() > deadline:
                check("the daemon connects and joins every room", False, str(d.status()))
                return 1
            time.sleep(0.1)
        connects0 = d.status()["connects"]
        tailer = StoreTailer(d.store_dir)
        tailer.start()
        publisher = Publisher(backend, [int(r) for r in rooms], total=10**12, rate=RATE, size=len(PAD), tag="in")
        sender = PacedSender(d.socket_path, rooms, SENDS)
        churn = Churn(d, backend, rooms, f"http://127.0.0.1:{port}/metrics")

        def counters():
            return {"published": publisher.published, "stored": tailer.stored(), "sent": sender.count(),
                    "rotations": tailer.rotations}

        sampler = Sampler(pid, RUN_DIR / "samples.jsonl", SAMPLE_S, counters)
        t_load = time.monotonic()
        publisher.start()
        sender.start()
        churn.start()
        sampler.start()

        def quiet(label: str) -> dict:
            churn.pause()
            time.sleep(3)
            s = sampler.take(label)
            log(f"quiet sample ({label}): {s}")
            return s

        time.sleep(max(0.0, t_load + warm - time.monotonic()))
        start = quiet("start")
        churn.resume()
        while time.monotonic() < t_load + seconds and d.running():
            time.sleep(1)
        end = quiet("end")
        elapsed = time.monotonic() - t_load
        churn.stop()
        publisher.stop()
        sender.stop()
        sampler.stop()
        pushed, sent = publisher.published, sender.count()
        # Everything published reaches the store, everything sent the backend.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and tailer.stored() < pushed:
            time.sleep(0.2)
        want = set(sender.acked)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            delivered = set(backend.delivered_ids())
            if want <= delivered and d.status()["outbox"] == 0:
                break
            time.sleep(0.5)
        time.sleep(1)
        tailer.stop()
        st = d.status()

        # ------------------------------------------------------------ checks
        check("the same daemon ran the whole soak", d.running() and d.pid == pid, f"pid {pid}")
        seen = tailer.seen[:pushed]
        never = seen.count(0)
        twice = sum(1 for c in seen if c > 1)
        beyond = sum(1 for c in tailer.seen[pushed:] if c)
        check("every published message stored exactly once", never == 0 and twice == 0 and beyond == 0,
              f"{pushed} published, {never} never stored, {twice} stored more than once, {beyond} unknown")
        # Room i got the Publisher's messages k with k % ROOMS == i (the backend's own count of
        # a room also holds our sends, which it publishes into the room's history too).
        expected = {r: pushed // ROOMS + (1 if i < pushed % ROOMS else 0) for i, r in enumerate(rooms)}
        per_room_bad = [(r, tailer.per_room.get(r, 0), n) for r, n in expected.items()
                        if tailer.per_room.get(r, 0) != n]
        ids_behind = [r for r, n in expected.items() if len(backend.published(int(r))) < n]
        check("per room: stored = published", not per_room_bad and not ids_behind,
              f"{ROOMS} rooms, {min(expected.values())}-{max(expected.values())} each" if not per_room_bad
              else f"(room, stored, published): {per_room_bad[:5]}")
        check("store whole (every line parses, seq +1 each record) across rotations",
              not tailer.bad and tailer.seq_problems == 0,
              f"{tailer.records} records, {tailer.rotations} rotations" if not tailer.bad and not tailer.seq_problems
              else f"{tailer.seq_problems} seq jumps; {tailer.bad[:3]}")
        in_rate = pushed / elapsed
        check(f"inbound rate reached ({MIN_RATE:.0%} of {RATE:g} msg/s)", in_rate >= MIN_RATE * RATE,
              f"{in_rate:.1f} msg/s ({pushed} in {elapsed:.0f} s)")
        missing = want - set(backend.delivered_ids())
        check("every acknowledged send reached the backend, outbox empty", not missing and st["outbox"] == 0,
              f"{len(want)} sends, {len(missing)} missing, outbox {st['outbox']}, errors {sender.errors}")
        send_rate = sent / elapsed
        check(f"send rate reached ({MIN_RATE:.0%} of {SENDS:g}/s)", send_rate >= MIN_RATE * SENDS and not sender.errors,
              f"{send_rate:.1f}/s ({sent} in {elapsed:.0f} s), errors {sender.errors}")
        check("every history query, follow client, scrape, reconnect and reload worked", not churn.failures,
              f"{churn.counts}, {churn.follow_messages} messages followed" if not churn.failures
              else "; ".join(churn.failures[:5]))
        reconnects = st["connects"] - connects0
        check("one reconnect per reconnect injected", reconnects == churn.counts["reconnect"],
              f"{reconnects} connects, {churn.counts['reconnect']} injected ({', '.join(churn.reconnect_kinds)})")
        want_rot = int(seconds / 600)  # at the default 64M and 1,000 msg/s, every 3-4 minutes
        check("the store rotated", tailer.rotations >= max(1, want_rot), f"{tailer.rotations} rotations")

        # Start, end and peak: from the quiet start sample on; the fit: the run's second half.
        steady = [s for s in sampler.samples if s["t"] >= start["t"]] or sampler.samples
        verdicts = fit.judge(sampler.samples, in_rate, start, end)
        for v in verdicts:
            check(v.name, v.ok, v.detail)
        figures = {k: fit.summary(steady, k, fit_samples=sampler.samples)
                   for k in ("rss_kib", "anon_kib", "fds", "threads")}
        for k in ("fds", "threads"):
            figures[k]["quiet_start"], figures[k]["quiet_end"] = start[k], end[k]
        cpu = fit.cpu_percent(steady)
        result = {
            "minutes": MINUTES, "elapsed_s": round(elapsed, 1), "warm_up_s": warm, "sample_s": SAMPLE_S,
            "inbound": {"target": RATE, "achieved": round(in_rate, 1), "published": pushed,
                        "stored": tailer.stored(), "rooms": ROOMS},
            "sends": {"target": SENDS, "achieved": round(send_rate, 1), "acknowledged": sent},
            "churn": churn.counts, "rotations": tailer.rotations, "reconnects": reconnects,
            "rss_limit_kib_per_h": round(fit.rss_limit_kib_per_h(in_rate), 1),
            "figures": figures, "cpu_percent": round(cpu, 2) if cpu is not None else None,
            "loadavg": os.getloadavg(), "nproc": os.cpu_count(),
            "checks": [{"name": n, "ok": ok, "detail": det} for n, ok, det in checks],
        }
        (RUN_DIR / "summary.json").write_text(json.dumps(result, indent=1) + "\n")
        print_summary(result)
        return 0 if all(ok for _, ok, _ in checks) else 1
    finally:
        for t in (churn, publisher, sender, sampler):
            if t is not None and t.is_alive():
                t.stop()
        if tailer is not None and tailer.is_alive():
            tailer.stop()
        d.cleanup()
        backend.stop()


def print_summary(r: dict) -> None:
    print(f"soak: {r['minutes']:g} min ({r['elapsed_s']:.0f} s of load), inbound {r['inbound']['achieved']} msg/s "
          f"(target {r['inbound']['target']:g}, {r['inbound']['published']} published, {r['inbound']['stored']} "
          f"stored), sends {r['sends']['achieved']}/s (target {r['sends']['target']:g}), {r['rotations']} "
          f"rotations, {r['reconnects']} reconnects, churn {r['churn']}")
    print(f"RSS limit {r['rss_limit_kib_per_h']} KiB/h; CPU {r['cpu_percent']} % of a core; load average "
          f"{r['loadavg'][0]:.2f} on {r['nproc']} cores")
    print(f"{'':10} {'start':>8} {'end':>8} {'peak':>8} {'slope/h':>9} {'s.e.':>7} {'growth':>8} {'noise':>7}")
    for k, f in r["figures"].items():
        print(f"{k:10} {f.get('start', ''):>8} {f.get('end', ''):>8} {f.get('peak', ''):>8} "
              f"{f.get('slope_per_h', ''):>9} {f.get('se_per_h', ''):>7} {f.get('growth', ''):>8} "
              f"{f.get('noise', ''):>7}")
    for k in ("fds", "threads"):
        print(f"{k}: quiet start {r['figures'][k]['quiet_start']}, quiet end {r['figures'][k]['quiet_end']}")
    for c in r["checks"]:
        print(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['name']}: {c['detail']}")
    print("soak: PASS" if all(c["ok"] for c in r["checks"]) else "soak: FAIL")


if __name__ == "__main__":
    sys.exit(main())
