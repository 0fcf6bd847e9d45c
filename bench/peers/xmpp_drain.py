"""The XMPP drain-only baseline and the flood's publisher: raw XMPP over WebSocket (RFC 7395,
subprotocol xmpp) on a plain socket, nothing parsed beyond what each step needs, nothing stored.

    xmpp_drain.py live    PORT USER PASSWORD ROOM N            join ROOM, take N groupchat messages
    xmpp_drain.py mam     PORT USER PASSWORD ROOM N            page ROOM's archive (XEP-0313)
    xmpp_drain.py publish PORT USER PASSWORD ROOM LINES [NICK] post each line of LINES to ROOM

Every mode signs in to Prosody's /xmpp-websocket on 127.0.0.1:PORT as USER@localhost with SASL
PLAIN (the loopback ws:// the bench's Prosody counts as secure) and binds a resource. `live` and
`mam` then enable stream management (XEP-0198, as chatlinkd does, so the server does the same
work for them: each stanza queued until acknowledged) and answer each <r/> with the count of
stanzas read; a Prosody stanza is one WebSocket message, and a message is counted by its first
bytes. `live` joins ROOM with no history and counts groupchat messages with a body; `mam` joins
and asks the archive for 50 results at a time (chatlinkd's page), the next page as soon as the
answer of one came, until the archive says it is complete, counting the results. Every read is
followed by TCP_QUICKACK: Prosody 0.12 leaves Nagle's algorithm on, and the short <iq/> that ends
a page would otherwise wait for the client's delayed ACK (~40 ms a page). XMPP_DRAIN_SM=0 leaves
stream management off, XMPP_DRAIN_QUICKACK=0 the delayed ACKs on (to see what each costs). Prints
"connected T" (time.monotonic()) once the WebSocket is open, "joined T", "first T" and "done T"
after the N-th message, then waits for stdin to close.

`publish` joins ROOM as "publisher", waits until NICK is in the room (when given), prints "start
T", sends one groupchat message per line of LINES (the text XML-escaped, every frame built
before), then prints "sent T" and, once the room has reflected the last one back, "reflected T";
everything else the room sends is read and dropped on a thread.
"""

import base64
import os
import re
import socket
import struct
import sys
import threading
import time
from xml.sax.saxutils import escape

from mqtt_drain import websocket
from stomp_drain import client_frame

FRAMING = "urn:ietf:params:xml:ns:xmpp-framing"
DOMAIN = "localhost"
MUC = "http://jabber.org/protocol/muc"
SM = "urn:xmpp:sm:3"
QUICKACK = os.environ.get("XMPP_DRAIN_QUICKACK", "1") == "1"


class Stream:
    """One XMPP-over-WebSocket session: the server's messages one by one, the stanza count."""

    def __init__(self, port: int):
        self.sock = websocket("127.0.0.1", port, "/xmpp-websocket", "xmpp")
        print(f"connected {time.monotonic():.6f}", flush=True)
        self.buffer = b""
        self.pending: list[bytes] = []
        self.handled = 0  # stanzas read since stream management was enabled
        self.counting = False

    def send(self, text: str) -> None:
        self.sock.sendall(client_frame(text.encode()))

    def _fill(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            sys.exit("the server closed the connection")
        if QUICKACK:
            # Acknowledge each segment at once: Prosody's sockets keep Nagle's algorithm, so a short
            # write after a long one (an archive page's <iq/> result) waits for our ACK otherwise.
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        self.buffer += data
        offset, size = 0, len(self.buffer)
        while size - offset >= 2:
            length, header = self.buffer[offset + 1] & 0x7F, 2
            if length == 126:
                if size - offset < 4:
                    break
                length, header = struct.unpack_from("!H", self.buffer, offset + 2)[0], 4
            elif length == 127:
                if size - offset < 10:
                    break
                length, header = struct.unpack_from("!Q", self.buffer, offset + 2)[0], 10
            if size - offset < header + length:
                break
            opcode = self.buffer[offset] & 0x0F
            payload = self.buffer[offset + header:offset + header + length]
            offset += header + length
            if opcode == 0x8:
                sys.exit(f"the server closed the WebSocket: {payload[2:200]!r}")
            if opcode == 0x1:
                self.pending.append(payload)
        self.buffer = self.buffer[offset:]

    def messages(self):
        """The server's messages, forever; answers stream management's requests on the way."""
        while True:
            if not self.pending:
                self._fill()
            batch, self.pending = self.pending, []
            for payload in batch:
                if self.counting and payload[:3] in (b"<me", b"<pr", b"<iq"):
                    self.handled += 1
                elif payload.startswith(b"<r "):
                    self.send(f"<a xmlns='{SM}' h='{self.handled}'/>")
                    continue
                yield payload

    def expect(self, what: bytes) -> bytes:
        for payload in self.messages():
            if what in payload:
                return payload
            if b"<failure" in payload or b"type='error'" in payload:
                sys.exit(f"refused: {payload[:300]!r}")

    def sign_in(self, user: str, password: str) -> None:
        opening = f"<open xmlns='{FRAMING}' to='{DOMAIN}' version='1.0'/>"
        self.send(opening)
        self.expect(b"<stream:features")
        token = base64.b64encode(b"\0" + user.encode() + b"\0" + password.encode()).decode()
        self.send(f"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{token}</auth>")
        self.expect(b"<success")
        self.send(opening)
        self.expect(b"<stream:features")
        self.send("<iq xmlns='jabber:client' type='set' id='bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>")
        self.expect(b"id='bind'")

    def enable_sm(self) -> None:
        self.send(f"<enable xmlns='{SM}'/>")
        self.expect(b"<enabled")
        self.counting = True

    def join(self, room: str, nick: str) -> set:
        """Joins with no history; the nicks already there (from their presences)."""
        self.send(f"<presence xmlns='jabber:client' to='{room}/{nick}'><x xmlns='{MUC}'><history maxstanzas='0'/></x></presence>")
        nicks = set()
        for payload in self.messages():
            if payload.startswith(b"<presence") and b"type='error'" in payload:
                sys.exit(f"join refused: {payload[:300]!r}")
            if payload.startswith(b"<presence") and b"type='unavailable'" not in payload:
                found = re.search(rb"from='[^'/]*/([^']*)'", payload)
                if found:
                    nicks.add(found.group(1).decode())
                if b"code='110'" in payload:
                    print(f"joined {time.monotonic():.6f}", flush=True)
                    return nicks


def live(stream: Stream, room: str, n: int) -> None:
    count = 0
    for payload in stream.messages():
        if payload.startswith(b"<message") and b"type='groupchat'" in payload and b"<body" in payload:
            count += 1
            if count == 1:
                print(f"first {time.monotonic():.6f}", flush=True)
            if count == n:
                print(f"done {time.monotonic():.6f}", flush=True)
                return


def mam(stream: Stream, room: str, n: int) -> None:
    def query(page: int, after: bytes | None) -> None:
        rsm = "<max>50</max>" + (f"<after>{after.decode()}</after>" if after else "")
        stream.send(f"<iq xmlns='jabber:client' type='set' to='{room}' id='mam-{page}'><query xmlns='urn:xmpp:mam:2' "
                    f"queryid='mam-{page}'><set xmlns='http://jabber.org/protocol/rsm'>{rsm}</set>"
                    f"</query></iq>")

    count, page = 0, 1
    query(page, None)
    for payload in stream.messages():
        if payload.startswith(b"<message") and b"<result" in payload:
            count += 1
            if count == 1:
                print(f"first {time.monotonic():.6f}", flush=True)
        elif payload.startswith(b"<iq") and f"id='mam-{page}'".encode() in payload:
            if b"type='result'" not in payload:
                sys.exit(f"archive query refused: {payload[:300]!r}")
            last = re.search(rb"<last>([^<]*)</last>", payload)
            if b"complete='true'" in payload or not last:
                break
            page += 1
            query(page, last.group(1))
    print(f"done {time.monotonic():.6f}", flush=True)
    if count != n:
        sys.exit(f"the archive held {count} messages, not {n}")


def publish(stream: Stream, room: str, lines_file: str, wait_nick: str | None) -> None:
    nicks = stream.join(room, "publisher")
    frames = [client_frame(f"<message xmlns='jabber:client' to='{room}' type='groupchat' id='p{i}'><body>{escape(line)}</body>"
                           "</message>".encode())
              for i, line in enumerate(open(lines_file, encoding="utf-8").read().splitlines())]
    marker = f"id='p{len(frames) - 1}'".encode()
    reflected = threading.Event()
    arrived = threading.Event()

    def read():
        for payload in stream.messages():
            if wait_nick and payload.startswith(b"<presence") and f"/{wait_nick}'".encode() in payload:
                arrived.set()
            if payload.startswith(b"<message") and marker in payload:
                print(f"reflected {time.monotonic():.6f}", flush=True)
                reflected.set()

    threading.Thread(target=read, daemon=True).start()
    if wait_nick and wait_nick not in nicks and not arrived.wait(60):
        sys.exit(f"{wait_nick} did not join {room}")
    print(f"start {time.monotonic():.6f}", flush=True)
    for i in range(0, len(frames), 256):
        stream.sock.sendall(b"".join(frames[i:i + 256]))
    print(f"sent {time.monotonic():.6f}", flush=True)
    reflected.wait(600)


def main(mode: str, port: str, user: str, password: str, room: str, arg: str, nick: str | None = None) -> None:
    stream = Stream(int(port))
    stream.sign_in(user, password)
    if mode == "publish":
        publish(stream, room, arg, nick)
    else:
        if os.environ.get("XMPP_DRAIN_SM", "1") == "1":
            stream.enable_sm()
        stream.join(room, user)
        (live if mode == "live" else mam)(stream, room, int(arg))
        # Keep taking (and acknowledging) whatever comes until told to stop.
        threading.Thread(target=lambda: [None for _ in stream.messages()], daemon=True).start()
    sys.stdin.read()
    stream.sock.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
