"""ejabberd.py: a private ejabberd 23.01 (XMPP over WebSocket, RFC 7395) for ChatLink's XMPP
compatibility tests.

Debian's `ejabberd` package, installed with a policy-rc.d that keeps the system service from
starting, and never the system service: each node gets its own ejabberd.yml, ejabberdctl.cfg,
Mnesia spool, logs, HOME (the Erlang cookie) and node name in a folder of its own, listens on
127.0.0.1 only, on ports picked free at start, runs as user `ejabberd` and is ended by PID.
No epmd: `ERL_DIST_PORT` makes ejabberdctl start the node with `-erl_epmd_port PORT
-start_epmd false` (Erlang's distribution without a port mapper), so nothing outlives the node.

    from ejabberd import Ejabberd

    e = Ejabberd.start(tmpdir)           # ~3-5 s (an Erlang VM and Mnesia)
    e.register("user", "pencil")         # over the node's HTTP API, once it runs
    e.ws_url                             # ws://127.0.0.1:PORT/xmpp-websocket (subprotocol xmpp)
    e.c2s_port                           # plain c2s for slixmpp (no TLS offered)
    e.domain, e.muc                      # "localhost", "conference.localhost"
    e.restart()                          # the same ports, node and data
    e.stop()

Run as a script, it starts one, signs in over WebSocket with the small client of prosody.py
and prints what each side sent as JSON: how Tests/XMPPTests/EjabberdTranscripts.swift was
captured.

    .venv/bin/python Tests/Fixtures/ejabberd.py [PLAIN|SCRAM|SCRAM-SHA-256]
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from brokers import _live, _tail, beam_pid, end_erlang_node, free_ports, listening, pids_with_environ

USER = "ejabberd"

# mod_http_api answers loopback only (api_permissions): the fixture registers accounts with it,
# which costs an HTTP request rather than an Erlang VM per `ejabberdctl register`.
CONFIG = """\
# A private test node (Tests/Fixtures/ejabberd.py); not the system's ejabberd.
hosts:
  - {domain}
loglevel: info
log_rotate_count: 0
certfiles: []
listen:
  -
    port: {c2s}
    ip: "127.0.0.1"
    module: ejabberd_c2s
    max_stanza_size: 262144
    access: c2s
    starttls: false
    starttls_required: false
  -
    port: {http}
    ip: "127.0.0.1"
    module: ejabberd_http
    request_handlers:
      /xmpp-websocket: ejabberd_http_ws
      /api: mod_http_api
auth_method: internal
auth_password_format: plain
acl:
  local:
    user_regexp: ""
  loopback:
    ip:
      - 127.0.0.0/8
access_rules:
  local:
    allow: local
  c2s:
    allow: all
  muc_create:
    allow: local
api_permissions:
  "loopback may do anything":
    from:
      - mod_http_api
      - ejabberd_ctl
    who:
      - ip: 127.0.0.0/8
      - access: all
    what: "*"
shaper_rules:
  max_user_sessions: 10
modules:
  mod_disco: {{}}
  mod_ping: {{}}
  mod_roster: {{}}
  mod_http_api: {{}}
  mod_admin_extra: {{}}
  mod_stream_mgmt:
    resume_timeout: 600
  mod_mam:
    db_type: mnesia
    default: always
    assume_mam_usage: true
  mod_muc:
    host: "{muc}"
    access_create: muc_create
    history_size: 20
    default_room_options:
      mam: true
      persistent: true
"""


class EjabberdError(RuntimeError):
    """The node did not start (or stop) as it should; the message has the end of its log."""


class Ejabberd:
    domain = "localhost"
    muc = "conference.localhost"

    def __init__(self, directory: Path):
        self.dir = directory
        self.node = f"clit{secrets.token_hex(4)}@localhost"
        self.c2s_port, self.http_port, self.dist_port = free_ports(3)
        self.log_path = directory / "logs" / "ejabberd.log"
        self.process: subprocess.Popen | None = None
        self.started_in: float | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.http_port}/xmpp-websocket"

    @classmethod
    def start(cls, directory: str | Path, timeout: float = 60) -> "Ejabberd":
        e = cls(Path(directory))
        for sub in ("spool", "logs", "home"):
            (e.dir / sub).mkdir(parents=True, exist_ok=True)
        (e.dir / "ejabberd.yml").write_text(CONFIG.format(domain=cls.domain, muc=cls.muc,
                                                           c2s=e.c2s_port, http=e.http_port))
        # Sourced by ejabberdctl instead of /etc/ejabberd/ejabberdctl.cfg.
        (e.dir / "ejabberdctl.cfg").write_text(f"ERLANG_NODE={e.node}\nERL_DIST_PORT={e.dist_port}\n"
                                               "INET_DIST_INTERFACE=127.0.0.1\n")
        user = pwd.getpwnam(USER)
        for path in [e.dir, *e.dir.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid)
        e._launch(timeout)
        return e

    def _ctl(self, *args: str) -> list[str]:
        d = self.dir
        # runuser sets HOME to the user's (/var/lib/ejabberd): the cookie goes in our own.
        return ["runuser", "-u", USER, "--", "env", f"HOME={d / 'home'}", "ejabberdctl",
                "--config-dir", str(d),
                "--config", str(d / "ejabberd.yml"), "--ctl-config", str(d / "ejabberdctl.cfg"),
                "--logs", str(d / "logs"), "--spool", str(d / "spool"), *args]

    def _env(self) -> dict:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("EJABBERD_", "ERL_", "NOTIFY_SOCKET"))}
        env["HOME"] = str(self.dir / "home")
        return env

    def _booted_since(self, offset: int) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return b"is started in the node" in f.read()
        except OSError:
            return False

    def _launch(self, timeout: float = 60) -> None:
        t0 = time.monotonic()
        try:
            offset = self.log_path.stat().st_size  # a restart appends to the same log
        except OSError:
            offset = 0
        with open(self.dir / "ejabberd.out", "ab") as out:
            self.process = subprocess.Popen(self._ctl("foreground"), stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=out, env=self._env(),
                                            cwd=self.dir, start_new_session=True)
        _live.add(self)
        while True:
            if (self._booted_since(offset) and listening(self.http_port)
                    and listening(self.c2s_port)):
                break
            if self.process.poll() is not None or time.monotonic() > t0 + timeout:
                self.stop()
                raise EjabberdError(f"ejabberd did not start within {timeout} s:\n"
                                    f"{_tail(self.dir / 'ejabberd.out')}\n{_tail(self.log_path)}")
            time.sleep(0.1)
        self.started_in = time.monotonic() - t0

    def restart(self) -> None:
        """Stops the node (SIGTERM: a clean shutdown) and starts it again on the same ports,
        with the same node name and Mnesia data."""
        self.stop()
        self._launch()

    def api(self, command: str, **arguments) -> object:
        request = urllib.request.Request(f"http://127.0.0.1:{self.http_port}/api/{command}",
                                         data=json.dumps(arguments).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"null")

    def register(self, user: str, password: str) -> None:
        """Makes the account, or sets its password if it exists (as prosodyctl register does)."""
        try:
            self.api("register", user=user, host=self.domain, password=password)
        except urllib.error.HTTPError as error:
            if error.code != 409:  # already registered
                raise
            self.api("change_password", user=user, host=self.domain, newpass=password)

    def pids(self) -> list[int]:
        """Every process of this node (beam.smp, erl_child_setup, the wrapper's shells), by the
        config path ejabberdctl exports."""
        return pids_with_environ(f"EJABBERD_CONFIG_PATH={self.dir / 'ejabberd.yml'}")

    def beam_pid(self) -> int | None:
        return beam_pid(self.pids())

    def stop(self, timeout: float = 30, cleanup: bool = False) -> None:
        """Ends the node by PID: beam.smp with SIGTERM (Erlang's clean stop), then whatever of
        this node is left, then the wrapper; with `cleanup`, removes its folder."""
        left = end_erlang_node(self.pids, self.process, timeout)
        self.process = None
        _live.discard(self)
        if left:
            raise EjabberdError(f"ejabberd node {self.node} left processes behind: {left}")
        if cleanup:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_text(self) -> str:
        return _tail(self.log_path, 200_000)


if __name__ == "__main__":
    import asyncio
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from prosody import capture

    directory = tempfile.mkdtemp(prefix="clit-ejabberd-", dir="/tmp")
    t0 = time.monotonic()
    server = Ejabberd.start(directory)
    print(f"started in {server.started_in:.2f} s", file=sys.stderr)
    try:
        server.register("user", "pencil")
        mechanism = sys.argv[1] if len(sys.argv) > 1 else "SCRAM-SHA-256"
        print(json.dumps(asyncio.run(capture(server.ws_url, mechanism)), indent=1, ensure_ascii=False))
    finally:
        server.stop(cleanup=True)
