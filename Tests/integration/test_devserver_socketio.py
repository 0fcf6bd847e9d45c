"""chatlink-devserver --protocol socketio against an independent Socket.IO implementation:
python-socketio's AsyncClient (over aiohttp), WebSocket transport. Then chatlinkd's
Protocol=socketio against the devserver, end to end.

What the devserver promises (its --help): Engine.IO 4 / Socket.IO 5 at /socket.io/, the open
packet with --ping-interval/--ping-timeout, a ping every pingInterval and a drop when one goes
unanswered for pingTimeout, namespace connects checked against --token-file (the bearer header
or auth.token; refused with {"message":"unauthorized"}), join-room/leave-room/send-message
acknowledged with [{"ok":true}] (a "reject:" message with [{"error":…}]), broadcast as
["message",{…}] to the room's members and the sender, rooms per namespace, chatter and a
numbered flood.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BIN, Daemon, raw_call, wait_until

import socketio  # noqa: E402  (python-socketio, from Tests/requirements.txt)
from websockets.asyncio.client import connect as ws_connect  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

pytestmark = pytest.mark.timeout(60)

DEVSERVER = BIN / "chatlink-devserver"


class DevServer:
    """chatlink-devserver --protocol socketio as a subprocess on a port of its choosing."""

    def __init__(self, workdir: Path, *args: str, token: bool = True):
        self.token = "tok-" + secrets.token_hex(12)
        self.token_file = workdir / "devserver-token"
        self.token_file.write_text(self.token + "\n")
        self.log_path = workdir / "devserver.log"
        command = [str(DEVSERVER), "--port", "0", "--protocol", "socketio", *args]
        if token:
            command += ["--token-file", str(self.token_file)]
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True)
        # The first line names the endpoint: "chatlink-devserver listening on ws://HOST:PORT/socket.io/".
        line = self.proc.stdout.readline()
        match = re.search(r"listening on ws://[^ ]+:(\d+)(/\S*)", line)
        assert match, f"no endpoint line from the devserver: {line!r}\n{self.log()}"
        assert match.group(2) == "/socket.io/", line
        self.port = int(match.group(1))
        self.url = f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stdout.close()


@pytest.fixture
def devserver(tmp_path):
    """devserver(*args, token=True) -> DevServer; all stopped at teardown, their logs printed."""
    started: list[DevServer] = []

    def start(*args: str, token: bool = True) -> DevServer:
        server = DevServer(tmp_path, *map(str, args), token=token)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
        print(f"--- devserver log\n{server.log()[-10000:]}")


class Client:
    """A python-socketio AsyncClient recording the "message" and "error" events and the
    connect errors of its namespaces."""

    def __init__(self, namespaces: tuple[str, ...] = ("/",)):
        self.sio = socketio.AsyncClient(reconnection=False)
        self.namespaces = list(namespaces)
        self.messages: dict[str, list[dict]] = {ns: [] for ns in namespaces}
        self.errors: list[dict] = []
        self.connect_errors: list = []
        for ns in namespaces:
            self.sio.on("message", self._recorder(self.messages[ns]), namespace=ns)
            self.sio.on("error", self._recorder(self.errors), namespace=ns)
            self.sio.on("connect_error", self._recorder(self.connect_errors), namespace=ns)

    @staticmethod
    def _recorder(into: list):
        async def record(data=None):
            into.append(data)
        return record

    async def connect(self, server: DevServer, token: str | None = None, headers: dict | None = None) -> "Client":
        await self.sio.connect(
            server.url, transports=["websocket"], auth={"token": token} if token else None,
            headers=headers or {}, namespaces=self.namespaces, wait_timeout=5)
        return self

    async def call(self, event: str, data: dict, namespace: str = "/"):
        return await self.sio.call(event, data, namespace=namespace, timeout=5)

    async def wait(self, predicate, timeout: float = 5, what: str = "a condition"):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        await self.sio.disconnect()


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 45))


# ---------------------------------------------------------------------------- the endpoint


@pytest.mark.parametrize("target, says", [
    ("/", "/socket.io/?EIO=4&transport=websocket"),
    ("/chat?EIO=4&transport=websocket", "not /chat"),
    ("/socket.io/?EIO=3&transport=websocket", "only EIO=4"),
    ("/socket.io/?transport=websocket", "no EIO"),
    ("/socket.io/?EIO=4&transport=polling", "only transport=websocket"),
    ("/socket.io/?EIO=4&transport=websocket&sid=abc", "no polling session"),
])
def test_other_paths_and_versions_are_refused_with_400_and_a_reason(devserver, target, says):
    server = devserver()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", target, headers={"Upgrade": "websocket", "Connection": "Upgrade"})
    response = conn.getresponse()
    body = response.read().decode()
    conn.close()
    assert response.status == 400, (response.status, body)
    assert response.getheader("Content-Type", "").startswith("text/plain")
    assert says in body, body


def test_the_open_packet_and_the_heartbeat(devserver):
    """The first frame is the open packet with the configured figures; pings come every
    pingInterval; a client that answers stays, one that does not is dropped after pingTimeout."""
    server = devserver("--ping-interval", 300, "--ping-timeout", 400, "--max-payload", 5000)

    async def scenario():
        url = f"ws://127.0.0.1:{server.port}/socket.io/?EIO=4&transport=websocket"
        async with ws_connect(url, additional_headers={"Authorization": f"Bearer {server.token}"}) as ws:
            first = await ws.recv()
            assert first.startswith("0"), first
            opened = json.loads(first[1:])
            assert opened["upgrades"] == [] and opened["sid"]
            assert (opened["pingInterval"], opened["pingTimeout"], opened["maxPayload"]) == (300, 400, 5000)
            start = time.monotonic()
            for _ in range(3):  # answered pings keep coming, about pingInterval apart
                assert await asyncio.wait_for(ws.recv(), 2) == "2"
                await ws.send("3")
            assert 0.6 < time.monotonic() - start < 2.5
            assert await asyncio.wait_for(ws.recv(), 2) == "2"
            silent = time.monotonic()  # this one goes unanswered
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 3)
            assert 0.3 <= time.monotonic() - silent < 1.5

        # python-socketio answers the pings itself, and stays connected well past pingTimeout.
        client = await Client().connect(server, token=server.token)
        assert client.sio.eio.ping_interval == 0.3 and client.sio.eio.ping_timeout == 0.4
        await asyncio.sleep(2)
        assert client.sio.connected
        assert await client.call("join-room", {"room_id": 7}) == {"ok": True}
        await client.close()

    run(scenario())
    assert "no pong within pingTimeout" in server.log()


# ---------------------------------------------------------------------------- namespace connect


def test_the_token_is_checked_at_the_namespace_connect(devserver):
    server = devserver()

    async def scenario():
        for token in (None, "wrong-" + server.token):
            client = Client()
            with pytest.raises(socketio.exceptions.ConnectionError):
                await client.connect(server, token=token)
            assert client.connect_errors == [{"message": "unauthorized"}], client.connect_errors
            await client.close()
        by_auth = await Client().connect(server, token=server.token)
        assert by_auth.sio.get_sid("/")
        assert by_auth.sio.get_sid("/") != by_auth.sio.sid, "the namespace has its own sid"
        by_header = await Client().connect(server, headers={"Authorization": f"Bearer {server.token}"})
        assert by_header.sio.get_sid("/")
        await by_auth.close()
        await by_header.close()

    run(scenario())


def test_without_a_token_file_anyone_connects(devserver):
    server = devserver(token=False)

    async def scenario():
        client = await Client().connect(server)
        assert await client.call("join-room", {"room_id": "ops"}) == {"ok": True}
        await client.close()

    run(scenario())


# ---------------------------------------------------------------------------- events


def test_join_send_with_ack_and_the_broadcast(devserver):
    server = devserver()

    async def scenario():
        alice, bob, carol = [await Client().connect(server, token=server.token) for _ in range(3)]
        assert await alice.call("join-room", {"room_id": 7}) == {"ok": True}
        assert await bob.call("join-room", {"room_id": "7"}) == {"ok": True}
        assert await carol.call("join-room", {"room_id": "ops"}) == {"ok": True}

        sent = {"room_id": 7, "message": "hello, room 7", "sender": "alice", "count": 1, "client_id": "c-1"}
        assert await alice.call("send-message", sent) == {"ok": True}
        for member in (alice, bob):  # the sender included
            await member.wait(lambda m=member: m.messages["/"], what="the broadcast")
            got = member.messages["/"][0]
            assert {k: got[k] for k in ("room_id", "message", "sender", "client_id")} == {
                "room_id": 7, "message": "hello, room 7", "sender": "alice", "client_id": "c-1"}
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", got["time"]), got

        # A sender outside the room still gets its own message back; leaving stops delivery.
        assert await bob.call("leave-room", {"room_id": 7}) == {"ok": True}
        assert await carol.call("send-message", {"room_id": 7, "message": "from outside", "sender": "carol"}) == {"ok": True}
        await alice.wait(lambda: len(alice.messages["/"]) == 2, what="carol's message at alice")
        await carol.wait(lambda: any(m["room_id"] == 7 for m in carol.messages["/"]), what="carol's echo")
        await asyncio.sleep(0.3)
        assert len(bob.messages["/"]) == 1, bob.messages
        assert not any(m["room_id"] == "ops" for m in alice.messages["/"])
        for client in (alice, bob, carol):
            await client.close()

    run(scenario())


def test_a_join_with_since_replays_what_came_after_it_and_says_when_the_history_is_too_short(devserver):
    """The catch-up extension on the Socket.IO wire: ids on every room message, a join-room
    with "since" replayed after it, a history-truncated event when the history (--history)
    no longer reaches back."""
    server = devserver("--history", 5)

    async def scenario():
        alice = await Client().connect(server, token=server.token)
        for k in range(8):
            assert await alice.call("send-message", {"room_id": 7, "message": f"m{k}", "sender": "alice"}) == {"ok": True}
        await alice.wait(lambda: len(alice.messages["/"]) == 8, what="alice's 8 echoes")
        ids = [m["msg_id"] for m in alice.messages["/"]]
        run_id = ids[0].rsplit("-", 1)[0]
        assert ids == [f"{run_id}-{n}" for n in range(1, 9)], ids

        bob, carol, dave = Client(), Client(), Client()
        truncations: list = []
        carol.sio.on("history-truncated", Client._recorder(truncations), namespace="/")
        for client in (bob, carol, dave):
            await client.connect(server, token=server.token)
        assert await bob.call("join-room", {"room_id": 7, "since": ids[5]}) == {"ok": True}
        await bob.wait(lambda: len(bob.messages["/"]) == 2, what="bob's replay")
        assert [m["msg_id"] for m in bob.messages["/"]] == ids[6:]
        assert await carol.call("join-room", {"room_id": "7", "since": ids[0]}) == {"ok": True}
        await carol.wait(lambda: len(carol.messages["/"]) == 5, what="carol's replay")
        assert truncations == [{"room_id": 7, "since": ids[0], "first": ids[3]}]
        assert [m["msg_id"] for m in carol.messages["/"]] == ids[3:]
        assert await dave.call("join-room", {"room_id": 7}) == {"ok": True}
        assert await alice.call("send-message", {"room_id": 7, "message": "live", "sender": "alice"}) == {"ok": True}
        for client in (bob, carol, dave):
            await client.wait(lambda c=client: c.messages["/"] and c.messages["/"][-1]["message"] == "live",
                              what="the live message")
        assert [m["msg_id"] for m in dave.messages["/"]] == [f"{run_id}-9"], "no since: live messages only"
        for client in (alice, bob, carol, dave):
            await client.close()

    run(scenario())


def test_a_reject_message_is_acknowledged_with_an_error_and_not_broadcast(devserver):
    server = devserver()

    async def scenario():
        client = await Client().connect(server, token=server.token)
        assert await client.call("join-room", {"room_id": 7}) == {"ok": True}
        answer = await client.call("send-message", {"room_id": 7, "message": "reject: please", "sender": "x"})
        assert answer == {"error": "rejected by the devserver"}
        bad = await client.call("send-message", {"message": "no room"})
        assert "room_id" in bad["error"], bad
        unknown = await client.call("dance", {"room_id": 7})
        assert "unknown event" in unknown["error"], unknown
        # Without an ack id the client hears of it as an "error" event.
        await client.sio.emit("send-message", {"room_id": 7, "message": "reject: again"})
        await client.wait(lambda: client.errors, what="the error event")
        assert client.errors == [{"message": "rejected by the devserver"}]
        await asyncio.sleep(0.2)
        assert client.messages["/"] == []
        await client.close()

    run(scenario())


def test_rooms_belong_to_a_namespace(devserver):
    server = devserver()

    async def scenario():
        admin = await Client(("/admin",)).connect(server, token=server.token)
        main = await Client().connect(server, token=server.token)
        assert await admin.call("join-room", {"room_id": 7}, namespace="/admin") == {"ok": True}
        assert await main.call("join-room", {"room_id": 7}) == {"ok": True}
        answer = await admin.call("send-message", {"room_id": 7, "message": "admins only"}, namespace="/admin")
        assert answer == {"ok": True}
        await admin.wait(lambda: admin.messages["/admin"], what="the /admin broadcast")
        assert admin.messages["/admin"][0]["message"] == "admins only"
        await asyncio.sleep(0.3)
        assert main.messages["/"] == []
        await admin.close()
        await main.close()

    run(scenario())


def test_chatter_posts_to_joined_rooms(devserver):
    server = devserver("--chatter", "0.2")

    async def scenario():
        client = await Client().connect(server, token=server.token)
        assert await client.call("join-room", {"room_id": "ops"}) == {"ok": True}
        await client.wait(lambda: client.messages["/"], what="a chatter line")
        line = client.messages["/"][0]
        assert line["room_id"] == "ops" and line["sender"] == "demo-bot" and line["message"]
        await client.close()

    run(scenario())


def test_the_flood_arrives_complete_and_in_order(devserver):
    n, size = 3000, 300
    server = devserver("--flood", n, "--flood-size", size, "--flood-room", 9)

    async def scenario():
        client = await Client().connect(server, token=server.token)
        await client.wait(lambda: len(client.messages["/"]) >= n, timeout=30, what=f"{n} flood messages")
        messages = client.messages["/"]
        assert [m["count"] for m in messages] == list(range(1, n + 1))
        assert all(m["room_id"] == 9 and m["sender"] == "flood" for m in messages)
        frame = '42["message",' + json.dumps(messages[0], separators=(",", ":")) + "]"
        assert 0.85 * size <= len(frame) <= 1.15 * size, len(frame)
        # The connection is still usable after the flood.
        assert await client.call("join-room", {"room_id": 9}) == {"ok": True}
        await client.close()

    run(scenario())


# ---------------------------------------------------------------------------- chatlinkd


def test_chatlinkd_sends_confirms_fails_and_receives_through_the_devserver(devserver, tmp_path):
    server = devserver("--ping-interval", 500, "--ping-timeout", 1000)
    daemon = Daemon(tmp_path / "d", f"ws://127.0.0.1:{server.port}/", {
        "Backend": {"Protocol": "socketio", "TokenFile": str(server.token_file)},
    })
    try:
        daemon.start()
        status = daemon.wait_state("open")
        assert status["protocol"] == "socketio" and status["session"] and status["namespace"] == "/"

        async def scenario():
            watcher = await Client().connect(server, token=server.token)
            assert await watcher.call("join-room", {"room_id": 7}) == {"ok": True}
            replies = await asyncio.to_thread(
                raw_call, daemon.socket_path, "io.chatlink.Daemon.Send",
                {"room": "7", "text": "hello from chatlinkd"}, True)
            assert [r.get("parameters", {}).get("state") for r in replies][-1] == "confirmed", replies
            sent_id = replies[0]["parameters"]["id"]
            await watcher.wait(lambda: watcher.messages["/"], what="chatlinkd's message")
            got = watcher.messages["/"][0]
            assert (got["room_id"], got["message"], got["sender"], got["client_id"]) == (
                7, "hello from chatlinkd", "it-bot", sent_id)

            failed = await asyncio.to_thread(
                raw_call, daemon.socket_path, "io.chatlink.Daemon.Send",
                {"room": "7", "text": "reject: this one"}, True)
            assert failed[-1]["error"] == "io.chatlink.Daemon.DeliveryFailed", failed
            assert failed[-1]["parameters"]["reason"] == "rejected by the devserver"

            # Messages from others reach the daemon's store, as Socket.IO event records.
            assert await watcher.call("send-message", {"room_id": 7, "message": "to the daemon"}) == {"ok": True}
            await watcher.close()
            return sent_id

        sent_id = run(scenario())

        def stored():
            records = daemon.records()
            texts = {(r["dir"], r["data"]["args"][0]["message"]) for r in records if r.get("type") == "json"}
            return records if {("out", "hello from chatlinkd"), ("in", "to the daemon")} <= texts else None

        records = wait_until(stored, 10, message="the sent and the received message in the store")
        out = next(r for r in records if r["dir"] == "out")
        assert out["id"] == sent_id and out["room"] == 7 and out["data"]["event"] == "send-message"
        assert not any("reject:" in json.dumps(r) for r in records if r["dir"] == "out")

        time.sleep(2)  # several heartbeats: still the first connection
        status = daemon.status()
        assert status["state"] == "open" and status["connects"] == 1 and status["failed"] == 1, status
    finally:
        daemon.stop()
        daemon.cleanup()
        if daemon.log_path.exists():
            print(f"--- chatlinkd log\n{daemon.log_path.read_text()[-10000:]}")
