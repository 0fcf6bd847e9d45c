"""Several links on one host: `chatlinkd --instance NAME` (what chatlinkd@NAME.service runs)
and `chatlinkctl instances`.

Outside systemd the runtime directory is a temp dir of the test's own: each instance's
config points its control socket there, as /run/chatlink/NAME.sock would be, and
`chatlinkctl instances --runtime-directory` lists it. The socket and store paths an instance
derives from its name are unit-tested (InstanceTests, ConfigTests); the real template units
run under systemd in `make e2e`.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from backend import Backend
from conftest import BIN, CHATLINKD, wait_until

CHATLINKCTL = BIN / "chatlinkctl"


@pytest.fixture
def rundir():
    path = Path(tempfile.mkdtemp(prefix="clrun-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def second_backend():
    b = Backend().start()
    yield b
    b.stop()


def instance(make_daemon, rundir: Path, name: str | None, url: str | None = None, start: bool = True):
    """A daemon run as instance `name` (None: the plain service's control.sock) with its
    socket in `rundir`."""
    d = make_daemon(start=False, url=url, name=name or "plain")
    d.socket_path = str(rundir / f"{name or 'control'}.sock")
    d.configure({"Control": {"Socket": d.socket_path}})
    if name:
        d.args = ["--instance", name]
    if start:
        d.start()
    return d


def ctl(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHATLINKCTL), *args], capture_output=True, text=True, timeout=timeout)


def dead_socket(path: Path) -> None:
    """A socket file nobody listens on: what a daemon killed with -9 leaves behind."""
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()


def test_instances_lists_every_daemon_with_its_state_and_tells_unreachable_ones_apart(
        make_daemon, backend, rundir):
    plain = instance(make_daemon, rundir, None)
    prod = instance(make_daemon, rundir, "prod")
    # Nothing listens on this port: the instance keeps retrying, in state waiting.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    staging = instance(make_daemon, rundir, "staging", url=f"ws://127.0.0.1:{closed_port}/")
    dead_socket(rundir / "old.sock")
    (rundir / "notes.sock").write_text("a regular file, not a socket")
    for d in (plain, prod):
        wait_until(lambda d=d: d.status()["state"] == "open", 10, message="open")
    wait_until(lambda: staging.status()["state"] == "waiting", 10, message="staging waiting")
    prod.send("queued while open")

    run = ctl("instances", "--runtime-directory", str(rundir))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    print(run.stdout)
    assert lines[0].split() == ["INSTANCE", "STATE", "OUTBOX", "IN", "OUT", "URL"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == ["-", "old", "prod", "staging"], "the plain service first, then by name"
    assert rows["-"].split()[1] == "open" and rows["-"].endswith(backend.url)
    assert rows["prod"].split()[1] == "open"
    assert rows["staging"].split()[1] == "waiting" and f":{closed_port}/" in rows["staging"]
    assert rows["old"].split()[1] == "unreachable" and "not running" in rows["old"]

    run = ctl("--json", "instances", "--runtime-directory", str(rundir))
    assert run.returncode == 0, run.stderr
    objects = [json.loads(line) for line in run.stdout.splitlines()]
    by_name = {o["instance"]: o for o in objects}
    assert [o["instance"] for o in objects] == [None, "old", "prod", "staging"]
    assert by_name[None]["socket"] == str(rundir / "control.sock") and by_name[None]["reachable"]
    assert by_name["prod"]["status"]["instance"] == "prod"
    assert by_name["staging"]["status"]["state"] == "waiting"
    assert by_name["old"] == {"instance": "old", "socket": str(rundir / "old.sock"), "reachable": False,
                              "problem": "not_running",
                              "error": "not running (nothing listens on the socket)"}


def test_a_daemon_that_does_not_answer_is_listed_without_holding_up_the_others(make_daemon, backend, rundir):
    prod = instance(make_daemon, rundir, "prod")
    hung = socket.socket(socket.AF_UNIX)
    hung.bind(str(rundir / "hung.sock"))
    hung.listen(8)  # accepts connections into the backlog, never answers
    try:
        run = ctl("--json", "instances", "--runtime-directory", str(rundir), "--timeout", "0.5", timeout=10)
    finally:
        hung.close()
    assert run.returncode == 0, run.stderr
    objects = {o["instance"]: o for o in map(json.loads, run.stdout.splitlines())}
    assert objects["hung"]["problem"] == "not_answering"
    assert objects["prod"]["reachable"] and objects["prod"]["status"]["state"] in ("open", "connecting", "upgrading")
    prod.status()


def test_every_log_line_and_the_status_line_name_the_instance(make_daemon, backend, rundir):
    d = instance(make_daemon, rundir, "eu.west")
    wait_until(lambda: d.status()["state"] == "open", 10, message="open")
    status = d.status()
    assert status["instance"] == "eu.west"
    assert status["text"].startswith("eu.west: Connected to "), status["text"]
    logged = [line for _, line in d.log_lines() if line.startswith("<")]
    assert logged, d.log_text()
    assert all("instance=eu.west" in line for line in logged), [l for l in logged if "instance=" not in l]
    run = ctl("--socket", d.socket_path, "status")
    assert "Instance: eu.west" in run.stdout, run.stdout


def test_each_instance_keeps_its_own_messages_and_a_kill_leaves_the_other_alone(
        make_daemon, backend, second_backend, rundir):
    a = instance(make_daemon, rundir, "a")
    b = instance(make_daemon, rundir, "b", url=second_backend.url)
    for d in (a, b):
        wait_until(lambda d=d: d.status()["state"] == "open", 10, message="open")
    wait_until(lambda: backend.members(7) and second_backend.members(7), 10, message="joined")
    backend.push(7, "for a")
    second_backend.push(7, "for b")
    wait_until(lambda: any(r.get("data", {}).get("data", {}).get("message") == "for a" for r in a.records()),
               10, message="a's message")
    wait_until(lambda: any(r.get("data", {}).get("data", {}).get("message") == "for b" for r in b.records()),
               10, message="b's message")
    texts = lambda d: [r.get("data", {}).get("data", {}).get("message") for r in d.records()]  # noqa: E731
    assert "for b" not in texts(a) and "for a" not in texts(b)
    before = b.status()
    a.stop(signal.SIGKILL)
    a.start()
    wait_until(lambda: a.status()["state"] == "open", 10, message="a open again")
    after = b.status()
    assert after["connects"] == before["connects"] == 1 and after["state"] == "open"
    assert after["received"] == before["received"]


def test_an_invalid_instance_name_is_a_usage_error_for_both_programs(tmp_path):
    for name, why in [("../x", "'/' is not allowed"), ("", "the instance name is empty"),
                      ("prod-eu", "'-' is not allowed"), ("control", "reserved")]:
        run = subprocess.run([str(CHATLINKD), "--instance", name, "--check-config"],
                             capture_output=True, text=True, timeout=10)
        assert run.returncode == 2 and why in run.stderr, (name, run.stderr)
        run = ctl("-i", name, "status")
        assert run.returncode == 2 and why in run.stderr, (name, run.stderr)
    run = ctl("--instance", "a", "--socket", str(tmp_path / "s"), "status")
    assert run.returncode == 2 and "give one of them" in run.stderr


def test_an_instances_metrics_carry_its_name_as_a_label(make_daemon, backend, rundir):
    import test_metrics  # noqa: PLC0415 - its helpers (chatlinkctl metrics, promtool)

    prod = instance(make_daemon, rundir, "prod")
    plain = instance(make_daemon, rundir, None)
    for d in (prod, plain):
        wait_until(lambda d=d: d.status()["state"] == "open", 10, message="open")
    text = test_metrics.chatlinkctl_metrics(prod, "--format", "prometheus")
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert samples and all('instance="prod"' in line for line in samples), samples[:5]
    if test_metrics.PROMTOOL:
        test_metrics.promtool_check(text)
    plain_samples = [line for line in test_metrics.chatlinkctl_metrics(plain).splitlines()
                     if line and not line.startswith("#")]
    assert plain_samples and not any("instance=" in line for line in plain_samples), plain_samples[:5]
