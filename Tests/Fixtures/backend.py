#!/usr/bin/env python3
"""The WebSocket backend of chatlinkd's tests, on Python `websockets` (asyncio server API): an
implementation independent of ours, so a test that passes against it says our side speaks
the protocol, not that it agrees with itself.

The fake backends that remain, and why each is needed:

- this module, the one Python `websockets` server: the envelope chat backend with fault modes
  (the integration, power-cut and chaos suites, in process) and the scriptable echo server
  (the Swift TransportTests and the TLS integration test, as a subprocess);
- `Tests/Fixtures/sio_server.py`: python-socketio's AsyncServer, the independent Socket.IO 5
  server; Socket.IO over `websockets` would be our own reading of the protocol again;
- `bench/source.py`: the benchmark's flood source, pre-encoded frames written with sendall,
  because the source must outrun every client it measures, which a real server library
  cannot; its Socket.IO mode is the same flood behind a Socket.IO handshake;
- `chatbench-go count` (`bench/peers/go`): gorilla/websocket, the counting backend of the
  outbound benchmark, fast enough not to limit `chatlinkctl send -`.

Besides them the tests run real servers, not fakes: Mosquitto and RabbitMQ
(`Tests/Fixtures/brokers.py`, `bench/brokers.py`), Autobahn's fuzzing server, and the
project's own `chatlink-devserver`.

In process (`Backend(...).start()`): the server runs on its own event loop in a background
thread, bound to 127.0.0.1 on a free port; every method below may be called from the test
thread. Two protocols:

- "envelope" (default), the seeds' chat protocol, JSON text frames {"event", "data"}:

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

- "echo": every text and binary message comes back unchanged (whole messages: fragments are
  reassembled), except text messages that are exactly one of these commands:

      __headers__               JSON text: this connection's record (`Attempt.record()`):
                                {"connection": n, "time", "path": "/p?q", "headers":
                                {lowercased name: value, repeated ones joined with ", "},
                                "header_list": [[Name, value], ...] as sent, "subprotocol",
                                "remote": [ip, port], "status"}
      __connections__           the same record for every upgrade request so far, refused
                                ones too
      __close__ [CODE [REASON]] the server closes with CODE (default 1000) and REASON; an
                                invalid code is answered with "__error__ ..." instead
      __drop__                  abort the TCP connection: no close frame
      __mute__                  stop reading this connection: pings go unanswered (dead peer)

Fault modes (both protocols): refuse(status, retry_after, headers), drop_all(), blackhole(),
close_all(code, reason), send_raw(text), send_binary(data), flood(n, size).

History mode (`Backend(history=N)`, envelope only): the backend keeps each room's last N
messages and speaks the envelope's catch-up extension (README "For backend authors"), as a
backend written by someone else would:

    backend -> client   {"event":"message","data":{"room_id":7,"msg_id":"42","message":…}}
                        every message of a room has an id, a per-room counter from 1 (a
                        string, or a JSON number with numeric_ids=True); `id_field` names it
    client -> backend   {"event":"join-room","data":{"room_id":7,"since":"42"}}
                        the room's messages after 42 are sent, in order, before live ones;
                        without `since` (`since_field`), only live ones
    backend -> client   {"event":"history-truncated","data":{"room_id":7,"since":"3",
                                                               "first":"58"}}
                        when `since` is older than the history (or unknown to it): then every
                        message it still has, from the oldest; `truncated_event` names it

Each connection has a cursor per joined room and one task sending from the cursors, so a
room's messages reach a connection in id order, replays first, whatever the test does
meanwhile; `ws.send` waits while the connection's buffers are full (a slow client slows its
own task only). Messages are published into the history, from any thread: `publish(room,
text)` (also what `push` does in this mode, and what a client's send-message does), or
`Publisher(backend, rooms, total, rate)`, a thread publishing at a steady rate whether or not
anyone is connected (a chat keeps talking while chatlinkd is down). `rewind(room)` sends a
room's whole history again to every connection in it (a backend replaying from the start);
`published(room)` lists what was published; `join_data()` lists every join's data object.
`replay_overlap=K` makes a sloppy backend: a replay starts K messages before the one after
`since`, so every catch-up delivers K messages the client has already stored.
While `blackhole()` holds, the cursors stand still. `flood()` and `send_raw()` bypass the
history (frames without ids, for fault injection).

As a subprocess (`python3 Tests/Fixtures/backend.py [options]`): the echo protocol, or every
upgrade refused with `--mode status CODE`.

    backend.py [--host 127.0.0.1|::1|localhost] [--port 0] [--tls KIND] [--certdir DIR]
               [--mode echo | --mode status CODE] [--retry-after SECONDS] [--location URL]
               [--subprotocols a,b] [--subprotocols-optional] [--no-compression]
               [--ping-interval SECONDS] [--ping-timeout SECONDS] [--max-size BYTES]
               [--no-stdin-watch]

Once listening it prints exactly one JSON line on stdout, then nothing more:

    {"port": 43211, "host": "127.0.0.1", "url": "ws://127.0.0.1:43211/",
     "tls": null, "ca": null, "mode": "echo", "pid": 1234}

It serves until SIGTERM or SIGINT, or until its stdin reaches EOF, so a test that spawns it
with a pipe on stdin cannot leak it even if the test crashes (stdin is watched only when it
is a pipe, socket or terminal; /dev/null would read as EOF at once).

--tls KIND: wss with <certdir>/KIND.pem and KIND.key; for the kinds make_certs.py knows
    (valid, wronghost, expired, unknownca) it first runs make_certs.ensure(certdir). "ca" in
    the JSON line is the CA a client must trust (so it must reject wronghost, expired and
    unknownca). --certdir: $CHATLINK_TEST_CERTDIR, else <repo>/.cache/test-certs.
--mode status CODE: refuses every upgrade with HTTP CODE (200..599); 401 gets
    `WWW-Authenticate: Bearer realm="chatlink-test"`, 429 and 503 `Retry-After: 7` (change
    with --retry-after, 0 = none), 3xx `Location: ws://127.0.0.1:1/elsewhere` (--location).
--subprotocols a,b: the server's subprotocols, preferred first; a client offering none is
    refused with HTTP 400 unless --subprotocols-optional.
--ping-interval/--ping-timeout: server keepalive (20 s / 20 s; 0 disables). --max-size:
    largest incoming message (1 MiB; 0 = unlimited); bigger ones close with 1009.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import datetime as dt
import http
import itertools
import json
import os
import signal
import ssl
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, NegotiationError
from websockets.frames import Close

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CERT_KINDS = ("valid", "wronghost", "expired", "unknownca")


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
    wall: float = 0.0  # time.time()
    header_list: list[list[str]] = field(default_factory=list)  # as sent: order and case
    remote: list | None = None  # [ip, port]
    status: int | None = None  # the status of the response, once sent
    subprotocol: str | None = None

    def record(self) -> dict:
        """What the echo protocol's __headers__ and __connections__ answer."""
        merged: dict[str, str] = {}
        for name, value in self.header_list:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
        return {"connection": self.conn_id, "time": self.wall, "path": self.path, "headers": merged,
                "header_list": self.header_list, "subprotocol": self.subprotocol, "remote": self.remote,
                "status": self.status}


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
    # History mode: per joined room, the id of the next message to send, and a truncation
    # notice to send before it; `wake` is set when there may be something to send.
    cursors: dict = field(default_factory=dict)
    notices: dict = field(default_factory=dict)
    wake: asyncio.Event | None = None

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


@dataclass
class RoomHistory:
    """History mode: a room's last messages, (id, frame) oldest first, and the next id."""

    room: Any
    entries: collections.deque
    next_id: int = 1

    @property
    def first(self) -> int:
        """The oldest id kept (the next id when nothing is)."""
        return self.entries[0][0] if self.entries else self.next_id


def _id_number(value) -> int | None:
    """A `since` as the history's counter: a string of digits or a whole number, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) < 20:
        return int(value)
    return None


class Backend:
    """The backend server; `start()` it, use it, `stop()` it."""

    def __init__(self, echo: bool = True, compression: str | None = "deflate", ping_interval: float | None = None,
                 *, protocol: str = "envelope", host: str = "127.0.0.1", port: int | None = None,
                 tls: str | None = None, certdir: Path | None = None, subprotocols: list[str] | None = None,
                 subprotocols_optional: bool = False, ping_timeout: float | None = ...,
                 max_size: int | None = None, history: int | None = None, id_field: str = "msg_id",
                 since_field: str = "since", truncated_event: str = "history-truncated",
                 numeric_ids: bool = False, replay_overlap: int = 0):
        if protocol not in ("envelope", "echo"):
            raise ValueError(f"protocol {protocol!r}: 'envelope' or 'echo'")
        if history is not None and (protocol != "envelope" or history < 1):
            raise ValueError("history mode needs the envelope protocol and a history of at least 1")
        self.history = history
        self.id_field, self.since_field, self.truncated_event = id_field, since_field, truncated_event
        self.numeric_ids = numeric_ids
        self.replay_overlap = replay_overlap
        self._histories: dict[Any, RoomHistory] = {}
        self._join_data: list[tuple[float, int, dict]] = []
        self.truncations = 0  # history-truncated events sent
        self.protocol = protocol
        self.echo = echo
        self.compression = compression
        self.ping_interval = ping_interval
        self.ping_timeout = ping_interval if ping_timeout is ... else ping_timeout
        self.max_size = max_size
        self.host = host
        self.port: int | None = port
        self.tls = tls
        self.ca: Path | None = None
        self._ssl = None
        if tls:
            self._ssl, self.ca = _ssl_context(tls, Path(certdir) if certdir else _default_certdir())
        self.subprotocols = subprotocols or []
        self.subprotocols_optional = subprotocols_optional
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._conns: dict[int, Conn] = {}
        self._attempts: list[Attempt] = []
        self._joins: list[tuple[float, int, Any]] = []
        self._leaves: list[tuple[float, int, Any]] = []
        self._members: dict[Any, set[int]] = {}
        self._refuse: tuple[int, int | str | None, dict[str, str]] | None = None
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
        options = {}
        if self.subprotocols:
            options["subprotocols"] = self.subprotocols
            if self.subprotocols_optional:
                options["select_subprotocol"] = self._select_subprotocol
        self._server = await serve(
            self._handler,
            self.host,
            0 if self.port is None else self.port,
            ssl=self._ssl,
            process_request=self._process_request,
            process_response=self._process_response,
            compression=self.compression,
            ping_interval=self.ping_interval,
            ping_timeout=self.ping_timeout,
            open_timeout=None,
            close_timeout=3,
            max_size=self.max_size,
            max_queue=None,
            logger=_quiet_logger(),
            **options,
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
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'wss' if self._ssl else 'ws'}://{host}:{self.port}/"

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
        """Sends a message event to the room's members; returns how many got it. In history
        mode it is published instead (`publish`), and its id is returned."""
        if self.history is not None:
            return self.publish(room, text, sender, extra)
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

    # ------------------------------------------------------------------ history mode

    def _history_of(self, room) -> RoomHistory:
        """The room's history, made when first needed (the caller holds the lock)."""
        key = _room_key(room)
        h = self._histories.get(key)
        if h is None:
            h = self._histories[key] = RoomHistory(room, collections.deque(maxlen=self.history))
        return h

    def _message_frame(self, room, msg_id: int, data: dict) -> str:
        out = {"room_id": room, self.id_field: msg_id if self.numeric_ids else str(msg_id)}
        out.update(data)
        return json.dumps({"event": "message", "data": out})

    def publish(self, room, text: str, sender: str = "alice", extra: dict | None = None) -> int:
        """History mode: appends a message to the room's history, to be sent to every
        connection in the room; returns its id. Any thread."""
        return self.publish_many([(room, text)], sender, extra)[0]

    def publish_many(self, messages: list[tuple[Any, str]], sender: str = "alice",
                     extra: dict | None = None) -> list[int]:
        """`publish` for many (room, text) pairs at once; returns their ids."""
        return [msg_id for msg_id, _ in self._publish(messages, sender, extra)]

    def _publish(self, messages, sender, extra) -> list[tuple[int, str]]:
        assert self.history is not None, "publish needs history mode"
        out, keys = [], set()
        with self._lock:
            for room, text in messages:
                h = self._history_of(room)
                msg_id = h.next_id
                h.next_id += 1
                data = {"message": text, "sender": sender, "time": _now_rfc3339(), **(extra or {})}
                frame = self._message_frame(room, msg_id, data)
                h.entries.append((msg_id, frame))
                out.append((msg_id, frame))
                keys.add(_room_key(room))
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake_rooms, keys)
        return out

    def published(self, room) -> list[int]:
        """History mode: every id published to the room, oldest first (kept or not)."""
        with self._lock:
            h = self._histories.get(_room_key(room))
            return list(range(1, h.next_id)) if h else []

    def caught_up(self, room) -> bool:
        """History mode: whether some open connection has joined the room and been sent all
        of its history its cursor reaches (a replay and everything published since)."""
        key = _room_key(room)
        with self._lock:
            h = self._histories.get(key)
            return any(key in c.cursors and key not in c.notices and c.cursors[key] >= (h.next_id if h else 1)
                       for c in self._conns.values() if c.open)

    def join_data(self) -> list[tuple[float, int, dict]]:
        """(time, connection id, data) of every join-room received: what each join asked."""
        with self._lock:
            return list(self._join_data)

    def rewind(self, room, to: int | None = None) -> int:
        """History mode: every connection in the room is sent the room's messages again from
        id `to` (default: the oldest kept), as a backend replaying from the start would;
        returns how many connections."""

        def go():
            n = 0
            for c in self.open_connections():
                key = _room_key(room)
                if key in c.cursors:
                    with self._lock:
                        c.cursors[key] = to if to is not None else self._history_of(room).first
                    n += 1
                    if c.wake is not None:
                        c.wake.set()
            return n

        return self._call(go)

    def _wake_rooms(self, keys: set) -> None:
        for c in self.open_connections():
            if c.wake is not None and not keys.isdisjoint(c.cursors):
                c.wake.set()

    def _join_after(self, conn: Conn, room, data: dict) -> None:
        """A join in history mode: the cursor starts after `since`, or at the live end."""
        key = _room_key(room)
        with self._lock:
            h = self._history_of(room)
            if self.since_field not in data:
                conn.cursors[key] = h.next_id
                conn.notices.pop(key, None)
            else:
                since = data[self.since_field]
                n = _id_number(since)
                # The message after `since` is kept (or not yet published): nothing is missing.
                if n is not None and h.first - 1 <= n < h.next_id:
                    conn.cursors[key] = max(h.first, n + 1 - self.replay_overlap)
                    conn.notices.pop(key, None)
                else:
                    first = None if not h.entries else (h.first if self.numeric_ids else str(h.first))
                    notice = {"room_id": room, "since": since, "first": first}
                    conn.notices[key] = json.dumps({"event": self.truncated_event, "data": notice})
                    conn.cursors[key] = h.first
                    self.truncations += 1
        if conn.wake is not None:
            conn.wake.set()

    def _next_frames(self, conn: Conn, limit: int) -> list[str]:
        """Takes up to `limit` frames per room from the connection's cursors (advancing them)."""
        out = []
        with self._lock:
            for key in list(conn.cursors):
                notice = conn.notices.pop(key, None)
                if notice is not None:
                    out.append(notice)
                h = self._histories.get(key)
                cursor = conn.cursors[key]
                if h is None or cursor >= h.next_id:
                    continue
                # A cursor behind the history (trimmed since) goes on from the oldest kept.
                start = max(0, cursor - h.first)
                taken = list(itertools.islice(h.entries, start, start + limit))
                out.extend(frame for _, frame in taken)
                if taken:
                    conn.cursors[key] = taken[-1][0] + 1
        return out

    async def _pump(self, conn: Conn) -> None:
        """Sends the connection what its cursors have not reached yet, for as long as it lives."""
        ws = conn.ws
        try:
            while True:
                if self._blackholed:
                    await self._unblackholed.wait()
                    continue
                frames = self._next_frames(conn, 200)
                if frames:
                    for frame in frames:
                        await ws.send(frame)
                    continue
                conn.wake.clear()
                with self._lock:
                    behind = bool(conn.notices) or any(
                        key in self._histories and cursor < self._histories[key].next_id
                        for key, cursor in conn.cursors.items())
                if not behind:
                    await conn.wake.wait()
        except (ConnectionClosed, asyncio.CancelledError):
            pass

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

    def refuse(self, status: int | None, retry_after: int | str | None = None,
               headers: dict[str, str] | None = None) -> None:
        """From now on, answer every upgrade with HTTP `status` (None: accept again), with a
        Retry-After when given and any other `headers`."""
        with self._lock:
            self._refuse = None if status is None else (int(status), retry_after, dict(headers or {}))

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
        raw = list(request.headers.raw_items())
        remote = ws.remote_address
        attempt = Attempt(time.monotonic(), cid, request.headers.get("Authorization"), request.path,
                          {k: v for k, v in raw}, wall=time.time(), header_list=[[k, v] for k, v in raw],
                          remote=list(remote[:2]) if remote else None)
        ws.attempt = attempt  # type: ignore[attr-defined]
        with self._lock:
            self._attempts.append(attempt)
            refuse = self._refuse
        if refuse is not None:
            status, retry_after, headers = refuse
            attempt.refused = status
            return _refusal(ws, status, retry_after, headers)
        if self._blackholed:
            # Say nothing until the black hole ends; the client's connect timeout fires first.
            await self._unblackholed.wait()
            ws.transport.abort()
            attempt.refused = 0
            return ws.respond(http.HTTPStatus.SERVICE_UNAVAILABLE, "black hole\n")
        return None

    def _process_response(self, ws: ServerConnection, request, response):
        attempt = getattr(ws, "attempt", None)
        if attempt is not None:
            attempt.status = response.status_code
            attempt.subprotocol = response.headers.get("Sec-WebSocket-Protocol")
        return None

    def _select_subprotocol(self, ws: ServerConnection, offered):
        for p in self.subprotocols:
            if p in offered:
                return p
        if not offered:
            return None
        raise NegotiationError("invalid subprotocol; expected one of " + ", ".join(self.subprotocols))

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
        pump = None
        if self.history is not None:
            conn.wake = asyncio.Event()
            pump = asyncio.ensure_future(self._pump(conn))
        try:
            async for message in ws:
                if self.protocol == "echo":
                    await self._echo(conn, ws, message)
                else:
                    self._received(conn, message)
        except ConnectionClosed:
            pass
        finally:
            if pump is not None:
                pump.cancel()
            with self._lock:
                conn.closed_at = time.monotonic()
                rcvd = ws.protocol.close_rcvd
                if rcvd is not None:
                    conn.close_code = rcvd.code
                    conn.close_reason = rcvd.reason
                for key in list(conn.rooms):
                    self._members.get(key, set()).discard(cid)

    async def _echo(self, conn: Conn, ws: ServerConnection, message) -> None:
        with self._lock:
            conn.frames.append(Frame(time.monotonic(), "binary" if isinstance(message, bytes) else "text", message))
        if isinstance(message, str) and message.startswith("__") and await self._command(ws, message):
            return
        await ws.send(message)

    async def _command(self, ws: ServerConnection, message: str) -> bool:
        """Answers an echo-protocol command; False when the message is not one."""
        word, _, rest = message.partition(" ")
        if word == "__headers__" and not rest:
            await ws.send(json.dumps(ws.attempt.record()))  # type: ignore[attr-defined]
        elif word == "__connections__" and not rest:
            await ws.send(json.dumps([a.record() for a in self.attempts()]))
        elif word == "__close__":
            code_text, _, reason = rest.partition(" ")
            try:
                code = int(code_text) if code_text else 1000
                Close(code, reason).check()
                if len(reason.encode()) > 123:
                    raise ValueError("reason longer than 123 bytes")
            except Exception as e:  # noqa: BLE001 - any invalid request is answered
                await ws.send(f"__error__ invalid close request: {e}")
                return True
            await ws.close(code, reason)
        elif word == "__drop__" and not rest:
            ws.transport.abort()
        elif word == "__mute__" and not rest:
            ws.transport.pause_reading()
        else:
            return False
        return True

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
                self._join_data.append((t, conn.id, dict(data)))
            if self.history is not None:
                self._join_after(conn, room, data)
        elif event == "leave-room" and room is not None:
            with self._lock:
                conn.rooms.discard(_room_key(room))
                self._members.get(_room_key(room), set()).discard(conn.id)
                self._leaves.append((t, conn.id, room))
                conn.cursors.pop(_room_key(room), None)
                conn.notices.pop(_room_key(room), None)
        elif event == "send-message" and self.history is not None:
            extra = {"client_id": data["client_id"]} if "client_id" in data else None
            [(_, frame)] = self._publish([(room, data.get("message"))], data.get("sender", "anonymous"), extra)
            if self.echo and _room_key(room) not in conn.cursors and conn.ws is not None:
                # The sender is not in the room: its echo goes to it alone.
                asyncio.ensure_future(_send_quietly(conn.ws, frame))
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


class Publisher(threading.Thread):
    """History mode: publishes `total` messages round-robin over `rooms` at `rate` a second,
    whether or not anyone is connected, like a chat that keeps talking. Message k (from 0)
    reads "<tag>k <padding>"; `published` counts them, `done` is set at the end. `set_rate`
    changes the pace from now on (a test stretches a flood over the faults it injects)."""

    def __init__(self, backend: Backend, rooms: list, total: int, rate: float, size: int = 200, tag: str = "m"):
        super().__init__(daemon=True, name="publisher")
        self.backend, self.rooms, self.total, self.rate = backend, list(rooms), total, rate
        self.pad, self.tag = "x" * max(0, size), tag
        self.published = 0
        self.done = threading.Event()
        self._halt = threading.Event()
        self._pace = threading.Lock()
        self._base = (time.monotonic(), 0)  # (since when, published then) the rate counts from

    def set_rate(self, rate: float) -> None:
        with self._pace:
            self._base = (time.monotonic(), self.published)
            self.rate = rate

    def run(self):
        with self._pace:
            self._base = (time.monotonic(), 0)
        try:
            while self.published < self.total and not self._halt.is_set():
                with self._pace:
                    (since, then), rate = self._base, self.rate
                due = min(self.total, then + int((time.monotonic() - since) * rate) + 1)
                batch = [(self.rooms[k % len(self.rooms)], f"{self.tag}{k} {self.pad}")
                         for k in range(self.published, due)]
                if batch:
                    self.backend.publish_many(batch, sender="publisher")
                    self.published = due
                self._halt.wait(0.005)
        finally:
            self.done.set()

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


def _refusal(ws: ServerConnection, status: int, retry_after, headers: dict[str, str]):
    """An HTTP response with any status 200..599, known to the http module or not."""
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Test Status"
    response = ws.respond(http.HTTPStatus.INTERNAL_SERVER_ERROR, f"refused with {status} by the test backend\n")
    response = dataclasses.replace(response, status_code=status, reason_phrase=phrase)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    for name, value in headers.items():
        response.headers[name] = value
    return response


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


def _default_certdir() -> Path:
    return Path(os.environ.get("CHATLINK_TEST_CERTDIR", str(REPO / ".cache" / "test-certs")))


def _ssl_context(kind: str, certdir: Path) -> tuple[ssl.SSLContext, Path]:
    if kind in CERT_KINDS:
        sys.path.insert(0, str(HERE))
        import make_certs

        make_certs.ensure(certdir)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certdir / f"{kind}.pem", certdir / f"{kind}.key")
    return context, (certdir / "ca.pem").resolve()


# ---------------------------------------------------------------------------- subprocess


def _stdin_closed(stop: threading.Event) -> None:
    """Sets `stop` when stdin reaches EOF, if stdin is a pipe, socket or terminal."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(0)):
        return

    def watch():
        try:
            while os.read(0, 65536):
                pass
        except OSError:
            pass
        stop.set()

    threading.Thread(target=watch, name="stdin", daemon=True).start()


def _refusal_headers(args) -> tuple[int | None, dict[str, str]]:
    code = args.status_code
    retry_after = args.retry_after if code in (429, 503) and args.retry_after else None
    headers = {}
    if code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="chatlink-test"'
    if 300 <= code < 400:
        headers["Location"] = args.location
    return retry_after, headers


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="The tests' WebSocket backend, echo protocol (see the module docstring).")
    ap.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1, ::1, localhost)")
    ap.add_argument("--port", type=int, default=0, help="port; 0 = pick a free one (default)")
    ap.add_argument("--tls", metavar="KIND", help="serve wss with <certdir>/KIND.pem/.key")
    ap.add_argument("--certdir", default=str(_default_certdir()),
                    help="certificate directory (default $CHATLINK_TEST_CERTDIR or <repo>/.cache/test-certs)")
    ap.add_argument("--mode", nargs="+", default=["echo"], metavar="MODE", help="'echo' (default) or 'status CODE'")
    ap.add_argument("--retry-after", type=int, default=7, help="Retry-After for 429/503 (0 = none)")
    ap.add_argument("--location", default="ws://127.0.0.1:1/elsewhere", help="Location for 3xx")
    ap.add_argument("--subprotocols", type=lambda s: [p for p in s.split(",") if p], default=[],
                    help="comma-separated subprotocols, preferred first")
    ap.add_argument("--subprotocols-optional", action="store_true", help="accept clients that offer no subprotocol")
    ap.add_argument("--no-compression", action="store_true", help="disable permessage-deflate")
    ap.add_argument("--ping-interval", type=float, default=20, help="seconds; 0 = no keepalive pings")
    ap.add_argument("--ping-timeout", type=float, default=20, help="seconds; 0 = wait forever")
    ap.add_argument("--max-size", type=int, default=2**20, help="max message bytes; 0 = unlimited")
    ap.add_argument("--no-stdin-watch", action="store_true", help="do not exit on stdin EOF")
    args = ap.parse_args(argv)
    mode = args.mode
    if mode == ["echo"]:
        args.status_code = None
    elif len(mode) == 2 and mode[0] == "status" and mode[1].isdigit() and 200 <= int(mode[1]) <= 599:
        args.status_code = int(mode[1])
    else:
        ap.error(f"--mode wants 'echo' or 'status CODE' (CODE 200..599), got {' '.join(mode)!r}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    backend = Backend(protocol="echo", host=args.host, port=args.port, tls=args.tls, certdir=Path(args.certdir),
                      compression=None if args.no_compression else "deflate",
                      ping_interval=args.ping_interval or None, ping_timeout=args.ping_timeout or None,
                      max_size=args.max_size or None, subprotocols=args.subprotocols,
                      subprotocols_optional=args.subprotocols_optional)
    if args.status_code is not None:
        retry_after, headers = _refusal_headers(args)
        backend.refuse(args.status_code, retry_after, headers)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    backend.start()
    info = {"port": backend.port, "host": args.host, "url": backend.url, "tls": args.tls,
            "ca": str(backend.ca) if backend.ca else None, "mode": args.mode[0], "pid": os.getpid()}
    sys.stdout.write(json.dumps(info) + "\n")
    sys.stdout.flush()
    if not args.no_stdin_watch:
        _stdin_closed(stop)
    while not stop.wait(0.5):
        pass
    backend.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
