#!/usr/bin/env python3
"""Writes the seed corpus of Fuzz/WebSocketFuzzer.swift into Fuzz/corpus/websocket/.

Every seed is: mode, flags A, flags B, flags C, chunk seed, then the payload (see the header
comment of WebSocketFuzzer.swift for what the flags mean in each mode). The script is
deterministic: running it again rewrites the same files, so the corpus can be reviewed as
code. Python 3 standard library only.

    python3 Fuzz/make_seed_corpus.py
"""

import hashlib
import os
import random
import struct
import sys
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent / "corpus" / "websocket"

RAW, CONN, HTTP, UTF8, DEFLATE, SERVER = range(6)

# Index into the fuzzer's sizeLimits = [0, 1, 125, 126, 4096, 65535, 65536, 70000].
LIMIT_64K = 6
LIMIT_125 = 2
LIMIT_4K = 4

seeds: dict[str, bytes] = {}


def seed(name: str, mode: int, payload: bytes, a: int = 0, b: int = 0, c: int = 0,
         chunks: int = 0) -> None:
    assert name not in seeds, name
    data = bytes([mode, a & 0xFF, b & 0xFF, c & 0xFF, chunks & 0xFF]) + payload
    assert len(data) <= 70000, (name, len(data))
    seeds[name] = data


def frame(opcode: int, payload: bytes = b"", fin: bool = True, rsv: int = 0,
          mask: bytes | None = None, length_class: int | None = None) -> bytes:
    """An RFC 6455 frame; length_class forces 7, 16 or 64-bit lengths (even non-minimal)."""
    n = len(payload)
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    mask_bit = 0x80 if mask is not None else 0
    cls = length_class or (7 if n < 126 else 16 if n <= 0xFFFF else 64)
    if cls == 7:
        head = bytes([b0, mask_bit | n])
    elif cls == 16:
        head = bytes([b0, mask_bit | 126]) + struct.pack(">H", n)
    else:
        head = bytes([b0, mask_bit | 127]) + struct.pack(">Q", n)
    if mask is not None:
        payload = bytes(x ^ mask[i % 4] for i, x in enumerate(payload))
        head += mask
    return head + payload


def text(s: str | bytes, fin: bool = True) -> bytes:
    return frame(0x1, s.encode() if isinstance(s, str) else s, fin)


def cont(s: str | bytes, fin: bool = True) -> bytes:
    return frame(0x0, s.encode() if isinstance(s, str) else s, fin)


def close(code: int | None = None, reason: bytes = b"") -> bytes:
    if code is None:
        return frame(0x8)
    return frame(0x8, struct.pack(">H", code) + reason)


# Raw mode flags: A bit0 inflater, bit1 server_no_context_takeover, bit2 server role,
# bits 3-5 frame limit; B bits 0-2 message limit.
RAW_A = LIMIT_64K << 3
RAW_B = LIMIT_64K
RAW_DEFLATE = RAW_A | 1

# RFC 7692 §7.2.3 examples.
HELLO_DEFLATED = bytes.fromhex("f248cdc9c90700")
HELLO_AGAIN = bytes.fromhex("f200110000")  # the second "Hello" sharing the LZ77 window
HELLO_STORED = bytes.fromhex("000500faff48656c6c6f00")
HELLO_BFINAL = bytes.fromhex("f348cdc9c9070000")


def raw_seeds() -> None:
    seed("raw-text-7bit", RAW, text("Hello"), RAW_A, RAW_B)
    seed("raw-text-16bit", RAW, text("A" * 200), RAW_A, RAW_B, chunks=0x21)
    seed("raw-binary-16bit-max", RAW, frame(0x2, b"\xab" * 0xFFFF), RAW_A, RAW_B, chunks=0x23)
    seed("raw-binary-64bit", RAW, frame(0x2, b"\x5a" * 65536), RAW_A, RAW_B, chunks=0x47)
    seed("raw-text-64bit-nonminimal", RAW, frame(0x1, b"abc", length_class=64), RAW_A, RAW_B)
    seed("raw-ping-pong", RAW, frame(0x9, b"ping!") + frame(0xA, b"pong!") + frame(0x9),
         RAW_A, RAW_B)
    seed("raw-fragmented-text-with-ping", RAW,
         text("Hel", fin=False) + frame(0x9, b"p1") + cont("lo"), RAW_A, RAW_B, chunks=1)
    seed("raw-fragmented-binary-three", RAW,
         frame(0x2, b"\x00\x01", fin=False) + frame(0xA, b"x") + cont(b"\x02", fin=False)
         + frame(0x9) + cont(b"\x03\x04"), RAW_A, RAW_B, chunks=0x05)
    seed("raw-close-1000-reason", RAW, close(1000, b"bye"), RAW_A, RAW_B)
    seed("raw-close-one-byte", RAW, frame(0x8, b"\x03"), RAW_A, RAW_B)
    seed("raw-split-code-point", RAW,
         text(b"\xe2", fin=False) + cont(b"\x82", fin=False) + cont(b"\xac"), RAW_A, RAW_B,
         chunks=1)
    seed("raw-invalid-utf8-long-partial", RAW, text(b"x" * 300 + b"\xff" + b"y" * 300),
         RAW_A, RAW_B, chunks=0x11)
    seed("raw-utf8-cut-at-message-end", RAW, text(b"\xe2\x82"), RAW_A, RAW_B)
    seed("raw-truncated-payload", RAW, b"\x81\x05He", RAW_A, RAW_B)
    seed("raw-truncated-64bit-length", RAW, b"\x82\x7f\x00\x00\x00\x00\x00", RAW_A, RAW_B)
    seed("raw-reserved-opcode", RAW, frame(0x3, b"x"), RAW_A, RAW_B)
    seed("raw-rsv2-set", RAW, frame(0x1, b"x", rsv=2), RAW_A, RAW_B)
    seed("raw-masked-from-server", RAW, frame(0x1, b"Hello", mask=b"\x37\xfa\x21\x3d"),
         RAW_A, RAW_B)
    seed("raw-unexpected-continuation", RAW, cont("x"), RAW_A, RAW_B)
    seed("raw-text-inside-fragmented", RAW, text("a", fin=False) + text("b"), RAW_A, RAW_B)
    seed("raw-ping-126", RAW, frame(0x9, b"p" * 126), RAW_A, RAW_B)
    seed("raw-64bit-high-bit", RAW, b"\x82\x7f\x80" + b"\x00" * 7, RAW_A, RAW_B)
    seed("raw-frame-over-limit", RAW, frame(0x2, b"z" * 200), LIMIT_125 << 3, RAW_B)
    seed("raw-message-over-limit", RAW,
         frame(0x2, b"z" * 100, fin=False) + cont(b"z" * 100), RAW_A, LIMIT_125)
    # Server role (masked frames), RFC 6455 §5.7 example.
    seed("raw-server-masked-hello", RAW, bytes.fromhex("818537fa213d7f9f4d5158"),
         RAW_A | 4, RAW_B)
    seed("raw-server-masked-fragments", RAW,
         frame(0x1, b"Hel", fin=False, mask=b"\x01\x02\x03\x04")
         + frame(0x9, b"", mask=b"\x00\x00\x00\x00")
         + frame(0x0, b"lo", mask=b"\xff\xee\xdd\xcc"), RAW_A | 4, RAW_B, chunks=1)
    # permessage-deflate.
    seed("raw-deflate-hello", RAW, frame(0x1, HELLO_DEFLATED, rsv=4), RAW_DEFLATE, RAW_B)
    seed("raw-deflate-hello-fragmented", RAW,
         frame(0x1, HELLO_DEFLATED[:3], fin=False, rsv=4) + cont(HELLO_DEFLATED[3:]),
         RAW_DEFLATE, RAW_B, chunks=1)
    seed("raw-deflate-context-takeover", RAW,
         frame(0x1, HELLO_DEFLATED, rsv=4) + frame(0x1, HELLO_AGAIN, rsv=4), RAW_DEFLATE, RAW_B)
    seed("raw-deflate-stored-block", RAW, frame(0x1, HELLO_STORED, rsv=4), RAW_DEFLATE, RAW_B)
    seed("raw-deflate-bfinal", RAW,
         frame(0x1, HELLO_BFINAL, rsv=4) + frame(0x2, HELLO_DEFLATED, rsv=4), RAW_DEFLATE, RAW_B)
    seed("raw-deflate-empty", RAW, frame(0x1, b"\x00", rsv=4), RAW_DEFLATE, RAW_B)
    seed("raw-deflate-no-context-takeover", RAW,
         frame(0x1, HELLO_DEFLATED, rsv=4) + text("plain") + frame(0x2, HELLO_DEFLATED, rsv=4),
         RAW_DEFLATE | 2, RAW_B)
    # A decompression bomb: 1 MiB of zeros deflates to ~1 KiB; the 4 KiB limit must stop it.
    bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb_bytes = bomb.compress(b"\x00" * (1 << 20)) + bomb.flush(zlib.Z_SYNC_FLUSH)
    seed("raw-deflate-bomb", RAW, frame(0x2, bomb_bytes[:-4], rsv=4), RAW_DEFLATE,
         LIMIT_4K)
    seed("raw-rsv1-on-continuation", RAW,
         frame(0x1, HELLO_DEFLATED[:3], fin=False, rsv=4) + frame(0x0, HELLO_DEFLATED[3:], rsv=4),
         RAW_DEFLATE, RAW_B)


# Connection flags (see connectionSetup in the fuzzer).
CONN_A = LIMIT_64K << 4  # frame limit 64 KiB, no deflate, chunked-vs-whole comparison
CONN_C = LIMIT_64K  # message limit 64 KiB


def conn_seeds() -> None:
    stream = text("hi") + frame(0x9, b"are you there") + frame(0x2, b"\x00\xff") + close(1000)
    seed("conn-basic", CONN, stream, CONN_A, 0, CONN_C)
    seed("conn-glued-to-101", CONN, text("early") + close(1001, b"restart"), CONN_A, 0,
         CONN_C | 8)
    seed("conn-fragmented-with-pings", CONN,
         text("Hel", fin=False) + frame(0x9, b"p1") + frame(0xA) + cont("lo ", fin=False)
         + cont("world") + close(), CONN_A, 0, CONN_C, chunks=0x05)
    seed("conn-invalid-close-code", CONN, close(1005), CONN_A, 0, CONN_C)
    seed("conn-invalid-utf8-fail-fast", CONN,
         text(b"ok " * 50 + b"\xf5" + b"tail" * 50) + close(1002), CONN_A, 0, CONN_C, chunks=0x11)
    seed("conn-framing-error-then-close", CONN, frame(0x4) + close(1000), CONN_A, 0, CONN_C)
    seed("conn-too-big", CONN, frame(0x2, b"q" * 300) + close(1009), LIMIT_125 << 4, 0, CONN_C)
    # permessage-deflate offered (A bit0) and accepted (B bit0).
    seed("conn-deflate", CONN,
         frame(0x1, HELLO_DEFLATED, rsv=4) + frame(0x1, HELLO_AGAIN, rsv=4) + close(1000),
         CONN_A | 1, 1, CONN_C)
    seed("conn-deflate-all-params", CONN,
         frame(0x1, HELLO_DEFLATED, rsv=4) + frame(0x2, HELLO_DEFLATED, rsv=4) + close(1000),
         CONN_A | 0x7, 0x1F | (7 << 5), CONN_C | 0x40)
    seed("conn-deflate-window-8", CONN, frame(0x1, HELLO_STORED, rsv=4) + close(3000),
         CONN_A | 1 | 8, 0x09, CONN_C)
    # Scripted actions (A bit7) between chunks: sends, pings, closes, transport closes.
    chatter = b"".join(
        text(f"message {i} ✓") + frame(0x9, bytes([i])) + frame(0x2, bytes([i] * i))
        for i in range(24)) + close(1000, b"done")
    seed("conn-actions", CONN, chatter, CONN_A | 0x80, 0, CONN_C | 0x30, chunks=0x0D)
    seed("conn-actions-deflate", CONN, chatter, CONN_A | 0x80 | 0x9, 0x01, CONN_C | 0x20,
         chunks=0x09)
    seed("conn-actions-bytewise", CONN, chatter[:200], CONN_A | 0x80, 0, CONN_C | 0x10,
         chunks=1)


ACCEPT = b"@@"  # the fuzzer splices in handshake.expectedAccept here


def response(status: bytes = b"101 Switching Protocols", *headers: bytes,
             accept: bool = True, tail: bytes = b"") -> bytes:
    lines = [b"HTTP/1.1 " + status]
    if status.startswith(b"101"):
        lines += [b"Upgrade: websocket", b"Connection: Upgrade"]
        if accept:
            lines.append(b"Sec-WebSocket-Accept: " + ACCEPT)
    lines += list(headers)
    return b"\r\n".join(lines) + b"\r\n\r\n" + tail


HTTP_A = 3 << 5  # head limit 64 KiB
HTTP_DEFLATE = HTTP_A | 2 | (1 << 2)  # offer deflate, client_max_window_bits without value


def http_seeds() -> None:
    seed("http-101-minimal", HTTP, response(), HTTP_A)
    seed("http-101-deflate", HTTP,
         response(b"101 Switching Protocols",
                  b"Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                  b"client_max_window_bits=10"), HTTP_DEFLATE)
    seed("http-101-deflate-quoted", HTTP,
         response(b"101 Switching Protocols",
                  b"Sec-WebSocket-Extensions: permessage-deflate;server_max_window_bits=\"12\""),
         HTTP_DEFLATE | 0x10, 0x3F)
    seed("http-101-deflate-bad-bits", HTTP,
         response(b"101 Switching Protocols",
                  b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=16"),
         HTTP_DEFLATE)
    seed("http-101-unknown-extension", HTTP,
         response(b"101 Switching Protocols", b"Sec-WebSocket-Extensions: x-webkit-deflate"),
         HTTP_DEFLATE)
    seed("http-101-subprotocol", HTTP,
         response(b"101 Switching Protocols", b"Sec-WebSocket-Protocol: chat"), HTTP_A | 1)
    seed("http-101-frames-follow", HTTP,
         response(tail=text("right after") + frame(0x9, b"x") + close(1000)), HTTP_A, chunks=0x06)
    seed("http-101-wrong-accept", HTTP, response(b"101 Switching Protocols",
         b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", accept=False), HTTP_A)
    seed("http-101-two-accepts", HTTP,
         response(b"101 Switching Protocols", b"Sec-WebSocket-Accept: " + ACCEPT), HTTP_A)
    seed("http-503-retry-after", HTTP,
         response(b"503 Service Unavailable", b"Retry-After: 120", b"Content-Length: 0"), HTTP_A)
    seed("http-301-location", HTTP,
         response(b"301 Moved Permanently", b"Location: wss://elsewhere.example/ws"), HTTP_A)
    seed("http-bare-lf", HTTP, b"HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\r\n\r\n",
         HTTP_A)
    seed("http-obs-fold", HTTP, response(b"101 Switching Protocols", b"X-A: 1", b" folded"),
         HTTP_A)
    seed("http-bad-status", HTTP, b"HTTP/2 1O1 Nope\r\n\r\n", HTTP_A)
    seed("http-latin1-value", HTTP, response(b"101 Switching Protocols", b"Server: caf\xe9"),
         HTTP_A)
    seed("http-too-large", HTTP, response(b"101 Switching Protocols", b"X-Pad: " + b"p" * 200),
         0)


def utf8_seeds() -> None:
    seed("utf8-mixed-valid", UTF8, "héllo ☃ 𝄞 €uro ß 日本語 \U0010FFFF \u0080".encode(),
         chunks=1)
    seed("utf8-boundaries", UTF8,
         bytes.fromhex("7f c280 dfbf e0a080 efbfbf f0908080 f48fbfbf ed9fbf ee8080"), chunks=1)
    seed("utf8-invalid-c0-c1-f5", UTF8, b"\xc0\x80 \xc1\xbf \xf5\x80\x80\x80", chunks=1)
    seed("utf8-overlong-e0", UTF8, b"\xe0\x80\xaf")
    seed("utf8-surrogate", UTF8, b"\xed\xbf\xbf")
    seed("utf8-truncated-end", UTF8, b"ok \xf0\x9f\x8e")
    seed("utf8-ascii-then-invalid", UTF8, b"a" * 23 + b"\xff" + b"b" * 9, chunks=0x03)


def deflate_seeds() -> None:
    rng = random.Random(1)
    seed("deflate-text", DEFLATE, b"Hello, Hello, Hello! " * 40, 0x06, 6, 1, chunks=0x43)
    seed("deflate-random", DEFLATE, bytes(rng.getrandbits(8) for _ in range(3000)), 0x00, 1, 2,
         chunks=0x07)
    seed("deflate-window9-no-context", DEFLATE, b"abcabcabd" * 300, 0x08 | 0x10, 9, 3,
         chunks=0x2B)


# Server-session flags: A bit0 deflate, bits 3-5 frame limit; B bits 0-2 message limit,
# bits 3-5 our window; C bit0 echo messages, bit1 compress everything.
SRV_A = LIMIT_64K << 3
SRV_B = LIMIT_64K | (7 << 3)
KEYS = [b"\x37\xfa\x21\x3d", b"\x80\x80\x80\x80", b"\x00\x00\x00\x00", b"\xde\xad\xbe\xef"]


def masked(opcode: int, payload: bytes = b"", fin: bool = True, rsv: int = 0, k: int = 0) -> bytes:
    return frame(opcode, payload, fin, rsv, mask=KEYS[k % len(KEYS)])


def server_seeds() -> None:
    seed("srv-masked-text", SERVER, masked(0x1, b"Hello") + masked(0x8, b"\x03\xe8", k=1),
         SRV_A, SRV_B, 1)
    seed("srv-masked-fragments-pings", SERVER,
         masked(0x1, "κόσμε ".encode(), fin=False, k=1) + masked(0x9, b"p", k=2)
         + masked(0x0, "✓ done".encode(), k=3) + masked(0x2, bytes(range(200)), k=1)
         + masked(0x8, b"\x03\xe9bye"), SRV_A, SRV_B, 1, chunks=0x05)
    seed("srv-masked-deflate", SERVER,
         masked(0x1, HELLO_DEFLATED, rsv=4, k=3) + masked(0x1, HELLO_AGAIN, rsv=4, k=1)
         + masked(0x8), SRV_A | 1, SRV_B, 3, chunks=0x06)
    seed("srv-unmasked-from-client", SERVER, text("not masked") + masked(0x8), SRV_A, SRV_B, 1)
    seed("srv-masked-bad-utf8", SERVER, masked(0x1, b"ok\xed\xa0\x80", k=2) + masked(0x8),
         SRV_A, SRV_B, 0, chunks=1)
    seed("srv-masked-bytewise-big", SERVER, masked(0x1, ("wide " * 60).encode(), k=2), SRV_A,
         SRV_B, 1, chunks=1)


def main() -> int:
    raw_seeds()
    conn_seeds()
    http_seeds()
    utf8_seeds()
    deflate_seeds()
    server_seeds()
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    for name, data in sorted(seeds.items()):
        (OUT / name).write_bytes(data)
    digest = hashlib.sha256(b"".join(seeds[n] for n in sorted(seeds))).hexdigest()[:16]
    print(f"wrote {len(seeds)} seeds to {os.path.relpath(OUT)} (sha256 {digest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
