"""An envelope-protocol chat backend for chatlinkd's integration tests.

It is an independent implementation of the seeds' protocol on Python `websockets`
(asyncio server API). It runs inside the pytest process, on its own event loop in a
background thread, bound to 127.0.0.1 on a free port. Tests drive it through a
thread-safe API: every method below may be called from the test thread.

Protocol (JSON text frames, each an envelope {"event": ..., "data": {...}}):

    client -> backend   {"event":"join-room","data":{"room_id":7}}
                        {"event":"leave-room","data":{"room_id":7}}
                        {"event":"send-message","data":{"room_id":7,"message":"hi",
                                                        "sender":"x","count":1,"client_id":"…"}}
    backend -> client   {"event":"message","data":{"room_id":7,"message":"hi","sender":"x",
                                                   "client_id":"…","time":"…"}}

A send-message is broadcast to the room's members and echoed to its sender (even when the
sender has not joined); the echo carries the client id, which is how chatlinkd confirms
delivery. With `echo = False` nothing goes back to the sender, so confirmation has to come
from ping/pong. Frames the backend cannot use are recorded and otherwise ignored (no error
reply, so the daemon's store holds only what the test pushed).

Fault modes: refuse(status, retry_after), drop_all(), blackhole(), close_all(code, reason),
send_raw(text), send_binary(data), flood(n, size).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import http
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed


def _now_rfc3339() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class Frame:
    """One frame the backend received on a connection."""

    t: float  # time.monotonic()
    kind: str  # "text" or "binary"
    raw: Any  # str or bytes
    json: Any = None  # the parsed envelope, when it parses


@dataclass
class Attempt:
    """One HTTP upgrade request (accepted or refused)."""

    t: float
    conn_id: int
    authorization: str | None
    path: str
    headers: dict[str, str]
    refused: int | None = None  # the HTTP status when refused


@dataclass
class Conn:
    """One WebSocket connection that completed its handshake."""

    id: int
    authorization: str | None
    headers: dict[str, str]
    opened_at: float
    extensions: str | None = None
    frames: list[Frame] = field(default_factory=list)
    rooms: set = field(default_factory=set)
    closed_at: float | None = None
    close_code: int | None = None  # the code the peer (chatlinkd) sent, when it sent one
    close_reason: str | None = None
    close_sent_code: int | None = None  # the code we sent (close_all)
    ws: ServerConnection | None = None

    @property
    def open(self) -> bool:
        return self.closed_at is None

    def sends(self) -> list[dict]:
        """The data of every send-message frame, in arrival order."""
        return [
            f.json["data"]
            for f in list(self.frames)
            if isinstance(f.json, dict) and f.json.get("event") == "send-message"
            and isinstance(f.json.get("data"), dict)
        ]


def _room_key(room):
    # 7 and "7" are different rooms, as JSON tells them apart; dict keys must keep that.
    return (type(room).__name__, room)


class Backend:
    """The backend server; `start()` it, use it, `stop()` it."""

    def __init__(self, echo: bool = True, compression: str | None = "deflate", ping_interval: float | None = None):
        self.echo = echo
        self.compression = compression
        self.ping_interval = ping_interval
        self.host = "127.0.0.1"
        self.port: int | None = None
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._conns: dict[int, Conn] = {}
        self._attempts: list[Attempt] = []
        self._joins: list[tuple[float, int, Any]] = []
        self._leaves: list[tuple[float, int, Any]] = []
        self._members: dict[Any, set[int]] = {}
        self._refuse: tuple[int, int | None] | None = None
        self._blackholed = False
        self._unblackholed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server = None
        self._thread: threading.Thread | None = None
        self._floods: list = []
        self._push_counter = itertools.count(1)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "Backend":
        ready = threading.Event()
        failure: list[BaseException] = []

        def run():
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_server())
            except BaseException as e:  # noqa: BLE001 - reported to the caller
                failure.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            # Stopped: cancel whatever is left and close the loop.
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=run, name="backend", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("backend did not start within 10 s")
        if failure:
            raise failure[0]
        return self

    async def _start_server(self):
        self._unblackholed = asyncio.Event()
        self._unblackholed.set()
        self._server = await serve(
            self._handler,
            self.host,
            0 if self.port is None else self.port,
            process_request=self._process_request,
            compression=self.compression,
            ping_interval=self.ping_interval,
            ping_timeout=self.ping_interval,
            open_timeout=None,
            close_timeout=3,
            max_size=None,
            max_queue=None,
            logger=_quiet_logger(),
        )
        sock = next(iter(self._server.sockets))
        self.port = sock.getsockname()[1]

    def stop(self) -> None:
        """Aborts every connection and stops the server and its thread."""
        if not self._loop or not self._thread:
            return

        async def shutdown():
            self._unblackholed.set()
            for c in self.connections():
                if c.ws is not None:
                    c.ws.transport.abort()
            self._server.close()
            try:
                await asyncio.wait_for(self._server.wait_closed(), 5)
            except asyncio.TimeoutError:
                pass

        try:
            self._run(shutdown(), timeout=10)
        except Exception:  # noqa: BLE001 - best effort at teardown
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}/"

    # ------------------------------------------------------------------ thread-safe plumbing

    def _run(self, coro, timeout: float = 10):
        """Runs a coroutine on the backend loop and waits for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _call(self, fn: Callable[[], Any], timeout: float = 10):
        """Runs a plain function on the backend loop and waits for its result."""

        async def wrapper():
            return fn()

        return self._run(wrapper(), timeout)

    # ------------------------------------------------------------------ observations

    def connections(self) -> list[Conn]:
        """Every connection that completed its handshake, oldest first."""
        with self._lock:
            return list(self._conns.values())

    def open_connections(self) -> list[Conn]:
        return [c for c in self.connections() if c.open]

    def attempts(self) -> list[Attempt]:
        """Every upgrade request, refused ones included, oldest first."""
        with self._lock:
            return list(self._attempts)

    def joins(self) -> list[tuple[float, int, Any]]:
        """(time, connection id, room) of every join-room received."""
        with self._lock:
            return list(self._joins)

    def leaves(self) -> list[tuple[float, int, Any]]:
        with self._lock:
            return list(self._leaves)

    def members(self, room) -> set[int]:
        with self._lock:
            return set(self._members.get(_room_key(room), set()))

    def sends(self) -> list[dict]:
        """The data of every send-message received, over every connection, in arrival order."""
        out = []
        for c in self.connections():
            out.extend(c.sends())
        return out

    def delivered_ids(self) -> list[str]:
        """Client ids of every send-message, in arrival order (duplicates kept)."""
        return [d.get("client_id") for d in self.sends()]

    def frames(self) -> list[Frame]:
        out = []
        for c in self.connections():
            out.extend(list(c.frames))
        return out

    # ------------------------------------------------------------------ actions

    def push(self, room, text: str, sender: str = "alice", extra: dict | None = None) -> int:
        """Sends a message event to the room's members; returns how many got it."""
        data = {"room_id": room, "message": text, "sender": sender, "time": _now_rfc3339()}
        if extra:
            data.update(extra)
        frame = json.dumps({"event": "message", "data": data})

        async def go():
            targets = [self._conns[i] for i in self.members(room) if i in self._conns]
            n = 0
            for c in targets:
                if c.open and c.ws is not None:
                    try:
                        await c.ws.send(frame)
                        n += 1
                    except ConnectionClosed:
                        pass
            return n

        return self._run(go())

    def send_raw(self, text: str) -> int:
        """Sends a text frame (e.g. invalid JSON) to every open connection."""
        return self._send_all(text)

    def send_binary(self, data: bytes) -> int:
        """Sends a binary frame to every open connection."""
        return self._send_all(bytes(data))

    def _send_all(self, payload) -> int:
        async def go():
            n = 0
            for c in self.open_connections():
                if c.ws is not None:
                    try:
                        await c.ws.send(payload)
                        n += 1
                    except ConnectionClosed:
                        pass
            return n

        return self._run(go())

    def flood(self, n: int, size: int = 200, room=None, wait: bool = False, timeout: float = 120, tag: str = ""):
        """Sends `n` message events of about `size` bytes of text to every open connection
        (or only to `room`'s members) as fast as the connection takes them.

        Returns a concurrent.futures.Future with the number of frames sent (per connection
        summed); with wait=True, waits for it. A connection that closes ends its share early.
        """
        pad = "x" * max(0, size)

        async def one(c: Conn):
            sent = 0
            ws = c.ws
            r = room if room is not None else (next(iter(c.rooms))[1] if c.rooms else None)
            for i in range(n):
                frame = json.dumps(
                    {"event": "message", "data": {"room_id": r, "message": f"flood{tag} {i} {pad}", "sender": "flood", "n": i}}
                )
                try:
                    await ws.send(frame)
                except ConnectionClosed:
                    break
                sent += 1
            return sent

        async def go():
            if room is None:
                targets = self.open_connections()
            else:
                targets = [self._conns[i] for i in self.members(room) if i in self._conns and self._conns[i].open]
            results = await asyncio.gather(*(one(c) for c in targets if c.ws is not None), return_exceptions=True)
            return sum(r for r in results if isinstance(r, int))

        fut = asyncio.run_coroutine_threadsafe(go(), self._loop)
        self._floods.append(fut)
        if wait:
            return fut.result(timeout)
        return fut

    def refuse(self, status: int | None, retry_after: int | None = None) -> None:
        """From now on, answer every upgrade with HTTP `status` (None: accept again)."""
        with self._lock:
            self._refuse = None if status is None else (int(status), retry_after)

    def accept(self) -> None:
        self.refuse(None)

    def drop_all(self) -> int:
        """Aborts every open connection's TCP connection, without a close frame."""

        def go():
            n = 0
            for c in self.open_connections():
                if c.ws is not None:
                    c.ws.transport.abort()
                    n += 1
            return n

        return self._call(go)

    def blackhole(self) -> None:
        """Stops reading on every open connection (so pings get no pong, nothing is read) and
        makes new upgrade requests hang unanswered, until `unblackhole()`."""

        def go():
            self._blackholed = True
            self._unblackholed.clear()
            for c in self.open_connections():
                if c.ws is not None:
                    c.ws.transport.pause_reading()

        self._call(go)

    def unblackhole(self, discard: bool = False) -> None:
        """Ends the black hole. Held connections read again and see what the peer did
        meanwhile (usually its close); with discard=True they are aborted instead, so what
        the peer wrote into them is lost unread, as bytes die in a kernel buffer."""

        def go():
            self._blackholed = False
            self._unblackholed.set()
            for c in self.open_connections():
                if c.ws is not None:
                    try:
                        if discard:
                            c.ws.transport.abort()
                        else:
                            c.ws.transport.resume_reading()
                    except Exception:  # noqa: BLE001 - transport may be closing
                        pass

        self._call(go)

    def close_all(self, code: int = 1000, reason: str = "") -> int:
        """Starts a closing handshake with `code` on every open connection."""

        async def go():
            conns = [c for c in self.open_connections() if c.ws is not None]
            for c in conns:
                c.close_sent_code = code
            await asyncio.gather(*(c.ws.close(code, reason) for c in conns), return_exceptions=True)
            return len(conns)

        return self._run(go(), timeout=15)

    # ------------------------------------------------------------------ server side

    async def _process_request(self, ws: ServerConnection, request):
        cid = next(self._ids)
        ws.conn_id = cid  # type: ignore[attr-defined]
        headers = {k: v for k, v in request.headers.raw_items()}
        auth = request.headers.get("Authorization")
        attempt = Attempt(time.monotonic(), cid, auth, request.path, headers)
        with self._lock:
            self._attempts.append(attempt)
            refuse = self._refuse
        if refuse is not None:
            status, retry_after = refuse
            attempt.refused = status
            response = ws.respond(http.HTTPStatus(status), f"refused with {status} by the test backend\n")
            if retry_after is not None:
                response.headers["Retry-After"] = str(retry_after)
            return response
        if self._blackholed:
            # Say nothing until the black hole ends; the client's connect timeout fires first.
            await self._unblackholed.wait()
            ws.transport.abort()
            attempt.refused = 0
            return ws.respond(http.HTTPStatus.SERVICE_UNAVAILABLE, "black hole\n")
        return None

    async def _handler(self, ws: ServerConnection):
        cid = ws.conn_id  # type: ignore[attr-defined]
        headers = {k: v for k, v in ws.request.headers.raw_items()}
        conn = Conn(
            id=cid,
            authorization=ws.request.headers.get("Authorization"),
            headers=headers,
            opened_at=time.monotonic(),
            extensions=ws.response.headers.get("Sec-WebSocket-Extensions") if ws.response else None,
            ws=ws,
        )
        with self._lock:
            self._conns[cid] = conn
        if self._blackholed:
            ws.transport.pause_reading()
        try:
            async for message in ws:
                self._received(conn, message)
        except ConnectionClosed:
            pass
        finally:
            with self._lock:
                conn.closed_at = time.monotonic()
                rcvd = ws.protocol.close_rcvd
                if rcvd is not None:
                    conn.close_code = rcvd.code
                    conn.close_reason = rcvd.reason
                for key in list(conn.rooms):
                    self._members.get(key, set()).discard(cid)

    def _received(self, conn: Conn, message) -> None:
        t = time.monotonic()
        if isinstance(message, bytes):
            with self._lock:
                conn.frames.append(Frame(t, "binary", message))
            return
        try:
            envelope = json.loads(message)
        except ValueError:
            envelope = None
        with self._lock:
            conn.frames.append(Frame(t, "text", message, envelope))
        if not isinstance(envelope, dict) or not isinstance(envelope.get("data"), dict):
            return
        event = envelope.get("event")
        data = envelope["data"]
        room = data.get("room_id")
        if event == "join-room" and room is not None:
            with self._lock:
                conn.rooms.add(_room_key(room))
                self._members.setdefault(_room_key(room), set()).add(conn.id)
                self._joins.append((t, conn.id, room))
        elif event == "leave-room" and room is not None:
            with self._lock:
                conn.rooms.discard(_room_key(room))
                self._members.get(_room_key(room), set()).discard(conn.id)
                self._leaves.append((t, conn.id, room))
        elif event == "send-message":
            out = {
                "room_id": room,
                "message": data.get("message"),
                "sender": data.get("sender", "anonymous"),
                "time": _now_rfc3339(),
            }
            if "client_id" in data:
                out["client_id"] = data["client_id"]
            frame = json.dumps({"event": "message", "data": out})
            targets = set(self.members(room))
            if self.echo:
                targets.add(conn.id)
            else:
                targets.discard(conn.id)
            for i in targets:
                c = self._conns.get(i)
                if c is not None and c.open and c.ws is not None:
                    asyncio.ensure_future(_send_quietly(c.ws, frame))


async def _send_quietly(ws: ServerConnection, frame) -> None:
    try:
        await ws.send(frame)
    except ConnectionClosed:
        pass


def _quiet_logger():
    import logging

    logger = logging.getLogger("test-backend")
    logger.setLevel(logging.CRITICAL)
    return logger
