"""brokers.py: a private Mosquitto and a private RabbitMQ for ChatLink's integration tests.

Both come from Debian's packages (scripts/setup.sh --test installs them with a policy-rc.d that
keeps the system services from starting) and are never the system service: each instance gets
its own config, password, data and log files in a folder of its own, listens on 127.0.0.1 only,
on ports picked free at start, and is ended by PID. See ../shared/notes/test-servers.md.

    from brokers import Mosquitto, RabbitMQ

    m = Mosquitto.start(tmpdir)          # m.ws_url (websockets), m.tcp_port (plain MQTT),
    ...                                  # m.username / m.password, m.add_user(), m.restart()
    m.stop()

    r = RabbitMQ.start(tmpdir)           # ~20-35 s: start it once per test run
    r.web_mqtt_url, r.web_stomp_url      # ws://127.0.0.1:PORT/ws (subprotocols mqtt, v12.stomp)
    r.amqp_port, r.mqtt_port, r.stomp_port
    r.username, r.password, r.vhost      # the broker's one user (administrator of vhost "/")
    r.stop()

For pytest, a session-scoped fixture that every test module can share (the broker starts once
per run, however many modules use it):

    @pytest.fixture(scope="session")
    def rabbitmq(request, tmp_path_factory):
        return brokers.session_rabbitmq(request, tmp_path_factory)

Started as root, both brokers drop to their own users (`mosquitto`, `rabbitmq`): their folders
are made under /tmp (pytest's own temp folders are root-only) and handed to that user. The
Debian wrapper of RabbitMQ switches user in a new session, so its Erlang VM (beam.smp) and the
epmd it starts are not our children: they are found by the node name in /proc/PID/environ and
ended by PID. This instance's epmd listens on a port of its own (ERL_EPMD_PORT), so it never
shares an epmd with another instance or with the system's.
"""

from __future__ import annotations

import atexit
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["Mosquitto", "RabbitMQ", "BrokerError", "free_ports", "session_rabbitmq", "beam_pid",
           "end_erlang_node"]


class BrokerError(RuntimeError):
    """A broker did not start (or stop) as it should; the message has the end of its log."""


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_ports(n: int) -> list[int]:
    """n distinct TCP ports free on 127.0.0.1 just now, outside the kernel's ephemeral range.

    A broker restarted by a test binds its ports again; a port from the ephemeral range may by
    then be the source port of some client's connection (or its TIME_WAIT), and the restart
    fails with EADDRINUSE. Ports below the range are never handed out as source ports."""
    low, high = _ephemeral_range()
    candidates = list(range(10_000, low)) if low > 11_000 else list(range(high + 1, 65_536))
    ports: list[int] = []
    rng = secrets.SystemRandom()
    for _ in range(20 * n + 200):
        if len(ports) == n:
            break
        port = rng.choice(candidates)
        if port in ports:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
    if len(ports) < n:
        raise BrokerError(f"no {n} free ports outside the ephemeral range")
    return ports


def listening(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return f"({path} unreadable)"


def _own_dir(prefix: str, user: str) -> Path:
    """A fresh folder under /tmp owned by `user` (the broker drops to it), mode 0700."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    pw = pwd.getpwnam(user)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def _chown_tree(root: Path, user: str) -> None:
    pw = pwd.getpwnam(user)
    for dirpath, dirnames, filenames in os.walk(root):
        os.chown(dirpath, pw.pw_uid, pw.pw_gid)
        for name in filenames:
            os.chown(os.path.join(dirpath, name), pw.pw_uid, pw.pw_gid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def pids_with_environ(entry: str) -> list[int]:
    """PIDs whose environment holds `entry` exactly (e.g. "RABBITMQ_NODENAME=x@localhost")."""
    needle = entry.encode()
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            env = (p / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(p.name))
    return sorted(found)


def _end(pids: list[int], timeout: float, sig: int = signal.SIGTERM) -> list[int]:
    """Sends `sig` to each PID, waits up to `timeout` s, SIGKILLs what is left; returns the
    PIDs that had to be killed."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_pid_alive(p) for p in pids):
        time.sleep(0.1)
    killed = [p for p in pids if _pid_alive(p)]
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return killed


def beam_pid(pids: list[int]) -> int | None:
    """The Erlang VM (beam.smp) among `pids`."""
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip().startswith("beam"):
                return pid
        except OSError:
            pass
    return None


def end_erlang_node(pids, wrapper: subprocess.Popen | None, timeout: float) -> list[int]:
    """Ends an Erlang node by PID: its beam.smp with SIGTERM (a clean shutdown, up to
    `timeout` s), then whatever else `pids()` still finds (epmd, helpers), then `wrapper`, the
    script that started it. Returns the PIDs still left (none, normally)."""
    beam = beam_pid(pids())
    if beam is not None:
        _end([beam], timeout)
    rest = pids()
    if rest:
        _end(rest, 5)
    if wrapper is not None:
        if wrapper.poll() is None:
            _end([wrapper.pid], 5)
        try:
            wrapper.wait(5)
        except subprocess.TimeoutExpired:
            pass
    return pids()


# ---------------------------------------------------------------------------- Mosquitto


class Mosquitto:
    """A private Mosquitto 2 (Debian `mosquitto`): a websockets listener (for chatlinkd and
    browsers) and a plain TCP listener (for mosquitto_pub/mosquitto_sub and paho), both on
    127.0.0.1, a password file (no anonymous access), persistence in its own folder."""

    USER = "mosquitto"

    def __init__(self, tmpdir: Path, username: str, password: str, max_queued: int, acl: str | None):
        self.tmpdir = Path(tmpdir)
        self.dir = _own_dir("clit-mosquitto-", self.USER)
        self.config_path = self.dir / "mosquitto.conf"
        self.password_file = self.dir / "passwd"
        self.acl = acl
        self.acl_file = self.dir / "acl"
        self.data_dir = self.dir / "data"
        self.log_path = self.tmpdir / "mosquitto.log"
        self.username = username
        self.password = password
        self.users: dict[str, str] = {username: password}
        self.max_queued = max_queued
        self.ws_port, self.tcp_port = free_ports(2)
        self.host = "127.0.0.1"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.ws_port}/"

    @classmethod
    def start(cls, tmpdir, username: str = "chatlink", password: str | None = None,
              max_queued: int = 200_000, acl: str | None = None, timeout: float = 10) -> "Mosquitto":
        """Writes the config and password file and starts the broker; returns once both
        listeners accept connections. `acl`: the text of an acl_file (e.g. "user chatlink\n
        topic readwrite #\ntopic deny secret/#"); without it every user may use every topic."""
        tmpdir = Path(tmpdir)
        tmpdir.mkdir(parents=True, exist_ok=True)
        m = cls(tmpdir, username, password or "pw-" + secrets.token_hex(8), max_queued, acl)
        m.data_dir.mkdir()
        if acl is not None:
            m.acl_file.write_text(acl.rstrip("\n") + "\n")
            os.chmod(m.acl_file, 0o600)
        m._write_passwords()
        m._write_config()
        _chown_tree(m.dir, cls.USER)
        m.run(timeout)
        return m

    def _write_passwords(self) -> None:
        self.password_file.unlink(missing_ok=True)
        for i, (user, password) in enumerate(self.users.items()):
            flags = ["-b", "-c"] if i == 0 else ["-b"]
            subprocess.run(["mosquitto_passwd", *flags, str(self.password_file), user, password],
                           check=True, capture_output=True, timeout=10)
        os.chmod(self.password_file, 0o600)

    def _write_config(self) -> None:
        acl = f"acl_file {self.acl_file}\n" if self.acl is not None else ""
        self.config_path.write_text(f"""\
# A private test instance (Tests/Fixtures/brokers.py); not the system's broker.
per_listener_settings false
allow_anonymous false
password_file {self.password_file}
{acl}persistence true
persistence_location {self.data_dir}/
log_dest stderr
log_type error
log_type warning
log_type notice
connection_messages true
# Mosquitto's default max_queued_messages is 1000: a persistent session's backlog beyond 1000
# QoS 1 messages while its client is offline is dropped silently (measured). A broker that is
# to hold an offline chatlinkd's backlog needs more; 0 would mean no limit.
max_queued_messages {self.max_queued}
max_queued_bytes 0

listener {self.ws_port} 127.0.0.1
protocol websockets

listener {self.tcp_port} 127.0.0.1
protocol mqtt
""")

    def add_user(self, username: str, password: str) -> None:
        """Adds (or changes) a user; takes effect at once (the broker rereads on SIGHUP)."""
        self.users[username] = password
        self._write_passwords()
        _chown_tree(self.dir, self.USER)
        if self.running():
            self.proc.send_signal(signal.SIGHUP)
            time.sleep(0.3)

    def run(self, timeout: float = 10) -> None:
        """Starts the broker (again, on the same ports and data) and waits for both listeners."""
        assert not self.running(), "already running"
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"=== start #{self.starts}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                ["mosquitto", "-c", str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.dir,
            )
        _live.add(self)
        deadline = time.monotonic() + timeout
        while not (listening(self.ws_port) and listening(self.tcp_port)):
            if self.proc.poll() is not None:
                raise BrokerError(f"mosquitto exited with {self.proc.returncode}:\n{_tail(self.log_path)}")
            if time.monotonic() > deadline:
                self.stop(signal.SIGKILL)
                raise BrokerError(f"mosquitto did not listen within {timeout} s:\n{_tail(self.log_path)}")
            time.sleep(0.05)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10, cleanup: bool = False) -> int | None:
        """Ends the broker by its PID (SIGTERM: it saves its persistence file; SIGKILL: it
        does not); returns its exit code. With cleanup, its folder goes too."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                try:
                    rc = self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    rc = self.proc.wait(5)
            else:
                rc = self.proc.returncode
        if cleanup:
            _live.discard(self)
            shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def restart(self, sig: int = signal.SIGTERM, down: float = 0.0, timeout: float = 10) -> None:
        """Stops the broker, stays down `down` s, starts it again on the same ports."""
        self.stop(sig)
        time.sleep(down)
        self.run(timeout)

    def close(self) -> None:
        self.stop(cleanup=True)

    def log_text(self) -> str:
        return _tail(self.log_path, 100_000)


# ---------------------------------------------------------------------------- RabbitMQ


class RabbitMQ:
    """A private RabbitMQ 3.10 (Debian `rabbitmq-server`) with the plugins rabbitmq_web_mqtt
    and rabbitmq_web_stomp (and through them rabbitmq_mqtt and rabbitmq_stomp): MQTT 3.1.1 and
    STOMP 1.0-1.2 over WebSocket at ws://127.0.0.1:PORT/ws, plain MQTT, STOMP and AMQP on
    ports of their own. One user, `username`/`password`, administrator of vhost "/"."""

    USER = "rabbitmq"
    WRAPPER = "/usr/sbin/rabbitmq-server"
    PLUGINS = ("rabbitmq_web_mqtt", "rabbitmq_web_stomp")

    def __init__(self, tmpdir: Path, username: str, password: str):
        self.tmpdir = Path(tmpdir)
        self.dir = _own_dir("clit-rabbitmq-", self.USER)
        self.nodename = f"clit{secrets.token_hex(4)}@localhost"
        self.username = username
        self.password = password
        self.vhost = "/"
        self.host = "127.0.0.1"
        (self.amqp_port, self.web_mqtt_port, self.web_stomp_port, self.mqtt_port,
         self.stomp_port, self.dist_port, self.epmd_port) = free_ports(7)
        self.proc: subprocess.Popen | None = None
        self.output_path = self.tmpdir / "rabbitmq.out"
        self.log_path = self.dir / "log" / f"{self.nodename}.log"
        self.started_in: float | None = None

    @property
    def web_mqtt_url(self) -> str:
        return f"ws://{self.host}:{self.web_mqtt_port}/ws"

    @property
    def web_stomp_url(self) -> str:
        return f"ws://{self.host}:{self.web_stomp_port}/ws"

    @classmethod
    def start(cls, tmpdir, username: str = "chatlink", password: str | None = None,
              timeout: float = 90) -> "RabbitMQ":
        """Writes the config and starts the node; returns once it has finished booting and
        every listener accepts connections (typically 20-35 s)."""
        tmpdir = Path(tmpdir)
        tmpdir.mkdir(parents=True, exist_ok=True)
        r = cls(tmpdir, username, password or "pw-" + secrets.token_hex(8))
        r._write_files()
        r._run(timeout)
        return r

    def _write_files(self) -> None:
        d = self.dir
        for sub in ("mnesia", "log", "plugins-expand", "home"):
            (d / sub).mkdir()
        (d / "enabled_plugins").write_text("[" + ",".join(self.PLUGINS) + "].\n")
        (d / "rabbitmq.conf").write_text(f"""\
# A private test instance (Tests/Fixtures/brokers.py); not the system's broker.
listeners.tcp.default = 127.0.0.1:{self.amqp_port}
mqtt.listeners.tcp.default = 127.0.0.1:{self.mqtt_port}
stomp.listeners.tcp.default = 127.0.0.1:{self.stomp_port}
web_mqtt.tcp.port = {self.web_mqtt_port}
web_mqtt.tcp.ip = 127.0.0.1
web_stomp.tcp.port = {self.web_stomp_port}
web_stomp.tcp.ip = 127.0.0.1
loopback_users = none
default_user = {self.username}
default_pass = {self.password}
default_vhost = /
mqtt.allow_anonymous = false
mqtt.vhost = /
mqtt.exchange = amq.topic
log.file.level = info
log.console = false
""")
        _chown_tree(d, self.USER)

    def _env(self) -> dict:
        d = self.dir
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("RABBITMQ_", "ERL_")) and k not in ("NOTIFY_SOCKET",)}
        env.update({
            "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(d / "mnesia"),
            "RABBITMQ_LOG_BASE": str(d / "log"),
            "RABBITMQ_FEATURE_FLAGS_FILE": str(d / "feature_flags"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": str(d / "plugins-expand"),
            "RABBITMQ_NODENAME": self.nodename,
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "ERL_EPMD_PORT": str(self.epmd_port),
            "HOME": str(d / "home"),
        })
        return env

    def _booted_since(self, offset: int) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return b"Server startup complete" in f.read()
        except OSError:
            return False

    def _run(self, timeout: float) -> None:
        t0 = time.monotonic()
        try:
            offset = self.log_path.stat().st_size  # a restart appends to the same log
        except OSError:
            offset = 0
        with open(self.output_path, "ab") as out:
            self.proc = subprocess.Popen(
                [self.WRAPPER], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                env=self._env(), cwd=self.dir, start_new_session=True,
            )
        _live.add(self)
        ports = (self.amqp_port, self.web_mqtt_port, self.web_stomp_port, self.mqtt_port, self.stomp_port)
        deadline = t0 + timeout
        while True:
            if self._booted_since(offset) and all(listening(p) for p in ports):
                break
            if self.proc.poll() is not None:
                self.stop()
                raise BrokerError(f"rabbitmq-server exited with {self.proc.returncode}:\n"
                                  f"{_tail(self.output_path)}\n{_tail(self.log_path)}")
            if time.monotonic() > deadline:
                self.stop()
                raise BrokerError(f"RabbitMQ did not boot within {timeout} s:\n"
                                  f"{_tail(self.output_path)}\n{_tail(self.log_path)}")
            time.sleep(0.2)
        self.started_in = time.monotonic() - t0

    def restart(self, down: float = 0.0, timeout: float = 90) -> None:
        """Stops the node cleanly (SIGTERM), stays down `down` s, starts it again with the same
        name, ports and data: durable queues (persistent MQTT sessions) and persistent
        messages survive."""
        self.stop(cleanup=False)
        time.sleep(down)
        self._run(timeout)

    def pids(self) -> list[int]:
        """Every process of this node (beam.smp, epmd, erl_child_setup, …), by its environment."""
        return pids_with_environ(f"RABBITMQ_NODENAME={self.nodename}")

    def beam_pid(self) -> int | None:
        return beam_pid(self.pids())

    def stop(self, timeout: float = 30, cleanup: bool = True) -> None:
        """Ends the node by PID: beam.smp with SIGTERM (a clean shutdown), then whatever else
        of this node is left (its epmd, helpers), then the wrapper; removes its folder."""
        left = end_erlang_node(self.pids, self.proc, timeout)
        if left:
            raise BrokerError(f"RabbitMQ node {self.nodename} left processes behind: {left}")
        _live.discard(self)
        if cleanup:
            # Keep the node's log beside the test's other output.
            try:
                shutil.copy(self.log_path, self.tmpdir / "rabbitmq.log")
            except OSError:
                pass
            shutil.rmtree(self.dir, ignore_errors=True)

    def close(self) -> None:
        self.stop()

    def log_text(self) -> str:
        return _tail(self.log_path, 100_000)


# ---------------------------------------------------------------------------- lifetime


_live: set = set()


@atexit.register
def _stop_all() -> None:
    """A run that ends without its teardown (an interrupted pytest) leaves no broker behind."""
    for b in list(_live):
        try:
            b.stop() if isinstance(b, RabbitMQ) else b.stop(cleanup=True)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


_session_rabbitmq: RabbitMQ | None = None
_session_error: BaseException | None = None


def session_rabbitmq(request, tmp_path_factory) -> RabbitMQ:
    """The one RabbitMQ of this pytest run: started by the first session-scoped fixture that
    asks (in any test module), stopped when the session ends. A failed start is reported to
    every test that asks, without trying again."""
    global _session_rabbitmq, _session_error
    if _session_error is not None:
        raise BrokerError(f"RabbitMQ failed to start earlier in this run: {_session_error}")
    if _session_rabbitmq is None:
        try:
            _session_rabbitmq = RabbitMQ.start(tmp_path_factory.mktemp("rabbitmq"))
        except BaseException as e:
            _session_error = e
            raise

        def finish():
            global _session_rabbitmq
            if _session_rabbitmq is not None:
                _session_rabbitmq.stop()
                _session_rabbitmq = None

        request.addfinalizer(finish)
    return _session_rabbitmq
