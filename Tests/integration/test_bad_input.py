"""Bad input that had no test of its own (Tests/README.md, "Bad input"): chatlinkctl's
standard input, the token file, drop-in files, the outbox and the room indexes found at start,
and malformed requests to the metrics port. Each test asserts the clear error and that nothing
was lost: messages queued before the bad input are delivered, stored records stay readable,
the connection and the other clients carry on."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time

import pytest

from conftest import BIN, CHATLINKD, quiet_store, wait_delivered, wait_until

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


def check_config(daemon) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHATLINKD), "--check-config", "--config", str(daemon.config_path)],
                          capture_output=True, text=True, timeout=10)


def start_refused(daemon) -> subprocess.CompletedProcess:
    """A start that must fail at once: its exit and stderr."""
    return subprocess.run([str(CHATLINKD), "--config", str(daemon.config_path)],
                          capture_output=True, text=True, timeout=10)


BAD_TOKENS = {
    "empty": (b"", "the file is empty"),
    "huge": (b"tok-secret" + b"a" * 70_000, "File too large"),
    "binary": (b"tok-secret\xff\xfe\x00\x01\n", "the token contains spaces or non-ASCII characters"),
    "directory": (None, "Is a directory"),
}


@pytest.mark.parametrize("kind", list(BAD_TOKENS))
def test_a_bad_token_file_is_refused_naming_it_at_reload_and_start_and_nothing_is_lost(
        make_daemon, backend, kind):
    content, reason = BAD_TOKENS[kind]
    daemon = make_daemon()
    daemon.wait_state("open")
    backend.refuse(503)  # what is sent now waits in the outbox
    backend.drop_all()
    acked = [{**daemon.send(f"queued {i}", room="ops"), "room": "ops", "text": f"queued {i}"} for i in range(3)]
    daemon.token_file.unlink()
    if content is None:
        daemon.token_file.mkdir()
    else:
        daemon.token_file.write_bytes(content)
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    daemon.wait_log("reload failed", since=t0)
    said = f"cannot read the token from {daemon.token_file}: {reason}"
    assert said in daemon.log_text(), daemon.log_text()[-2000:]
    # The old token stays: the queued sends go out with it once the backend takes them.
    backend.accept()
    daemon.wait_state("open", timeout=10, min_connects=2)
    wait_delivered(backend, acked)
    new = [a for a in backend.attempts() if a.t > t0]
    assert new and all(a.authorization == f"Bearer {daemon.token}" for a in new)
    assert daemon.status()["outbox"] == 0
    # Neither --check-config nor a start take the file; neither shows what it holds.
    for run in (check_config(daemon), start_refused(daemon)):
        assert run.returncode != 0 and said in run.stderr, run
        assert "tok-secret" not in run.stdout + run.stderr
    assert daemon.running()
    # A token file written on Windows is fine: a CRLF ends the line as a LF does.
    daemon.stop()
    if content is None:
        daemon.token_file.rmdir()
    daemon.token_file.write_bytes(daemon.token.encode() + b"\r\n")
    daemon.start()
    daemon.wait_state("open")
    assert backend.attempts()[-1].authorization == f"Bearer {daemon.token}"


BAD_DROP_INS = {
    "syntax": (b"[Backend]\nRooms=7 ops extra\njust some words\n", 3, "expected Key=Value, found 'just some words'"),
    "binary": (b"[Backend]\n\xff\xfe\x00=1\n", 2, "invalid key"),
    "directory": (None, 0, "cannot read: Is a directory"),
}


@pytest.mark.parametrize("kind", list(BAD_DROP_INS))
def test_a_bad_drop_in_is_refused_naming_its_file_and_line_and_the_running_config_stays(
        make_daemon, backend, kind):
    content, line, message = BAD_DROP_INS[kind]
    daemon = make_daemon()
    daemon.wait_state("open")
    conn = backend.open_connections()[0]
    drop_ins = daemon.config_path.with_name(daemon.config_path.name + ".d")
    drop_ins.mkdir()
    (drop_ins / "10-good.conf").write_text("[Backend]\nRooms=\nRooms=7 ops extra\n")
    bad = drop_ins / "20-bad.conf"
    if content is None:
        bad.mkdir()
    else:
        bad.write_bytes(content)
    place = f"{bad}:{line}" if line else str(bad)
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    daemon.wait_log("reload failed; keeping the running configuration", since=t0)
    logged = [text for t, text in daemon.log_lines(t0) if "reload failed" in text][0]
    assert place in logged and message in logged, logged
    # Nothing of either drop-in applies, and nothing that was running stops.
    time.sleep(0.3)
    status = daemon.status()
    assert status["state"] == "open" and status["rooms"] == ["7", "ops"] and status["connects"] == 1, status
    assert conn.open
    acked = [{**daemon.send(f"after {i}", room="ops"), "room": "ops", "text": f"after {i}"} for i in range(3)]
    wait_delivered(backend, acked)
    for run in (check_config(daemon), start_refused(daemon)):
        assert run.returncode != 0 and place in run.stderr and message in run.stderr, run
    # Without the bad one, the good drop-in applies.
    if content is None:
        bad.rmdir()
    else:
        bad.unlink()
    t0 = time.monotonic()
    daemon.send_signal(signal.SIGHUP)
    daemon.wait_log("configuration reloaded", since=t0)
    wait_until(lambda: sorted(daemon.status()["rooms"]) == ["7", "extra", "ops"], 5, message="the good drop-in")


def test_an_outbox_with_damaged_lines_of_every_kind_delivers_every_good_entry_in_order(make_daemon, backend):
    # outbox.jsonl as a crash and a bad disk could leave it: good add, batch, ack and counter
    # lines among damaged lines of each kind, zeros where a write was lost, and a torn last
    # line. The damaged lines are skipped and counted in the log; every entry the good lines
    # leave pending goes out, in count order, and new sends count on above them.
    daemon = make_daemon(start=False)
    daemon.store_dir.mkdir(parents=True)
    t = '"time":"2026-01-01T00:00:00Z"'
    good = [
        '{"op":"counter","count":10}',
        f'{{"op":"add","id":"a","room":"ops","count":10,{t},"text":"one"}}',
        f'{{"op":"batch","room":7,"count":11,{t},"ids":["b","c","d"],"texts":["two","three","four"]}}',
        '{"op":"ack","id":"c"}',
        f'{{"op":"add","id":"e","room":"ops","count":14,{t},"text":"five"}}',
    ]
    damaged = [
        '{"op":"add","id":"x","room":"ops","count":"15","text":"lost"}',
        '{"op":"batch","room":7,"count":16,"ids":["y","z"],"texts":["only one"]}',
        '{"op":"ack","id":5}',
        '{"op":"counter","count":-1}',
        '{"op":"add","id":"x","ro{"op":"add","id":"w","room":7,"count":18,"text":"glued"}',
        '\x00' * 512,
        'garbage',
    ]
    lines = [good[0], good[1], damaged[0], good[2], damaged[1], damaged[2], good[3], damaged[3],
             damaged[4], damaged[5], good[4], damaged[6]]
    torn = '{"op":"add","id":"t","room":"ops","count":20,"text":"torn'
    (daemon.store_dir / "outbox.jsonl").write_bytes(("\n".join(lines) + "\n" + torn).encode())
    daemon.start()
    daemon.wait_log(f"outbox recovery skipped corrupt lines lines={len(damaged)}", timeout=5)
    daemon.wait_state("open")
    expected = [("a", "ops", "one", 10), ("b", "7", "two", 11), ("d", "7", "four", 13), ("e", "ops", "five", 14)]
    wait_until(lambda: len(backend.sends()) >= len(expected), 10, message="the pending entries")
    sent = [(d["client_id"], str(d["room_id"]), d["message"], d["count"]) for d in backend.sends()]
    assert sent == expected, sent
    wait_outbox_empty(daemon)
    assert daemon.send("new", room="ops")["count"] == 15
    # The torn line was cut: the log ends with a whole line.
    assert (daemon.store_dir / "outbox.jsonl").read_bytes().endswith(b"\n")


def test_a_store_with_damaged_lines_and_index_files_starts_and_history_finds_every_good_record(
        make_daemon, backend):
    # A store left by a crash and a bad disk: lines in the middle of the live and the rotated
    # files replaced by garbage, zeros, bytes that are not UTF-8 and a record cut short (its
    # seq prefix intact), and every room index damaged. The daemon starts on it, History
    # answers with every good record (all of them, and by room, which the indexes serve), seq
    # goes on above the last, and nothing of what was there is removed.
    daemon = make_daemon({"Store": {"MaxFileSize": "8192", "MaxFiles": "8"}})
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7) and backend.members("ops"), 5, message="the rooms joined")
    for i in range(150):
        backend.push(7 if i % 4 else "ops", f"message {i}")
        if i % 10 == 9:  # one write each, so that the files rotate at MaxFileSize
            wait_until(lambda: daemon.status()["durable_seq"] > i, 5, message=f"{i + 1} records")
    records, bad = quiet_store(daemon)
    assert not bad
    daemon.stop()
    files = sorted(daemon.store_dir.glob("messages.jsonl*"))
    assert len(files) >= 4, files
    damaged_seqs = set()
    junk = [None, b"garbage", b"\x00" * 300, b"\xff\xfe{}\xc3"]
    for n, path in enumerate(files):
        lines = path.read_bytes().split(b"\n")
        i = len(lines) // 2
        record = json.loads(lines[i])
        damaged_seqs.add(record["seq"])
        lines[i] = junk[n % len(junk)] or lines[i][: len(lines[i]) // 2]
        path.write_bytes(b"\n".join(lines))
    index = daemon.store_dir / ".index"
    names = sorted(p.name for p in index.iterdir())
    assert names
    for n, name in enumerate(names):
        data = (index / name).read_bytes()
        (index / name).write_bytes([b"not an index", data[: len(data) // 2], b"\x00" * len(data)][n % 3])
    good = [r for r in records if r["seq"] not in damaged_seqs]
    daemon.start()
    daemon.wait_state("open")
    with daemon.ctl() as c:
        everything = c.History(limit=1000)["records"]
        room7 = c.History(room="7", limit=1000)["records"]
        ops = c.History(room="ops", limit=1000)["records"]
    assert [r["seq"] for r in everything] == [r["seq"] for r in good]
    assert [r["seq"] for r in room7] == [r["seq"] for r in good if r["room"] == 7]
    assert [r["seq"] for r in ops] == [r["seq"] for r in good if r["room"] == "ops"]
    assert all(r["data"] == g["data"] for r, g in zip(everything, good))
    wait_until(lambda: backend.members(7), 5, message="room 7 joined again")
    backend.push(7, "after the damage")
    wait_until(lambda: daemon.status()["last_seq"] == records[-1]["seq"] + 1, 5, message="the new record")
    with daemon.ctl() as c:
        newest = c.History(room="7", limit=1)["records"]
    assert newest[0]["seq"] == records[-1]["seq"] + 1
    assert newest[0]["data"]["data"]["message"] == "after the damage"
    # The damaged lines are still where they were: recovery removes nothing but a torn tail.
    assert sum(p.read_bytes().count(b"garbage") for p in daemon.store_dir.glob("messages.jsonl*")) >= 1


METRICS_GARBAGE = {
    "tls-client-hello": (bytes.fromhex("16030100a5010000a10303") + bytes(range(32)) + b"\n\n", 400),
    "binary": (b"\x00\xff\xfe\x80\n\r\n", 400),
    "http2-preface": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400),
    "http2-version": (b"GET /metrics HTTP/2.0\r\n\r\n", 505),
    "header-without-colon": (b"GET /metrics HTTP/1.1\r\nHost\r\n\r\n", 400),
    "oversized-without-end": (b"GET /metrics HTTP/1.1\r\nX: " + b"\xff" * 9000, 431),
    "combining-mark-after-colon": ("GET /metrics HTTP/1.1\r\nAccept:\u0301 */*\r\n\r\n".encode(), 200),
}


def raw_exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        answer = b""
        try:
            while chunk := s.recv(4096):
                answer += chunk
        except ConnectionResetError:
            pass
    return answer


def test_garbage_on_the_metrics_port_gets_its_status_and_nothing_else_is_touched(make_daemon, backend):
    # Whatever a stranger sends to the metrics port gets a status line and a closed connection;
    # the backend link, the store and the control socket never notice, and the next scrape
    # counts just what happened.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    daemon = make_daemon({"Metrics": {"Listen": f"127.0.0.1:{port}"}})
    daemon.wait_state("open")
    wait_until(lambda: backend.members(7), 5, message="room 7 joined")
    for name, (data, status) in METRICS_GARBAGE.items():
        answer = raw_exchange(port, data)
        assert answer.startswith(f"HTTP/1.1 {status} ".encode()), (name, answer[:200])
        assert b"\r\nConnection: close\r\n" in answer, name
        backend.push(7, f"after {name}")
    wait_until(lambda: daemon.status()["received"] == len(METRICS_GARBAGE), 5, message="every message stored")
    status = daemon.status()
    assert status["state"] == "open" and status["connects"] == 1, status
    stored = [r["data"]["data"]["message"] for r in daemon.records() if r["dir"] == "in"]
    assert stored == [f"after {name}" for name in METRICS_GARBAGE]
    scrape = raw_exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n").decode()
    assert scrape.startswith("HTTP/1.1 200 "), scrape[:200]
    assert f"\nchatlink_messages_stored_total {len(METRICS_GARBAGE)}\n" in scrape, scrape
