"""A Socket.IO 5 / Engine.IO 4 server for chatlinkd's tests: python-socketio's AsyncServer on
aiohttp, an implementation independent of chatlinkd, run as a subprocess on 127.0.0.1.

    sio_server.py [--port 0] [--path socket.io] [--token T] [--refuse false|raise]
                  [--ping-interval 1] [--ping-timeout 1] [--max-payload 1000000]
                  [--reject-prefix reject:]

When it listens it prints one JSON line, {"port": P}, on stdout; its log goes to stderr.
SIGTERM (or SIGINT) ends it at once, as a crash would: every TCP connection is closed by the
kernel, no Socket.IO or Engine.IO goodbye is sent.

Namespaces "/" and "/chat" are served (any other is refused by python-socketio with
`44/ns,"Unable to connect"`). Per namespace, the client events are:

    join-room {"room_id": R}     enter_room(sid, str(R)); ack {"ok": true}, or
                                 {"error": "no such room"} (not entered) for the rooms in
                                 the reject_rooms config
    leave-room {"room_id": R}    leave_room(sid, str(R)); ack {"ok": true}
    send-message {…}             recorded; ack {"ok": true}, or {"error": "<rest>"} when its
                                 "message" starts with the reject prefix (the rest after it,
                                 or "rejected"); then broadcast as "message" to the room,
                                 the sender skipped
    any other event              recorded; no ack value (an empty ack when one is asked for)

connect: with a token configured, only `auth["token"] == token` is accepted; otherwise the
handler returns False (--refuse false: `44{"message":"Connection rejected by server"}`) or
raises socketio's ConnectionRefusedError("unauthorized") (--refuse raise:
`44{"message":"unauthorized"}`). Without a token every client is accepted. The auth object,
the Authorization header, path and query of every attempt are recorded.

Pings: the Engine.IO ping/pong of python-engineio, with --ping-interval and --ping-timeout
(whole seconds: Engine.IO's handshake carries int(interval) * 1000). Two changes to
python-engineio (module level, before the server starts): its read and write waits have no
timeout of their own, so a silent client is never dropped for silence (a client that leaves
a ping unanswered still is, by python-engineio's ping timeout check); and its ping task
skips the sessions that /control/silence named, without closing them: no `2` goes out and
the TCP connection stays open until the client gives up on it.

Control API: HTTP with JSON bodies on the same port, under /control/. Times are
time.monotonic() of this process (CLOCK_MONOTONIC, comparable with the tests' own).

    GET  /control/state             everything but the events:
         {"config", "eio": [{eio_sid, opened, closed, close_reason, path, query,
                             authorization}],
          "connects": [{t, eio_sid, sid, namespace, auth, authorization, path, query,
                        accepted, refusal}],
          "connected": [{sid, namespace, eio_sid}],
          "disconnects": [{t, sid, namespace, reason}],
          "rooms": {namespace: {room: [sid, …]}},
          "client_acks": [{t, id, sid, namespace, event, args}],
          "pings": [{t, eio_sid}], "silenced": [eio_sid, …],
          "floods": [{id, n, emitted, done, started, ended}], "events": <count>}
    GET  /control/events?since=K    {"events": events[K:]}: every client event in arrival
                                    order, duplicates kept: {t, sid, namespace, event, args,
                                    ack_id (the client's ack id, null when it asked for none)}
    POST /control/config            {"token", "refuse", "reject_prefix", "hold_acks",
                                    "connect_delay", "reject_rooms": [room, ...]}: sets the
                                    given ones (token null: accept everyone). With
                                    hold_acks, send-message acks wait until hold_acks is set
                                    false again (the events are recorded at once);
                                    connect_delay (seconds) delays every answer to a
                                    namespace connect. Replies the whole config
    POST /control/emit              {"room": "7", "namespace": "/", "event": "message",
                                    "n": 10000, "size": 120, "tag": "f", "big_at": -1,
                                    "wait": true}: emits n events {"room_id": R, "n": i,
                                    "text": flood_text(tag, i, size)} to the room as fast as
                                    python-socketio takes them (R is the room as a number
                                    when it is one); the i == big_at one has a 1 MiB text
                                    (flood_text(tag, i, BIG)). Replies {"id"} (wait false)
                                    or the flood's entry once all are emitted. With "args":
                                    [...] instead, one event with exactly those arguments
    POST /control/binary            {"room", "namespace", "event": "file", "blobs": [b64, …]}:
                                    emits ({"room_id": R, "blob": blob0}, blob1, …) as one
                                    binary event (`45<n>-…` and n binary frames)
    POST /control/call              {"sid", "namespace", "event", "args": [...]}: emits to one
                                    client asking for an ack; the ack lands in client_acks.
                                    Replies {"id": <our number for it>}
    POST /control/disconnect        {"sid": optional, "namespace": "/"}: server-initiated
                                    disconnect (`41`) of that client, or of every client of
                                    the namespace. Replies {"sids": [...]}
    POST /control/raw               {"frames": [{"text": "..."} | {"b64": "..."}, ...]}:
                                    those WebSocket frames, verbatim (no Engine.IO prefix
                                    added), to every open Engine.IO session, in order with
                                    its other packets. Replies {"sessions": n}
    POST /control/silence           {"on": true}: stop pinging every open Engine.IO session
                                    (later ones are pinged as usual); {"on": false} resumes.
                                    Replies {"silenced": [...]}

Test texts come from flood_text(), importable from this module without starting anything.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextvars
import itertools
import json
import os
import signal
import sys
import time
from typing import Any

BIG = 1024 * 1024
_FILLER = "한국어 텍스트 😀 ✓ émoji 🚀 가나다라 "


def flood_text(tag: str, i: int, size: int) -> str:
    """The text of flood event i: Hangul and emoji, at most `size` UTF-8 bytes (whole
    characters), the same every time."""
    head = f"{tag}#{i} 안녕하세요 🎉 "
    raw = (head + _FILLER * (size // len(_FILLER.encode()) + 1)).encode()
    return raw[: max(size, len(head.encode()))].decode("utf-8", "ignore")


def room_value(room: str) -> Any:
    """The room_id chatlinkd sends for a room name: a number when it is one."""
    return int(room) if room.isdigit() else room


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"_bytes_b64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


# ---------------------------------------------------------------------------- python-engineio changes

# The ack id of the client event being handled (set before its handler's task starts).
ACK_ID: contextvars.ContextVar[int | None] = contextvars.ContextVar("ack_id", default=None)
SILENCED: set[str] = set()
PINGS: list[dict] = []


def _patch_engineio() -> None:
    """No read/write inactivity timeout; pings skipped for silenced sessions (see above)."""
    import engineio.async_socket as eio_socket
    from engineio import packet as eio_packet

    class _AsyncioWithoutWaitTimeouts:
        """engineio.async_socket's view of asyncio: wait_for never times out."""

        def __getattr__(self, name: str) -> Any:
            return getattr(asyncio, name)

        @staticmethod
        async def wait_for(aw, timeout=None):  # noqa: ARG004 - the timeout is what is dropped
            return await asyncio.wait_for(aw, None)

    eio_socket.asyncio = _AsyncioWithoutWaitTimeouts()

    async def _send_ping(self) -> None:
        # python-engineio's AsyncSocket._send_ping, waiting while the session is silenced.
        await asyncio.sleep(self.server.ping_interval)
        while self.sid in SILENCED and not self.closing and not self.closed:
            await asyncio.sleep(0.02)
        if not self.closing and not self.closed:
            self.last_ping = time.time()
            PINGS.append({"t": time.monotonic(), "eio_sid": self.sid})
            await self.send(eio_packet.Packet(eio_packet.PING))

    eio_socket.AsyncSocket._send_ping = _send_ping


class RawFrame:
    """Stands in for an engineio Packet in a session's send queue: its frame, verbatim."""

    def __init__(self, frame: str | bytes):
        self.frame = frame

    def encode(self) -> str | bytes:
        return self.frame


# ---------------------------------------------------------------------------- the server


NAMESPACES = ("/", "/chat")


class Peer:
    """The server's state and its control API."""

    def __init__(self, args: argparse.Namespace):
        import socketio

        self.socketio = socketio
        self.config: dict[str, Any] = {
            "token": args.token,
            "refuse": args.refuse,
            "reject_prefix": args.reject_prefix,
            "hold_acks": False,
            "connect_delay": 0,
            "reject_rooms": [],
            "ping_interval": args.ping_interval,
            "ping_timeout": args.ping_timeout,
            "max_payload": args.max_payload,
            "path": args.path,
        }
        self.released = asyncio.Event()
        self.released.set()
        self.eio: dict[str, dict] = {}
        self.connects: list[dict] = []
        self.connected: dict[tuple[str, str], dict] = {}
        self.disconnects: list[dict] = []
        self.events: list[dict] = []
        self.client_acks: list[dict] = []
        self.floods: list[dict] = []
        self.call_ids = itertools.count(1)
        self.tasks: set[asyncio.Task] = set()
        peer = self

        class Server(socketio.AsyncServer):
            async def _handle_eio_connect(self, eio_sid, environ):
                peer.eio[eio_sid] = {
                    "eio_sid": eio_sid, "opened": time.monotonic(), "closed": None, "close_reason": None,
                    "path": environ.get("PATH_INFO"), "query": environ.get("QUERY_STRING"),
                    "authorization": environ.get("HTTP_AUTHORIZATION"),
                }
                return await super()._handle_eio_connect(eio_sid, environ)

            async def _handle_event(self, eio_sid, namespace, id, data):
                ACK_ID.set(id)  # copied into the handler's task, which starts from here
                return await super()._handle_event(eio_sid, namespace, id, data)

            async def _handle_eio_disconnect(self, eio_sid, reason):
                entry = peer.eio.get(eio_sid)
                if entry is not None:
                    entry["closed"], entry["close_reason"] = time.monotonic(), str(reason)
                SILENCED.discard(eio_sid)
                return await super()._handle_eio_disconnect(eio_sid, reason)

        self.sio = Server(
            # async_handlers: each event in a task of its own (started in arrival order, and
            # recorded before its first await), so a held ack blocks neither the reads nor
            # the pongs behind it.
            async_mode="aiohttp", logger=False, engineio_logger=False, async_handlers=True,
            ping_interval=args.ping_interval, ping_timeout=args.ping_timeout,
            max_http_buffer_size=args.max_payload, cors_allowed_origins="*",
        )
        for ns in NAMESPACES:
            self._register(ns)

    # -- Socket.IO handlers

    def _register(self, ns: str) -> None:
        sio = self.sio
        refused = self.socketio.exceptions.ConnectionRefusedError

        async def connect(sid, environ, auth=None):
            if self.config["connect_delay"]:
                await asyncio.sleep(float(self.config["connect_delay"]))
            token = self.config["token"]
            ok = token is None or (isinstance(auth, dict) and auth.get("token") == token)
            eio_sid = sio.manager.eio_sid_from_sid(sid, ns)
            entry = {
                "t": time.monotonic(), "eio_sid": eio_sid, "sid": sid, "namespace": ns, "auth": auth,
                "authorization": environ.get("HTTP_AUTHORIZATION"), "path": environ.get("PATH_INFO"),
                "query": environ.get("QUERY_STRING"), "accepted": ok, "refusal": None,
            }
            self.connects.append(entry)
            if ok:
                self.connected[(ns, sid)] = {"sid": sid, "namespace": ns, "eio_sid": eio_sid}
                return True
            entry["refusal"] = self.config["refuse"]
            if self.config["refuse"] == "raise":
                raise refused("unauthorized")
            return False

        async def disconnect(sid, reason=None):
            self.connected.pop((ns, sid), None)
            self.disconnects.append({"t": time.monotonic(), "sid": sid, "namespace": ns, "reason": str(reason)})

        def record(sid, event, args) -> dict:
            e = {"t": time.monotonic(), "sid": sid, "namespace": ns, "event": event, "args": _jsonable(list(args)),
                 "ack_id": ACK_ID.get()}
            self.events.append(e)
            return e

        async def join_room(sid, *args):
            record(sid, "join-room", args)
            room = str(args[0]["room_id"])
            if room in self.config["reject_rooms"]:
                return {"error": "no such room"}
            await sio.enter_room(sid, room, namespace=ns)
            return {"ok": True}

        async def leave_room(sid, *args):
            record(sid, "leave-room", args)
            await sio.leave_room(sid, str(args[0]["room_id"]), namespace=ns)
            return {"ok": True}

        async def send_message(sid, *args):
            record(sid, "send-message", args)
            data = args[0] if args and isinstance(args[0], dict) else {}
            while self.config["hold_acks"]:
                await self.released.wait()
            text = data.get("message")
            prefix = self.config["reject_prefix"]
            if prefix and isinstance(text, str) and text.startswith(prefix):
                return {"error": text[len(prefix):] or "rejected"}
            if "room_id" in data:
                await sio.emit("message", data, room=str(data["room_id"]), skip_sid=sid, namespace=ns)
            return {"ok": True}

        async def any_event(event, sid, *args):
            record(sid, event, args)

        sio.on("connect", connect, namespace=ns)
        sio.on("disconnect", disconnect, namespace=ns)
        sio.on("join-room", join_room, namespace=ns)
        sio.on("leave-room", leave_room, namespace=ns)
        sio.on("send-message", send_message, namespace=ns)
        sio.on("*", any_event, namespace=ns)

    # -- control API

    def rooms(self) -> dict:
        out: dict[str, dict[str, list[str]]] = {}
        for ns, rooms in self.sio.manager.rooms.items():
            for room, members in rooms.items():
                if room is None or room in members:
                    continue  # the all-clients room and each client's own room
                if members:
                    out.setdefault(ns, {})[str(room)] = sorted(members)
        return out

    def state(self) -> dict:
        return {
            "config": self.config,
            "eio": list(self.eio.values()),
            "connects": self.connects,
            "connected": list(self.connected.values()),
            "disconnects": self.disconnects,
            "rooms": self.rooms(),
            "client_acks": self.client_acks,
            "pings": PINGS,
            "silenced": sorted(SILENCED),
            "floods": self.floods,
            "events": len(self.events),
        }

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _flood(self, entry: dict, ns: str, room: str, event: str, size: int, tag: str, big_at: int) -> None:
        rid = room_value(room)
        for i in range(entry["n"]):
            text = flood_text(tag, i, BIG if i == big_at else size)
            await self.sio.emit(event, {"room_id": rid, "n": i, "text": text}, room=room, namespace=ns)
            entry["emitted"] = i + 1
        entry["done"], entry["ended"] = True, time.monotonic()

    async def handle(self, request):
        from aiohttp import web

        name = request.match_info["name"]
        body = await request.json() if request.method == "POST" and request.can_read_body else {}
        if request.method == "GET" and name == "state":
            result: Any = self.state()
        elif request.method == "GET" and name == "events":
            result = {"events": self.events[int(request.query.get("since", "0")):]}
        elif name == "config":
            for key in ("token", "refuse", "reject_prefix", "hold_acks", "connect_delay", "reject_rooms"):
                if key in body:
                    self.config[key] = body[key]
            if self.config["hold_acks"]:
                self.released.clear()
            else:
                self.released.set()
            result = self.config
        elif name == "emit" and "args" in body:
            await self.sio.emit(body.get("event", "message"), tuple(body["args"]), room=str(body.get("room", "7")),
                                namespace=body.get("namespace", "/"))
            result = {"ok": True}
        elif name == "emit":
            entry = {"id": len(self.floods), "n": int(body.get("n", 1)), "emitted": 0, "done": False,
                     "started": time.monotonic(), "ended": None}
            self.floods.append(entry)
            flood = self._flood(entry, body.get("namespace", "/"), str(body.get("room", "7")),
                                body.get("event", "message"), int(body.get("size", 120)),
                                str(body.get("tag", "f")), int(body.get("big_at", -1)))
            if body.get("wait", True):
                await flood
            else:
                self._spawn(flood)
            result = entry
        elif name == "binary":
            room = str(body.get("room", "7"))
            blobs = [base64.b64decode(b) for b in body.get("blobs", [])]
            args = [{"room_id": room_value(room), "blob": blobs[0]}, *blobs[1:]] if blobs else [{"room_id": room_value(room)}]
            await self.sio.emit(body.get("event", "file"), tuple(args), room=room, namespace=body.get("namespace", "/"))
            result = {"ok": True}
        elif name == "call":
            ns, sid, event = body.get("namespace", "/"), body["sid"], body.get("event", "ask")
            cid = next(self.call_ids)

            def acked(*args, cid=cid, sid=sid, event=event):
                self.client_acks.append({"t": time.monotonic(), "id": cid, "sid": sid, "namespace": ns,
                                         "event": event, "args": _jsonable(list(args))})

            await self.sio.emit(event, tuple(body.get("args", [])), to=sid, namespace=ns, callback=acked)
            result = {"id": cid}
        elif name == "disconnect":
            ns = body.get("namespace", "/")
            sids = [body["sid"]] if body.get("sid") else [s for (n, s) in self.connected if n == ns]
            for sid in sids:
                await self.sio.disconnect(sid, namespace=ns)
            result = {"sids": sids}
        elif name == "raw":
            frames = [f["text"] if "text" in f else base64.b64decode(f["b64"]) for f in body.get("frames", [])]
            socks = [sock for sid, sock in list(self.sio.eio.sockets.items())
                     if sid in self.eio and self.eio[sid]["closed"] is None]
            for sock in socks:
                for frame in frames:
                    await sock.queue.put(RawFrame(frame))
            result = {"sessions": len(socks)}
        elif name == "silence":
            if body.get("on", True):
                SILENCED.update(e["eio_sid"] for e in self.eio.values() if e["closed"] is None)
            else:
                SILENCED.clear()
            result = {"silenced": sorted(SILENCED)}
        else:
            raise web.HTTPNotFound(text=f"no control {request.method} {name}")
        return web.json_response(result)


async def serve(args: argparse.Namespace) -> None:
    from aiohttp import web

    _patch_engineio()
    peer = Peer(args)
    app = web.Application(client_max_size=16 * 1024 * 1024)
    peer.sio.attach(app, socketio_path=args.path)
    app.router.add_route("GET", "/control/{name}", peer.handle)
    app.router.add_route("POST", "/control/{name}", peer.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port, reuse_address=True)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: os._exit(0))
    print(json.dumps({"port": port}), flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--path", default="socket.io", help="the Engine.IO path, without slashes")
    p.add_argument("--token", default=None, help="the auth token to accept (default: accept any)")
    p.add_argument("--refuse", choices=("false", "raise"), default="raise")
    p.add_argument("--ping-interval", type=int, default=1)
    p.add_argument("--ping-timeout", type=int, default=1)
    p.add_argument("--max-payload", type=int, default=1_000_000)
    p.add_argument("--reject-prefix", default="reject:")
    args = p.parse_args(argv)
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
