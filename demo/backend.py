#!/usr/bin/env python3
"""backend.py: the local demo chat backend that `make run` starts for chatlinkd.

It speaks the seeds' envelope protocol over WebSocket, so you can watch
chatlinkd join rooms, receive traffic and confirm deliveries without any real
chat service. It needs only Python 3.11 and the `websockets` package
(`pip install -r Tests/requirements.txt`, or just `pip install websockets`).

Usage:
    python3 demo/backend.py [--host 127.0.0.1] [--port 8765]
        [--token-file FILE] [--chatter SECONDS]
        [--certfile PEM --keyfile KEY] [--print-port] [--verbose]

    --host, --port   where to listen (default 127.0.0.1:8765; ::1 works;
                     --port 0 picks a free port, see --print-port)
    --token-file     if given, every upgrade must carry
                     `Authorization: Bearer <token>` where <token> is the
                     file's content without surrounding whitespace; anything
                     else is refused with HTTP 401. SIGHUP re-reads the file.
                     Without it, every client is accepted.
    --chatter S      every S seconds a built-in bot, sender "demo-bot",
                     posts one line of chatter to every room that has members
    --certfile/--keyfile  serve wss:// instead of ws://
    --print-port     once listening, print one JSON line on stdout:
                     {"port": 8765, "url": "ws://127.0.0.1:8765/"}
    --verbose        also show websockets' debug logs

Point chatlinkd at it with, e.g., URL=ws://127.0.0.1:8765/ and the same
token file. It logs one readable line per event to stderr (the token is never
logged), and exits 0 on SIGINT or SIGTERM after closing every connection with
1001 (going away).

Protocol (JSON text frames, each an envelope {"event": ..., "data": {...}}):

  client -> backend
    {"event":"join-room","data":{"room_id":7}}
    {"event":"leave-room","data":{"room_id":7}}
    {"event":"send-message","data":{"room_id":7,"message":"hi","sender":"ops-bot",
                                    "count":1,"client_id":"..."}}

  backend -> client
    {"event":"message","data":{"room_id":7,"message":"hi","sender":"ops-bot",
                               "client_id":"...","time":"2026-01-02T03:04:05.678Z"}}
        sent to every member of the room AND to the sender, even if the sender
        has not joined: that echo, carrying the sender's client_id, is how
        chatlinkd confirms delivery. Every field of the sent data is passed
        through (count included); "time" (RFC 3339, UTC) is set by the backend;
        "client_id" appears only if the client sent one; "sender" defaults to
        "anonymous". Chatter from demo-bot has no client_id.
    {"event":"error","data":{"message":"...","received":"<first 200 chars>"}}
        for a frame it cannot use (not JSON, not an envelope, unknown event,
        missing or bad room_id, binary frame). The connection stays open.

  room_id is a JSON integer or string (7 and "7" are different rooms). Joins
  and leaves are silent (no reply) and idempotent. WebSocket pings are
  answered (websockets does it); the backend also pings every 20 s and drops a
  peer that does not answer within 20 s.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hmac
import itertools
import json
import logging
import signal
import ssl
import sys
from pathlib import Path

from websockets.asyncio.server import ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed

log = logging.getLogger("backend")

CHATTER = [
    "good morning, humans",
    "build #{n} is green",
    "coffee machine on floor 3 is back online",
    "reminder: standup in 10 minutes",
    "deploy of web-frontend finished in 42 s",
    "disk usage on db-2 at 71%",
    "who left the tea in the fridge?",
    "nightly backup verified",
    "ping from the demo bot, line {n}",
    "all quiet on the western front",
]


def rfc3339_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _LineFormatter(logging.Formatter):
    """`<UTC time> <logger>: <message>` on one line; tracebacks shrink to one line."""

    def __init__(self, verbose: bool):
        super().__init__("%(asctime)s %(name)s: %(message)s")
        self.verbose = verbose

    def formatTime(self, record, datefmt=None):
        t = dt.datetime.fromtimestamp(record.created, dt.timezone.utc)
        return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def formatException(self, ei):
        return super().formatException(ei) if self.verbose else f" ({ei[0].__name__}: {ei[1]})"

    def format(self, record):
        s = super().format(record)
        return s if self.verbose else s.replace("\n", " ")


def _valid_room(v) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, str) and v != "")


class Backend:
    def __init__(self, token_file: str | None):
        self.token_file = token_file
        self.token: str | None = None
        self.rooms: dict[object, set[ServerConnection]] = {}
        self.ids = itertools.count(1)
        self.chatter_n = 0
        if token_file:
            self.load_token()

    # -- auth ------------------------------------------------------------------

    def load_token(self) -> None:
        token = Path(self.token_file).read_text(encoding="utf-8").strip()
        if not token:
            raise ValueError(f"token file {self.token_file} is empty")
        self.token = token
        log.info("token loaded from %s", self.token_file)

    def process_request(self, ws: ServerConnection, request):
        ws.cid = next(self.ids)  # type: ignore[attr-defined]
        ws.joined = set()  # type: ignore[attr-defined]
        peer = _peer(ws)
        if self.token is None:
            return None
        auth = request.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode()):
            return None
        why = "no Authorization header" if not auth else "wrong token or scheme"
        log.info("#%d refused 401 from %s (%s)", ws.cid, peer, why)
        resp = ws.respond(401, "401 Unauthorized: send Authorization: Bearer <token>\n")
        resp.headers["WWW-Authenticate"] = 'Bearer realm="chatlink-demo"'
        return resp

    # -- connection ------------------------------------------------------------

    async def handler(self, ws: ServerConnection) -> None:
        cid = ws.cid  # type: ignore[attr-defined]
        ua = ws.request.headers.get("User-Agent", "-")
        log.info("#%d connected from %s path=%s user-agent=%r", cid, _peer(ws), ws.request.path, ua)
        try:
            async for frame in ws:
                await self.on_frame(ws, frame)
        except ConnectionClosed:
            pass
        finally:
            left = sorted(map(str, ws.joined))  # type: ignore[attr-defined]
            for room in list(ws.joined):  # type: ignore[attr-defined]
                self._leave(ws, room)
            rcvd = ws.protocol.close_rcvd
            how = f"code={rcvd.code} reason={rcvd.reason!r}" if rcvd else "without close frame"
            log.info("#%d disconnected %s (was in rooms: %s)", cid, how, ", ".join(left) or "none")

    async def error(self, ws: ServerConnection, message: str, frame) -> None:
        log.info("#%d error: %s", ws.cid, message)  # type: ignore[attr-defined]
        received = frame if isinstance(frame, str) else f"<{len(frame)} bytes binary>"
        await ws.send(json.dumps({"event": "error", "data": {"message": message, "received": received[:200]}}))

    async def on_frame(self, ws: ServerConnection, frame) -> None:
        cid = ws.cid  # type: ignore[attr-defined]
        if not isinstance(frame, str):
            return await self.error(ws, "binary frames are not part of this protocol", frame)
        try:
            env = json.loads(frame)
        except ValueError as e:
            return await self.error(ws, f"not JSON: {e}", frame)
        if not isinstance(env, dict) or not isinstance(env.get("event"), str):
            return await self.error(ws, 'expected an envelope {"event": "...", "data": {...}}', frame)
        event, data = env["event"], env.get("data")
        if not isinstance(data, dict):
            return await self.error(ws, f"{event}: data must be an object", frame)
        room = data.get("room_id")
        if event in ("join-room", "leave-room", "send-message") and not _valid_room(room):
            return await self.error(ws, f"{event}: room_id must be an integer or a non-empty string", frame)

        if event == "join-room":
            members = self.rooms.setdefault(room, set())
            members.add(ws)
            ws.joined.add(room)  # type: ignore[attr-defined]
            log.info("#%d join room=%s (members: %d)", cid, json.dumps(room), len(members))
        elif event == "leave-room":
            self._leave(ws, room)
            log.info("#%d leave room=%s (members: %d)", cid, json.dumps(room), len(self.rooms.get(room, ())))
        elif event == "send-message":
            if "message" not in data:
                return await self.error(ws, "send-message: data.message is missing", frame)
            out = dict(data)
            out.setdefault("sender", "anonymous")
            out["time"] = rfc3339_now()
            targets = set(self.rooms.get(room, ())) | {ws}
            self.push(out, targets)
            log.info("#%d message room=%s sender=%s client_id=%s to %d connection(s): %s",
                     cid, json.dumps(room), json.dumps(out["sender"]), json.dumps(out.get("client_id")),
                     len(targets), _preview(out["message"]))
        else:
            return await self.error(ws, f"unknown event {event!r}", frame)

    def _leave(self, ws: ServerConnection, room) -> None:
        ws.joined.discard(room)  # type: ignore[attr-defined]
        members = self.rooms.get(room)
        if members is not None:
            members.discard(ws)
            if not members:
                del self.rooms[room]

    def push(self, data: dict, targets) -> None:
        broadcast(targets, json.dumps({"event": "message", "data": data}))

    # -- chatter ---------------------------------------------------------------

    async def chatter(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            for room, members in list(self.rooms.items()):
                if not members:
                    continue
                self.chatter_n += 1
                line = CHATTER[self.chatter_n % len(CHATTER)].format(n=self.chatter_n)
                self.push({"room_id": room, "message": line, "sender": "demo-bot",
                           "time": rfc3339_now()}, members)
                log.info("demo-bot message room=%s to %d connection(s): %s",
                         json.dumps(room), len(members), _preview(line))


def _peer(ws: ServerConnection) -> str:
    a = ws.remote_address
    if not a:
        return "?"
    return f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"


def _preview(message) -> str:
    s = message if isinstance(message, str) else json.dumps(message)
    return json.dumps(s if len(s) <= 80 else s[:77] + "...")


async def amain(args) -> int:
    try:
        backend = Backend(args.token_file)
    except (OSError, ValueError) as e:
        log.error("cannot read token: %s", e)
        return 1
    ssl_ctx = None
    if args.certfile:
        ssl_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_ctx.load_cert_chain(args.certfile, args.keyfile)

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def reload():
        if not args.token_file:
            log.info("SIGHUP: no token file to reload")
            return
        try:
            backend.load_token()
        except (OSError, ValueError) as e:
            log.error("SIGHUP: keeping the old token: %s", e)

    loop.add_signal_handler(signal.SIGHUP, reload)

    try:
        server = await serve(backend.handler, args.host, args.port, ssl=ssl_ctx,
                             process_request=backend.process_request)
    except OSError as e:
        log.error("cannot listen on %s:%s: %s", args.host, args.port, e)
        return 1
    port = server.sockets[0].getsockname()[1]
    hostpart = f"[{args.host}]" if ":" in args.host else args.host
    url = f"{'wss' if ssl_ctx else 'ws'}://{hostpart}:{port}/"
    log.info("listening on %s (auth: %s, chatter: %s)", url,
             f"bearer token from {args.token_file}" if args.token_file else "none",
             f"every {args.chatter:g} s" if args.chatter else "off")
    if args.print_port:
        sys.stdout.write(json.dumps({"port": port, "url": url}) + "\n")
        sys.stdout.flush()

    chatter = asyncio.create_task(backend.chatter(args.chatter)) if args.chatter else None
    await stop.wait()
    log.info("shutting down (%d connection(s) open)", len(server.connections))
    if chatter:
        chatter.cancel()
    server.close()  # closes every connection with 1001 going away
    try:
        await asyncio.wait_for(server.wait_closed(), 3)
    except TimeoutError:
        for conn in list(server.all_connections):
            conn.transport.abort()
    log.info("stopped")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Local demo chat backend for chatlinkd (see the module docstring).")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 = any free port)")
    ap.add_argument("--token-file", help="require Authorization: Bearer <contents of this file>")
    ap.add_argument("--chatter", type=float, metavar="SECONDS", default=0,
                    help="demo-bot posts to every non-empty room at this interval (default off)")
    ap.add_argument("--certfile", help="TLS certificate (PEM) to serve wss://")
    ap.add_argument("--keyfile", help="TLS private key (PEM) for --certfile")
    ap.add_argument("--print-port", action="store_true", help="print {\"port\":..,\"url\":..} on stdout when ready")
    ap.add_argument("--verbose", "-v", action="store_true", help="debug logging with tracebacks")
    args = ap.parse_args(argv)
    if args.chatter < 0:
        ap.error("--chatter must be >= 0")
    if bool(args.certfile) != bool(args.keyfile):
        ap.error("--certfile and --keyfile go together")

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LineFormatter(args.verbose))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, handlers=[handler])
    if not args.verbose:
        logging.getLogger("websockets").setLevel(logging.WARNING)
    try:
        return asyncio.run(amain(args))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
