"""A TCP fault proxy for the chaos suite: chatlinkd connects to it, it connects to the backend.

It runs its own asyncio loop in a background thread (like Tests/Fixtures/backend.py), on
127.0.0.1, and every method may be called from any thread. Faults, all switchable at run time:

    blackhole(True)      stop forwarding both ways; bytes are read and dropped, so the peer's
                         TCP stays happy but nothing arrives (a half-open connection, as far as
                         the application can tell). New connections are accepted and held.
    cut(direction, how)  the next data frame that passes in `direction` ("down": backend to
                         daemon, "up": daemon to backend) is cut in the middle of its payload:
                         the bytes before the cut are forwarded, then the connection ends with
                         a FIN ("fin") or an RST ("rst"). WebSocket framing is tracked in both
                         directions, so the cut is always strictly inside a frame.
    delay / rate         per-direction latency (seconds) and throughput (bytes/s) limits.
    refuse(True)         close the listening socket: connects fail with ECONNREFUSED.
    reset_new(True)      accept, then reset at once (each attempt is counted).
    upgrade_delay        hold the backend's first bytes (the HTTP 101) for this long.
    upgrade_dribble      then forward the HTTP head one byte every this many seconds.

Observations: `accepts` (monotonic time of every accepted TCP connection), `links`.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from dataclasses import dataclass, field


class FrameTracker:
    """Follows the HTTP head and then the WebSocket frames of one direction of a stream."""

    def __init__(self):
        self.in_http = True
        self.http_tail = b""
        self.header = bytearray()
        self.need = 2  # header bytes needed while parsing a header
        self.payload_left = 0  # payload bytes of the current frame still to come
        self.payload_len = 0
        self.opcode = 0
        self.fin = False
        self.data_frames = 0  # complete text/binary/continuation frames
        self.control_frames = 0
        self.cut_at = 0  # payload bytes of the cut frame that went through

    def _header_complete(self) -> bool:
        h = self.header
        if len(h) < 2:
            self.need = 2
            return False
        n7 = h[1] & 0x7F
        masked = bool(h[1] & 0x80)
        ext = 2 if n7 == 126 else 8 if n7 == 127 else 0
        total = 2 + ext + (4 if masked else 0)
        if len(h) < total:
            self.need = total
            return False
        if ext == 2:
            length = struct.unpack(">H", h[2:4])[0]
        elif ext == 8:
            length = struct.unpack(">Q", h[2:10])[0]
        else:
            length = n7
        self.opcode = h[0] & 0x0F
        self.fin = bool(h[0] & 0x80)
        self.payload_len = length
        self.payload_left = length
        return True

    def _frame_done(self):
        if self.opcode in (0, 1, 2):
            self.data_frames += 1
        else:
            self.control_frames += 1
        self.header = bytearray()
        self.need = 2

    def feed(self, data: bytes, cut_from: int | None = None) -> int | None:
        """Consumes `data`; with cut_from, stops at the first offset strictly inside the payload
        (at least 2 payload bytes on either side) of a data frame that has at least `cut_from`
        complete data frames before it, and returns that offset."""
        i = 0
        n = len(data)
        while i < n:
            if self.in_http:
                buf = self.http_tail + data[i:]
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    self.http_tail = buf[-3:]
                    return None
                consumed = end + 4 - len(self.http_tail)
                self.http_tail = b""
                self.in_http = False
                i += consumed
                continue
            if self.payload_left == 0 and (len(self.header) < self.need or not self.header):
                take = min(self.need - len(self.header), n - i)
                self.header += data[i:i + take]
                i += take
                if not self._header_complete():
                    continue
                if self.payload_left == 0:
                    self._frame_done()
                continue
            # Inside a payload.
            take = min(self.payload_left, n - i)
            if (cut_from is not None and self.data_frames >= cut_from and self.opcode in (0, 1, 2)
                    and self.payload_len >= 4):
                done = self.payload_len - self.payload_left  # payload bytes already through
                # A cut point p (bytes of payload through after the cut) with 2 <= p <= len-2.
                lo = max(done + 1, 2)
                hi = min(done + take, self.payload_len - 2)
                if lo <= hi:
                    p = (lo + hi) // 2
                    self.cut_at = p
                    return i + (p - done)
            self.payload_left -= take
            i += take
            if self.payload_left == 0:
                self._frame_done()
        return None


@dataclass
class Link:
    """One proxied connection."""

    id: int
    accepted_at: float
    client_writer: asyncio.StreamWriter | None = None
    upstream_writer: asyncio.StreamWriter | None = None
    held: bool = False  # accepted during a black hole; never connected upstream
    closed_at: float | None = None
    closed_by: str | None = None  # "client", "upstream", "proxy"
    down: FrameTracker = field(default_factory=FrameTracker)
    up: FrameTracker = field(default_factory=FrameTracker)
    bytes_down: int = 0
    bytes_up: int = 0
    dropped: int = 0
    first_client_bytes: bytes = b""
    cut_info: dict | None = None

    @property
    def open(self) -> bool:
        return self.closed_at is None


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, host: str = "127.0.0.1", port: int = 0):
        self.upstream = (upstream_host, upstream_port)
        self.host = host
        self.port = port
        self.delay = {"down": 0.0, "up": 0.0}
        self.rate = {"down": 0.0, "up": 0.0}
        self.upgrade_delay = 0.0
        self.upgrade_dribble = 0.0
        self.blackholed = False
        self.resetting = False
        self.accepts: list[float] = []
        self.links: list[Link] = []
        self._cut: dict | None = None
        self._cut_done = threading.Event()
        self._lock = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0
        self._tasks: set = set()

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> "FaultProxy":
        ready = threading.Event()

        def run():
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self._listen())
            ready.set()
            loop.run_forever()
            for t in [t for t in asyncio.all_tasks(loop) if not t.done()]:
                t.cancel()
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

        self._thread = threading.Thread(target=run, name="faultproxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fault proxy did not start")
        return self

    async def _listen(self):
        self._server = await asyncio.start_server(self._accept, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self):
        if not self._loop:
            return
        try:
            self._call(self._abort_all_now)
            self.refuse(True)
        except Exception:  # noqa: BLE001 - best effort
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread:
            self._thread.join(5)
        self._loop = None

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}/"

    def _call(self, fn, timeout: float = 10):
        async def wrapper():
            r = fn()
            if asyncio.iscoroutine(r):
                r = await r
            return r

        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop).result(timeout)

    # ---------------------------------------------------------------- controls

    def blackhole(self, on: bool, abort_held: bool = True) -> None:
        """Starts or ends the black hole; ending it aborts every connection that lived through
        it (the daemon has given up on them, and what it wrote into them is gone)."""

        def go():
            self.blackholed = on
            if not on and abort_held:
                self._abort_all_now()

        self._call(go)

    def refuse(self, on: bool) -> None:
        async def go():
            if on and self._server is not None:
                self._server.close()
                await self._server.wait_closed()
                self._server = None
            elif not on and self._server is None:
                self._server = await asyncio.start_server(self._accept, self.host, self.port, reuse_address=True)

        self._call(go)

    def reset_new(self, on: bool) -> None:
        self.resetting = on

    def set_delay(self, down: float = 0.0, up: float = 0.0) -> None:
        self.delay = {"down": down, "up": up}

    def set_rate(self, down: float = 0.0, up: float = 0.0) -> None:
        self.rate = {"down": down, "up": up}

    def cut(self, direction: str, how: str = "fin", after_frames: int = 0) -> None:
        """Arms a cut of a data frame in `direction`, after `after_frames` further complete
        data frames went through; wait_cut() waits for it."""
        with self._lock:
            self._cut_done.clear()
            self._cut = {"direction": direction, "how": how, "after": after_frames, "base": None}

    def wait_cut(self, timeout: float) -> dict | None:
        if not self._cut_done.wait(timeout):
            return None
        with self._lock:
            for link in reversed(self.links):
                if link.cut_info:
                    return link.cut_info
        return None

    def abort_all(self) -> int:
        return self._call(self._abort_all_now)

    def _abort_all_now(self) -> int:
        n = 0
        for link in list(self.links):
            if link.open:
                self._close_link(link, "proxy", rst=True)
                n += 1
        return n

    def open_links(self) -> list[Link]:
        with self._lock:
            return [l for l in self.links if l.open]

    # ---------------------------------------------------------------- plumbing

    def _close_link(self, link: Link, by: str, rst: bool) -> None:
        if link.closed_at is None:
            link.closed_at = time.monotonic()
            link.closed_by = by
        for w in (link.client_writer, link.upstream_writer):
            if w is None:
                continue
            try:
                if rst:
                    sock = w.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    w.transport.abort()
                else:
                    w.close()
            except Exception:  # noqa: BLE001 - already gone
                pass

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        now = time.monotonic()
        with self._lock:
            self._ids += 1
            link = Link(self._ids, now, client_writer=writer)
            self.accepts.append(now)
            self.links.append(link)
        if self.resetting:
            self._close_link(link, "proxy", rst=True)
            return
        if self.blackholed:
            link.held = True
            try:
                while True:
                    data = await reader.read(65536)
                    if not data:
                        break
                    link.dropped += len(data)
            except (ConnectionError, OSError):
                pass
            self._close_link(link, "client", rst=False)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            self._close_link(link, "proxy", rst=True)
            return
        link.upstream_writer = up_writer
        await asyncio.gather(
            self._pump(link, "up", reader, up_writer),
            self._pump(link, "down", up_reader, writer),
            return_exceptions=True,
        )
        self._close_link(link, "proxy", rst=False)

    async def _pump(self, link: Link, direction: str, src: asyncio.StreamReader, dst: asyncio.StreamWriter):
        queue: asyncio.Queue = asyncio.Queue(maxsize=64)
        writer = asyncio.ensure_future(self._writer(link, direction, queue, dst))
        first = True
        try:
            while link.open:
                try:
                    data = await src.read(65536)
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    break
                if direction == "up" and len(link.first_client_bytes) < 16:
                    link.first_client_bytes += data[: 16 - len(link.first_client_bytes)]
                if self.blackholed:
                    link.dropped += len(data)
                    continue
                if direction == "down" and first and (self.upgrade_delay > 0 or self.upgrade_dribble > 0):
                    first = False
                    if self.upgrade_delay > 0:
                        await asyncio.sleep(self.upgrade_delay)
                    if self.upgrade_dribble > 0:
                        head_end = data.find(b"\r\n\r\n")
                        head = data if head_end < 0 else data[: head_end + 4]
                        for k in range(len(head)):
                            if not link.open:
                                return
                            await queue.put((0.0, head[k:k + 1]))
                            await asyncio.sleep(self.upgrade_dribble)
                        data = data[len(head):]
                        if not data:
                            continue
                first = False
                due = time.monotonic() + self.delay[direction]
                await queue.put((due, data))
        finally:
            if link.open:
                try:
                    await asyncio.wait_for(queue.put(None), 30)
                    await asyncio.wait_for(asyncio.shield(writer), 30)
                except (asyncio.TimeoutError, Exception):  # noqa: BLE001
                    writer.cancel()
            else:
                writer.cancel()
            if link.open:
                # One side ended: pass the end on (half close), the other pump finishes it.
                by = "client" if direction == "up" else "upstream"
                self._close_link(link, by, rst=False)

    async def _writer(self, link: Link, direction: str, queue: asyncio.Queue, dst: asyncio.StreamWriter):
        tracker = link.up if direction == "up" else link.down
        while True:
            item = await queue.get()
            if item is None or not link.open:
                return
            due, data = item
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if self.blackholed:
                link.dropped += len(data)
                continue
            cut = None
            with self._lock:
                armed = self._cut if self._cut and self._cut["direction"] == direction else None
            if armed:
                if armed["base"] is None:
                    armed["base"] = tracker.data_frames
                offset = tracker.feed(data, cut_from=armed["base"] + armed["after"])
                if offset is not None:
                    cut = offset
                    data = data[:offset]
                    with self._lock:
                        self._cut = None
                    link.cut_info = {"direction": direction, "how": armed["how"], "link": link.id,
                                     "frames_through": tracker.data_frames - armed["base"],
                                     "at": time.monotonic(), "offset_in_frame": tracker.cut_at,
                                     "frame_len": tracker.payload_len, "opcode": tracker.opcode}
            else:
                tracker.feed(data)
            try:
                await self._write_limited(link, direction, dst, data)
            except (ConnectionError, OSError):
                return
            if cut is not None:
                self._close_link(link, "proxy", rst=armed["how"] == "rst")
                link.cut_info["at"] = time.monotonic()
                self._cut_done.set()
                return

    async def _write_limited(self, link: Link, direction: str, dst: asyncio.StreamWriter, data: bytes):
        rate = self.rate[direction]
        if rate <= 0:
            dst.write(data)
            await dst.drain()
        else:
            step = max(256, int(rate / 20))
            for k in range(0, len(data), step):
                piece = data[k:k + step]
                dst.write(piece)
                await dst.drain()
                await asyncio.sleep(len(piece) / rate)
        if direction == "down":
            link.bytes_down += len(data)
        else:
            link.bytes_up += len(data)
