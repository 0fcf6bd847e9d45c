"""Fixtures for chatlinkd's integration tests: a Python backend, a daemon subprocess, and a
Varlink client.

The binaries come from $CHATLINK_BIN (default: `swift build --show-bin-path` in the repo).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal as _signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import varlink

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO / "Tests" / "Fixtures"))
from backend import Backend  # noqa: E402


def _bin_dir() -> Path:
    env = os.environ.get("CHATLINK_BIN")
    if env:
        return Path(env)
    out = subprocess.run(
        ["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        raise RuntimeError(f"swift build --show-bin-path failed: {out.stderr}")
    return Path(out.stdout.strip())


BIN = _bin_dir()
CHATLINKD = BIN / "chatlinkd"


# ---------------------------------------------------------------------------- helpers


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.05, message: str = ""):
    """Polls `predicate` until it returns something truthy; returns that, or fails the test."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - keep polling, report the last one
            last_exc = e
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_exc!r})" if last_exc else ""
            pytest.fail(f"timed out after {timeout} s waiting for {message or predicate}{detail}")
        time.sleep(interval)


def ctl(socket_path: str, interface: str = "io.chatlink.Daemon", timeout: float = 10):
    """A Python varlink client handle for `interface` on the daemon's socket (one connection).

    Use as a context manager; calls raise varlink.VarlinkError for error replies.
    """
    client = varlink.Client.new_with_address("unix:" + socket_path)
    opener = client._socket_fn

    def open_with_timeout():
        s = opener()
        s.settimeout(timeout)
        return s

    client._socket_fn = open_with_timeout
    return client.open(interface, namespaced=False)


def raw_call(socket_path: str, method: str, parameters: dict | None = None, more: bool = False, timeout: float = 10):
    """One Varlink call over a fresh socket, without the varlink package: returns the list of
    replies (parsed JSON objects) up to the first without "continues"."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(socket_path)
    try:
        msg = {"method": method}
        if parameters is not None:
            msg["parameters"] = parameters
        if more:
            msg["more"] = True
        s.sendall(json.dumps(msg).encode() + b"\0")
        replies = []
        buf = b""
        while True:
            while b"\0" not in buf:
                data = s.recv(65536)
                if not data:
                    return replies
                buf += data
            one, _, buf = buf.partition(b"\0")
            reply = json.loads(one)
            replies.append(reply)
            if not reply.get("continues"):
                return replies
    finally:
        s.close()


def read_store(store_dir: str | Path) -> tuple[list[dict], list[str]]:
    """Every record of messages.jsonl and its rotated files, oldest file first; and every line
    that did not parse (torn or corrupt lines, which must never exist)."""
    store_dir = Path(store_dir)
    files = []
    for p in store_dir.glob("messages.jsonl*"):
        suffix = p.name[len("messages.jsonl"):]
        if suffix == "":
            files.append((0, p))
        elif suffix.startswith(".") and suffix[1:].isdigit():
            files.append((int(suffix[1:]), p))
    files.sort(key=lambda x: -x[0])  # .N (oldest) … .1, then the live file
    records, bad = [], []
    for _, p in files:
        data = p.read_bytes()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            bad.append(f"{p.name}: last line has no newline: {lines[-1][:200]!r}")
            lines.pop()
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                bad.append(f"{p.name}: {line[:200]!r}")
    return records, bad


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# ---------------------------------------------------------------------------- the daemon


DEFAULTS = {
    "Backend": {
        "Rooms": "7 ops",
        "Sender": "it-bot",
        # PingIntervalSec < PongTimeoutSec: see test_keepalive.py for why equal or smaller
        # timeouts are avoided in the tests that are not about keepalive.
        "PingIntervalSec": "1",
        "PongTimeoutSec": "2",
        "ConnectTimeoutSec": "2",
        "ReconnectMinSec": "0.2",
        "ReconnectMaxSec": "1",
    },
    "Store": {"Sync": "batch", "SyncIntervalMSec": "20"},
    "Daemon": {"LogLevel": "info"},
}


class Daemon:
    """chatlinkd as a subprocess with its own config, store, token and control socket."""

    def __init__(self, workdir: Path, backend_url: str, overrides: dict | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        # A Unix socket path must stay under 108 bytes; pytest's tmp paths can be longer.
        self.sockdir = Path(tempfile.mkdtemp(prefix="clit-", dir="/tmp"))
        self.socket_path = str(self.sockdir / "control.sock")
        self.store_dir = self.workdir / "state"
        self.config_path = self.workdir / "chatlinkd.conf"
        self.token = "tok-" + secrets.token_hex(16)
        self.token_file = self.workdir / "token"
        self.token_file.write_text(self.token + "\n")
        os.chmod(self.token_file, 0o600)
        self.backend_url = backend_url
        self.sections: dict[str, dict[str, str]] = {}
        self.configure(overrides or {})
        self.proc: subprocess.Popen | None = None
        self.log: list[tuple[float, str]] = []  # (monotonic time, line) over every run
        self.log_path = self.workdir / "chatlinkd.stderr"
        self._log_lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self.runs = 0
        # Arguments before --config, e.g. ["--instance", "prod"].
        self.args: list[str] = []

    # -- config

    def configure(self, overrides: dict, write: bool = True) -> None:
        sections = {k: dict(v) for k, v in DEFAULTS.items()}
        sections["Backend"]["URL"] = self.backend_url
        sections["Backend"]["TokenFile"] = str(self.token_file)
        sections.setdefault("Store", {})["Directory"] = str(self.store_dir)
        sections["Control"] = {"Socket": self.socket_path}
        for section, keys in overrides.items():
            for key, value in keys.items():
                if value is None:
                    sections.setdefault(section, {}).pop(key, None)
                else:
                    sections.setdefault(section, {})[key] = str(value)
        self.sections = sections
        if write:
            self.write_config()

    def write_config(self, text: str | None = None) -> None:
        if text is None:
            parts = []
            for section, keys in self.sections.items():
                parts.append(f"[{section}]")
                parts.extend(f"{k}={v}" for k, v in keys.items())
                parts.append("")
            text = "\n".join(parts)
        tmp = self.config_path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.config_path)

    # -- process

    def start(self, wait: bool = True, timeout: float = 15) -> "Daemon":
        assert self.proc is None or self.proc.poll() is not None, "already running"
        env = {k: v for k, v in os.environ.items()
               if k not in ("JOURNAL_STREAM", "NOTIFY_SOCKET", "CREDENTIALS_DIRECTORY", "LISTEN_FDS",
                            "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID")}
        self.runs += 1
        self._mark(f"=== start #{self.runs}")
        self.proc = subprocess.Popen(
            [str(CHATLINKD), *self.args, "--config", str(self.config_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=self.workdir,
        )
        self._reader = threading.Thread(target=self._read_stderr, args=(self.proc,), daemon=True)
        self._reader.start()
        if wait:
            self.wait_ready(timeout)
        return self

    def _mark(self, text: str) -> None:
        with self._log_lock:
            self.log.append((time.monotonic(), text))
            with open(self.log_path, "a") as f:
                f.write(f"{time.monotonic():.3f} {text}\n")

    def _read_stderr(self, proc: subprocess.Popen) -> None:
        with open(self.log_path, "a") as f:
            for raw in proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                t = time.monotonic()
                with self._log_lock:
                    self.log.append((t, line))
                    f.write(f"{t:.3f} {line}\n")
                    f.flush()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout: float = 15) -> None:
        """Waits until the control socket answers GetStatus."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                pytest.fail(f"chatlinkd exited with {self.proc.returncode} while starting:\n{self.log_text()}")
            try:
                raw_call(self.socket_path, "io.chatlink.Daemon.GetStatus", {}, timeout=2)
                return
            except (OSError, ValueError):
                time.sleep(0.05)
        pytest.fail(f"chatlinkd's control socket did not answer within {timeout} s:\n{self.log_text()}")

    def send_signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, sig: int = _signal.SIGTERM, timeout: float = 10) -> int | None:
        """Sends `sig` and waits for the exit; returns the exit code (negative: killed by a
        signal), or None if it did not exit in time (it is then killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            rc = None
        if self._reader:
            self._reader.join(5)
        self._mark(f"=== exit rc={rc}")
        return rc

    def kill(self) -> None:
        self.stop(_signal.SIGKILL)

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self._reader:
            self._reader.join(2)
        shutil.rmtree(self.sockdir, ignore_errors=True)

    # -- observation

    def log_text(self) -> str:
        with self._log_lock:
            return "\n".join(line for _, line in self.log)

    def log_lines(self, since: float = 0) -> list[tuple[float, str]]:
        with self._log_lock:
            return [(t, line) for t, line in self.log if t >= since]

    def wait_log(self, needle: str, since: float = 0, timeout: float = 10) -> float:
        """Waits for a stderr line containing `needle` logged at or after `since`; returns its time."""
        def find():
            for t, line in self.log_lines(since):
                if needle in line:
                    return t
            return None
        return wait_until(find, timeout, message=f"stderr line containing {needle!r}")

    def ctl(self, interface: str = "io.chatlink.Daemon", timeout: float = 10):
        return ctl(self.socket_path, interface, timeout)

    def call(self, method: str, parameters: dict | None = None, timeout: float = 10) -> dict:
        """One raw Varlink call; returns the single reply (errors included, not raised)."""
        replies = raw_call(self.socket_path, method, parameters if parameters is not None else {}, timeout=timeout)
        assert replies, f"no reply to {method}"
        return replies[0]

    def status(self, timeout: float = 10) -> dict:
        reply = self.call("io.chatlink.Daemon.GetStatus", timeout=timeout)
        assert "error" not in reply, reply
        return reply["parameters"]["status"]

    def wait_state(self, state: str = "open", timeout: float = 10, min_connects: int = 0) -> dict:
        def check():
            s = self.status(timeout=3)
            return s if s["state"] == state and s["connects"] >= min_connects else None
        return wait_until(check, timeout, message=f"daemon state {state!r} (connects >= {min_connects})")

    def send(self, text: str, room=None, timeout: float = 10) -> dict:
        """Send over the control socket; returns the reply parameters (id, state, count)."""
        params: dict[str, Any] = {"text": text}
        if room is not None:
            params["room"] = str(room)
        reply = self.call("io.chatlink.Daemon.Send", params, timeout=timeout)
        assert "error" not in reply, reply
        return reply["parameters"]

    def records(self) -> list[dict]:
        """Every stored record. While the daemon runs, a read can catch a write or a rotation
        half done; such a read is retried, and only lines that stay bad fail the test."""
        for _ in range(40):
            records, bad = read_store(self.store_dir)
            if not bad or not self.running():
                break
            time.sleep(0.05)
        assert not bad, f"torn or corrupt store lines: {bad[:5]}"
        return records


class Sender(threading.Thread):
    """Sends messages over one control connection until stopped or the daemon dies; keeps
    the acknowledged ones."""

    def __init__(self, socket_path: str, prefix: str, suffix: str = ""):
        super().__init__(daemon=True)
        self.socket_path, self.prefix, self.suffix = socket_path, prefix, suffix
        self.acked: list[dict] = []
        self.stop = threading.Event()

    def run(self):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect(self.socket_path)
            buf = b""
            i = 0
            while not self.stop.is_set():
                room = ("7", "ops")[i % 2]
                text = f"{self.prefix}-{i}{self.suffix}"
                call = {"method": "io.chatlink.Daemon.Send", "parameters": {"room": room, "text": text}}
                s.sendall(json.dumps(call).encode() + b"\0")
                while b"\0" not in buf:
                    data = s.recv(65536)
                    if not data:
                        return
                    buf += data
                one, _, buf = buf.partition(b"\0")
                reply = json.loads(one)
                assert "error" not in reply, reply
                self.acked.append({**reply["parameters"], "room": room, "text": text})
                i += 1
                self.stop.wait(0.002)
        except (OSError, ValueError):
            return  # the daemon was killed


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture
def backend():
    b = Backend().start()
    yield b
    b.stop()


@pytest.fixture
def make_daemon(tmp_path, backend):
    """make_daemon(overrides=None, start=True, backend=None) -> Daemon; all killed at teardown."""
    made: list[Daemon] = []

    def make(overrides: dict | None = None, start: bool = True, url: str | None = None, name: str = "d") -> Daemon:
        d = Daemon(tmp_path / f"{name}{len(made)}", url or backend.url, overrides)
        made.append(d)
        if start:
            d.start()
        return d

    yield make
    finish_daemons(made)


@pytest.fixture
def daemon(make_daemon):
    return make_daemon()


@pytest.fixture
def lazy_store(tmp_path):
    """lazy_store(daemon) -> LazyMount: moves a daemon that has not started yet onto a store on
    the lazy file system of Tests/powerloss (only what is fsynced survives a cut; "hold" makes
    fsyncs wait until "release"). Released and unmounted at teardown, whatever happens."""
    sys.path.insert(0, str(REPO / "Tests" / "powerloss"))
    from lazymount import LazyMount

    mounts: list = []
    daemons: list = []

    def put(d: "Daemon"):
        daemons.append(d)
        n = len(mounts)
        (tmp_path / f"lazy{n}-disk").mkdir()
        mount = LazyMount(tmp_path / f"lazy{n}-disk", tmp_path / f"lazy{n}-mnt", tmp_path / f"lazy{n}.sock")
        mounts.append(mount)
        mount.start()
        d.store_dir = tmp_path / f"lazy{n}-mnt" / "state"
        d.sections["Store"]["Directory"] = str(d.store_dir)
        d.write_config()
        return mount

    yield put
    for d in daemons:
        d.cleanup()  # no process may hold the mount when it goes
    for mount in mounts:
        try:
            mount.command("release")
        except (OSError, RuntimeError):
            pass
        mount.stop()


class Subscription:
    """A Subscribe stream read by the Python varlink package in a background thread."""

    def __init__(self, daemon: Daemon, room: str | None = None):
        self.events: list[dict] = []
        self.error: BaseException | None = None
        self.ended = threading.Event()
        self._lock = threading.Lock()
        self._conn = daemon.ctl(timeout=None)
        kwargs = {} if room is None else {"room": room}
        self._thread = threading.Thread(target=self._run, args=(kwargs,), daemon=True)
        self._thread.start()

    def _run(self, kwargs):
        try:
            for reply in self._conn.Subscribe(_more=True, **kwargs):
                with self._lock:
                    self.events.append(reply["event"])
        except BaseException as e:  # noqa: BLE001 - the stream ends with the socket
            self.error = e
        finally:
            self.ended.set()

    def snapshot(self) -> list[dict]:
        with self._lock:
            return list(self.events)

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = 10, message: str = "") -> dict:
        def find():
            for e in self.snapshot():
                if predicate(e):
                    return e
            return None
        return wait_until(find, timeout, message=message or "a matching Subscribe event")

    def close(self):
        try:
            self._conn.close()
        except OSError:
            pass
        self._thread.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def send_many(daemon: Daemon, n: int, rooms=("7", "ops"), prefix: str = "m") -> list[dict]:
    """Sends n messages over one control connection, alternating rooms; returns the
    acknowledgements (id, state, count) with the room and text added, in ack order."""
    acked = []
    with daemon.ctl() as c:
        for i in range(n):
            room = rooms[i % len(rooms)]
            text = f"{prefix}-{i}"
            receipt = c.Send(room=room, text=text)
            assert receipt["state"] == "queued", receipt
            acked.append({**receipt, "room": room, "text": text})
    return acked


def delivery_problems(backend, acked: list[dict]) -> list[str]:
    """What is wrong with the delivery of `acked` at the backend (empty: all delivered, in
    order per room). Duplicates are allowed (at least once), reordering is not."""
    problems = []
    sends = backend.sends()
    seen = {d.get("client_id") for d in sends}
    missing = [a["id"] for a in acked if a["id"] not in seen]
    if missing:
        problems.append(f"{len(missing)} of {len(acked)} acknowledged messages never reached the backend: {missing[:5]}")
    for room in sorted({a["room"] for a in acked}):
        want = [a["id"] for a in acked if a["room"] == room]
        wanted = set(want)
        first = []
        done = set()
        for d in sends:
            cid = d.get("client_id")
            if cid in wanted and cid not in done:
                done.add(cid)
                first.append(cid)
        if not missing and first != want:
            problems.append(f"room {room}: first deliveries out of order")
    by_id = {a["id"]: a for a in acked}
    for d in sends:
        a = by_id.get(d.get("client_id"))
        if a and (str(d.get("room_id")) != a["room"] or d.get("message") != a["text"]):
            problems.append(f"message {a['id']} arrived altered: {d}")
    # On each connection, each room's messages arrive in outbox order.
    for c in backend.connections():
        for room in sorted({a["room"] for a in acked}):
            counts = [d.get("count") for d in c.sends() if str(d.get("room_id")) == room]
            if counts != sorted(counts):
                problems.append(f"connection #{c.id} room {room}: counts out of order {counts[:20]}")
    return problems


def wait_delivered(backend, acked: list[dict], timeout: float = 20) -> None:
    """Waits until every acknowledged message reached the backend, in order per room."""
    deadline = time.monotonic() + timeout
    while True:
        problems = delivery_problems(backend, acked)
        if not problems:
            return
        if time.monotonic() >= deadline:
            pytest.fail(f"after {timeout} s: " + "; ".join(problems))
        time.sleep(0.1)


def quiet_store(daemon: Daemon, timeout: float = 15) -> tuple[list[dict], list[str]]:
    """Reads the store once the daemon has nothing left to write (outbox empty, every record
    durable) and nothing changed while reading, so no rotation renames files under the
    reader."""
    deadline = time.monotonic() + timeout
    while True:
        before = daemon.status()
        if before["outbox"] == 0 and before["durable_seq"] == before["last_seq"]:
            result = read_store(daemon.store_dir)
            after = daemon.status()
            if after["last_seq"] == before["last_seq"]:
                return result
        if time.monotonic() >= deadline:
            pytest.fail(f"the store did not settle within {timeout} s: {before}")
        time.sleep(0.05)


def finish_daemons(made: list) -> None:
    """Stops and removes the daemons a test made, then prints each one's log: pytest shows
    captured output when the test failed."""
    for d in made:
        d.cleanup()
    for d in made:
        if d.log_path.exists():
            print(f"--- {d.log_path}")
            print(d.log_path.read_text()[-20000:])
