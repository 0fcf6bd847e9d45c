"""Bad input that had no test of its own (Tests/README.md, "Bad input"): chatlinkctl's
standard input, the token file, drop-in files, the outbox and the room indexes found at start,
and malformed requests to the metrics port. Each test asserts the clear error and that nothing
was lost: messages queued before the bad input are delivered, stored records stay readable,
the connection and the other clients carry on."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from conftest import BIN, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(60)

CTL = BIN / "chatlinkctl"
# The most bytes one request to the daemon may hold (ControlServer.requestLimit), and what a
# SendBatch request to room "ops" spends besides its one text: its opening, the quotes, `]}}`.
REQUEST_LIMIT = 64 * 1024
BATCH_OPENING = b'{"method":"io.chatlink.Daemon.SendBatch","parameters":{"room":"ops","wait_for_room":true,"texts":['


def wait_outbox_empty(daemon, timeout: float = 10) -> None:
    wait_until(lambda: daemon.status()["outbox"] == 0, timeout, message="the outbox to empty")


def test_send_dash_repairs_invalid_utf8_and_stops_clearly_at_a_line_too_long_for_the_daemon(
        make_daemon, backend):
    # Lines that are not UTF-8 go as their repaired text (U+FFFD), the longest line one
    # request holds goes whole, and a line one byte longer is not sent: chatlinkctl reports the
    # receipts of every line before it, says which line and why, and sends nothing after it.
    # Without the check the daemon refused the request and closed the connection: the lines
    # before were queued but their receipts lost, and the error said only "connection lost".
    daemon = make_daemon()
    daemon.wait_state("open")
    longest = b"x" * (REQUEST_LIMIT - len(BATCH_OPENING) - 2 - 3)
    lines = [b"first", b"bad \xff\xfe utf-8 \xc3", longest, b"after the longest", longest + b"y", b"never"]
    run = subprocess.run([str(CTL), "--socket", daemon.socket_path, "--json", "send", "--room", "ops", "-"],
                         input=b"\n".join(lines) + b"\n", capture_output=True, timeout=30)
    assert run.returncode == 1, run
    stderr = run.stderr.decode()
    assert (f"message 5 is {len(longest) + 1} bytes, more than one request to chatlinkd may hold "
            f"({REQUEST_LIMIT} bytes)") in stderr, stderr
    assert "it and the messages after it were not sent" in stderr, stderr
    receipts = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["state"] for r in receipts] == ["queued"] * 4, receipts
    texts = ["first", "bad \ufffd\ufffd utf-8 \ufffd", longest.decode(), "after the longest"]
    acked = [{**r, "room": "ops", "text": t} for r, t in zip(receipts, texts)]
    wait_delivered(backend, acked)
    wait_outbox_empty(daemon)
    sent = [d["message"] for d in backend.sends()]
    assert sent == texts, [s[:40] for s in sent]
    # The daemon never saw the long line: the connection, the link and other clients go on.
    status = daemon.status()
    assert status["state"] == "open" and status["connects"] == 1, status
    assert daemon.send("later", room="ops")["state"] == "queued"
