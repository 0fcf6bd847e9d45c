"""Protocol=socketio: chatlinkd against an independent Socket.IO 5 / Engine.IO 4 server
(Tests/Fixtures/sio_server.py, python-socketio's AsyncServer on aiohttp, a subprocess
driven through its HTTP control API).

Connect with the token in the auth payload and the Bearer header, refusals (44 both ways, an
unknown namespace) reported clearly and retried slowly, rooms joined through the server's
handler, sends confirmed only by the server's ack, error acks and oversized sends failing one
message while the rest goes on, inbound events stored in order and losslessly (10,000 of them,
Hangul, emoji, 1 MiB, binary attachments), server-requested acks, a server-initiated
disconnect, a server restart, a server that stops pinging, another namespace, and kill -9 of
the daemon during a flood and during sends. The first tests check the fixture itself with
python-socketio's own client, without chatlinkd.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, REPO, Sender, Subscription, quiet_store, raw_call, read_store, send_many, wait_until

FIXTURE = REPO / "Tests" / "Fixtures" / "sio_server.py"
sys.path.insert(0, str(FIXTURE.parent))
from sio_server import BIG, flood_text  # noqa: E402

pytestmark = pytest.mark.timeout(90)

SIO = {"Backend": {"Protocol": "socketio"}}
SLACK = 0.5  # scheduling, connect and handshake time on a loaded machine


# ---------------------------------------------------------------------------- the server


class SioServer:
    """Tests/Fixtures/sio_server.py as a subprocess (ended by its PID), and its control API."""

    def __init__(self, workdir: Path, options: list[str]):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.options = list(options)
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log_path = self.workdir / "sio_server.stderr"

    def start(self, timeout: float = 15) -> "SioServer":
        """Starts the server (on the port of its last run, if any) and waits until it listens."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(FIXTURE), "--port", str(self.port), *self.options],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
            )
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.stop(signal.SIGKILL)
            pytest.fail(f"sio_server did not listen within {timeout} s: {self.log_path.read_text()[-2000:]}")
        line = self.proc.stdout.readline()
        sel.close()
        if not line:
            self.proc.wait(5)
            pytest.fail(f"sio_server exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
        self.port = json.loads(line)["port"]
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self.proc is not None and self.proc.stdout:
            self.proc.stdout.close()

    @property
    def url(self) -> str:
        """The URL chatlinkd is given: path "/" (the daemon makes it /socket.io/)."""
        return f"ws://127.0.0.1:{self.port}/"

    # -- control API

    def _request(self, method: str, name: str, body: dict | None = None, query: dict | None = None,
                 timeout: float = 30) -> Any:
        url = f"http://127.0.0.1:{self.port}/control/{name}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def post(self, name: str, body: dict | None = None, timeout: float = 30) -> Any:
        return self._request("POST", name, body or {}, timeout=timeout)

    def state(self) -> dict:
        return self._request("GET", "state")

    def events(self, event: str | None = None, namespace: str | None = None) -> list[dict]:
        """Every client event the server received, in order (duplicates kept)."""
        evs = self._request("GET", "events", query={"since": 0})["events"]
        return [e for e in evs if (event is None or e["event"] == event)
                and (namespace is None or e["namespace"] == namespace)]

    def sends(self, namespace: str | None = None) -> list[dict]:
        """The send-message events: {t, sid, namespace, event, args}."""
        return self.events("send-message", namespace)

    def members(self, room: str, namespace: str = "/") -> set[str]:
        return set(self.state()["rooms"].get(namespace, {}).get(room, []))

    def accepted(self, namespace: str = "/") -> list[dict]:
        return [c for c in self.state()["connects"] if c["accepted"] and c["namespace"] == namespace]


@pytest.fixture
def make_sio(tmp_path):
    """make_sio(*options) -> a started SioServer; every one stopped at teardown."""
    made: list[SioServer] = []

    def make(*options: str) -> SioServer:
        s = SioServer(tmp_path / f"sio{len(made)}", list(options))
        made.append(s)
        return s.start()

    yield make
    for s in made:
        s.stop(signal.SIGKILL)
        if s.log_path.exists() and s.log_path.stat().st_size:
            print(f"--- {s.log_path}")
            print(s.log_path.read_text()[-5000:])


def merge(*dicts: dict | None) -> dict:
    out: dict[str, dict] = {}
    for d in dicts:
        for section, keys in (d or {}).items():
            out.setdefault(section, {}).update(keys)
    return out


def sio_daemon(make_daemon, server: SioServer, overrides: dict | None = None, start: bool = True,
               url: str | None = None, token: bool = True):
    """A daemon with Protocol=socketio against `server`, whose accepted token is the daemon's
    (with token=False the server keeps the token it has)."""
    d = make_daemon(merge(SIO, overrides), start=False, url=url or server.url)
    if token:
        server.post("config", {"token": d.token})
    if start:
        d.start()
    return d


def wait_ready(d, server: SioServer, rooms=("7", "ops"), namespace: str = "/", min_connects: int = 1,
               timeout: float = 10) -> str:
    """Waits until the daemon is open and the server has its session in every room; returns
    the Socket.IO sid."""
    def ready():
        s = d.status(timeout=3)
        if s["state"] != "open" or s["connects"] < min_connects or not s.get("session"):
            return None
        sid = s["session"]
        joined = server.state()["rooms"].get(namespace, {})
        return sid if all(sid in joined.get(r, []) for r in rooms) else None
    return wait_until(ready, timeout, message=f"the daemon open and in rooms {rooms} of {namespace}")


def sent_payload(e: dict) -> dict:
    return e["args"][0] if e["args"] and isinstance(e["args"][0], dict) else {}


def delivery_problems(server: SioServer, acked: list[dict], namespace: str = "/") -> list[str]:
    """What is wrong with the delivery of `acked` (send_many receipts) at the server: empty
    when every one arrived unaltered, the first arrivals in order per room, and each
    session's arrivals in count order per room. Duplicates are allowed (at least once)."""
    problems = []
    sends = server.sends(namespace)
    by_id = {a["id"]: a for a in acked}
    seen = [sent_payload(e).get("client_id") for e in sends]
    missing = [a["id"] for a in acked if a["id"] not in set(seen)]
    if missing:
        problems.append(f"{len(missing)} of {len(acked)} acknowledged messages never reached the server: {missing[:5]}")
    for room in sorted({a["room"] for a in acked}):
        want = [a["id"] for a in acked if a["room"] == room]
        first, done = [], set()
        for cid in seen:
            if cid in by_id and by_id[cid]["room"] == room and cid not in done:
                done.add(cid)
                first.append(cid)
        if not missing and first != want:
            problems.append(f"room {room}: first arrivals out of order")
        for sid in {e["sid"] for e in sends}:
            counts = [sent_payload(e).get("count") for e in sends
                      if e["sid"] == sid and str(sent_payload(e).get("room_id")) == room]
            if counts != sorted(counts):
                problems.append(f"session {sid} room {room}: counts out of order {counts[:20]}")
    for e in sends:
        p = sent_payload(e)
        a = by_id.get(p.get("client_id"))
        if a and (str(p.get("room_id")) != a["room"] or p.get("message") != a["text"]
                  or p.get("count") != a["count"] or p.get("sender") != "it-bot"):
            problems.append(f"message {a['id']} arrived altered: {p}")
    return problems


def wait_delivered(server: SioServer, acked: list[dict], namespace: str = "/", timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while True:
        problems = delivery_problems(server, acked, namespace)
        if not problems:
            return
        if time.monotonic() >= deadline:
            pytest.fail(f"after {timeout} s: " + "; ".join(problems))
        time.sleep(0.1)


def wait_outbox_empty(d, timeout: float = 15) -> dict:
    return wait_until(lambda: (s := d.status())["outbox"] == 0 and s, timeout,
                      message="an empty outbox (everything confirmed)")


def send_more(d, text: str, room: str = "7", timeout: float = 20, **extra) -> list[dict]:
    """Send with "more": every reply up to the last (a state "confirmed" or an error)."""
    return raw_call(d.socket_path, "io.chatlink.Daemon.Send", {"room": room, "text": text, **extra},
                    more=True, timeout=timeout)


def in_events(records: list[dict], name: str) -> list[dict]:
    return [r for r in records if r["dir"] == "in" and r["type"] == "json"
            and isinstance(r.get("data"), dict) and r["data"].get("event") == name]


# ---------------------------------------------------------------------------- the fixture alone


def test_the_fixture_serves_python_socketio_clients(make_sio):
    """sio_server.py checked with python-socketio's own AsyncClient: auth and both refusals,
    acks (ok and error), rooms, a flood in order, binary, a server call, a server disconnect
    and the /chat namespace."""
    import socketio

    server = make_sio("--token", "sekret", "--refuse", "raise")
    url = f"http://127.0.0.1:{server.port}"

    async def scenario():
        refusals: list = []
        for mode in ("raise", "false"):
            server.post("config", {"refuse": mode})
            bad = socketio.AsyncClient(reconnection=False)
            bad.on("connect_error", lambda data: refusals.append(data))
            with pytest.raises(socketio.exceptions.ConnectionError):
                await bad.connect(url, auth={"token": "wrong"}, transports=["websocket"])
        assert refusals == [{"message": "unauthorized"}, {"message": "Connection rejected by server"}]

        c = socketio.AsyncClient(reconnection=False)
        got: list = []
        files: list = []
        gone = asyncio.Event()
        c.on("message", lambda data: got.append(data))
        c.on("file", lambda *args: files.append(args))
        c.on("ask", lambda *args: ("answer", len(args)))
        c.on("disconnect", lambda *a: gone.set())
        await c.connect(url, auth={"token": "sekret", "k": 1}, headers={"Authorization": "Bearer sekret"},
                        transports=["websocket"], namespaces=["/", "/chat"])
        assert await c.call("join-room", {"room_id": 7}) == {"ok": True}
        assert await c.call("join-room", {"room_id": 5}, namespace="/chat") == {"ok": True}
        assert await c.call("send-message", {"room_id": 7, "message": "hi"}) == {"ok": True}
        await c.emit("note", {"no": "ack"})
        assert await c.call("send-message", {"room_id": 7, "message": "reject:too rude"}) == {"error": "too rude"}
        # A held ack holds only its own message: the next ones are recorded meanwhile.
        await asyncio.to_thread(server.post, "config", {"hold_acks": True})
        held = [asyncio.ensure_future(c.call("send-message", {"room_id": 7, "message": f"held {i}"})) for i in range(3)]
        for _ in range(100):
            if len(await asyncio.to_thread(server.sends)) == 5:
                break
            await asyncio.sleep(0.05)
        assert not any(h.done() for h in held)
        await asyncio.to_thread(server.post, "config", {"hold_acks": False})
        assert await asyncio.gather(*held) == [{"ok": True}] * 3
        await asyncio.to_thread(server.post, "emit", {"room": "7", "n": 2000, "size": 60, "tag": "t", "big_at": 3})
        for _ in range(200):
            if len(got) == 2000:
                break
            await asyncio.sleep(0.05)
        assert [g["n"] for g in got] == list(range(2000))
        assert got[0]["text"] == flood_text("t", 0, 60) and got[0]["room_id"] == 7
        assert len(got[3]["text"].encode()) > BIG - 4 and "한국어" in got[3]["text"] and "😀" in got[3]["text"]
        await asyncio.to_thread(server.post, "binary", {"room": "7", "blobs": [base64.b64encode(b"\x00\xffab").decode(),
                                                                               base64.b64encode(b"xyz").decode()]})
        for _ in range(100):
            if files:
                break
            await asyncio.sleep(0.05)
        assert files == [({"room_id": 7, "blob": b"\x00\xffab"}, b"xyz")]
        state = await asyncio.to_thread(server.state)
        sid = [x for x in state["connected"] if x["namespace"] == "/"][0]["sid"]
        await asyncio.to_thread(server.post, "call", {"sid": sid, "event": "ask", "args": [{"q": 1}]})
        for _ in range(100):
            if (await asyncio.to_thread(server.state))["client_acks"]:
                break
            await asyncio.sleep(0.05)
        await asyncio.to_thread(server.post, "disconnect", {"namespace": "/"})
        await asyncio.wait_for(gone.wait(), 5)
        await c.disconnect()

    asyncio.run(scenario())
    state = server.state()
    refused = [c for c in state["connects"] if not c["accepted"]]
    assert [c["refusal"] for c in refused] == ["raise", "false"]
    ok = [c for c in state["connects"] if c["accepted"]]
    assert {c["namespace"] for c in ok} == {"/", "/chat"}
    assert ok[0]["auth"] == {"token": "sekret", "k": 1} and ok[0]["authorization"] == "Bearer sekret"
    assert "EIO=4" in ok[0]["query"] and ok[0]["path"] == "/socket.io/"
    assert state["client_acks"][0]["args"] == ["answer", 1]
    assert [e["event"] for e in server.events()] == ["join-room", "join-room", "send-message", "note"] + ["send-message"] * 4
    assert [e["ack_id"] is None for e in server.events()] == [False, False, False, True] + [False] * 4
    assert [e["args"][0]["message"] for e in server.sends()[2:]] == ["held 0", "held 1", "held 2"]
    assert server.events("join-room", "/chat")[0]["args"] == [{"room_id": 5}]


def test_the_fixture_stops_pinging_without_closing(make_sio):
    """On the wire (a bare WebSocket client): the Engine.IO handshake carries the options;
    after /control/silence no packet at all comes, yet the server keeps the session open
    and still takes events; pings resume when the silence ends."""
    from websockets.sync.client import connect

    server = make_sio("--ping-interval", "1", "--ping-timeout", "1", "--max-payload", "5000")
    with connect(f"ws://127.0.0.1:{server.port}/socket.io/?EIO=4&transport=websocket") as ws:
        hello = ws.recv(timeout=5)
        assert hello[0] == "0"
        opened = json.loads(hello[1:])
        assert (opened["pingInterval"], opened["pingTimeout"], opened["maxPayload"]) == (1000, 1000, 5000), opened
        ws.send("40")
        assert ws.recv(timeout=5).startswith('40{"sid":')
        for _ in range(2):
            assert ws.recv(timeout=3) == "2"
            ws.send("3")
        server.post("silence", {"on": True})
        with pytest.raises(TimeoutError):
            got = ws.recv(timeout=3.5)  # pingInterval + pingTimeout + 1.5 s: nothing at all
            pytest.fail(f"{got!r} after the silence")
        assert server.state()["eio"][0]["closed"] is None, "the server closed a silent session"
        ws.send('42["send-message",{"room_id":7,"message":"still here"}]')
        wait_until(lambda: server.sends(), 5, message="the event on the silent session")
        server.post("silence", {"on": False})
        assert ws.recv(timeout=3) == "2"
        ws.send("3")
    state = wait_until(lambda: (s := server.state())["eio"][0]["closed"] and s, 5, message="the session closed")
    assert state["eio"][0]["close_reason"] == "transport close", state["eio"]


# ---------------------------------------------------------------------------- connect and refuse


def test_connects_with_the_token_in_auth_and_the_bearer_header_and_joins_its_rooms(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server, {"SocketIO": {"Auth": '{"key":"value","n":1}'}},
                   url=f"ws://127.0.0.1:{server.port}/?tenant=acme")
    sid = wait_ready(d, server)
    status = d.status()
    assert status["protocol"] == "socketio" and status["namespace"] == "/", status
    assert status["session"] == sid and status["connects"] == 1 and status["failed"] == 0
    [conn] = server.accepted()
    assert conn["sid"] == sid
    assert conn["auth"] == {"key": "value", "n": 1, "token": d.token}
    assert conn["authorization"] == f"Bearer {d.token}"
    assert conn["path"] == "/socket.io/"
    query = urllib.parse.parse_qs(conn["query"])
    assert query["EIO"] == ["4"] and query["transport"] == ["websocket"] and query["tenant"] == ["acme"], conn
    # Each room joined once, through the server's join-room handler, with the room as the
    # server names it (a number when it is one).
    joins = server.events("join-room")
    assert sorted(json.dumps(e["args"]) for e in joins) == sorted(['[{"room_id": 7}]', '[{"room_id": "ops"}]'])
    assert all(e["sid"] == sid and e["ack_id"] is not None for e in joins), joins
    assert d.token not in d.log_text() and d.token not in json.dumps(status)
    # Join and Leave at run time go through the handlers too.
    assert "error" not in d.call("io.chatlink.Daemon.Join", {"room": "42"})
    wait_until(lambda: sid in server.members("42"), 5, message="the session in room 42")
    assert "error" not in d.call("io.chatlink.Daemon.Leave", {"room": "ops"})
    wait_until(lambda: sid not in server.members("ops"), 5, message="the session out of room ops")
    assert server.events("leave-room")[-1]["args"] == [{"room_id": "ops"}]


@pytest.mark.parametrize("server_path,url_rest,want_path,want_query", [
    ("socket.io", "", "/socket.io/", {}),
    ("socket.io", "/?EIO=3&transport=polling&x=1", "/socket.io/", {"x": ["1"]}),
    ("rt/io", "/rt/io/?v=2", "/rt/io/", {"v": ["2"]}),
], ids=["no-path", "their-EIO-and-transport-replaced", "custom-path"])
def test_the_engine_io_endpoint_follows_the_url(make_daemon, make_sio, server_path, url_rest, want_path, want_query):
    server = make_sio("--path", server_path)
    d = sio_daemon(make_daemon, server, url=f"ws://127.0.0.1:{server.port}{url_rest}")
    wait_ready(d, server)
    [conn] = server.accepted()
    assert conn["path"] == want_path
    assert urllib.parse.parse_qs(conn["query"]) == {"EIO": ["4"], "transport": ["websocket"], **want_query}, conn


def test_without_a_token_the_auth_goes_as_configured_and_no_bearer_header(make_daemon, make_sio):
    server = make_sio("--token", "from-auth")
    d = sio_daemon(make_daemon, server, {"Backend": {"TokenFile": None},
                                         "SocketIO": {"Auth": '{"token":"from-auth","k":[1]}'}}, token=False)
    wait_ready(d, server)
    [conn] = server.accepted()
    assert conn["auth"] == {"token": "from-auth", "k": [1]} and conn["authorization"] is None, conn


def test_a_token_replaces_a_token_given_in_auth(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server, {"SocketIO": {"Auth": '{"token":"stale","k":1}'}})
    wait_ready(d, server)
    [conn] = server.accepted()
    assert conn["auth"] == {"token": d.token, "k": 1}, conn


def test_a_refused_join_is_reported_and_the_other_rooms_work(make_daemon, make_sio):
    server = make_sio()
    server.post("config", {"reject_rooms": ["ops"]})
    d = sio_daemon(make_daemon, server)
    sid = wait_ready(d, server, rooms=("7",))
    d.wait_log("no such room", timeout=5)
    assert any("ops" in line and "no such room" in line for _, line in d.log_lines()), d.log_text()
    assert sid not in server.members("ops")
    server.post("emit", {"room": "7", "n": 2, "tag": "seven"})
    acked = send_many(d, 4, prefix="both")
    wait_delivered(server, acked)
    wait_until(lambda: len(in_events(d.records(), "message")) == 2, 5, message="room 7's events stored")
    assert d.status()["state"] == "open" and d.status()["connects"] == 1


@pytest.mark.parametrize("how", ["connect-returns-false", "connect-raises", "unknown-namespace"])
def test_a_refused_connect_is_reported_clearly_and_retried_slowly(make_daemon, make_sio, how):
    hi = 1.5
    server = make_sio("--refuse", "false" if how == "connect-returns-false" else "raise")
    overrides = {"Backend": {"ReconnectMinSec": 0.2, "ReconnectMaxSec": hi}}
    if how == "unknown-namespace":
        overrides["SocketIO"] = {"Namespace": "/nope"}
        d = sio_daemon(make_daemon, server, overrides)
        message = "Unable to connect"
    else:
        server.post("config", {"token": "not-the-daemons"})
        d = sio_daemon(make_daemon, server, overrides, token=False)
        message = "rejected by server" if how == "connect-returns-false" else "unauthorized"

    def attempts():
        return [e["opened"] for e in server.state()["eio"]]

    wait_until(lambda: len(attempts()) >= 3, 3 * hi + 4, message="three attempts")
    times = attempts()
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(g >= hi - 0.05 for g in gaps), f"a refusal was retried faster than ReconnectMaxSec: {gaps}"
    status = d.status()
    assert status["state"] != "open", status
    error = status.get("last_error") or ""
    assert "refused" in error and message in error, status
    assert not any(c["accepted"] for c in server.state()["connects"])
    # What is queued meanwhile stays queued, and goes nowhere.
    acked = send_many(d, 5, prefix="queued")
    time.sleep(hi + 0.5)  # another attempt or so
    assert d.status()["outbox"] == 5 and not server.sends()
    if how == "unknown-namespace":
        return
    # Every attempt offered the token both ways; none of the messages shows it.
    for c in server.state()["connects"]:
        assert c["auth"] == {"token": d.token} and c["authorization"] == f"Bearer {d.token}"
    assert d.token not in d.log_text() and d.token not in json.dumps(status)
    # Nothing queued meanwhile is lost once the server accepts.
    server.post("config", {"token": d.token})
    wait_ready(d, server, timeout=hi + 5)
    wait_delivered(server, acked)
    assert d.status().get("last_error") is None


def test_the_session_opens_only_once_the_namespace_connect_is_accepted(make_daemon, make_sio):
    """Open, joins and the outbox wait for the server's `40{"sid":…}`, however late it is."""
    delay = 0.8
    server = make_sio()
    server.post("config", {"connect_delay": delay})
    d = sio_daemon(make_daemon, server)
    acked = send_many(d, 2, prefix="early")  # queued before the session is ready
    seen_open = wait_until(lambda: d.status()["state"] == "open" and time.monotonic(), 10, interval=0.02,
                           message="state open")
    state = server.state()
    assert seen_open - state["eio"][0]["opened"] >= delay - 0.05, "open before the namespace connect was accepted"
    wait_delivered(server, acked)
    assert [e["event"] for e in server.events()] == ["join-room", "join-room", "send-message", "send-message"]
    assert d.status()["connects"] == 1


@pytest.mark.parametrize("auth", ["not json", "[1,2]", '"token"'])
def test_an_auth_that_is_not_a_json_object_is_refused_at_start(make_daemon, make_sio, auth):
    server = make_sio()
    d = sio_daemon(make_daemon, server, {"SocketIO": {"Auth": auth}}, start=False)
    d.start(wait=False)
    try:
        rc = d.proc.wait(10)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chatlinkd started with Auth={auth}: {d.log_text()}")
    assert rc != 0
    # The exit can be seen before the stderr reader has taken the last lines.
    if d._reader:
        d._reader.join(5)
    assert "Auth" in d.log_text(), d.log_text()
    assert not server.state()["eio"], "connected with an invalid Auth="


# ---------------------------------------------------------------------------- sends


def test_a_send_is_confirmed_by_the_servers_ack_only(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    sid = wait_ready(d, server)
    # While the server holds its acks, the message is sent but not confirmed.
    server.post("config", {"hold_acks": True})
    replies: list = []
    t = threading.Thread(target=lambda: replies.extend(send_more(d, "hi there", room="7")))
    t.start()
    wait_until(lambda: server.sends(), 5, message="the send-message at the server")
    time.sleep(0.5)
    assert d.status()["outbox"] == 1 and d.status()["confirmed"] == 0
    server.post("config", {"hold_acks": False})
    t.join(10)
    states = [r.get("parameters", {}).get("state") for r in replies]
    assert "error" not in replies[-1] and states[0] == "queued" and states[-1] == "confirmed", replies
    cid = replies[0]["parameters"]["id"]
    [e] = server.sends()
    assert e["sid"] == sid and e["ack_id"] is not None
    assert e["args"] == [{"room_id": 7, "message": "hi there", "sender": "it-bot",
                          "count": replies[0]["parameters"]["count"], "client_id": cid}]
    status = wait_outbox_empty(d)
    assert status["confirmed"] == 1 and status["failed"] == 0
    outs = wait_until(lambda: [r for r in d.records() if r["dir"] == "out"], 5, message="the out record")
    assert len(outs) == 1
    assert outs[0]["id"] == cid and str(outs[0]["room"]) == "7" and outs[0]["type"] == "json"
    assert outs[0]["data"] == {"event": "send-message", "args": e["args"]}
    # A room that is not a number goes as a string.
    acked = send_many(d, 3, rooms=("ops",), prefix="to-ops")
    wait_delivered(server, acked)
    assert all(sent_payload(e)["room_id"] == "ops" for e in server.sends()[1:])


def test_an_error_ack_fails_that_message_and_the_rest_goes_on(make_daemon, make_sio):
    server = make_sio("--reject-prefix", "reject:")
    d = sio_daemon(make_daemon, server)
    wait_ready(d, server)
    before = send_many(d, 3, prefix="before")
    with Subscription(d) as sub:
        replies = send_more(d, "reject:too rude", room="7")
        failed = sub.wait_for(lambda e: e["event"] == "failed", 5, message="a failed event")
    last = replies[-1]
    assert last.get("error") == "io.chatlink.Daemon.DeliveryFailed", replies
    cid = replies[0]["parameters"]["id"]
    assert last["parameters"]["id"] == cid and "too rude" in last["parameters"]["reason"], last
    assert failed["id"] == cid and str(failed["room"]) == "7" and "too rude" in failed["reason"], failed
    after = send_many(d, 5, prefix="after")
    wait_delivered(server, before + after)
    status = wait_outbox_empty(d)
    assert status["failed"] == 1 and status["confirmed"] == 8, status
    # The failed message is not stored as sent, and not sent again after a reconnect.
    assert cid not in {r.get("id") for r in d.records() if r["dir"] == "out"}
    assert "error" not in d.call("io.chatlink.Daemon.Reconnect")
    wait_ready(d, server, min_connects=2)
    more = send_many(d, 2, prefix="later")
    wait_delivered(server, before + after + more)
    assert [sent_payload(e).get("client_id") for e in server.sends()].count(cid) == 1
    # chatlinkctl send --wait ends with the reason and a failure status.
    run = subprocess.run([str(BIN / "chatlinkctl"), "--socket", d.socket_path, "send", "--wait", "--room", "ops",
                          "reject:no such thing"], capture_output=True, text=True, timeout=20)
    assert run.returncode != 0 and "no such thing" in run.stderr, run
    assert wait_outbox_empty(d)["failed"] == 2


def test_a_send_larger_than_max_payload_fails_and_is_not_sent(make_daemon, make_sio):
    server = make_sio("--max-payload", "8000")
    d = sio_daemon(make_daemon, server)
    wait_ready(d, server)
    replies = send_more(d, "x" * 20000, room="7")
    assert replies[-1].get("error") == "io.chatlink.Daemon.DeliveryFailed", replies
    assert replies[-1]["parameters"]["id"] == replies[0]["parameters"]["id"]
    after = send_many(d, 3, prefix="small")
    wait_delivered(server, after)
    status = wait_outbox_empty(d)
    assert status["failed"] == 1 and status["connects"] == 1, status
    assert all(len(json.dumps(e["args"])) < 8000 for e in server.sends())


# ---------------------------------------------------------------------------- inbound


def test_ten_thousand_server_emits_are_stored_in_order_and_losslessly(make_daemon, make_sio):
    n, size, big_at = 10000, 120, 4321
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    wait_ready(d, server)
    # Subscribe's message events carry the event name.
    with Subscription(d) as sub:
        server.post("emit", {"room": "7", "n": 1, "event": "hello", "tag": "hi"})
        hello = sub.wait_for(lambda e: e["event"] == "message", 10)
    assert hello.get("name") == "hello" and hello["record"]["data"]["event"] == "hello", hello
    server.post("emit", {"room": "7", "n": n, "size": size, "tag": "flood", "big_at": big_at}, timeout=60)
    wait_until(lambda: d.status()["last_seq"] >= n + 1, 60, interval=0.2, message=f"{n} + 1 records")
    records, bad = quiet_store(d, timeout=30)
    assert not bad, bad[:3]
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    got = in_events(records, "message")
    assert [r["data"]["args"][0]["n"] for r in got] == list(range(n))
    for r in got:
        i = r["data"]["args"][0]["n"]
        want = flood_text("flood", i, BIG if i == big_at else size)
        assert r["data"] == {"event": "message", "args": [{"room_id": 7, "n": i, "text": want}]}, f"record {i} altered"
        assert str(r["room"]) == "7"
    assert len(got[big_at]["data"]["args"][0]["text"].encode()) > BIG - 4
    assert d.status()["received"] >= n + 1


def test_a_binary_event_is_stored_with_base64_placeholders(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    wait_ready(d, server)
    blobs = [bytes(range(256)), "한글 🎉".encode(), b""]
    server.post("binary", {"room": "7", "event": "file", "blobs": [base64.b64encode(b).decode() for b in blobs]})
    server.post("emit", {"room": "7", "n": 1, "tag": "after-binary"})
    records = wait_until(lambda: (r := d.records()) and in_events(r, "message") and r, 10,
                         message="the binary event and the next one stored")
    [rec] = in_events(records, "file")
    assert str(rec["room"]) == "7"
    args = rec["data"]["args"]
    assert args[0]["room_id"] == 7
    for num, (blob, arg) in enumerate(zip(blobs, [args[0]["blob"], *args[1:]])):
        assert arg == {"_placeholder": True, "num": num, "base64": base64.b64encode(blob).decode()}, arg
    assert len(args) == 3
    assert in_events(records, "message")[0]["seq"] > rec["seq"]


def test_a_server_requested_ack_is_answered_once_the_record_is_durable(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    sid = wait_ready(d, server)
    server.post("call", {"sid": sid, "event": "ask", "args": [{"room_id": 7, "q": "ready?"}, 2]})
    ack = wait_until(lambda: server.state()["client_acks"], 10, message="the daemon's ack")[0]
    # The ack came after the record reached the disk: it is in the file already.
    records, bad = read_store(d.store_dir)
    [rec] = in_events(records, "ask")
    assert ack["args"] == [] and ack["sid"] == sid
    assert rec["data"]["args"] == [{"room_id": 7, "q": "ready?"}, 2] and str(rec["room"]) == "7"
    assert d.status()["durable_seq"] >= rec["seq"]
    assert d.status()["connects"] == 1


def test_another_namespace_connects_sends_and_receives_there(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server, {"SocketIO": {"Namespace": "/chat", "Auth": '{"team":"blue"}'}})
    sid = wait_ready(d, server, namespace="/chat")
    status = d.status()
    assert status["namespace"] == "/chat" and status["session"] == sid
    [conn] = server.accepted("/chat")
    assert conn["auth"] == {"team": "blue", "token": d.token}
    assert not server.accepted("/"), "connected to / as well"
    acked = send_many(d, 4, prefix="chat")
    wait_delivered(server, acked, namespace="/chat")
    assert not server.sends("/")
    server.post("emit", {"room": "7", "n": 1, "tag": "root", "namespace": "/"})
    server.post("emit", {"room": "7", "n": 3, "tag": "chat", "namespace": "/chat"})
    wait_until(lambda: len(in_events(d.records(), "message")) >= 3, 10, message="the /chat emits stored")
    got = in_events(d.records(), "message")
    assert [r["data"]["args"][0]["text"] for r in got] == [flood_text("chat", i, 120) for i in range(3)]
    server.post("call", {"sid": sid, "namespace": "/chat", "event": "ask", "args": [{"room_id": 7}]})
    ack = wait_until(lambda: server.state()["client_acks"], 10, message="the daemon's ack in /chat")[0]
    assert ack["namespace"] == "/chat" and ack["args"] == []
    wait_outbox_empty(d)


def test_inbound_events_of_every_shape_are_stored_as_sent(make_daemon, make_sio):
    """The record's room is args[0].room_id when args[0] is an object holding it, else null;
    the event name and the arguments are kept exactly."""
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    wait_ready(d, server)
    tricky = "quote \" backslash \\ newline \n tab \t nul \u0000 🎉 한글 \u2028"
    shapes = [
        ("note", ["plain string", 3], None),
        ("알림🔔", [{"room_id": "ops", "x": 1}], "ops"),
        ("bare", [], None),
        ("nested", [{"room_id": 7, "deep": {"a": [1, 2.5, {"b": None}], "t": True}, "s": tricky}], "7"),
        ("second-arg-room", [{"no_room": True}, {"room_id": 7}], None),
        ("list-first", [[{"room_id": 7}]], None),
        ("big-number", [{"room_id": 12345678901234, "n": -0.0001}], "12345678901234"),
    ]
    for event, args, _ in shapes:
        server.post("emit", {"room": "7", "event": event, "args": args})
    server.post("emit", {"room": "7", "n": 1, "tag": "last"})
    records = wait_until(lambda: (r := d.records()) and in_events(r, "message") and r, 10, message="every event stored")
    got = [r for r in records if r["dir"] == "in"][:-1]
    assert [r["data"] for r in got] == [{"event": e, "args": a} for e, a, _ in shapes]
    assert [None if r["room"] is None else str(r["room"]) for r in got] == [room for _, _, room in shapes]
    assert all(r["type"] == "json" for r in got)


GARBAGE = [
    "42not json",
    '42["cut short"',
    '42{"event":"not an array"}',
    "42[1,2]",
    "42[]",
    '43999["an ack for an id never asked"]',
    "49",
    "7unknown engine.io packet",
    "",
    "4",
]


def test_malformed_packets_neither_stop_the_link_nor_lose_what_comes_after(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    wait_ready(d, server)
    server.post("emit", {"room": "7", "n": 2, "tag": "before"})
    assert server.post("raw", {"frames": [{"text": g} for g in GARBAGE]})["sessions"] == 1
    acked = send_many(d, 3, prefix="meanwhile")
    server.post("emit", {"room": "7", "n": 2, "tag": "after"})
    wait_until(lambda: len(in_events(d.records(), "message")) >= 4, 10, message="the valid events around the garbage")
    wait_delivered(server, acked)
    records, bad = quiet_store(d)
    assert not bad
    texts = [r["data"]["args"][0]["text"] for r in in_events(records, "message")]
    assert texts == [flood_text("before", i, 120) for i in range(2)] + [flood_text("after", i, 120) for i in range(2)]
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    status = d.status()
    assert status["state"] == "open" and status["connects"] == 1, status
    # Each bad frame is named in a warning; every one but the stray ack is kept as it came
    # (a record of the raw frame: text, or json where the frame happens to parse).
    warnings = [line for _, line in d.log_lines() if "unexpected frame from the backend" in line]
    assert len(warnings) == len(GARBAGE), "\n".join(warnings)
    assert any("an ack for an id we did not ask for" in w for w in warnings)
    kept = [r for r in records if r["dir"] == "in" and r not in in_events(records, "message")]
    raw = [r["data"] if r["type"] == "text" else json.dumps(r["data"]) for r in kept]
    assert raw == [g for g in GARBAGE if not g.startswith("43")], kept
    assert all(r["room"] is None for r in kept)


def test_a_binary_packet_cut_short_by_a_text_frame_does_not_lose_the_events_after(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    wait_ready(d, server)
    server.post("raw", {"frames": [{"text": '451-["file",{"room_id":7,"blob":{"_placeholder":true,"num":0}}]'}]})
    server.post("emit", {"room": "7", "n": 3, "tag": "after"})
    server.post("raw", {"frames": [{"b64": base64.b64encode(b"stray binary").decode()}]})
    server.post("emit", {"room": "7", "n": 3, "tag": "later"})
    wait_until(lambda: len([r for r in in_events(d.records(), "message")
                            if r["data"]["args"][0]["text"].startswith("later#")]) == 3, 10,
               message="the events after the stray binary frame")
    records, bad = quiet_store(d)
    assert not bad
    texts = [r["data"]["args"][0]["text"] for r in in_events(records, "message")]
    assert texts == [flood_text("after", i, 120) for i in range(3)] + [flood_text("later", i, 120) for i in range(3)]
    warnings = [line for _, line in d.log_lines() if "unexpected frame from the backend" in line]
    assert len(warnings) == 2 and "cut short" in warnings[0] and "binary frame" in warnings[1], warnings
    assert d.status()["state"] == "open"


def test_a_reconnect_resends_the_unconfirmed_in_order_and_stores_each_once(make_daemon, make_sio):
    hi = 1.0
    server = make_sio()
    d = sio_daemon(make_daemon, server, {"Backend": {"ReconnectMinSec": 0.2, "ReconnectMaxSec": hi}})
    first = wait_ready(d, server)
    server.post("config", {"hold_acks": True})
    acked = send_many(d, 10, prefix="held")
    wait_until(lambda: len(server.sends()) >= 10, 10, message="the 10 sends at the server, unacknowledged")
    server.post("disconnect", {"namespace": "/"})
    second = wait_ready(d, server, min_connects=2, timeout=hi + 5)
    wait_until(lambda: len(server.sends()) >= 20, 10, message="the 10 sent again on the new session")
    server.post("config", {"hold_acks": False})  # the old session's acks go nowhere
    assert [sent_payload(e)["client_id"] for e in server.sends() if e["sid"] == second] == [a["id"] for a in acked]
    assert [sent_payload(e)["client_id"] for e in server.sends() if e["sid"] == first] == [a["id"] for a in acked]
    status = wait_outbox_empty(d)
    assert status["confirmed"] == 10, status
    wait_until(lambda: len([r for r in d.records() if r["dir"] == "out"]) >= 10, 5, message="the out records")
    time.sleep(0.3)
    outs = [r["id"] for r in d.records() if r["dir"] == "out"]
    assert outs == [a["id"] for a in acked], "a message confirmed once was stored twice, or out of order"


# ---------------------------------------------------------------------------- faults


def test_a_server_initiated_disconnect_is_reported_and_reconnected_after_reconnect_max(make_daemon, make_sio):
    hi = 1.5
    server = make_sio()
    d = sio_daemon(make_daemon, server, {"Backend": {"ReconnectMinSec": 0.2, "ReconnectMaxSec": hi}})
    first = wait_ready(d, server)
    t0 = time.monotonic()
    assert server.post("disconnect", {"namespace": "/"})["sids"] == [first]
    s = wait_until(lambda: (s := d.status())["state"] != "open" and s, 5, message="the daemon noticing the 41")
    assert "disconnected" in (s.get("last_error") or ""), s
    acked = send_many(d, 5, prefix="while-out")
    second = wait_ready(d, server, min_connects=2, timeout=hi + 5)
    assert second != first
    conns = server.accepted()
    assert conns[-1]["sid"] == second and conns[-1]["t"] - t0 >= hi - 0.05, "reconnected faster than ReconnectMaxSec"
    wait_delivered(server, acked)
    assert all(e["sid"] == second for e in server.sends())
    assert d.status()["session"] == second


def test_a_server_restart_rejoins_rooms_and_delivers_what_was_queued_while_down(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    wait_ready(d, server)
    before = send_many(d, 10, prefix="before")
    wait_delivered(server, before)
    wait_outbox_empty(d)
    server.stop(signal.SIGKILL)
    down_status = wait_until(lambda: (s := d.status())["state"] != "open" and s, 10,
                             message="the daemon noticing the server gone")
    assert down_status.get("session") is None, f"a session while disconnected: {down_status}"
    down = send_many(d, 20, prefix="down")
    assert d.status()["outbox"] == 20
    server.start()  # same port, a new process: nothing recorded yet
    server.post("config", {"token": d.token})
    sid = wait_ready(d, server, min_connects=2, timeout=15)
    assert sorted(str(sent_payload(e)["room_id"]) for e in server.events("join-room")) == ["7", "ops"]
    wait_delivered(server, down)
    assert all(e["sid"] == sid for e in server.sends())
    status = wait_outbox_empty(d)
    assert status["confirmed"] == 30 and status["session"] == sid


def test_a_server_that_stops_pinging_is_detected_in_time_and_left(make_daemon, make_sio):
    interval, timeout = 1, 1
    server = make_sio("--ping-interval", str(interval), "--ping-timeout", str(timeout))
    d = sio_daemon(make_daemon, server)
    first = wait_ready(d, server)
    # Healthy: the daemon answers every ping, or the server would close the session.
    time.sleep(3)
    state = server.state()
    assert len(state["pings"]) >= 2 and state["eio"][0]["closed"] is None, state["eio"]
    assert d.status()["connects"] == 1
    old = state["eio"][0]["eio_sid"]
    server.post("silence", {"on": True})
    t0 = time.monotonic()
    state = wait_until(lambda: (s := server.state())["eio"][0]["closed"] and s, interval + timeout + 5,
                       message="the daemon leaving the silent session")
    last_ping = max(p["t"] for p in state["pings"] if p["eio_sid"] == old)
    assert last_ping <= t0 + 0.05
    closed = state["eio"][0]["closed"]
    assert closed - last_ping <= interval + timeout + SLACK, f"dead peer detected after {closed - last_ping:.2f} s"
    assert closed - last_ping >= interval + timeout - 0.1, f"left a live session after {closed - last_ping:.2f} s"
    # The new session is pinged as usual and stays up.
    second = wait_ready(d, server, min_connects=2, timeout=10)
    assert second != first
    acked = send_many(d, 3, prefix="after")
    wait_delivered(server, acked)
    new = server.state()["eio"][-1]["eio_sid"]
    wait_until(lambda: sum(p["eio_sid"] == new for p in server.state()["pings"]) >= 2, 5, message="pings on the new session")
    assert d.status()["connects"] == 2


def store_bytes(store_dir: Path) -> int:
    total = 0
    for p in store_dir.glob("messages.jsonl*"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            pass
    return total


def test_kill_9_during_a_flood_and_sends_loses_nothing_acknowledged_and_tears_no_line(make_daemon, make_sio):
    rounds, flood = 3, 10000
    rng = random.Random(5150)
    server = make_sio()
    d = sio_daemon(make_daemon, server, {"Store": {"MaxFileSize": "1M", "MaxFiles": "1000"}}, start=False)
    acked: list[dict] = []
    mid_flood = 0
    kept = 0
    for round in range(rounds):
        d.start()
        wait_ready(d, server, min_connects=1, timeout=15)
        records, bad = quiet_store(d, timeout=30)
        assert not bad, f"round {round}: torn or corrupt lines after restart: {bad[:3]}"
        seqs = [r["seq"] for r in records]
        assert seqs == list(range(1, len(seqs) + 1)), f"round {round}: a seq gap or repeat"
        assert len(seqs) >= kept, f"round {round}: records that were on disk are gone"
        kept = len(seqs)

        sender = Sender(d.socket_path, f"r{round}", suffix=" 한글 🎉")
        sender.start()
        wait_until(lambda: len(sender.acked) >= 3, 5, message="the first acknowledged sends")
        start_size = store_bytes(d.store_dir)
        server.post("emit", {"room": "7", "n": flood, "size": 100, "tag": f"k{round}", "wait": False})
        grow = rng.uniform(0.1, 0.6) * flood * 250
        wait_until(lambda: store_bytes(d.store_dir) - start_size >= grow, 30, interval=0.002,
                   message=f"the store growing by {grow:.0f} bytes (round {round})")
        d.kill()
        sender.stop.set()
        sender.join(10)
        acked += sender.acked
        records, _ = read_store(d.store_dir)
        got = [r["data"]["args"][0]["n"] for r in in_events(records, "message")
               if str(r["data"]["args"][0].get("text", "")).startswith(f"k{round}#")]
        assert got == list(range(len(got))), f"round {round}: inbound events stored out of order or with a hole"
        if 0 < len(got) < flood:
            mid_flood += 1
        wait_until(lambda: all(f["done"] for f in server.state()["floods"]), 30, message="the flood emitted")

    d.start()
    wait_ready(d, server, timeout=15)
    wait_delivered(server, acked, timeout=30)
    records, bad = quiet_store(d, timeout=30)
    assert not bad, f"torn or corrupt lines after the last restart: {bad[:3]}"
    seqs = [r["seq"] for r in records]
    assert seqs == list(range(1, len(seqs) + 1)), "a seq gap or repeat"
    assert len(seqs) >= kept
    assert mid_flood >= 1, f"no kill landed in the middle of a flood ({rounds} rounds)"
    assert len(acked) >= 3 * rounds
    print(f"{len(seqs)} records, {len(acked)} acknowledged sends, {mid_flood} kills mid-flood")


def test_sends_written_but_unacknowledged_at_a_kill_9_are_sent_again(make_daemon, make_sio):
    server = make_sio()
    d = sio_daemon(make_daemon, server)
    first = wait_ready(d, server)
    server.post("config", {"hold_acks": True})
    acked = send_many(d, 20, prefix="held")
    wait_until(lambda: len(server.sends()) >= 20, 10, message="the 20 sends at the server, unacknowledged")
    assert d.status()["confirmed"] == 0
    d.kill()
    server.post("config", {"hold_acks": False})  # the acks go to a dead session
    wait_until(lambda: not server.state()["connected"], 5, message="the old session gone")
    d.start()
    second = wait_ready(d, server)
    assert second != first
    wait_delivered(server, acked)
    again = [sent_payload(e)["client_id"] for e in server.sends() if e["sid"] == second]
    assert again[:20] == [a["id"] for a in acked], "not resent in order after the restart"
    status = wait_outbox_empty(d)
    assert status["confirmed"] == 20 and status["failed"] == 0
    assert len([r for r in d.records() if r["dir"] == "out"]) == 20
