"""prosody.py: a private Prosody (XMPP over WebSocket, RFC 7395) for ChatLink's XMPP tests.

Debian's `prosody` package (0.12: mod_websocket, mod_smacks, mod_mam, mod_muc and muc_mam are
built in), installed with a policy-rc.d that keeps the system service from starting, and never
the system service: each instance gets its own config, data, pid and log files in a folder of
its own, listens on 127.0.0.1 only, on ports picked free at start, runs as user `prosody` (it
refuses root) and is ended by PID. See ../shared/notes/test-servers.md.

    from prosody import Prosody

    p = Prosody.start(tmpdir)            # ~1 s
    p.register("user", "pencil")         # prosodyctl register, before or after the start
    p.ws_url                             # ws://127.0.0.1:PORT/xmpp-websocket (subprotocol xmpp)
    p.domain, p.muc                      # "localhost", "conference.localhost"
    p.restart()                          # the same ports and data
    p.stop()

Run as a script, it starts one, signs in over WebSocket with a small client and prints what
each side sent as JSON: how Tests/XMPPTests/ProsodyTranscripts.swift was captured.

    .venv/bin/python Tests/Fixtures/prosody.py [PLAIN|SCRAM]
"""
import asyncio
import base64
import hashlib
import hmac
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = """\
pidfile = "{dir}/prosody.pid"
data_path = "{dir}/data"
log = {{ info = "{dir}/prosody.log" }}
daemonize = false
interfaces = {{ "127.0.0.1" }}
c2s_ports = {{ {c2s} }}
http_ports = {{ {http} }}
http_interfaces = {{ "127.0.0.1" }}
https_ports = {{}}
modules_enabled = {{ "roster"; "saslauth"; "disco"; "ping"; "websocket"; "smacks"; "mam" }}
modules_disabled = {{ "s2s"; "offline" }}
-- Loopback ws:// counts as secure, so PLAIN and SCRAM-SHA-1 are offered (never SCRAM-SHA-256).
consider_websocket_secure = true
c2s_require_encryption = false
authentication = "internal_hashed"
storage = "internal"
VirtualHost "{domain}"
{extra}
Component "{muc}" "muc"
  modules_enabled = {{ "muc_mam" }}
  muc_room_locking = false
  muc_room_default_persistent = true
{muc_extra}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A MUC archive for floods (`Prosody.start(dir, muc_extra=SQL_ARCHIVE)`, needs lua-dbi-sqlite3):
# the default file store reads a room's whole archive for every message and every query (a
# flood or a catch-up of N costs it O(N²)); in SQLite with no item limit below the flood and no
# total count in each answer (no client here uses it), Prosody keeps up.
SQL_ARCHIVE = """\
  storage = { muc_log = "sql" }
  sql = { driver = "SQLite3", database = "muc.sqlite" }
  storage_archive_item_limit = 10000000
  muc_log_include_total = false
"""


class Prosody:
    domain = "localhost"
    muc = "conference.localhost"

    def __init__(self, directory: Path):
        self.dir = directory
        self.config = directory / "prosody.cfg.lua"
        self.http_port = _free_port()
        self.c2s_port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.http_port}/xmpp-websocket"

    @property
    def pid(self) -> int | None:
        """The server's own PID (the pid file's: runuser forks it), for /proc readings."""
        try:
            return int((self.dir / "prosody.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    @classmethod
    def start(cls, directory: str | Path, extra: str = "", muc_extra: str = "") -> "Prosody":
        """`extra`: more Lua config lines for the host, `muc_extra` for the MUC component (the
        benchmark's archive limits, say)."""
        p = cls(Path(directory))
        (p.dir / "data").mkdir(parents=True, exist_ok=True)
        p.config.write_text(CONFIG.format(dir=p.dir, c2s=p.c2s_port, http=p.http_port,
                                          domain=cls.domain, muc=cls.muc, extra=extra,
                                          muc_extra=muc_extra))
        p._launch()
        return p

    def _launch(self) -> None:
        user = pwd.getpwnam("prosody")
        for path in [self.dir, *self.dir.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid)
        self.process = subprocess.Popen(
            ["runuser", "-u", "prosody", "--", "prosody", "--config", str(self.config), "-F"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.http_port), timeout=0.2).close()
                socket.create_connection(("127.0.0.1", self.c2s_port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"prosody did not listen on {self.http_port}; see {self.dir}/prosody.log")

    def restart(self) -> None:
        """Stops the server and starts it again on the same ports, with the same data."""
        self.stop()
        self._launch()

    def register(self, user: str, password: str) -> None:
        subprocess.run(["runuser", "-u", "prosody", "--", "prosodyctl", "--config",
                        str(self.config), "register", user, self.domain, password],
                       check=True, capture_output=True)

    @classmethod
    def slixmpp_client(cls, user: str, password: str, plugins=()):
        """`slixmpp_client` for user@domain of this server."""
        return slixmpp_client(f"{user}@{cls.domain}", password, plugins)

    def stop(self) -> None:
        """Ends the server by its PID (the pid file's: runuser forks it)."""
        pid = self.pid
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None


async def capture(url: str, mechanism: str, password: str = "pencil") -> list:
    """Signs in as user@localhost, binds, enables stream management, closes: what was sent."""
    import websockets
    framing, sasl = "urn:ietf:params:xml:ns:xmpp-framing", "urn:ietf:params:xml:ns:xmpp-sasl"
    nonce = "fyko+d2lbbFgONRv9qkxdawL"
    log: list = []
    async with websockets.connect(url, subprotocols=["xmpp"]) as ws:
        async def send(text: str) -> None:
            log.append(("C", text))
            await ws.send(text)

        async def recv() -> str:
            text = await asyncio.wait_for(ws.recv(), 5)
            log.append(("S", text))
            return text

        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        await send(f"<open xmlns='{framing}' to='localhost' version='1.0'/>")
        await recv()
        await recv()
        if mechanism == "PLAIN":
            await send(f"<auth xmlns='{sasl}' mechanism='PLAIN'>"
                       f"{b64(bytes([0]) + b'user' + bytes([0]) + password.encode())}</auth>")
        else:
            # "SCRAM" is SCRAM-SHA-1; "SCRAM-SHA-256" where the server offers it (ejabberd).
            digest = "sha256" if mechanism == "SCRAM-SHA-256" else "sha1"
            name = "SCRAM-SHA-256" if digest == "sha256" else "SCRAM-SHA-1"
            bare = f"n=user,r={nonce}"
            await send(f"<auth xmlns='{sasl}' mechanism='{name}'>{b64(('n,,' + bare).encode())}</auth>")
            first = base64.b64decode((await recv()).split(">")[1].split("<")[0]).decode()
            fields = dict(part.split("=", 1) for part in first.split(","))
            salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(fields["s"]),
                                         int(fields["i"]))
            client_key = hmac.new(salted, b"Client Key", digest).digest()
            without_proof = f"c=biws,r={fields['r']}"
            signature = hmac.new(hashlib.new(digest, client_key).digest(),
                                 f"{bare},{first},{without_proof}".encode(), digest).digest()
            proof = bytes(a ^ b for a, b in zip(client_key, signature))
            await send(f"<response xmlns='{sasl}'>{b64(f'{without_proof},p={b64(proof)}'.encode())}</response>")
        if "<failure" in await recv():
            return log
        await send(f"<open xmlns='{framing}' to='localhost' version='1.0'/>")
        await recv()
        await recv()
        await send("<iq xmlns='jabber:client' type='set' id='bind-1'><bind xmlns='urn:ietf:params:"
                   "xml:ns:xmpp-bind'><resource>chatlink-0123456789ab</resource></bind></iq>")
        await recv()
        await send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>")
        await recv()
        await send(f"<close xmlns='{framing}'/>")
        try:
            while True:
                await recv()
        except Exception:
            pass
    return log


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="chatlink-prosody-") as tmp:
        os.chmod(tmp, 0o755)
        server = Prosody.start(tmp)
        try:
            server.register("user", "pencil")
            transcript = asyncio.run(capture(server.ws_url, sys.argv[1] if len(sys.argv) > 1 else "SCRAM"))
            json.dump(transcript, sys.stdout, indent=1, ensure_ascii=False)
            print()
        finally:
            server.stop()


def slixmpp_client(jid: str, password: str, plugins=()):
    """A slixmpp client (c2s over TCP) for `jid` on a test server (Prosody's or ejabberd's):
    loopback c2s without TLS, where they offer SCRAM; connect it with
    `client.connect("127.0.0.1", server.c2s_port)`."""
    import slixmpp
    client = slixmpp.ClientXMPP(jid, password)
    client.enable_direct_tls = False
    client.enable_starttls = False
    client.enable_plaintext = True
    client.plugin["feature_mechanisms"].unencrypted_scram = True
    for plugin in plugins:
        client.register_plugin(plugin)
    return client
