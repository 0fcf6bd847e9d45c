"""Private message brokers for the broker scenarios of the benchmark (issue 15): Mosquitto and
RabbitMQ, each with its own configuration in a work directory, on 127.0.0.1 only, and each
ended by PID (../shared/notes/test-servers.md says how they behave on these machines).

- `Mosquitto(work, ...)`: `mosquitto -c FILE`, a plain TCP listener (the paho peer, the
  publisher) and a websockets one (chatlinkd). Started as root it drops to user mosquitto in
  the same process, so the PID we spawned is the broker's.
- `RabbitMQ(work, ...)`: `rabbitmq-server` with web-stomp (and the plain STOMP listener for
  stomp.py's TCP transport). Debian's wrapper switches to user rabbitmq in a new session, so
  the Erlang VM (beam.smp) and the epmd it starts leave our process group: they are found by
  this instance's RABBITMQ_NODENAME / ERL_EPMD_PORT in /proc/PID/environ and ended by PID.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from harness import CACHE, cpu_seconds, hwm_mb, spawn, stop

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
RABBITMQ_SERVER = shutil.which("rabbitmq-server") or "/usr/sbin/rabbitmq-server"


def free_port() -> int:
    """A port nothing listens on now (the broker binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen | None, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on {port}; "
                               f"see {CACHE / 'logs'}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not listen on {port} within {timeout} s") from None
            time.sleep(0.02)


def chown_to(path: Path, user: str) -> None:
    """Started as root, the brokers drop to their own user: what they write must be theirs."""
    if os.geteuid() != 0:
        return
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return
    for root, dirs, files in os.walk(path):
        for name in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
            os.chown(name, entry.pw_uid, entry.pw_gid)


# ==================================================================================== Mosquitto


class Mosquitto:
    """A private Mosquitto 2: `tcp_port` (MQTT over TCP) and `ws_port` (MQTT over WebSocket).

    `max_inflight` is max_inflight_messages (the QoS 1 messages sent to one client and not yet
    acknowledged; for an MQTT 5 client its Receive Maximum, when it sends one, is the limit
    instead); `max_queued_messages 0` lets a session that is away queue any number.
    `persistence` writes the in-memory database to disk only at autosave and exit, never per
    message, so it does not change a drain; it is off unless asked for."""

    def __init__(self, work: Path, max_inflight: int = 20, persistence: bool = False):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.tcp_port, self.ws_port = free_port(), free_port()
        self.max_inflight = max_inflight
        self.config = self.work / "mosquitto.conf"
        lines = [
            "per_listener_settings false",
            "allow_anonymous true",
            f"max_inflight_messages {max_inflight}",
            "max_queued_messages 0",
            "max_queued_bytes 0",
            "log_dest stderr",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "connection_messages true",
            "sys_interval 1",
        ]
        if persistence:
            data = self.work / "data"
            data.mkdir(exist_ok=True)
            chown_to(data, "mosquitto")
            lines += ["persistence true", f"persistence_location {data}/"]
        else:
            lines += ["persistence false"]
        lines += [f"listener {self.tcp_port} 127.0.0.1", "protocol mqtt",
                  f"listener {self.ws_port} 127.0.0.1", "protocol websockets"]
        self.config.write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.ws_port}/"

    def start(self) -> "Mosquitto":
        log = open(CACHE / "logs" / "mosquitto.stderr", "ab")
        self.proc = spawn([MOSQUITTO, "-c", self.config], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=log)
        wait_port(self.tcp_port, self.proc, 15, "mosquitto")
        wait_port(self.ws_port, self.proc, 15, "mosquitto")
        return self

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def hwm(self) -> float:
        return hwm_mb(self.proc.pid)

    def stop(self) -> None:
        if self.proc:
            stop(self.proc)


# ==================================================================================== RabbitMQ


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.decode("utf-8", "replace").split("\0") if "=" in item)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _kill_pid(pid: int, timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL, to one process that is not our child (so it is not reaped here)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] \
            if Path(f"/proc/{pid}/stat").exists() else "X"
        if state == "Z":
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


_rabbits: list["RabbitMQ"] = []
# CPU seconds of the RabbitMQ VMs stopped so far: they are not our reaped children, so a LoadMeter
# would count them as other processes' unless told (`extra`).
unreaped_cpu = 0.0


def stop_rabbits() -> None:
    for rabbit in list(_rabbits):
        rabbit.stop()


import atexit  # noqa: E402

atexit.register(stop_rabbits)


class RabbitMQ:
    """A private RabbitMQ 3 with web-stomp (`ws_url`) and the plain STOMP listener
    (`stomp_port`), and with `mqtt=True` web-mqtt (`mqtt_ws_url`) and plain MQTT (`mqtt_port`);
    its own node name, Erlang distribution and epmd ports, every folder it writes in the work
    directory and owned by user rabbitmq. Start-up takes 5–35 s."""

    def __init__(self, work: Path, name: str = "chatbench", mqtt: bool = False):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.node = f"{name}{os.getpid()}@localhost"
        self.amqp_port, self.dist_port, self.epmd_port = free_port(), free_port(), free_port()
        self.stomp_port, self.web_stomp_port = free_port(), free_port()
        self.mqtt_port, self.web_mqtt_port = (free_port(), free_port()) if mqtt else (None, None)
        for sub in ("mnesia", "log", "plugins-expand", "home"):
            (self.work / sub).mkdir(exist_ok=True)
        plugins = ["rabbitmq_stomp", "rabbitmq_web_stomp"] + (["rabbitmq_mqtt", "rabbitmq_web_mqtt"] if mqtt else [])
        (self.work / "enabled_plugins").write_text(f"[{','.join(plugins)}].\n")
        mqtt_lines = [f"mqtt.listeners.tcp.1 = 127.0.0.1:{self.mqtt_port}", f"web_mqtt.tcp.port = {self.web_mqtt_port}",
                      "web_mqtt.tcp.ip = 127.0.0.1"] if mqtt else []
        (self.work / "rabbitmq.conf").write_text("\n".join([
            f"listeners.tcp.default = 127.0.0.1:{self.amqp_port}",
            f"stomp.listeners.tcp.1 = 127.0.0.1:{self.stomp_port}",
            f"web_stomp.tcp.port = {self.web_stomp_port}",
            "web_stomp.tcp.ip = 127.0.0.1",
            "loopback_users = none",
            "log.console = false",
            "log.file.level = warning",
            # Far from this machine's disk: a few hundred MB of queued messages must not make
            # the broker block its publishers.
            "disk_free_limit.absolute = 50MB",
            "vm_memory_high_watermark.relative = 0.8",
        ] + mqtt_lines) + "\n")
        chown_to(self.work, "rabbitmq")
        self.env = dict(os.environ)
        self.env.update({
            "RABBITMQ_CONFIG_FILE": str(self.work / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.work / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(self.work / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.work / "log"),
            "RABBITMQ_FEATURE_FLAGS_FILE": str(self.work / "mnesia" / "feature_flags"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": str(self.work / "plugins-expand"),
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "ERL_EPMD_PORT": str(self.epmd_port),
            "HOME": str(self.work / "home"),
        })
        for key in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID"):
            self.env.pop(key, None)
        self.proc: subprocess.Popen | None = None
        self.beam: int | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.web_stomp_port}/ws"

    @property
    def mqtt_ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.web_mqtt_port}/ws"

    def _ours(self) -> list[int]:
        """Our node's processes that left our process group: beam.smp (and its helpers) by the
        node name, epmd by its port (it was started with our ERL_EPMD_PORT)."""
        found = []
        for pid in _pids():
            if pid == os.getpid():
                continue
            env = _environ(pid)
            if env.get("RABBITMQ_NODENAME") == self.node or (
                    _comm(pid) == "epmd" and env.get("ERL_EPMD_PORT") == str(self.epmd_port)):
                found.append(pid)
        return found

    def start(self, timeout: float = 90) -> "RabbitMQ":
        log = open(CACHE / "logs" / "rabbitmq-server.stderr", "ab")
        _rabbits.append(self)
        self.proc = spawn([RABBITMQ_SERVER], stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env)
        deadline = time.monotonic() + timeout
        for port in (self.stomp_port, self.web_stomp_port, self.mqtt_port, self.web_mqtt_port):
            if port is None:
                continue
            try:
                wait_port(port, None, max(1, deadline - time.monotonic()), "rabbitmq-server")
            except TimeoutError:
                self.stop()
                raise
        self.beam = next((p for p in self._ours() if _comm(p) == "beam.smp"), None)
        return self

    def cpu(self) -> float:
        return cpu_seconds(self.beam) if self.beam else 0.0

    def hwm(self) -> float:
        return hwm_mb(self.beam) if self.beam else 0.0

    def stop(self) -> None:
        global unreaped_cpu
        if self.beam and Path(f"/proc/{self.beam}").exists():
            unreaped_cpu += self.cpu()
        # The VM first (it would restart nothing, but it is the broker), then the rest of ours:
        # epmd, and the wrapper we spawned.
        pids = self._ours()
        beams = [p for p in pids if _comm(p) == "beam.smp"]
        for pid in beams:
            _kill_pid(pid, timeout=20)
        for pid in self._ours():
            _kill_pid(pid)
        if self.proc:
            stop(self.proc)
        if self in _rabbits:
            _rabbits.remove(self)
