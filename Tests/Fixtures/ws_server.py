#!/usr/bin/env python3
"""ws_server.py: a scriptable WebSocket server for ChatLink's integration tests.

Built on the `websockets` package (asyncio API). permessage-deflate is on by
default (the websockets default), as a real backend would have it.

Usage:
    python3 Tests/Fixtures/ws_server.py [--host 127.0.0.1|::1|localhost] [--port 0]
        [--tls KIND] [--certdir DIR]
        [--mode echo | --mode status CODE] [--retry-after SECONDS] [--location URL]
        [--header 'Name: value' ...] [--subprotocols a,b] [--subprotocols-optional]
        [--no-compression] [--ping-interval SECONDS] [--ping-timeout SECONDS]
        [--max-size BYTES] [--record FILE] [--no-stdin-watch] [--verbose]

Startup: once listening, it prints exactly ONE JSON line on stdout and
flushes it, then prints nothing more on stdout (logs go to stderr):

    {"port": 43211, "host": "127.0.0.1", "url": "ws://127.0.0.1:43211/",
     "tls": null, "ca": null, "mode": "echo", "pid": 1234}

With --tls, "url" is wss://... and "ca" is the absolute path of the CA
certificate a client must trust (ca.pem for every kind the fixture makes, so a
client trusting "ca" must reject wronghost / expired / unknownca).

Lifetime: it serves until SIGTERM/SIGINT (exit 0, closing open connections
with 1001) or until its stdin reaches EOF, so a test that spawns it with a
pipe on stdin cannot leak it even if the test crashes. Stdin is watched only
when it is a pipe, socket or terminal; /dev/null or a file on stdin would
read as EOF at once, so then it is ignored (or pass --no-stdin-watch).

--host/--port: 127.0.0.1 by default; ::1 works (url becomes ws://[::1]:N/).
    --port 0 (the default) lets the kernel pick a free port; read it from the
    JSON line.

--tls KIND: serve wss with <certdir>/KIND.pem and KIND.key. For the kinds
    make_certs.py knows (valid, wronghost, expired, unknownca) it first runs
    make_certs.ensure(certdir), which is a no-op when they are current; any
    other KIND must already exist in certdir. --certdir defaults to
    $CHATLINK_TEST_CERTDIR, else <repo>/.cache/test-certs (gitignored).

--mode echo (default): echoes every text and binary message back unchanged
    (text as text, binary as binary, whole messages: fragments are
    reassembled). Text messages that are exactly one of these commands are
    answered instead of echoed:
      __headers__            -> JSON text: {"connection": n, "path": "/p?q",
                                "headers": {lowercased name: value, repeated
                                headers joined with ", "}, "header_list":
                                [[Name, value], ...] (order and case as sent),
                                "subprotocol": str|null, "remote": [ip, port]}
      __connections__        -> JSON list of the same record for every
                                connection attempt so far (refused ones too)
      __close__ [CODE [REASON]] -> the server sends a close frame with CODE
                                (default 1000) and REASON (rest of the line)
                                and closes; an invalid code is answered with
                                "__error__ ..." instead
      __drop__               -> abort the TCP connection: no close frame
      __mute__               -> stop reading from this connection: pings go
                                unanswered and data is not echoed (dead peer).
                                The server's own keepalive then kills it after
                                ping-interval + ping-timeout.
    Any other text, including unknown __x__ words, is echoed.

--mode status CODE: refuses every upgrade with HTTP CODE (any 200..599) via
    websockets' process_request hook. Extra headers: 401 gets
    `WWW-Authenticate: Bearer realm="chatlink-test"`; 503 and 429 get
    `Retry-After: 7` (change with --retry-after, 0 = omit); 3xx get
    `Location: ws://127.0.0.1:1/elsewhere` (change with --location).
    --header 'Name: value' adds a header to every response (also to 101s).

--subprotocols a,b: the server's subprotocols, in preference order. As in
    websockets, a client that offers none is then refused with HTTP 400,
    unless --subprotocols-optional is given.

--ping-interval/--ping-timeout: server keepalive pings (websockets default
    20 s / 20 s); 0 disables. --max-size: largest incoming message (default
    1 MiB, the websockets default; 0 = unlimited); bigger ones close with 1009.

--record FILE: append one JSON line per connection attempt (the record
    described under __headers__, plus "status") to FILE.

Example (bash):
    coproc WS { exec python3 Tests/Fixtures/ws_server.py --tls valid; }
    read -r line <&"${WS[0]}"; port=$(jq .port <<<"$line")
    ...; kill "$WS_PID"
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import http
import json
import logging
import os
import signal
import ssl
import stat
import sys
import time
from pathlib import Path

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, NegotiationError
from websockets.frames import Close
from websockets.http11 import Request, Response

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
KNOWN_KINDS = ("valid", "wronghost", "expired", "unknownca")

log = logging.getLogger("ws_server")


class _ShortFormatter(logging.Formatter):
    """One line per record: tracebacks shrink to their last line unless --verbose."""

    def __init__(self, verbose: bool):
        super().__init__("ws_server[%(process)d] %(levelname)s %(name)s: %(message)s")
        self.verbose = verbose

    def formatException(self, ei):
        if self.verbose:
            return super().formatException(ei)
        return f"  ({ei[0].__name__}: {ei[1]})"

    def format(self, record):
        s = super().format(record)
        return s if self.verbose else s.replace("\n", " ")


class Fixture:
    def __init__(self, args):
        self.args = args
        self.records: list[dict] = []
        self.seq = 0
        self.extra_headers = [_parse_header(h) for h in args.header]
        self.record_file = open(args.record, "a", buffering=1) if args.record else None

    # -- bookkeeping -------------------------------------------------------

    def make_record(self, connection: ServerConnection, request: Request) -> dict:
        self.seq += 1
        merged: dict[str, str] = {}
        raw = list(request.headers.raw_items())
        for name, value in raw:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
        remote = connection.remote_address
        rec = {
            "connection": self.seq,
            "time": time.time(),
            "path": request.path,
            "headers": merged,
            "header_list": [[n, v] for n, v in raw],
            "subprotocol": None,
            "remote": list(remote[:2]) if remote else None,
            "status": None,
        }
        self.records.append(rec)
        return rec

    def finish_record(self, rec: dict) -> None:
        if self.record_file:
            self.record_file.write(json.dumps(rec) + "\n")

    # -- hooks ---------------------------------------------------------------

    def process_request(self, connection: ServerConnection, request: Request):
        rec = self.make_record(connection, request)
        connection.fixture_record = rec  # type: ignore[attr-defined]
        log.info("#%d %s %s from %s", rec["connection"], "GET", request.path, rec["remote"])
        if self.args.mode[0] != "status":
            return None
        code = self.args.status_code
        try:
            phrase = http.HTTPStatus(code).phrase
        except ValueError:
            phrase = "Test Status"
        response = connection.respond(500, f"{code} {phrase} (ws_server.py --mode status)\n")
        response = dataclasses.replace(response, status_code=code, reason_phrase=phrase)
        h = response.headers
        if code == 401:
            h["WWW-Authenticate"] = 'Bearer realm="chatlink-test"'
        if code in (429, 503) and self.args.retry_after:
            h["Retry-After"] = str(self.args.retry_after)
        if 300 <= code < 400:
            h["Location"] = self.args.location
        return response

    def process_response(self, connection: ServerConnection, request: Request, response: Response):
        for name, value in self.extra_headers:
            response.headers[name] = value
        rec = getattr(connection, "fixture_record", None)
        if rec is not None:
            rec["status"] = response.status_code
            rec["subprotocol"] = response.headers.get("Sec-WebSocket-Protocol")
            self.finish_record(rec)
            if response.status_code != 101:
                log.info("#%d refused with %d %s", rec["connection"], response.status_code,
                         response.reason_phrase)
        return None

    def select_subprotocol(self, connection: ServerConnection, offered):
        for p in self.args.subprotocols:
            if p in offered:
                return p
        if not offered:
            return None  # --subprotocols-optional
        raise NegotiationError("invalid subprotocol; expected one of " + ", ".join(self.args.subprotocols))

    # -- echo mode -------------------------------------------------------------

    async def handler(self, ws: ServerConnection) -> None:
        rec = ws.fixture_record  # type: ignore[attr-defined]  # set by process_request
        n = rec["connection"]
        ext = ws.response.headers.get("Sec-WebSocket-Extensions") if ws.response else None
        log.info("#%d open subprotocol=%s extensions=%s", n, ws.subprotocol, ext)
        try:
            async for msg in ws:
                if isinstance(msg, str) and msg.startswith("__") and await self.command(ws, rec, msg):
                    continue
                await ws.send(msg)
        except ConnectionClosed:
            pass
        finally:
            log.info("#%d closed rcvd=%s sent=%s", n, _close_str(ws.protocol.close_rcvd),
                     _close_str(ws.protocol.close_sent))

    async def command(self, ws: ServerConnection, rec: dict, msg: str) -> bool:
        word, _, rest = msg.partition(" ")
        if word == "__headers__" and not rest:
            await ws.send(json.dumps(rec))
        elif word == "__connections__" and not rest:
            await ws.send(json.dumps(self.records))
        elif word == "__close__":
            code_s, _, reason = rest.partition(" ")
            try:
                code = int(code_s) if code_s else 1000
                Close(code, reason).check()
                if len(reason.encode()) > 123:
                    raise ValueError("reason longer than 123 bytes")
            except Exception as e:  # noqa: BLE001
                await ws.send(f"__error__ invalid close request: {e}")
                return True
            log.info("#%d closing with %d %r", rec["connection"], code, reason)
            await ws.close(code, reason)
        elif word == "__drop__" and not rest:
            log.info("#%d dropping TCP connection", rec["connection"])
            ws.transport.abort()
        elif word == "__mute__" and not rest:
            log.info("#%d muted (no more reads)", rec["connection"])
            ws.transport.pause_reading()
        else:
            return False
        return True


def _close_str(c) -> str:
    return "-" if c is None else f"{c.code}:{c.reason!r}"


def _parse_header(s: str) -> tuple[str, str]:
    name, sep, value = s.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"--header wants 'Name: value', got {s!r}")
    return name.strip(), value.strip()


def _ssl_context(kind: str, certdir: Path) -> tuple[ssl.SSLContext, Path]:
    if kind in KNOWN_KINDS:
        sys.path.insert(0, str(HERE))
        sys.dont_write_bytecode = True  # no __pycache__ in the work tree
        try:
            import make_certs
        except ImportError:
            if not (certdir / f"{kind}.pem").exists():
                raise
        else:
            make_certs.ensure(certdir)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certdir / f"{kind}.pem", certdir / f"{kind}.key")
    return ctx, (certdir / "ca.pem").resolve()


def _watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> bool:
    try:
        st = os.fstat(0)
    except OSError:
        return False
    if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode) or os.isatty(0)):
        return False

    def on_readable():
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            log.info("stdin closed: stopping")
            loop.remove_reader(0)
            stop.set()

    os.set_blocking(0, False)
    loop.add_reader(0, on_readable)
    return True


async def _shutdown(server, grace: float = 2.0) -> None:
    """Close with 1001, but never wait more than `grace` seconds for peers
    (a muted or dead peer would otherwise hold us for close_timeout)."""
    server.close()
    try:
        await asyncio.wait_for(server.wait_closed(), grace)
    except TimeoutError:
        for conn in list(server.all_connections):
            conn.transport.abort()
        try:
            await asyncio.wait_for(server.wait_closed(), grace)
        except TimeoutError:
            pass


async def amain(args) -> int:
    fixture = Fixture(args)
    ssl_ctx, ca = None, None
    if args.tls:
        ssl_ctx, ca = _ssl_context(args.tls, Path(args.certdir))

    kwargs = {}
    if args.subprotocols:
        kwargs["subprotocols"] = args.subprotocols
        if args.subprotocols_optional:
            kwargs["select_subprotocol"] = fixture.select_subprotocol

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    server = await serve(
        fixture.handler,
        args.host,
        args.port,
        ssl=ssl_ctx,
        compression=None if args.no_compression else "deflate",
        process_request=fixture.process_request,
        process_response=fixture.process_response,
        ping_interval=args.ping_interval or None,
        ping_timeout=args.ping_timeout or None,
        max_size=args.max_size or None,
        **kwargs,
    )
    port = server.sockets[0].getsockname()[1]
    scheme = "wss" if ssl_ctx else "ws"
    hostpart = f"[{args.host}]" if ":" in args.host else args.host
    info = {
        "port": port,
        "host": args.host,
        "url": f"{scheme}://{hostpart}:{port}/",
        "tls": args.tls,
        "ca": str(ca) if ca else None,
        "mode": args.mode[0],
        "pid": os.getpid(),
    }
    sys.stdout.write(json.dumps(info) + "\n")
    sys.stdout.flush()
    if not args.no_stdin_watch:
        _watch_stdin(loop, stop)
    log.info("listening on %s mode=%s", info["url"], " ".join(args.mode))
    await stop.wait()
    log.info("shutting down")
    await _shutdown(server)
    return 0


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="Scriptable WebSocket test server (see the module docstring).",
    )
    ap.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1, ::1, localhost)")
    ap.add_argument("--port", type=int, default=0, help="port; 0 = pick a free one (default)")
    ap.add_argument("--tls", metavar="KIND", help="serve wss with <certdir>/KIND.pem/.key")
    ap.add_argument(
        "--certdir",
        default=os.environ.get("CHATLINK_TEST_CERTDIR", str(REPO / ".cache" / "test-certs")),
        help="certificate directory (default $CHATLINK_TEST_CERTDIR or <repo>/.cache/test-certs)",
    )
    ap.add_argument("--mode", nargs="+", default=["echo"], metavar="MODE",
                    help="'echo' (default) or 'status CODE'")
    ap.add_argument("--retry-after", type=int, default=7, help="Retry-After for 429/503 (0 = none)")
    ap.add_argument("--location", default="ws://127.0.0.1:1/elsewhere", help="Location for 3xx")
    ap.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                    help="extra response header (repeatable)")
    ap.add_argument("--subprotocols", type=lambda s: [p for p in s.split(",") if p], default=[],
                    help="comma-separated subprotocols, preferred first")
    ap.add_argument("--subprotocols-optional", action="store_true",
                    help="accept clients that offer no subprotocol")
    ap.add_argument("--no-compression", action="store_true", help="disable permessage-deflate")
    ap.add_argument("--ping-interval", type=float, default=20, help="seconds; 0 = no keepalive pings")
    ap.add_argument("--ping-timeout", type=float, default=20, help="seconds; 0 = wait forever")
    ap.add_argument("--max-size", type=int, default=2**20, help="max message bytes; 0 = unlimited")
    ap.add_argument("--record", metavar="FILE", help="append a JSON line per connection attempt")
    ap.add_argument("--no-stdin-watch", action="store_true", help="do not exit on stdin EOF")
    ap.add_argument("--verbose", "-v", action="store_true", help="debug logs with tracebacks")
    args = ap.parse_args(argv)

    mode = args.mode
    if mode == ["echo"]:
        args.status_code = None
    elif len(mode) == 2 and mode[0] == "status" and mode[1].isdigit() and 200 <= int(mode[1]) <= 599:
        args.status_code = int(mode[1])
    else:
        ap.error(f"--mode wants 'echo' or 'status CODE' (CODE 200..599), got {' '.join(mode)!r}")
    for h in args.header:
        try:
            _parse_header(h)
        except argparse.ArgumentTypeError as e:
            ap.error(str(e))
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_ShortFormatter(args.verbose))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, handlers=[handler])
    if not args.verbose:
        # websockets' own INFO lines ("server listening", "connection open") are noise here.
        logging.getLogger("websockets").setLevel(logging.WARNING)
    try:
        return asyncio.run(amain(args))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
