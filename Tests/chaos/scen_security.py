"""Scenario 7: security.

A. The token never leaks. A daemon logs to a journal (its own mount namespace, where
   /run/systemd/journal/socket is a datagram socket this suite reads, so every native
   journal entry it sends is captured), at LogLevel=debug, through a 401 refusal, a token
   rotation (new token file, SIGHUP) and a reconnect. The old and the new token are looked
   for in: the captured journal, stderr, GetStatus, `chatlinkctl status` (text and --json),
   `ps auxeww`, /proc/PID/{cmdline,environ,status,…} (what systemd-coredump records as core
   metadata), the ELF notes of a core file taken with gcore (`readelf -n`: NT_PRPSINFO
   psargs, NT_FILE names, auxv) and the store and outbox files. Positive controls: the
   journal capture holds the daemon's entries, the backend received `Authorization: Bearer`
   with each token, and the token is in the core's memory (where it must be to be sent).
   Every other scenario ends with the same audit (lib.audit_scenario).
B. Access. With the socket at its default mode 0660 and SocketGroup=users, `nobody` is
   refused at connect (the Python varlink client gets EACCES, chatlinkctl exits 4 with a
   hint), while `nobody` with the supplementary group users may call everything (its send
   is delivered). With SocketMode=0666, `nobody` outside the group gets the read-only methods
   (GetStatus, GetInfo, ListRooms) and PermissionDenied for Send, Join, Leave, Reconnect,
   History and Subscribe: nothing is queued, sent, joined or reconnected.
C. File modes. A daemon run as nobody with primary group `users` under umask 000: every
   file it creates in its store directory (messages.jsonl, rotated files, outbox.jsonl) is
   mode 0640, owner nobody, group users; its control socket is 0660, group users.
D. TLS. A TLS front on 127.0.0.1 serves, in turn, a valid certificate (the daemon trusts the
   test CA: it connects, the positive control), then a self-signed one, a wrong host name,
   an expired one, one from an unknown CA, and a plaintext server behind the wss:// URL; and
   the test CA's valid certificate with system trust only (CAFile= removed by SIGHUP). For
   each refusal: the daemon tries again (ClientHellos counted) but never completes a
   handshake, never sends a byte of plaintext HTTP, the backend never sees an upgrade, the
   state never becomes open, the status says why, and sends wait in the outbox; once the
   valid certificate is back they are delivered.
"""

from __future__ import annotations

import array
import datetime as dt
import grp
import ipaddress
import json
import os
import pwd
import signal
import socket
import ssl
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from lib import (
    FIXTURES,
    RUN_DIR,
    Backend,
    Scenario,
    audit_scenario,
    core_metadata,
    log,
    make_daemon,
    q,
    send_batch,
    settle,
    store_file_modes,
    token_audit,
    wait_all_delivered,
    wait_joined,
    wait_open,
)

GROUP = "users"  # the socket group and the service's group in this scenario
# run.sh copies chatlinkctl next to its private chatlinkd.
CTL = Path(os.environ.get("CHATLINK_BIN", "/nonexistent")) / "chatlinkctl"


# ---------------------------------------------------------------------------- journal capture


class JournalCapture(threading.Thread):
    """A datagram socket that reads what sd_journal_sendv sends (native protocol; big entries
    come as a memfd), writing every entry to `path`."""

    def __init__(self, directory: Path):
        super().__init__(daemon=True)
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.sock_path = directory / "socket"
        if self.sock_path.exists():
            self.sock_path.unlink()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.sock_path))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        os.chmod(self.sock_path, 0o666)
        self.path = directory / "captured.journal"
        self.entries = 0
        self.messages: list[str] = []
        self.stop_event = threading.Event()

    def run(self):
        self.sock.settimeout(0.3)
        with open(self.path, "wb") as out:
            while not self.stop_event.is_set():
                try:
                    data, anc, _, _ = self.sock.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 4))
                except (socket.timeout, TimeoutError):
                    continue
                except OSError:
                    return
                for level, kind, cdata in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds = array.array("i")
                        fds.frombytes(cdata[: len(cdata) - len(cdata) % fds.itemsize])
                        for fd in fds:
                            os.lseek(fd, 0, os.SEEK_SET)
                            chunks = []
                            while chunk := os.read(fd, 1 << 20):
                                chunks.append(chunk)
                            os.close(fd)
                            data += b"".join(chunks)
                self.entries += 1
                for line in data.split(b"\n"):
                    if line.startswith(b"MESSAGE="):
                        self.messages.append(line[8:].decode("utf-8", "replace"))
                out.write(data + b"\n\x1e\n")
                out.flush()

    def stop(self):
        self.stop_event.set()
        self.join(3)
        self.sock.close()

    def wrapper(self) -> list[str]:
        """Runs the daemon in a private mount namespace where /run/systemd/journal is ours."""
        script = ("mount -t tmpfs chaos-run /run/systemd && mkdir -p /run/systemd/journal && "
                  f"mount --bind {self.directory} /run/systemd/journal && exec \"$@\"")
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"]


# ---------------------------------------------------------------------------- running as nobody

AS_USER_CLIENT = r"""
import json, sys, varlink
path, calls = sys.argv[1], json.loads(sys.argv[2])
out = []
try:
    client = varlink.Client.new_with_address("unix:" + path)
    with client.open("io.chatlink.Daemon", namespaced=False) as c:
        for method, params in calls:
            try:
                out.append({"method": method, "reply": getattr(c, method)(**params)})
            except varlink.VarlinkError as e:
                out.append({"method": method, "error": e.error(), "parameters": e.parameters()})
except OSError as e:
    out.append({"connect_error": e.errno, "text": str(e)})
print(json.dumps(out))
"""

AS_USER_RAW = r"""
import json, socket, sys
path, calls = sys.argv[1], json.loads(sys.argv[2])
out = []
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect(path)
except OSError as e:
    print(json.dumps([{"connect_error": e.errno}])); sys.exit(0)
buf = b""
for method, params in calls:
    msg = {"method": method, "parameters": params}
    if method.endswith("Subscribe"):
        msg["more"] = True
    s.sendall(json.dumps(msg).encode() + b"\0")
    while b"\0" not in buf:
        data = s.recv(65536)
        if not data:
            break
        buf += data
    one, _, buf = buf.partition(b"\0")
    out.append({"method": method, **(json.loads(one) if one else {"closed": True})})
print(json.dumps(out))
"""


def setpriv(groups: list[str] | None = None, group: str = "nogroup", user: str = "nobody") -> list[str]:
    cmd = ["setpriv", f"--reuid={user}", f"--regid={group}"]
    cmd += [f"--groups={','.join(groups)}"] if groups else ["--clear-groups"]
    return cmd


def as_user(script: str, path: str, calls: list, groups: list[str] | None = None) -> list[dict]:
    out = subprocess.run(setpriv(groups) + [sys.executable, "-c", script, path, json.dumps(calls)],
                         capture_output=True, text=True, timeout=30)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return [{"crash": out.stderr[-500:]}]


def make_reachable(path: str) -> None:
    parts = path.split("/")
    for i in range(2, len(parts)):
        p = "/".join(parts[:i])
        os.chmod(p, os.stat(p).st_mode | 0o011)


# ---------------------------------------------------------------------------- TLS front


class TLSFront(threading.Thread):
    """127.0.0.1:port; TLS with the certificate `kind` (or "plaintext": a server that does
    not speak TLS), then the decrypted stream is forwarded to the backend."""

    def __init__(self, certs: dict[str, tuple[Path, Path]], backend_port: int):
        super().__init__(daemon=True)
        self.certs = certs
        self.backend_port = backend_port
        self.kind = "valid"
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.events: list[dict] = []  # one per accepted connection
        self.live: list[socket.socket] = []
        self.stopped = False

    def context(self, kind: str) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        pem, key = self.certs[kind]
        ctx.load_cert_chain(str(pem), str(key))
        return ctx

    def run(self):
        self.listener.settimeout(0.3)
        while not self.stopped:
            try:
                c, _ = self.listener.accept()
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                return
            threading.Thread(target=self.handle, args=(c, self.kind), daemon=True).start()

    def handle(self, c: socket.socket, kind: str):
        ev = {"t": time.monotonic(), "kind": kind, "hello": False, "plaintext": None, "handshake": None,
              "error": None, "forwarded": 0}
        with self.lock:
            self.events.append(ev)
            self.live.append(c)
        try:
            c.settimeout(5)
            first = c.recv(16, socket.MSG_PEEK)
            if not first:
                return
            if first[0] != 0x16:
                ev["plaintext"] = first
                return
            ev["hello"] = True
            if kind == "plaintext":
                c.recv(65536)
                c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                time.sleep(0.2)
                return
            t = self.context(kind).wrap_socket(c, server_side=True, do_handshake_on_connect=False)
            try:
                t.do_handshake()
            except (ssl.SSLError, OSError) as e:
                ev["handshake"] = False
                ev["error"] = str(e)
                return
            # TLS 1.3: a client that rejects the certificate sends its alert after the
            # server's handshake has completed; only data read proves the client accepted.
            ev["handshake"] = True
            try:
                b = socket.create_connection(("127.0.0.1", self.backend_port), timeout=5)
            except OSError as e:
                ev["error"] = str(e)
                return
            with self.lock:
                self.live.append(b)
            self.pump(t, b, ev)
        except (OSError, ssl.SSLError) as e:
            ev["error"] = ev["error"] or str(e)
        finally:
            try:
                c.close()
            except OSError:
                pass

    def pump(self, t: ssl.SSLSocket, b: socket.socket, ev: dict):
        def down():
            try:
                while data := b.recv(65536):
                    t.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    t.close()
                except OSError:
                    pass
        th = threading.Thread(target=down, daemon=True)
        th.start()
        t.settimeout(None)
        try:
            while True:
                data = t.recv(65536)
                if not data:
                    break
                ev["forwarded"] += len(data)
                b.sendall(data)
        except (OSError, ssl.SSLError) as e:
            ev["error"] = ev["error"] or str(e)
        finally:
            b.close()

    def abort_all(self):
        with self.lock:
            live, self.live = self.live, []
        for s in live:
            # shutdown() acts at once even while another thread is blocked in recv() on the
            # socket (close() would wait for that thread).
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def since(self, t: float) -> list[dict]:
        with self.lock:
            return [e for e in self.events if e["t"] >= t]

    def stop(self):
        self.stopped = True
        self.abort_all()
        self.listener.close()
        self.join(2)


def self_signed(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    pem, keyf = directory / "selfsigned.pem", directory / "selfsigned.key"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyf.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    os.chmod(keyf, 0o600)
    return pem, keyf


# ---------------------------------------------------------------------------- parts


def part_token(sc: Scenario, backend: Backend) -> None:
    log("security: token in journal, stderr, status, ps, /proc, core")
    cap = JournalCapture(RUN_DIR / sc.name / "journal")
    cap.start()
    try:
        d = make_daemon(sc, "journal", backend.url, {"Daemon": {"LogLevel": "debug"}}, start=False,
                        wrapper=cap.wrapper(), env={"JOURNAL_STREAM": "0:0"})
        d.extra_logs.append(cap.path)
        d.start()
        if not sc.check("A: the journal daemon connects", wait_open(d, 15)):
            return
        wait_joined(backend, 7)
        tokens = [d.token]
        acked, _ = send_batch(d, 5, "token-a")
        sc.ack(acked)
        wait_all_delivered(backend, acked, 10)
        # A refusal: errors are logged with their cause.
        t0 = time.monotonic()
        backend.refuse(401)
        backend.drop_all()
        sc.fault("HTTP 401", "HTTP 401 (errors logged at debug level)")
        settle(lambda: [a for a in backend.attempts() if a.t > t0 and a.refused == 401], 10)
        backend.accept()
        d.call("io.chatlink.Daemon.Reconnect")
        wait_open(d, 15)
        # Token rotation: a new token file and SIGHUP.
        old = d.token
        d.token = "tok-" + os.urandom(16).hex()
        tokens.append(d.token)
        d.token_file.write_text(d.token + "\n")
        t1 = time.monotonic()
        d.send_signal(signal.SIGHUP)
        sc.fault("token rotation", "token file rewritten, SIGHUP")
        rotated = settle(lambda: [a for a in backend.attempts() if a.t > t1
                                  and a.authorization == f"Bearer {d.token}"], 15)
        wait_open(d, 15)
        acked, _ = send_batch(d, 5, "token-b")
        sc.ack(acked)
        wait_all_delivered(backend, acked, 10)
        auth = {a.authorization for a in backend.attempts()}
        sc.check("A: the backend received each token as Authorization: Bearer (the token is really used)",
                 f"Bearer {old}" in auth and rotated, f"{len(auth)} distinct Authorization values")

        # Places to look, beyond lib.token_audit's own.
        extra: dict[str, str] = {}
        for args in (["status"], ["status", "--json"], ["rooms"], ["--json", "history", "--limit", "20"]):
            if CTL.exists():
                out = subprocess.run([str(CTL), "--socket", d.socket_path, *args], capture_output=True,
                                     text=True, timeout=15)
                extra[f"chatlinkctl {' '.join(args)}"] = out.stdout + out.stderr
        sc.check("A: chatlinkctl ran (status output captured)", CTL.exists() and "Connected" in extra.get(
            "chatlinkctl status", ""), str(CTL))
        core_dir = RUN_DIR / sc.name / "core"
        core_dir.mkdir(parents=True, exist_ok=True)
        out = subprocess.run(["gcore", "-o", str(core_dir / "core"), str(d.pid)], capture_output=True, text=True,
                             timeout=180)
        cores = list(core_dir.glob("core*"))
        notes = ""
        in_memory = []
        if cores:
            notes = subprocess.run(["readelf", "-n", "-W", str(cores[0])], capture_output=True, text=True,
                                   timeout=60).stdout
            extra["core ELF notes (readelf -n)"] = notes
            data = cores[0].read_bytes()
            in_memory = [t for t in tokens if t.encode() in data]
            sc.figure("A: core file", f"{cores[0].stat().st_size // 1024} KiB; notes {len(notes.splitlines())} lines; "
                                      f"tokens in its memory: {len(in_memory)} of {len(tokens)} (expected: the live "
                                      f"one, it has to be sent)")
            cores[0].unlink()
        sc.check("A: gcore wrote a core with notes (psargs, mapped files)", cores and "NT_PRPSINFO" in notes
                 and "NT_FILE" in notes, out.stderr[-300:] if not cores else f"{len(notes)} bytes of notes")
        sc.check("A: the live token is in the core's memory (positive control for the grep)",
                 d.token in in_memory, in_memory)
        time.sleep(0.5)  # the last journal datagrams
        sc.check("A: the journal capture holds the daemon's entries", cap.entries >= 10
                 and any("connected" in m for m in cap.messages), f"{cap.entries} entries")
        stderr_lines = len(d.log_text().splitlines())
        sc.figure("A: captured", f"{cap.entries} journal entries (LogLevel=debug), {stderr_lines} stderr lines, "
                                 f"{len(extra)} extra outputs")
        leaks = []
        for t in tokens:
            d.token = t
            leaks += [f"token #{tokens.index(t) + 1}: {w}" for w in token_audit(d, extra)]
        d.token = tokens[-1]
        meta = core_metadata(d.pid)
        sc.check("A: neither token in journal, stderr, status, chatlinkctl output, ps, /proc (cmdline, environ, "
                 "status, fds…), core notes or store files", not leaks,
                 leaks or f"{2 * (len(extra) + len(meta) + 4)} places searched")
        d.stop()
    finally:
        cap.stop()


def part_access(sc: Scenario, backend: Backend) -> None:
    log("security: access by credentials")
    d = make_daemon(sc, "access", backend.url, {"Control": {"SocketGroup": GROUP}})
    wait_open(d, 15)
    wait_joined(backend, 7)
    make_reachable(d.socket_path)
    st = os.stat(d.socket_path)
    sc.check(f"B: the socket is mode 0660, group {GROUP}", stat.S_IMODE(st.st_mode) == 0o660
             and st.st_gid == grp.getgrnam(GROUP).gr_gid, f"{oct(stat.S_IMODE(st.st_mode))} gid {st.st_gid}")
    sc.fault("outsider", "nobody (not in the group) calls the daemon")
    r = as_user(AS_USER_CLIENT, d.socket_path, [["GetStatus", {}]])
    sc.check("B: nobody outside the group is refused at connect (python varlink: EACCES)",
             r and r[0].get("connect_error") == 13, r[:1])
    if CTL.exists():
        out = subprocess.run(setpriv() + [str(CTL), "--socket", d.socket_path, "send", "--room", "7", "intruder"],
                             capture_output=True, text=True, timeout=20)
        sc.check("B: chatlinkctl run by nobody exits 4 (permission denied) and says so",
                 out.returncode == 4 and "ermission" in out.stderr, f"exit {out.returncode}: {out.stderr.strip()[:160]}")
    before = d.try_status() or {}
    r = as_user(AS_USER_CLIENT, d.socket_path, [["GetStatus", {}], ["Send", {"room": "7", "text": "member-send"}]],
                groups=[GROUP])
    send = next((x for x in r if x.get("method") == "Send"), {})
    ok = "reply" in send and send["reply"].get("state") == "queued"
    if ok:
        sc.ack([{"id": send["reply"]["id"], "t": time.monotonic()}])
    sc.check(f"B: nobody with the supplementary group {GROUP} may call everything (its send is acknowledged "
             "and delivered)", ok and wait_all_delivered(backend, [{"id": send["reply"]["id"]}], 10) is not None,
             r)
    d.stop()

    # A world-accessible socket: read-only for outsiders.
    d = make_daemon(sc, "world", backend.url, {"Control": {"SocketGroup": GROUP, "SocketMode": "0666"}})
    st0 = wait_open(d, 15) or {}
    wait_joined(backend, 7)
    make_reachable(d.socket_path)
    delivered0 = len(backend.sends())
    calls = [["io.chatlink.Daemon.GetStatus", {}], ["org.varlink.service.GetInfo", {}],
             ["io.chatlink.Daemon.ListRooms", {}],
             ["io.chatlink.Daemon.Send", {"room": "7", "text": "outsider-send"}],
             ["io.chatlink.Daemon.Join", {"room": "outsider-room"}], ["io.chatlink.Daemon.Leave", {"room": "7"}],
             ["io.chatlink.Daemon.Reconnect", {}], ["io.chatlink.Daemon.History", {"limit": 5}],
             ["io.chatlink.Daemon.Subscribe", {}]]
    sc.fault("outsider", "nobody on a 0666 socket calls every method", len(calls))
    r = as_user(AS_USER_RAW, d.socket_path, calls)
    by = {x.get("method"): x for x in r}
    allowed = [m for m, _ in calls[:3] if "parameters" in by.get(m, {}) and "error" not in by.get(m, {})]
    denied = [m for m, _ in calls[3:] if by.get(m, {}).get("error") == "org.varlink.service.PermissionDenied"]
    sc.check("B: 0666 socket: an outsider gets the read-only methods", len(allowed) == 3, allowed)
    sc.check("B: 0666 socket: Send, Join, Leave, Reconnect, History, Subscribe get PermissionDenied",
             len(denied) == len(calls) - 3, {m: by.get(m, {}).get("error") for m, _ in calls[3:]})
    time.sleep(1)
    st = d.try_status() or {}
    sent = [x for x in backend.sends()[delivered0:] if x.get("message") == "outsider-send"]
    sc.check("B: ... and nothing happened: no send queued or delivered, rooms and connection unchanged",
             not sent and st.get("outbox") == 0 and st.get("rooms") == st0.get("rooms")
             and st.get("connects") == st0.get("connects"),
             f"delivered {len(sent)}, outbox {st.get('outbox')}, rooms {st.get('rooms')}, connects "
             f"{st0.get('connects')} → {st.get('connects')}")
    d.stop()


def part_modes(sc: Scenario, backend: Backend) -> None:
    log("security: file modes of a daemon run as nobody:users under umask 000")
    user = pwd.getpwnam("nobody")
    gid = grp.getgrnam(GROUP).gr_gid
    wrapper = setpriv(group=GROUP) + ["sh", "-c", 'umask 000; exec "$@"', "sh"]
    d = make_daemon(sc, "modes", backend.url, {"Control": {"SocketGroup": GROUP},
                                               "Store": {"MaxFileSize": "16K", "MaxFiles": "4"}},
                    start=False, wrapper=wrapper)
    for p in (d.workdir, d.sockdir):
        os.chown(p, user.pw_uid, gid)
        os.chmod(p, 0o750)
    os.chown(d.token_file, user.pw_uid, gid)
    make_reachable(str(d.workdir / "x"))
    d.start()
    if not sc.check("C: the daemon runs as nobody:users", wait_open(d, 15)):
        return
    status = Path(f"/proc/{d.pid}/status").read_text()
    uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
    gid_line = next(line for line in status.splitlines() if line.startswith("Gid:"))
    umask_line = next((line for line in status.splitlines() if line.startswith("Umask:")), "Umask: ?")
    wait_joined(backend, 7)
    acked, _ = send_batch(d, 30, "modes", size=900)
    sc.ack(acked)
    wait_all_delivered(backend, acked, 15)
    for i in range(40):
        backend.push(7, f"modes-in {i} " + "m" * 900)
    settle(lambda: len(list(d.store_dir.glob("messages.jsonl.*"))) >= 2, 10)
    time.sleep(0.5)
    modes = store_file_modes(d.store_dir)
    names = [m[0] for m in modes]
    wrong = [m for m in modes if m[1] != "0o640" or m[2] != "nobody" or m[3] != GROUP]
    sc.figure("C: the daemon", f"{uid_line.split()[1]}:{gid_line.split()[1]}, {umask_line.strip()}")
    sc.figure("C: store files", "; ".join(f"{n} {m} {o}:{g}" for n, m, o, g in modes))
    dmode = oct(stat.S_IMODE(d.store_dir.stat().st_mode))
    sc.figure("C: store directory", f"{dmode} {pwd.getpwuid(d.store_dir.stat().st_uid).pw_name}:"
                                    f"{grp.getgrgid(d.store_dir.stat().st_gid).gr_name}")
    sc.check("C: messages.jsonl, rotated files and outbox.jsonl were created",
             "messages.jsonl" in names and "messages.jsonl.1" in names and "outbox.jsonl" in names, names)
    sc.check(f"C: every store file is mode 0640, owner nobody, group {GROUP} (umask 000)", modes and not wrong,
             wrong or f"{len(modes)} files")
    sdir_world = stat.S_IMODE(d.store_dir.stat().st_mode) & 0o007
    sc.check("C: the store directory is not open to others", sdir_world == 0, dmode)
    st = os.stat(d.socket_path)
    sc.check(f"C: the control socket is 0660, group {GROUP}", stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == gid,
             f"{oct(stat.S_IMODE(st.st_mode))} gid {st.st_gid}")
    d.stop()


def part_tls(sc: Scenario, backend: Backend) -> None:
    log("security: TLS verification failures")
    sys.path.insert(0, str(FIXTURES))
    import make_certs

    certdir = RUN_DIR / sc.name / "certs"
    make_certs.ensure(certdir)
    certs = {k: (certdir / f"{k}.pem", certdir / f"{k}.key") for k in ("valid", "wronghost", "expired", "unknownca")}
    certs["selfsigned"] = self_signed(certdir)
    certs["plaintext"] = certs["valid"]
    front = TLSFront(certs, backend.port)
    front.start()
    ca = str(certdir / "ca.pem")
    window = q(8.0, 5.0)
    try:
        d = make_daemon(sc, "tls", f"wss://localhost:{front.port}/",
                        {"Backend": {"CAFile": ca, "ReconnectMinSec": "0.5", "ReconnectMaxSec": "2"}})
        st = wait_open(d, 15)
        ok = sc.check("D: with a valid certificate from the trusted CA the daemon connects (positive control)",
                      st is not None and any(e["handshake"] and e["forwarded"] for e in front.events),
                      (st or {}).get("text"))
        if not ok:
            return
        wait_joined(backend, 7)
        cases = [
            ("selfsigned", ca, ["unknown CA", "self"]),
            ("wronghost", ca, ["hostname mismatch"]),
            ("expired", ca, ["expired"]),
            ("unknownca", ca, ["unknown CA"]),
            ("plaintext", ca, ["TLS"]),
            ("valid", None, ["unknown CA"]),  # the test CA with system trust only
        ]
        for kind, cafile, words in cases:
            what = f"{kind} (CAFile={'test CA' if cafile else 'unset: system trust'})"
            log(f"security: TLS {what}")
            if cafile != d.sections["Backend"].get("CAFile"):
                d.configure({"Backend": {"CAFile": cafile, "ReconnectMinSec": "0.5", "ReconnectMaxSec": "2"}})
                d.send_signal(signal.SIGHUP)
                time.sleep(0.5)
            t0 = time.monotonic()
            attempts0 = len(backend.attempts())
            front.kind = kind
            front.abort_all()
            sc.fault(f"TLS {kind}" if cafile else "TLS CA not trusted", f"TLS: {what}")
            settle(lambda: (s := d.try_status()) and s["state"] != "open", 10)
            waiting, _ = send_batch(d, 3, f"tls-{kind}")
            sc.ack(waiting)
            states = set()
            t_end = time.monotonic() + window
            while time.monotonic() < t_end:
                s = d.try_status() or {}
                states.add(s.get("state"))
                time.sleep(0.2)
            st = d.try_status() or {}
            evs = front.since(t0)
            hellos = sum(1 for e in evs if e["hello"])
            completed = [e for e in evs if e["forwarded"]]
            plain = [e["plaintext"] for e in evs if e["plaintext"]]
            upgrades = len(backend.attempts()) - attempts0
            seen = set(backend.delivered_ids())
            early = [a["id"] for a in waiting if a["id"] in seen]
            err = st.get("last_error") or ""
            sc.figure(f"D: {what}", f"{hellos} ClientHellos in {window:.0f} s, {len(completed)} sessions that carried "
                                    f"data, {len(plain)} plaintext, {upgrades} upgrades at the backend; states "
                                    f"{sorted(x for x in states if x)}; last_error {err!r}")
            sc.check(f"D: {what}: refused, and retried with backoff (≥ 2 ClientHellos, none carried data)",
                     hellos >= 2 and not completed and hellos <= window / 0.5 + 2, f"{hellos} hellos")
            sc.check(f"D: {what}: no plaintext fallback (no byte outside TLS, no upgrade at the backend)",
                     not plain and upgrades == 0, f"plaintext {plain[:1]}, upgrades {upgrades}")
            sc.check(f"D: {what}: never open, sends wait in the outbox", "open" not in states and not early
                     and st.get("outbox", 0) >= len(waiting), f"states {sorted(x for x in states if x)}, "
                                                              f"outbox {st.get('outbox')}")
            sc.check(f"D: {what}: the status says why", any(w in err for w in words) and err in st.get("text", ""),
                     err)
            # Back to the valid certificate and the test CA: the waiting sends go out.
            if d.sections["Backend"].get("CAFile") != ca:
                d.configure({"Backend": {"CAFile": ca, "ReconnectMinSec": "0.5", "ReconnectMaxSec": "2"}})
                d.send_signal(signal.SIGHUP)
            front.kind = "valid"
            t1 = time.monotonic()
            took = wait_all_delivered(backend, waiting, 20)
            sc.check(f"D: {what}: once the certificate is valid again the waiting sends are delivered",
                     took is not None, f"{len(waiting)} sends")
            if took is not None:
                sc.time(f"TLS {kind}: valid again → outbox delivered", time.monotonic() - t1)
        d.stop()
    finally:
        front.stop()


def run(sc: Scenario) -> None:
    backend = Backend().start()
    sc.backends.append(backend)
    try:
        for part in (part_token, part_access, part_modes, part_tls):
            try:
                part(sc, backend)
            except Exception:  # noqa: BLE001 - the other parts still run
                import traceback

                sc.check(f"{part.__name__} ran to the end", False, traceback.format_exc(limit=3)[-600:])
            backend.accept()
    finally:
        audit_scenario(sc)
        backend.stop()
