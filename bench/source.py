"""The benchmark's message source: a minimal WebSocket server that sends pre-encoded frames.

    source.py flood BLOB            send the frames in BLOB (built by `build_flood`) at once
    source.py paced RATE BURST SECONDS SIZE
                                    send RATE messages/s in bursts of BURST, each stamped with
                                    CLOCK_MONOTONIC nanoseconds ("sent_ns") taken before its burst
                                    is encoded and written (so latencies err high), for SECONDS
    source.py socketio BLOB         a Socket.IO server (Engine.IO 4 over WebSocket, Socket.IO 5):
                                    the open packet, the namespace connect answered, then the
                                    events in BLOB (built by `build_socketio_flood`) at once

It listens on 127.0.0.1:0 and serves exactly one client. Everything it reports is one JSON object
per stdout line: {"port": P}, {"connected": T} once the 101 response is written (T is
time.monotonic(), the system-wide CLOCK_MONOTONIC), {"sent": T, "bytes": B} when the last frame
is handed to the kernel, {"closed": T}. In socketio mode {"upgraded": T} marks the 101 response and
{"connected": T} the moment the client's namespace connect is answered, just before the flood
(the handshake's round trips are not the client's throughput), and {"client": {...}}, once the
client has closed, what it sent (path, auth payload, events it emitted). A reader thread answers pings (between whole chunks of
frames, so frames never interleave) and the close handshake.

The flood is encoded before the client connects and written with sendall() in 1 MiB chunks, so
the source costs a few kernel copies per MiB; the drain-only baseline shows how far above every
client it is. permessage-deflate is accepted only for a blob built compressed (context takeover,
one deflate stream with a sync flush per message, as RFC 7692 servers send; or, for a blob built
for no context takeover, each message on its own, answering with both no_context_takeover
parameters).

The socketio mode is what a Socket.IO server does with one client on the default namespace: it
answers a GET to /socket.io/?EIO=4&transport=websocket only, sends the Engine.IO open packet
(pingInterval 25 s, pingTimeout 20 s), waits for the client's `40…`, answers `40{"sid":…}`, acks
the client's events that ask for one (`42<id>["join-room",…]` → `43<id>[{"ok":true}]`), pings
("2") every pingInterval as a server must (a python-socketio client gives up on a silent server
after max(pingInterval, pingTimeout) + 5 s) and ignores the pongs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
import socket
import struct
import sys
import threading
import time
import zlib
from pathlib import Path

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CHUNK = 1 << 20
BLOB_VERSION = 2
SIO_BLOB_VERSION = 1
SIO_PING_INTERVAL_MS, SIO_PING_TIMEOUT_MS = 25_000, 20_000

WORDS = (
    "the deploy build is green red failed passed merged review please check ticket ops db web api "
    "cache queue worker cron alert page on-call lunch coffee standup retro sprint release notes "
    "hotfix rollback canary metrics latency error budget incident postmortem thanks ok lgtm ship it "
    "tomorrow today soon now later morning meeting room link doc draft final v2 v3 branch main"
).split()


def frame(payload: bytes, compressed: bool = False) -> bytes:
    """A final, unmasked server frame (text)."""
    first = 0x81 | (0x40 if compressed else 0)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", first, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", first, 126, n)
    else:
        head = struct.pack("!BBQ", first, 127, n)
    return head + payload


def flood_messages(n: int, size: int, ids_in_rooms: int = 0):
    """n envelope messages of about `size` bytes, with chat-like text that compresses like chat.
    With ids_in_rooms, each also carries a message id ("msg_id", unique per room), and the
    messages go round that many rooms (the dedupe window's cost, ids on against off)."""
    texts = chat_texts(size - 120 - (20 if ids_in_rooms else 0))
    for i in range(n):
        text = f"#{i:07d} {texts[i % 1000]}"
        room, extra = 1, ""
        if ids_in_rooms:
            room, extra = 1 + i % ids_in_rooms, ',"msg_id":"m-%08d"' % i
        yield (
            '{"event":"message","data":{"room_id":%d%s,"message":"%s","sender":"user-%d",'
            '"time":"2026-12-02T12:%02d:%02d.%06dZ"}}'
            % (room, extra, text, i % 50, (i // 60_000_000) % 60, (i // 1_000_000) % 60, i % 1_000_000)
        ).encode()


def chat_texts(size: int) -> list[str]:
    """1,000 chat-like texts of about `size` bytes (the same seed for every flood)."""
    rng = random.Random(42)
    texts = []
    for _ in range(1000):
        words = []
        while sum(len(w) + 1 for w in words) < max(8, size):
            words.append(rng.choice(WORDS))
        texts.append(" ".join(words))
    return texts


def socketio_messages(n: int, size: int):
    """n Socket.IO event packets `42["message",{"room_id":1,"n":i,"text":"#i …"}]`, each about
    `size` bytes as a whole (the frame's payload)."""
    overhead = len('42["message",{"room_id":1,"n":0000000,"text":"#0000000 "}]')
    texts = chat_texts(size - overhead)
    for i in range(n):
        text = f"#{i:07d} {texts[i % 1000]}"[: size - overhead + 9]
        yield ('42["message",{"room_id":1,"n":%d,"text":"%s"}]' % (i, text)).encode()


def broker_payloads(n: int, size: int):
    """n JSON payloads `{"room_id":1,"n":i,"text":"#i …"}` of about `size` bytes, for the
    broker scenarios (published to the broker, not framed here)."""
    overhead = len('{"room_id":1,"n":0000000,"text":"#0000000 "}')
    texts = chat_texts(size - overhead)
    for i in range(n):
        text = f"#{i:07d} {texts[i % 1000]}"[: size - overhead + 9]
        yield ('{"room_id":1,"n":%d,"text":"%s"}' % (i, text)).encode()


def build_broker_lines(n: int, size: int, directory: Path) -> Path:
    """The broker scenarios' messages, one payload per line (cached), for their publishers."""
    path = directory / f"brokerlines-v1-{n}-{size}.txt"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(b"".join(p + b"\n" for p in broker_payloads(n, size)))
        os.replace(tmp, path)
    return path


def write_blob(path: Path, payloads, deflate: bool, no_context_takeover: bool = False) -> Path:
    """Encodes payloads into one blob of frames at path (cached: an existing one is kept).
    With no_context_takeover, every message is compressed on its own (a fresh deflate stream),
    as a server must send when it agreed to server_no_context_takeover."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15) if deflate else None
    for payload in payloads:
        if compressor and no_context_takeover:
            compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        if compressor:
            body = compressor.compress(payload) + compressor.flush(zlib.Z_SYNC_FLUSH)
            out += frame(body[:-4], compressed=True)  # RFC 7692 §7.2.1: drop 00 00 ff ff
        else:
            out += frame(payload)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(out)
    os.replace(tmp, path)
    return path


def build_id_flood(n: int, size: int, rooms: int, directory: Path) -> Path:
    """The flood with message ids, round `rooms` rooms (see flood_messages)."""
    path = directory / f"idflood-v{BLOB_VERSION}-{n}-{size}-{rooms}.bin"
    return write_blob(path, flood_messages(n, size, rooms), False, False)


def build_flood(n: int, size: int, deflate: bool, directory: Path, no_context_takeover: bool = False) -> Path:
    """Encodes the flood once into directory/flood-…bin (cached); returns its path. A blob for
    no context takeover ends in -deflate-nct.bin: the source then answers the handshake with
    server_no_context_takeover and client_no_context_takeover (the only permessage-deflate
    gorilla/websocket speaks)."""
    suffix = ("-deflate-nct" if no_context_takeover else "-deflate") if deflate else ""
    path = directory / f"flood-v{BLOB_VERSION}-{n}-{size}{suffix}.bin"
    return write_blob(path, flood_messages(n, size), deflate, no_context_takeover)


def build_socketio_flood(n: int, size: int, directory: Path) -> Path:
    """The Socket.IO flood: n event packets of about `size` bytes, one text frame each."""
    path = directory / f"sioflood-v{SIO_BLOB_VERSION}-{n}-{size}.bin"
    return write_blob(path, socketio_messages(n, size), False)


def chunk_ends(blob: memoryview) -> list[int]:
    """Offsets that end whole frames, about CHUNK apart."""
    ends, offset, start = [], 0, 0
    while offset < len(blob):
        length = blob[offset + 1] & 0x7F
        header = 2
        if length == 126:
            length, header = struct.unpack_from("!H", blob, offset + 2)[0], 4
        elif length == 127:
            length, header = struct.unpack_from("!Q", blob, offset + 2)[0], 10
        offset += header + length
        if offset - start >= CHUNK:
            ends.append(offset)
            start = offset
    if not ends or ends[-1] != len(blob):
        ends.append(len(blob))
    return ends


def report(**fields) -> None:
    print(json.dumps(fields), flush=True)


class Connection:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.target = ""  # the request target of the upgrade (path and query)
        self.on_text = None  # called with each text frame's payload from the client, if set

    def handshake(self, accept_deflate: bool | str, path_check=None) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            head += chunk
        lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        self.target = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 2 else ""
        if path_check and (problem := path_check(self.target)):
            self.sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            raise ConnectionError(f"refused {lines[0]!r}: {problem}")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.setdefault(name.strip().lower(), []).append(value.strip())
        key = headers["sec-websocket-key"][0].encode()
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
        offered = ",".join(headers.get("sec-websocket-extensions", []))
        extension = ""
        if accept_deflate:
            if "permessage-deflate" not in offered:
                raise ConnectionError("the blob is compressed but the client offers no deflate")
            extension = "Sec-WebSocket-Extensions: permessage-deflate"
            if accept_deflate == "no context takeover":
                extension += "; server_no_context_takeover; client_no_context_takeover"
            extension += "\r\n"
        self.sock.sendall(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept}\r\n{extension}\r\n"
            ).encode()
        )

    def send(self, data) -> None:
        with self.lock:
            self.sock.sendall(data)

    def read_loop(self) -> None:
        """Answers pings and the close handshake; discards everything else."""
        buffer = bytearray()
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                while len(buffer) >= 2:
                    opcode, length = buffer[0] & 0x0F, buffer[1] & 0x7F
                    masked = buffer[1] & 0x80
                    header = 2
                    if length == 126:
                        if len(buffer) < 4:
                            break
                        length, header = struct.unpack_from("!H", buffer, 2)[0], 4
                    elif length == 127:
                        if len(buffer) < 10:
                            break
                        length, header = struct.unpack_from("!Q", buffer, 2)[0], 10
                    total = header + (4 if masked else 0) + length
                    if len(buffer) < total:
                        break
                    payload = bytes(buffer[header + (4 if masked else 0) : total])
                    if masked:
                        mask = buffer[header : header + 4]
                        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                    del buffer[:total]
                    if opcode == 0x1 and self.on_text:
                        self.on_text(payload.decode("utf-8", "replace"))
                    elif opcode == 0x9:
                        self.send(bytes([0x8A, len(payload)]) + payload)  # pong, same payload
                    elif opcode == 0x8:
                        self.send(bytes([0x88, len(payload[:2])]) + payload[:2])
                        return
        except OSError:
            return
        finally:
            self.closed.set()


def serve(accept_deflate: bool | str, body, path_check=None, upgraded_key: str = "connected") -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    report(port=listener.getsockname()[1])
    sock, _ = listener.accept()
    listener.close()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    connection = Connection(sock)
    try:
        connection.handshake(accept_deflate, path_check)
    except (OSError, KeyError) as error:
        report(error=f"handshake: {error}")
        sock.close()
        return
    report(**{upgraded_key: time.monotonic()})
    threading.Thread(target=connection.read_loop, daemon=True).start()
    try:
        body(connection)
    except OSError as error:
        report(error=str(error))
    connection.closed.wait()
    report(closed=time.monotonic())


def flood(blob_path: str) -> None:
    blob = memoryview(Path(blob_path).read_bytes())
    ends = chunk_ends(blob)

    def body(connection: Connection) -> None:
        start = 0
        for end in ends:
            connection.send(blob[start:end])
            start = end
        report(sent=time.monotonic(), bytes=len(blob))

    deflate = "no context takeover" if blob_path.endswith("-deflate-nct.bin") else blob_path.endswith("-deflate.bin")
    serve(deflate, body)


def paced(rate: int, burst: int, seconds: float, size: int) -> None:
    interval = burst / rate
    bursts = int(seconds / interval)
    template = (
        '{"event":"message","data":{"room_id":1,"message":"latency probe %%07d %s",'
        '"sender":"bench","sent_ns":%%d}}'
    )
    template = template % ("p" * max(0, size - len(template % ("",)) - 20))

    def body(connection: Connection) -> None:
        index = 0
        start = time.monotonic() + 0.2  # let the client finish its own start (join, ping)
        first = None
        for k in range(bursts):
            delay = start + k * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            stamp = time.monotonic_ns()
            first = first if first is not None else stamp / 1e9
            frames = []
            for _ in range(burst):
                index += 1
                frames.append(frame((template % (index, stamp)).encode()))
            connection.send(b"".join(frames))
        # The pace held: messages over the time from the first burst to the end of the last,
        # which the bench reports beside the latency (a source that fell behind would flatter it).
        report(sent=time.monotonic(), messages=index, paced_seconds=time.monotonic() - first)

    serve(False, body)


# Socket.IO packets from the client: "4" + type, then an optional "/namespace," and ack id.
SIO_PACKET = re.compile(r"4(\d)(?:(/[^,]*),)?(\d*)(.*)", re.S)


def socketio_path_problem(target: str) -> str | None:
    path, _, query = target.partition("?")
    params = dict(p.partition("=")[::2] for p in query.split("&") if p)
    if path.rstrip("/") != "/socket.io":
        return f"path {path!r} is not /socket.io/"
    if params.get("EIO") != "4" or params.get("transport") != "websocket":
        return f"query {query!r} lacks EIO=4&transport=websocket"
    return None


def socketio(blob_path: str) -> None:
    blob = memoryview(Path(blob_path).read_bytes())
    ends = chunk_ends(blob)
    sid = base64.urlsafe_b64encode(os.urandom(15)).decode()
    ready = threading.Event()
    client = {"namespace": None, "auth": None, "events": [], "acked": 0, "pongs": 0, "other": []}
    answered_at = [0.0]

    def on_text(text: str, connection: Connection) -> None:
        if text.startswith("3"):  # Engine.IO pong to our ping
            client["pongs"] += 1
            return
        if text == "2":  # not the client's job in EIO 4, but answer it like servers do
            connection.send(frame(b"3"))
            return
        match = SIO_PACKET.fullmatch(text)
        if not match:
            if len(client["other"]) < 5:
                client["other"].append(text[:200])
            return
        kind, namespace, ack, data = match[1], match[2], match[3], match[4]
        prefix = f"{namespace}," if namespace and namespace != "/" else ""
        if kind == "0":  # namespace connect
            client["namespace"] = namespace or "/"
            try:
                client["auth"] = json.loads(data) if data else None
            except ValueError:
                client["auth"] = data[:200]
            connection.send(frame(("40" + prefix + json.dumps({"sid": sid + "#ns"})).encode()))
            answered_at[0] = time.monotonic()
            ready.set()
        elif kind == "2":  # an event from the client: a join, say; ack it if it asks
            if len(client["events"]) < 20:
                client["events"].append(text[:200])
            if ack:
                connection.send(frame(f'43{prefix}{ack}[{{"ok":true}}]'.encode()))
                client["acked"] += 1
        elif len(client["other"]) < 5:
            client["other"].append(text[:200])

    def pinger(connection: Connection) -> None:
        while not connection.closed.wait(SIO_PING_INTERVAL_MS / 1000):
            try:
                connection.send(frame(b"2"))
            except OSError:
                return

    def body(connection: Connection) -> None:
        connection.on_text = lambda text: on_text(text, connection)
        open_packet = {"sid": sid, "upgrades": [], "pingInterval": SIO_PING_INTERVAL_MS,
                       "pingTimeout": SIO_PING_TIMEOUT_MS, "maxPayload": 1_000_000}
        connection.send(frame(("0" + json.dumps(open_packet, separators=(",", ":"))).encode()))
        threading.Thread(target=pinger, args=(connection,), daemon=True).start()
        if not ready.wait(30):
            report(error=f"no namespace connect (40) from the client within 30 s; it sent {client}")
            return
        report(connected=answered_at[0])
        start = 0
        for end in ends:
            connection.send(blob[start:end])
            start = end
        report(sent=time.monotonic(), bytes=len(blob))
        connection.closed.wait()  # then tell what the client sent, its later events too
        report(client=dict(client, path=connection.target))

    serve(False, body, socketio_path_problem, upgraded_key="upgraded")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "flood":
        flood(sys.argv[2])
    elif mode == "socketio":
        socketio(sys.argv[2])
    elif mode == "paced":
        paced(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(f"source.py: unknown mode {mode!r}")
