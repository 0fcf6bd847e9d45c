"""Plumbing for the benchmark: processes, /proc readings, machine load, a tiny Varlink client,
and chatlinkd instances with their own config, store and control socket."""

from __future__ import annotations

import atexit
import json
import os
import queue
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache" / "bench"
BENCH = REPO / "bench"
PYTHON = str(REPO / ".venv" / "bin" / "python")
CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


def env_bin(name: str) -> Path:
    """A binary of this checkout's static release build (bench/run.sh builds them)."""
    return Path(os.environ.get("BENCH_BIN", CACHE / "build" / "bin")) / name


CHATLINKD = env_bin("chatlinkd")
CHATLINKCTL = env_bin("chatlinkctl")
DEVSERVER = env_bin("chatlink-devserver")
GOPEER = Path(os.environ.get("BENCH_GO", CACHE / "bin" / "chatbench-go"))
# The write limit's minimal writer (bench/peers/writelimit.c), built by bench/run.sh.
WRITELIMIT = CACHE / "bin" / "writelimit"


# ---------------------------------------------------------------------------- processes

_children: list[subprocess.Popen] = []


def spawn(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, **kw) -> subprocess.Popen:
    """Starts a process we own; every one of them is stopped at exit (see stop_all)."""
    if stderr is None:
        stderr = open(CACHE / "logs" / f"{Path(str(args[0])).name}.stderr", "ab")
    proc = subprocess.Popen([str(a) for a in args], stdin=stdin, stdout=stdout, stderr=stderr, **kw)
    _children.append(proc)
    return proc


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 10) -> None:
    """Stops one of our processes by its pid (SIGTERM, then SIGKILL) and reaps it."""
    if proc.poll() is None:
        try:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
        except OSError:
            pass
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc in _children:
        _children.remove(proc)


def stop_all() -> None:
    for proc in list(_children):
        stop(proc, timeout=3)


atexit.register(stop_all)


def _on_signal(signum, _frame):
    stop_all()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGHUP, _on_signal)


class Lines:
    """Reads a child's stdout lines on a thread; `expect` waits for one that matches."""

    def __init__(self, proc: subprocess.Popen):
        self.queue: queue.Queue = queue.Queue()
        self.proc = proc
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.queue.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.queue.put(None)

    def expect(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no {what} within {timeout} s") from None
            if line is None:
                raise RuntimeError(f"{self.proc.args[0]} ended before {what} (rc {self.proc.poll()})")
            value = predicate(line)
            if value is not None:
                return value

    def json(self, key: str, timeout: float):
        def pick(line):
            try:
                obj = json.loads(line)
            except ValueError:
                return None
            if "error" in obj:
                raise RuntimeError(f"source: {obj['error']}")
            return obj.get(key)

        return self.expect(pick, timeout, f'"{key}"')

    def done(self, timeout: float) -> float:
        return self.expect(lambda l: float(l.split()[1]) if l.startswith("done ") else None, timeout, "done")


# ---------------------------------------------------------------------------- /proc


def cpu_seconds(pid: int) -> float:
    """utime + stime of the whole process (every thread), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def cpu_ns(pid: int) -> int:
    """Time on CPU of every thread, in ns, from schedstat (finer than utime/stime ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            pass
    return total


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def thread_io(pid: int, name: str) -> dict[str, int]:
    """/proc/PID/task/TID/io of the thread called `name` (its write syscalls `syscw` and bytes
    `wchar`, among others); empty when there is no such thread."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if (task / "comm").read_text().strip() != name:
                continue
            pairs = (line.split(":", 1) for line in (task / "io").read_text().splitlines())
            return {key.strip(): int(value) for key, value in pairs}
        except (OSError, ValueError):
            continue
    return {}


def thread_cpu(pid: int, name: str) -> float:
    """CPU seconds of the threads called `name` in process pid, from schedstat (nanoseconds:
    /proc's stat counts in ticks of 10 ms, too coarse for a 200k-message run)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if (task / "comm").read_text().strip() == name:
                total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def hwm_mb(pid: int) -> float:
    return status_kb(pid, "VmHWM") / 1024


def rss_mb(pid: int) -> float:
    return status_kb(pid, "VmRSS") / 1024


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def system_busy_seconds() -> float:
    """CPU seconds all CPUs spent not idle (user, nice, system, irq, softirq, steal)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def own_cpu_seconds() -> float:
    """This process and every child it has reaped (children reap theirs)."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


@dataclass
class Load:
    """The machine load over a window: other processes' CPU = all busy CPU time minus ours.

    Ours is this process plus reaped children, plus `live` processes still running (their CPU
    over the window is added by the caller through `extra`)."""

    wall: float = 0.0
    before: str = ""
    after: str = ""
    others: float = 0.0

    @property
    def others_percent(self) -> float:
        return 100 * self.others / (self.wall * NCPU) if self.wall else 0.0

    def text(self) -> str:
        return (
            f"loadavg {self.before} → {self.after}; other processes used {self.others:.1f} CPU-s "
            f"in {self.wall:.0f} s ({self.others_percent:.0f}% of {NCPU} CPUs)"
        )


class LoadMeter:
    def __init__(self):
        self.t0 = time.monotonic()
        self.before = loadavg()
        self.busy0 = system_busy_seconds()
        self.own0 = own_cpu_seconds()

    def stop(self, extra: float = 0.0) -> Load:
        wall = time.monotonic() - self.t0
        busy = system_busy_seconds() - self.busy0
        own = own_cpu_seconds() - self.own0 + extra
        return Load(wall=wall, before=self.before, after=loadavg(), others=max(0.0, busy - own))


# ---------------------------------------------------------------------------- Varlink


class Varlink:
    """A minimal persistent Varlink client over the control socket (one call at a time)."""

    def __init__(self, path: str, timeout: float = 10):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buffer = b""

    def call(self, method: str, parameters: dict | None = None) -> dict:
        message = {"method": method}
        if parameters:
            message["parameters"] = parameters
        self.sock.sendall(json.dumps(message).encode() + b"\0")
        while b"\0" not in self.buffer:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("control socket closed")
            self.buffer += data
        reply, _, self.buffer = self.buffer.partition(b"\0")
        obj = json.loads(reply)
        if obj.get("error"):
            raise RuntimeError(f"{method}: {obj['error']} {obj.get('parameters')}")
        return obj.get("parameters", {})

    def status(self) -> dict:
        return self.call("io.chatlink.Daemon.GetStatus")["status"]

    def close(self):
        self.sock.close()


def connect_varlink(path: str, proc: subprocess.Popen, timeout: float = 10) -> Varlink:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"chatlinkd exited with {proc.returncode}; see {CACHE / 'logs'}")
        try:
            return Varlink(path)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.002)


class DurablePoller(threading.Thread):
    """Polls GetStatus on one connection and records (monotonic time, durable_seq) every time
    durable_seq changes. The time is taken when the reply arrives: an observation can only be
    late, never early, so latencies derived from it err high by at most one poll period."""

    def __init__(self, client: Varlink, interval: float, target: int | None = None):
        super().__init__(daemon=True)
        self.client, self.interval, self.target = client, interval, target
        self.samples: list[tuple[float, int]] = []
        self.reached = threading.Event()
        self.halt = threading.Event()
        self.error: Exception | None = None

    def run(self):
        last = -1
        try:
            while not self.halt.is_set():
                status = self.client.status()
                t = time.monotonic()
                durable = status["durable_seq"]
                if durable != last:
                    self.samples.append((t, durable))
                    last = durable
                if self.target is not None and durable >= self.target:
                    self.reached.set()
                    return
                time.sleep(self.interval)
        except Exception as error:  # noqa: BLE001 - reported by the caller
            self.error = error
            self.reached.set()

    def stop(self):
        self.halt.set()
        self.join(5)


# ---------------------------------------------------------------------------- chatlinkd


class Chatlinkd:
    """chatlinkd with its own configuration, store directory and control socket under `work`."""

    def __init__(self, work: Path, url: str, **sections):
        self.work = Path(work)
        self.store = self.work / "state"
        self.socket = str(self.work / "control.sock")
        self.config = self.work / "chatlinkd.conf"
        self.work.mkdir(parents=True, exist_ok=True)
        conf = {
            "Backend": {"URL": url},
            "Store": {"Directory": str(self.store)},
            "Control": {"Socket": self.socket},
            "Daemon": {"LogLevel": "notice"},
        }
        for section, keys in sections.items():
            conf.setdefault(section, {}).update(keys)
        self.config.write_text(
            "".join(f"[{s}]\n" + "".join(f"{k}={v}\n" for k, v in keys.items()) for s, keys in conf.items())
        )
        self.proc: subprocess.Popen | None = None

    def start(self, env: dict | None = None) -> subprocess.Popen:
        clean = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
        clean.update(env or {})
        self.proc = spawn([CHATLINKD, "--config", self.config], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, env=clean)
        return self.proc

    def client(self, timeout: float = 10) -> Varlink:
        return connect_varlink(self.socket, self.proc, timeout)

    def stop(self):
        if self.proc:
            stop(self.proc)

    def remove_store(self):
        shutil.rmtree(self.store, ignore_errors=True)


# ---------------------------------------------------------------------------- numbers


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def percentile(sorted_values, p: float):
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


@dataclass
class Trial:
    """One measured run of one subject."""

    subject: str
    values: dict = field(default_factory=dict)
    others_percent: float = 0.0
