"""Access to the control socket: its mode and group, and read versus write decided by the
peer's credentials (SO_PEERCRED). Needs root, to act as an unprivileged user."""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user"),
]

# Runs one raw Varlink call as `nobody` and prints the reply, or the connect error.
AS_NOBODY = r"""
import json, os, pwd, socket, sys
user = pwd.getpwnam("nobody")
os.setgroups([])
os.setgid(user.pw_gid)
os.setuid(user.pw_uid)
path, method, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect(path)
except OSError as e:
    print(json.dumps({"connect_error": e.errno}))
    sys.exit(0)
s.sendall(json.dumps({"method": method, "parameters": params}).encode() + b"\0")
buf = b""
while b"\0" not in buf:
    data = s.recv(65536)
    if not data:
        break
    buf += data
print(buf.partition(b"\0")[0].decode())
"""


def as_nobody(socket_path: str, method: str, params: dict | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", AS_NOBODY, socket_path, method, json.dumps(params or {})],
        capture_output=True, text=True, timeout=20, check=True)
    return json.loads(out.stdout)


def make_reachable(path: str) -> None:
    """Lets `nobody` traverse to the socket (tmp dirs are 0700)."""
    parts = path.split("/")
    for i in range(2, len(parts)):
        d = "/".join(parts[:i])
        os.chmod(d, os.stat(d).st_mode | 0o011)


def test_the_socket_is_mode_0660_and_others_cannot_connect(daemon):
    daemon.wait_state("open")
    mode = stat.S_IMODE(os.stat(daemon.socket_path).st_mode)
    assert mode == 0o660, oct(mode)
    make_reachable(daemon.socket_path)
    reply = as_nobody(daemon.socket_path, "io.chatlink.Daemon.GetStatus")
    assert reply.get("connect_error") == 13, reply  # EACCES


def test_a_user_outside_the_group_gets_read_only_methods_on_a_world_accessible_socket(make_daemon):
    d = make_daemon({"Control": {"SocketMode": "0666"}})
    d.wait_state("open")
    make_reachable(d.socket_path)
    status = as_nobody(d.socket_path, "io.chatlink.Daemon.GetStatus")
    assert status["parameters"]["status"]["state"] == "open", status
    info = as_nobody(d.socket_path, "org.varlink.service.GetInfo")
    assert "io.chatlink.Daemon" in info["parameters"]["interfaces"]
    metrics = as_nobody(d.socket_path, "io.chatlink.Daemon.GetMetrics")
    assert metrics["parameters"]["text"].endswith("# EOF\n"), metrics
    for method, params in [("io.chatlink.Daemon.Send", {"room": "7", "text": "not allowed"}),
                           ("io.chatlink.Daemon.SendBatch", {"room": "7", "texts": ["not allowed"]}),
                           ("io.chatlink.Daemon.Join", {"room": "x"}),
                           ("io.chatlink.Daemon.History", {}),
                           ("io.chatlink.Daemon.Reconnect", {})]:
        reply = as_nobody(d.socket_path, method, params)
        assert reply.get("error") == "org.varlink.service.PermissionDenied", (method, reply)
    # Nothing was queued on their behalf.
    assert d.status()["outbox"] == 0 and d.status()["sent"] == 0
