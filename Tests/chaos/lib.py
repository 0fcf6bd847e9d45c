"""Shared pieces of the chaos suite: the integration suite's fixtures (imported, not copied),
results bookkeeping, control-socket senders, store and delivery checks, and the token audit."""

from __future__ import annotations

import grp
import json
import os
import pwd
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
CHAOS = Path(__file__).resolve().parent
INTEGRATION = REPO / "Tests" / "integration"
FIXTURES = REPO / "Tests" / "Fixtures"
sys.path.insert(0, str(INTEGRATION))
sys.path.insert(0, str(FIXTURES))

import pytest  # noqa: E402  (conftest's helpers fail through pytest.fail)

import conftest  # noqa: E402
from backend import Backend  # noqa: E402
from conftest import (  # noqa: E402,F401
    Daemon,
    delivery_problems,
    quiet_store,
    raw_call,
    read_store,
    rss_kib,
    wait_until,
)

Failed = pytest.fail.Exception  # what conftest's helpers raise

QUICK = os.environ.get("CHAOS_QUICK", "0") not in ("", "0", "no")
RUN_DIR = Path(os.environ.get("CHAOS_RUN_DIR", "/tmp/chaos-run"))
SEED = int(os.environ.get("CHAOS_SEED", str(int(time.time()))))
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[chaos {time.monotonic() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def q(full, quick):
    """The full-run value, or the CHAOS_QUICK one."""
    return quick if QUICK else full


# ---------------------------------------------------------------------------- results


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Scenario:
    """One row of the results table, with its checks and figures."""

    name: str
    title: str
    faults: list[str] = field(default_factory=list)  # short labels, for the table
    fault_details: list[str] = field(default_factory=list)  # what exactly, for the report
    checks: list[Check] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)
    times: list[tuple[str, float]] = field(default_factory=list)  # (what, seconds)
    acked: dict[str, dict] = field(default_factory=dict)  # client id -> send info
    deliveries: list[str] = field(default_factory=list)  # client ids as the backend saw them
    in_pushed: int = 0
    in_stored: int = 0
    in_lost: int = 0  # inbound records that must have been kept and were not
    in_strict: bool = False  # whether in_pushed vs in_stored is an exact expectation
    started: float = field(default_factory=time.monotonic)
    duration: float = 0.0
    error: str | None = None
    daemons: list[Daemon] = field(default_factory=list)
    backends: list[Backend] = field(default_factory=list)
    audited: bool = False
    known: list[str] = field(default_factory=list)  # known_issue() entries that did not hold

    # -- recording

    def fault(self, label: str, detail: str | None = None, n: int = 1) -> None:
        self.faults.extend([label] * n)
        if detail is not None or not self.fault_details or self.fault_details[-1] != label:
            self.fault_details.append(detail or label)

    def check(self, name: str, ok: bool, detail: Any = "") -> bool:
        ok = bool(ok)
        self.checks.append(Check(name, ok, str(detail)))
        log(f"  {'ok  ' if ok else 'FAIL'} {name}{(': ' + str(detail)) if detail != '' else ''}")
        return ok

    def known_issue(self, name: str, ok: bool, detail: Any = "") -> None:
        """A check of documented or protocol behaviour that fails because of a daemon bug
        whose fix lies outside this branch: reported in the figures and the report, and in
        `known` (the table's last column), but it does not fail the scenario."""
        if ok:
            self.check(name, True, detail)
            return
        self.known.append(f"{name}: {detail}")
        self.figure(f"KNOWN ISSUE (not fixed here) {name}", detail)

    def figure(self, name: str, value: Any) -> None:
        self.figures.append((name, str(value)))
        log(f"  · {name}: {value}")

    def time(self, what: str, seconds: float) -> None:
        self.times.append((what, seconds))
        log(f"  ⏱ {what}: {seconds:.2f} s")

    def ack(self, receipts: list[dict]) -> None:
        for r in receipts:
            self.acked[r["id"]] = r

    def add_deliveries(self, backend: Backend) -> None:
        self.deliveries.extend(i for i in backend.delivered_ids() if i is not None)

    # -- derived

    @property
    def lost_out(self) -> list[str]:
        seen = set(self.deliveries)
        return [i for i in self.acked if i not in seen]

    @property
    def delivered(self) -> int:
        seen = set(self.deliveries)
        return sum(1 for i in self.acked if i in seen)

    @property
    def duplicates(self) -> int:
        counts: dict[str, int] = {}
        for i in self.deliveries:
            if i in self.acked:
                counts[i] = counts.get(i, 0) + 1
        return sum(c - 1 for c in counts.values() if c > 1)

    @property
    def lost(self) -> int:
        return len(self.lost_out) + self.in_lost

    @property
    def longest(self) -> tuple[str, float] | None:
        return max(self.times, key=lambda t: t[1]) if self.times else None

    @property
    def ok(self) -> bool:
        return self.error is None and self.lost == 0 and all(c.ok for c in self.checks)


def fault_summary(faults: list[str]) -> str:
    counts: dict[str, int] = {}
    for f in faults:
        counts[f] = counts.get(f, 0) + 1
    return ", ".join(f"{k}×{v}" if v > 1 else k for k, v in counts.items())


# ---------------------------------------------------------------------------- daemons

CHAOS_DEFAULTS = {
    "Backend": {
        "PingIntervalSec": "2",
        "PongTimeoutSec": "3",
        "ConnectTimeoutSec": "3",
        "ReconnectMinSec": "0.5",
        "ReconnectMaxSec": "4",
    },
}


def merge(*configs: dict) -> dict:
    out: dict[str, dict] = {}
    for c in configs:
        for section, keys in c.items():
            out.setdefault(section, {}).update(keys)
    return out


class ChaosDaemon(Daemon):
    """conftest's Daemon, optionally started through a wrapper command (a network namespace,
    another user, a private mount namespace): the wrapper must exec chatlinkd in the end, so
    the pid stays the daemon's."""

    def __init__(self, workdir: Path, backend_url: str, overrides: dict | None = None,
                 wrapper: list[str] | None = None, env: dict[str, str] | None = None):
        super().__init__(workdir, backend_url, merge(CHAOS_DEFAULTS, overrides or {}))
        self.wrapper = wrapper
        self.extra_env = env or {}
        self.scenario: Scenario | None = None
        self.extra_logs: list[Path] = []  # further captured output to audit (journal capture)

    def configure(self, overrides: dict, write: bool = True) -> None:
        super().configure(merge(CHAOS_DEFAULTS, overrides), write)

    def start(self, wait: bool = True, timeout: float = 15) -> "ChaosDaemon":
        if not self.wrapper and not self.extra_env:
            return super().start(wait, timeout)
        script = self.workdir / "start-wrapper.sh"
        exports = "".join(f"export {k}={shlex_quote(v)}\n" for k, v in self.extra_env.items())
        cmd = " ".join(shlex_quote(c) for c in (self.wrapper or []))
        script.write_text(f"#!/bin/sh\n{exports}exec {cmd} {shlex_quote(str(BIN_CHATLINKD))} \"$@\"\n")
        os.chmod(script, 0o755)
        old = conftest.CHATLINKD
        conftest.CHATLINKD = script
        try:
            return super().start(wait, timeout)
        finally:
            conftest.CHATLINKD = old

    def try_status(self, timeout: float = 3) -> dict | None:
        try:
            reply = self.call("io.chatlink.Daemon.GetStatus", timeout=timeout)
            return reply.get("parameters", {}).get("status")
        except (OSError, ValueError, AssertionError):
            return None

    def log_count(self, needle: str, since: float = 0) -> int:
        return sum(1 for _, line in self.log_lines(since) if needle in line)

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))


def shlex_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


BIN_CHATLINKD = conftest.CHATLINKD


def make_daemon(sc: Scenario, name: str, url: str, overrides: dict | None = None, start: bool = True,
                **kw) -> ChaosDaemon:
    d = ChaosDaemon(RUN_DIR / sc.name / name, url, overrides, **kw)
    d.scenario = sc
    sc.daemons.append(d)
    if start:
        d.start()
    return d


def settle(predicate: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Like conftest.wait_until, but returns None on timeout instead of failing."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            v = predicate()
            if v:
                return v
        except (Exception, Failed):  # noqa: BLE001
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def wait_open(d: ChaosDaemon, timeout: float = 15, min_connects: int = 0) -> dict | None:
    return settle(lambda: (s := d.try_status()) and s["state"] == "open" and s["connects"] >= min_connects and s,
                  timeout)


def wait_joined(backend: Backend, room=7, after_conn: int = 0, timeout: float = 10):
    """The newest open connection that joined `room` (and is newer than after_conn)."""
    def find():
        members = backend.members(room)
        conns = [c for c in backend.open_connections() if c.id > after_conn and c.id in members]
        return conns[-1] if conns else None
    return settle(find, timeout)


# ---------------------------------------------------------------------------- sending


def send_batch(d: Daemon, n: int, prefix: str, rooms=("7", "ops"), size: int = 0,
               timeout: float = 10) -> tuple[list[dict], list[dict]]:
    """n sends over one control connection; returns (acknowledged receipts, error replies)."""
    acked, errors = [], []
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(d.socket_path)
    buf = b""
    try:
        for i in range(n):
            room = rooms[i % len(rooms)]
            text = f"{prefix}-{i}"
            if size:
                text += " " + random_text(size)
            s.sendall(json.dumps({"method": "io.chatlink.Daemon.Send",
                                  "parameters": {"room": room, "text": text}}).encode() + b"\0")
            while b"\0" not in buf:
                data = s.recv(65536)
                if not data:
                    raise OSError("the daemon closed the control connection")
                buf += data
            one, _, buf = buf.partition(b"\0")
            reply = json.loads(one)
            if "error" in reply:
                errors.append(reply)
            else:
                acked.append({**reply["parameters"], "room": room, "text": text, "t": time.monotonic()})
    finally:
        s.close()
    return acked, errors


def random_text(n: int) -> str:
    import base64

    return base64.b64encode(os.urandom((n * 3) // 4 + 3)).decode()[:n]


class Sender(threading.Thread):
    """Sends through the control socket at a steady pace until stopped; keeps every
    acknowledged send (with its client id) and counts errors by name. With `persistent`, it
    reconnects to the control socket whenever the daemon went away (crash rounds)."""

    def __init__(self, d: Daemon, prefix: str, interval: float = 0.002, persistent: bool = False,
                 rooms=("7", "ops")):
        super().__init__(daemon=True)
        self.d, self.prefix, self.interval, self.persistent, self.rooms = d, prefix, interval, persistent, rooms
        self.acked: list[dict] = []
        self.errors: dict[str, int] = {}
        self.in_flight = 0  # requests written whose reply never came (daemon killed)
        self.stop_event = threading.Event()
        self.i = 0
        self._lock = threading.Lock()

    def snapshot(self) -> list[dict]:
        with self._lock:
            return list(self.acked)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(15)

    def run(self):
        while not self.stop_event.is_set():
            try:
                self._session()
            except (OSError, ValueError):
                pass
            if not self.persistent:
                return
            self.stop_event.wait(0.02)

    def _session(self):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect(self.d.socket_path)
        buf = b""
        try:
            while not self.stop_event.is_set():
                room = self.rooms[self.i % len(self.rooms)]
                text = f"{self.prefix}-{self.i}"
                self.i += 1
                s.sendall(json.dumps({"method": "io.chatlink.Daemon.Send",
                                      "parameters": {"room": room, "text": text}}).encode() + b"\0")
                waiting = True
                try:
                    while b"\0" not in buf:
                        data = s.recv(65536)
                        if not data:
                            raise OSError("closed")
                        buf += data
                    waiting = False
                finally:
                    if waiting:
                        self.in_flight += 1
                one, _, buf = buf.partition(b"\0")
                reply = json.loads(one)
                if "error" in reply:
                    self.errors[reply["error"]] = self.errors.get(reply["error"], 0) + 1
                else:
                    with self._lock:
                        self.acked.append({**reply["parameters"], "room": room, "text": text,
                                           "t": time.monotonic()})
                if self.interval:
                    self.stop_event.wait(self.interval)
        finally:
            s.close()


class Pusher(threading.Thread):
    """Steady inbound traffic: the backend pushes `rate` messages a second to `room`;
    counts what went out to an open member connection."""

    def __init__(self, backend: Backend, rate: float, room=7, tag: str = "steady", size: int = 100):
        super().__init__(daemon=True)
        self.backend, self.rate, self.room, self.tag, self.size = backend, rate, room, tag, size
        self.pushed = 0  # messages handed to an open connection
        self.missed = 0  # messages with no member connection to go to
        self.stop_event = threading.Event()
        self.pad = "p" * size

    def stop(self):
        self.stop_event.set()
        self.join(15)

    def run(self):
        i = 0
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            try:
                n = self.backend.push(self.room, f"{self.tag} {i} {self.pad}", sender="pusher")
            except Exception:  # noqa: BLE001 - the backend loop is busy or stopping
                n = 0
            if n:
                self.pushed += 1
            else:
                self.missed += 1
            i += 1
            next_t += 1.0 / self.rate
            delay = next_t - time.monotonic()
            if delay > 0:
                self.stop_event.wait(delay)
            else:
                next_t = time.monotonic()


def wait_all_delivered(backend_or_list, acked: list[dict], timeout: float) -> float | None:
    """Waits until every acknowledged client id reached the backend(s); returns the time it
    took, or None on timeout."""
    backends = backend_or_list if isinstance(backend_or_list, list) else [backend_or_list]
    want = {a["id"] for a in acked}
    t0 = time.monotonic()

    def done():
        seen = set()
        for b in backends:
            seen.update(b.delivered_ids())
        return want <= seen

    ok = settle(done, timeout, interval=0.05)
    return time.monotonic() - t0 if ok else None


# ---------------------------------------------------------------------------- store checks


class StoreChecker:
    """Reads every store file and checks: every line parses, seq strictly increasing with no
    repeat (and no gap) across all files. Rotated files never change, so each is parsed once
    per `prefix` (cached by inode and size). With `prefix`, the records whose message text
    starts with it are returned too."""

    def __init__(self, store_dir: Path):
        self.store_dir = Path(store_dir)
        self._cache: dict[tuple[int, int, str | None], tuple[list[int], list[str], list[dict]]] = {}

    def read(self, prefix: str | None = None):
        files = []
        for p in self.store_dir.glob("messages.jsonl*"):
            suffix = p.name[len("messages.jsonl"):]
            if suffix == "":
                files.append((0, p))
            elif suffix.startswith(".") and suffix[1:].isdigit():
                files.append((int(suffix[1:]), p))
        files.sort(key=lambda x: -x[0])
        seqs: list[int] = []
        bad: list[str] = []
        kept: list[dict] = []
        for gen, p in files:
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            key = (st.st_ino, st.st_size, prefix)
            if gen != 0 and key in self._cache:
                s, b, k = self._cache[key]
            else:
                s, b, k = self._parse(p, prefix)
                if gen != 0:
                    self._cache[key] = (s, b, k)
            seqs.extend(s)
            bad.extend(b)
            kept.extend(k)
        problems = []
        repeats = len(seqs) - len(set(seqs))
        nonincr = sum(1 for a, b in zip(seqs, seqs[1:]) if b <= a)
        gaps = sum(1 for a, b in zip(seqs, seqs[1:]) if b > a + 1)
        if repeats:
            problems.append(f"{repeats} repeated seq")
        if nonincr:
            problems.append(f"{nonincr} places where seq does not increase")
        if gaps:
            problems.append(f"{gaps} seq gaps")
        return {"seqs": seqs, "bad": bad, "problems": problems, "records": kept,
                "files": len(files), "last": seqs[-1] if seqs else 0}

    @staticmethod
    def _parse(p: Path, prefix: str | None):
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            return [], [], []
        lines = data.split(b"\n")
        bad = []
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            bad.append(f"{p.name}: last line has no newline: {lines[-1][:120]!r}")
            lines.pop()
        seqs, kept = [], []
        for line in lines:
            try:
                r = json.loads(line)
                seqs.append(r["seq"])
                if prefix is not None and message_of(r).startswith(prefix):
                    kept.append(r)
            except (ValueError, KeyError, TypeError):
                bad.append(f"{p.name}: {line[:120]!r}")
        return seqs, bad, kept


class frozen:
    """Stops the daemon (SIGSTOP) while the store is read, so no write or rotation runs under
    the reader; a write syscall in progress completes first (regular files), so what is read
    is exactly what a crash at that instant would leave."""

    def __init__(self, d: Daemon):
        self.pid = d.pid if d.running() else None

    def __enter__(self):
        if self.pid:
            os.kill(self.pid, signal.SIGSTOP)
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                try:
                    state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    break
                if state in ("T", "t", "Z", "X"):
                    break
                time.sleep(0.001)
        return self

    def __exit__(self, *exc):
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


def message_of(r: dict) -> str:
    try:
        return str(r["data"]["data"]["message"])
    except (KeyError, TypeError):
        return ""


def store_file_modes(store_dir: Path) -> list[tuple[str, str, str, str]]:
    """(name, mode, owner, group) of every file in the store directory, room indexes included."""
    out = []
    for p in sorted(Path(store_dir).rglob("*")):
        try:
            st = p.lstat()
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        try:
            owner = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            owner = str(st.st_uid)
        try:
            group = grp.getgrgid(st.st_gid).gr_name
        except KeyError:
            group = str(st.st_gid)
        out.append((p.name, oct(stat.S_IMODE(st.st_mode)), owner, group))
    return out


# ---------------------------------------------------------------------------- token audit


def proc_text(pid: int, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def core_metadata(pid: int) -> dict[str, str]:
    """What systemd-coredump records next to a core (COREDUMP_* fields), read from /proc."""
    meta = {}
    for name in ("cmdline", "environ", "comm", "status", "maps", "limits", "cgroup", "mountinfo",
                 "stat", "sched"):
        meta[f"proc/{name}"] = proc_text(pid, name)
    fds = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                target = "?"
            info = proc_text(pid, f"fdinfo/{fd}")
            fds.append(f"{fd} {target}\n{info}")
    except OSError:
        pass
    meta["open_fds"] = "\n".join(fds)
    for link in ("cwd", "exe", "root"):
        try:
            meta[link] = os.readlink(f"/proc/{pid}/{link}")
        except OSError:
            meta[link] = ""
    return meta


def token_audit(d: ChaosDaemon, extra: dict[str, str] | None = None) -> list[str]:
    """Every place the daemon's token shows up, outside its token file and the daemon's
    memory: stderr (every run), captured journal entries, GetStatus, /proc cmdline and
    environ, `ps` output, core metadata, the store and outbox files. Empty is the pass."""
    token = d.token
    places: dict[str, str] = {"stderr": d.log_text()}
    for p in d.extra_logs:
        try:
            places[p.name] = p.read_text(errors="replace")
        except OSError:
            pass
    if d.running():
        st = d.try_status()
        places["GetStatus"] = json.dumps(st) if st else ""
        pid = d.pid
        for k, v in core_metadata(pid).items():
            places[f"core metadata {k}"] = v
        try:
            places["ps auxeww"] = subprocess.run(["ps", "auxeww"], capture_output=True, text=True,
                                                 timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            pass
    if d.store_dir.exists():
        for p in d.store_dir.rglob("*"):
            if p.is_file() and p.stat().st_size < 256 << 20:
                with open(p, "rb") as f:
                    if token.encode() in f.read():
                        places[f"store/{p.name}"] = token
    for k, v in (extra or {}).items():
        places[k] = v
    return [where for where, text in places.items() if token in text]


def audit_scenario(sc: Scenario) -> None:
    """The token check that ends every scenario, over each of its daemons."""
    if sc.audited:
        return
    sc.audited = True
    leaks = []
    for d in sc.daemons:
        leaks += [f"{d.workdir.name}: {w}" for w in token_audit(d)]
    sc.check("token appears in no log, status, ps, /proc, core metadata or store file",
             not leaks, f"leaked into {leaks}" if leaks else f"{len(sc.daemons)} daemon(s) audited")


def cleanup_daemons(sc: Scenario) -> None:
    for d in sc.daemons:
        try:
            d.cleanup()
        except Exception:  # noqa: BLE001
            pass


# ---------------------------------------------------------------------------- GetStatus latency


class StatusPoller:
    """Tests/chaos/poller.py in its own process for `seconds`, or until stop()."""

    def __init__(self, socket_path: str, seconds: float, interval: float = 0.05):
        self.proc = subprocess.Popen([sys.executable, str(CHAOS / "poller.py"), socket_path, str(seconds),
                                      str(interval)], stdout=subprocess.PIPE, text=True)

    def stop(self) -> dict:
        """Ends the polling now; returns the report."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.result()

    def result(self, timeout: float = 120) -> dict:
        out, _ = self.proc.communicate(timeout=timeout)
        try:
            return json.loads(out)
        except ValueError:
            return {"max": None, "count": 0, "failures": [["?", "no output"]], "samples": []}


def latency_summary(report: dict) -> str:
    lat = sorted(s[1] for s in report.get("samples", []))
    if not lat:
        return "no samples"

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))]
    return (f"{len(lat)} calls, p50 {pct(0.5) * 1000:.1f} ms, p99 {pct(0.99) * 1000:.1f} ms, "
            f"max {lat[-1] * 1000:.1f} ms, {len(report.get('failures', []))} failed")


def connecting_times(d: ChaosDaemon, since: float = 0) -> list[float]:
    """When the daemon started each connection attempt, from its own log."""
    return [t for t, line in d.log_lines(since) if "connection state changed state=connecting" in line]


def retry_in_values(d: ChaosDaemon, since: float = 0) -> list[tuple[float, float, int]]:
    """(time, retry_in, failures) of every 'disconnected' log line since `since`."""
    out = []
    for t, line in d.log_lines(since):
        if " disconnected " in line or line.startswith("<6>info disconnected"):
            m = re.search(r"retry_in=([0-9.]+)", line)
            f = re.search(r"failures=(\d+)", line)
            if m:
                out.append((t, float(m.group(1)), int(f.group(1)) if f else -1))
    return out
