#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets, and the dictionaries of the new ones.

  Tests/Fuzz/corpus/websocket/  Tests/Fuzz/WebSocketFuzzer.swift: mode, flags A, flags B, flags C, chunk
                          seed, then the payload
  Tests/Fuzz/corpus/varlink/    Tests/Fuzz/VarlinkFuzzer.swift: mode, flags A, flags B, then the payload
  Tests/Fuzz/corpus/config/     Tests/Fuzz/ConfigFuzzer.swift: mode, flags A, flags B, then the payload
  Tests/Fuzz/corpus/stomp/      Tests/Fuzz/STOMPFuzzer.swift: flags, then WebSocket messages (kind, 2-byte
                          length, payload)
  Tests/Fuzz/corpus/metrics/    Tests/Fuzz/MetricsFuzzer.swift: flags, chunk seed, then the request bytes
                          (raw) or what a request is built from (structured)
  Tests/Fuzz/corpus/dedupe/     Tests/Fuzz/DedupeFuzzer.swift: mode, then store lines, records or window
                          operations
  Tests/Fuzz/corpus/xmpp/       Tests/Fuzz/XMPPFuzzer.swift: flags, chunk seed, then frames separated by
                          NUL (Prosody's stanzas, SASL exchanges, hostile XML)
  Tests/Fuzz/varlink.dict, Tests/Fuzz/config.dict   libFuzzer dictionaries (websocket.dict is by hand)

(see the header comment of each fuzzer for what the modes and flags mean). The Varlink seeds
are generated from the interface description in Sources/ChatLinkAPI/ChatLinkInterface.swift (a
valid call of every method, a reply of every method and every error), the config seeds from
the shipped config/chatlinkd.conf; re-run the script when either changes.

The script is deterministic: running it again rewrites the same files, so the corpora can be
reviewed as code. Files named crash-* are never touched: they are the inputs that found bugs,
added by hand (see Tests/Fuzz/README.md), and stay in the corpus for good. Python 3 standard library
only.

    python3 Tests/Fuzz/make_seed_corpus.py
"""

import hashlib
import json
import os
import random
import re
import struct
import sys
import zlib
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parents[1]
OUT = FUZZ / "corpus" / "websocket"

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


# MARK: - Varlink (Tests/Fuzz/VarlinkFuzzer.swift)

V_FRAMER, V_MESSAGE, V_STRING, V_BUILT, V_EQUALITY = range(5)
# Index into the fuzzer's framerLimits = [0, 1, 2, 16, 100, 1024, 4096, 65536].
V_LIMIT_0, V_LIMIT_2, V_LIMIT_16, V_LIMIT_100, V_LIMIT_1K, V_LIMIT_64K = 0, 2, 3, 4, 5, 7
# Key sets of the per-message checks (keySet in the fuzzer).
KEYS_NONE, KEYS_ENVELOPE, KEYS_VARLINK, KEYS_OUTBOX, KEYS_ESCAPED, KEYS_BAD_NESTED = range(6)
KEYS_OWN = 6

varlink_seeds: dict[str, bytes] = {}


def vseed(name: str, mode: int, payload: bytes, a: int = 0, b: int = 0) -> None:
    assert name not in varlink_seeds, name
    data = bytes([mode, a & 0xFF, b & 0xFF]) + payload
    assert len(data) <= 70000, (name, len(data))
    varlink_seeds[name] = data


def stream(name: str, *messages: bytes | dict, limit: int = V_LIMIT_64K,
           keys: int = KEYS_VARLINK, chunks: int = 0, nul: bool = True) -> None:
    """Mode 0: NUL-terminated messages through the framer (the last without NUL if not nul)."""
    wire = b"".join(
        (m if isinstance(m, bytes) else compact(m)) + b"\x00" for m in messages)
    if not nul:
        wire = wire[:-1]
    vseed(name, V_FRAMER, wire, limit | keys << 3, chunks)


def message(name: str, text: bytes | str, keys: int = KEYS_OWN) -> None:
    """Mode 1: one message, no framing."""
    vseed(name, V_MESSAGE, text.encode() if isinstance(text, str) else text, keys)


def compact(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def interface() -> tuple[dict, dict, dict]:
    """Methods, types and errors of io.chatlink.Daemon, read from ChatLinkInterface.swift."""
    source = (ROOT / "Sources" / "ChatLinkAPI" / "ChatLinkInterface.swift").read_text()
    text = source.split('public static let description = """', 1)[1].split('"""', 1)[0]
    # Comments out, and each declaration on one line.
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    text = re.sub(r"\s+", " ", text)

    def fields(body: str) -> list[tuple[str, str]]:
        out = []
        for part in body.split(","):
            part = part.strip()
            if part:
                name, kind = (x.strip() for x in part.split(":", 1))
                out.append((name, kind))
        return out

    types = {m[0]: fields(m[1]) for m in re.findall(r"type (\w+) \(([^)]*)\)", text)}
    methods = {m[0]: (fields(m[1]), fields(m[2]))
               for m in re.findall(r"method (\w+)\(([^)]*)\) -> \(([^)]*)\)", text)}
    errors = {m[0]: fields(m[1]) for m in re.findall(r"error (\w+) \(([^)]*)\)", text)}
    assert methods and types and errors, "cannot read the interface description"
    return methods, types, errors


def sample(kind: str, types: dict, name: str = ""):
    """A plausible value of a Varlink type."""
    if kind.startswith("?"):
        return sample(kind[1:], types, name)
    if kind.startswith("[]"):
        return [sample(kind[2:], types, name), sample(kind[2:], types, name + "2")]
    if kind == "string":
        return {"room": "7", "id": "c-42", "time": "2026-12-02T13:41:59.123Z",
                "since_time": "2026-12-01T00:00:00Z", "state": "open",
                "text": "héllo ✓ \"quoted\"\n"}.get(name, name or "x")
    if kind == "int":
        return {"limit": 100, "since_seq": 41, "code": 1000}.get(name, 3)
    if kind == "float":
        return 0.25
    if kind == "bool":
        return True
    if kind == "object":
        return {"seq": 42, "room_id": "7", "data": {"message": "hi", "sender": "bob"}}
    return {field: sample(sub, types, field) for field, sub in types[kind]}


def varlink_seeds_all() -> None:
    methods, types, errors = interface()
    calls = []
    for method, (params, outs) in sorted(methods.items()):
        full = f"io.chatlink.Daemon.{method}"
        every = {name: sample(kind, types, name) for name, kind in params}
        required = {name: sample(kind, types, name) for name, kind in params
                    if not kind.startswith("?")}
        call = {"method": full}
        if every:
            call["parameters"] = every
        calls.append(call)
        stream(f"call-{method}", call)
        if required != every:
            stream(f"call-{method}-required-only", {"method": full, "parameters": required})
        stream(f"call-{method}-more", dict(call, more=True))
        stream(f"call-{method}-oneway-chunked", dict(call, oneway=True), chunks=0x05)
        reply = {"parameters": {name: sample(kind, types, name) for name, kind in outs}}
        stream(f"reply-{method}", reply, keys=KEYS_OWN)
        if method in ("Send", "Subscribe"):
            stream(f"reply-{method}-continues", dict(reply, continues=True), keys=KEYS_OWN)
        message(f"msg-call-{method}", compact(call), keys=KEYS_VARLINK)
    for error, params in sorted(errors.items()):
        stream(f"reply-error-{error}",
               {"error": f"io.chatlink.Daemon.{error}",
                "parameters": {name: sample(kind, types, name) for name, kind in params}})
    for error in ("InterfaceNotFound", "MethodNotFound", "MethodNotImplemented",
                  "InvalidParameter", "PermissionDenied"):
        stream(f"reply-error-service-{error}",
               {"error": f"org.varlink.service.{error}",
                "parameters": {"parameter": "room", "reason": "empty"}
                if error == "InvalidParameter" else {"method": "x.y"}})
    stream("call-service-GetInfo", {"method": "org.varlink.service.GetInfo"})
    stream("call-service-GetInterfaceDescription",
           {"method": "org.varlink.service.GetInterfaceDescription",
            "parameters": {"interface": "io.chatlink.Daemon"}})
    # Pipelined: every call in one write, then byte by byte, then in random chunks.
    stream("pipeline-all-calls", *calls)
    stream("pipeline-all-calls-bytewise", *calls[:4], chunks=1)
    stream("pipeline-all-calls-chunked", *calls, chunks=0x0B)
    stream("pipeline-pretty-printed", *(json.dumps(c, indent=2).encode() for c in calls[:3]),
           chunks=0x2A)
    # Framing: missing NUL, empty messages, limits.
    stream("frame-missing-nul", {"method": "io.chatlink.Daemon.Ping"}, nul=False)
    stream("frame-empty-messages", b"", b"", {"method": "io.chatlink.Daemon.Ping"}, b"")
    stream("frame-limit-0", b"", b"x", limit=V_LIMIT_0)
    stream("frame-limit-2-exact", b"ab", b"cd", b"efg", limit=V_LIMIT_2, chunks=1)
    stream("frame-limit-16-tail", b"{}", b"x" * 20, limit=V_LIMIT_16, nul=False, chunks=0x07)
    stream("frame-limit-100-second", compact({"method": "a.b"}), b"[" * 50 + b"]" * 50 + b"1",
           limit=V_LIMIT_100)
    stream("frame-over-64k", b"{\"method\":\"a.b\",\"parameters\":{\"text\":\"" + b"a" * 65536
           + b"\"}}", limit=V_LIMIT_64K, chunks=0x03)
    # Requests the decoder must refuse, each for its own reason.
    refused = {
        "not-json": b"GET / HTTP/1.1\r\n\r\n",
        "not-object": b"[\"io.chatlink.Daemon.Ping\"]",
        "no-method": b"{\"parameters\":{}}",
        "empty-method": b"{\"method\":\"\"}",
        "method-number": b"{\"method\":7}",
        "parameters-array": b"{\"method\":\"a.b\",\"parameters\":[1]}",
        "parameters-null": b"{\"method\":\"a.b\",\"parameters\":null}",
        "more-string": b"{\"method\":\"a.b\",\"more\":\"yes\"}",
        "oneway-number": b"{\"method\":\"a.b\",\"oneway\":1}",
        "upgrade-true": b"{\"method\":\"a.b\",\"upgrade\":true}",
        "upgrade-false": b"{\"method\":\"a.b\",\"upgrade\":false}",
        "duplicate-method": b"{\"method\":\"a.b\",\"method\":\"io.chatlink.Daemon.Join\"}",
        "escaped-key": b"{\"\\u006dethod\":\"io.chatlink.Daemon.Ping\",\"m\\u0065thod\":\"x.y\"}",
        "nul-escape-in-method": b"{\"method\":\"io.chatlink\\u0000.Daemon.Ping\"}",
    }
    for name, text in refused.items():
        stream(f"call-{name}", text)
        message(f"msg-call-{name}", text, keys=KEYS_VARLINK)
    # Malformed JSON.
    malformed = {
        "truncated": b"{\"method\":\"io.chatlink.Daemon.Se",
        "trailing-comma": b"{\"a\":1,}",
        "trailing-comma-array": b"[1,2,]",
        "single-quotes": b"{'method':'a.b'}",
        "leading-zero": b"[01]",
        "minus-alone": b"[-]",
        "dot-no-digits": b"[1.]",
        "exponent-no-digits": b"[1e]",
        "plus-sign": b"[+1]",
        "bare-word": b"[nul]",
        "nan-infinity": b"[NaN,Infinity,-Infinity]",
        "two-values": b"{} {}",
        "trailing-garbage": b"{\"a\":1}x",
        "unclosed-string": b"\"abc",
        "raw-newline-in-string": b"\"a\nb\"",
        "raw-tab-in-string": b"\"a\tb\"",
        "control-char": b"\"\x01\"",
        "colon-missing": b"{\"a\" 1}",
        "key-not-string": b"{a:1}",
        "empty": b"",
        "whitespace-only": b" \t\r\n",
        "vertical-tab": b"\x0b{}",
        "nul-inside": b"{\"a\":\x001}",
        "bom": b"\xef\xbb\xbf{}",
    }
    for name, text in malformed.items():
        message(f"json-bad-{name}", text, keys=KEYS_ENVELOPE)
    # Valid JSON of every shape.
    good = {
        "literals": b"[true,false,null]",
        "whitespace": b" \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } }\r\n",
        "scalars": b"\"top-level string\"",
        "numbers": b"[0,-0,1.5,-1.5e-3,1E+2,0.0e0,123456789,-9223372036854775808,"
                   b"9223372036854775807]",
        "envelope": compact({"event": "message", "data": {"room_id": 7, "message": "hi",
                                                       "client_id": "c-1", "sender": "bob"}}),
        "envelope-escaped-keys": b"{\"ev\\u0065nt\":\"message\",\"data\":{\"room\\u005fid\":\"7\"}}",
        "duplicate-keys": b"{\"a\":1,\"a\":{\"b\":2},\"a\":[3]}",
        "duplicate-nested": b"{\"event\":\"message\",\"data\":{\"room_id\":\"A\"},"
                            b"\"data\":{\"message\":\"hi\"}}",
        "unicode-keys": "{\"é\":1,\"e\\u0301\":2,\"\\u00e9\":3,\"\U0001F600\":4}",
        "store-record": b"{\"seq\":42,\"time\":\"2026-12-02T13:41:59.123Z\",\"dir\":\"in\","
                        b"\"room\":\"7\",\"data\":{\"event\":\"message\"}}",
        "outbox-line": b"{\"op\":\"add\",\"id\":\"c-1\",\"room\":\"7\",\"count\":1,"
                       b"\"time\":\"2026-12-02T13:41:59Z\",\"text\":\"hi\"}",
    }
    for name, text in good.items():
        message(f"json-{name}", text)
    message("json-envelope-keys", good["envelope"], keys=KEYS_ENVELOPE)
    message("json-escaped-keys", "{\"é\":1,\"\\u0000\":2,\"\\\"\":3,\"\\\\\":4,\"a\\/b\":5,"
            "\"\":6,\"\\ud83d\\ude00\":{\"é\":7,\"/\":8}}", keys=KEYS_ESCAPED)
    message("json-bad-nested-index", b"{\"data\":{\"room_id\":1}}", keys=KEYS_BAD_NESTED)
    # Deep nesting: around JSONValue.parse's 64 and the scanner's 128.
    for depth in (63, 64, 65, 127, 128, 129, 1000):
        message(f"json-deep-arrays-{depth}", b"[" * depth + b"]" * depth)
    for depth in (63, 64, 128, 129):
        message(f"json-deep-objects-{depth}",
                b"{\"a\":" * depth + b"1" + b"}" * depth, keys=KEYS_OWN | 8)
    message("json-deep-mixed-64", b"[{\"a\":" * 32 + b"[]" + b"}]" * 32)
    stream("call-deep-parameters-70", b"{\"method\":\"a.b\",\"parameters\":"
           + b"{\"p\":" * 70 + b"0" + b"}" * 70 + b"}")
    # Huge and odd numbers.
    numbers = {
        "1e400": b"1e400",
        "-1e400": b"-1e400",
        "1e-400": b"1e-400",
        "2-pow-63": b"9223372036854775808",
        "2-pow-64": b"18446744073709551616",
        "-2-pow-63-minus-1": b"-9223372036854775809",
        "2-pow-53-plus-1": b"9007199254740993",
        "many-digits": b"1" * 400,
        "many-fraction-digits": b"0." + b"3" * 400,
        "subnormal": b"5e-324",
        "max-double": b"1.7976931348623157e308",
        "exponent-overflow": b"1e99999999999999999999",
    }
    for name, text in numbers.items():
        message(f"number-{name}", b"[" + text + b"]")
    stream("call-number-1e400", b"{\"method\":\"io.chatlink.Daemon.History\",\"parameters\":"
           b"{\"limit\":1e400,\"since_seq\":9223372036854775808}}")
    # Strings (mode 2: the content between the quotes).
    strings = {
        "every-escape": b"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u0041 \\u00e9 \\u20AC",
        "surrogate-pair": b"\\ud83d\\ude00",
        "surrogate-pair-upper": b"\\uD834\\uDD1E",
        "lone-high": b"a\\ud800b",
        "lone-low": b"\\udc00",
        "high-high-low": b"\\ud800\\ud800\\udc00",
        "high-then-escape": b"\\ud800\\n",
        "high-at-end": b"\\udbff",
        "nul-escape": b"\\u0000",
        "bad-escape-x": b"\\x41",
        "bad-escape-short-u": b"\\u12",
        "bad-escape-u-nonhex": b"\\u12g4",
        "backslash-at-end": b"abc\\",
        "utf8-mixed": "héllo ☃ 𝄞 €uro ß 日本語 \U0010FFFF".encode(),
        "utf8-overlong": b"\xc0\xaf",
        "utf8-surrogate": b"\xed\xa0\x80",
        "utf8-truncated": b"ok \xf0\x9f\x98",
        "utf8-truncated-before-escape": b"\xe2\x82\\n",
        "utf8-above-max": b"\xf4\x90\x80\x80",
        "utf8-lone-continuation": b"\x80",
        "del-and-c1": "\x7f\u0080\u009f".encode(),
        "unicode-line-separators": "\u2028\u2029".encode(),
    }
    for name, text in strings.items():
        vseed(f"string-{name}", V_STRING, text)
    # Built values (mode 3): the bytes drive a generator.
    rng = random.Random(7)
    for i in range(6):
        vseed(f"built-random-{i}", V_BUILT, bytes(rng.getrandbits(8) for _ in range(64 << i)),
              rng.getrandbits(8), rng.getrandbits(8))
    vseed("built-doubles", V_BUILT, bytes([4]) + struct.pack(">d", 1e300) + bytes([4])
          + struct.pack(">d", float("nan")), 0, 0x0F)
    # Equality and hashing (mode 4): arrays of values that are equal, or nearly.
    equality = {
        "int-double": b"[1,1.0,1e0,10e-1,-0,0,0.0]",
        "big-int-double": b"[9007199254740993,9007199254740992.0,9007199254740992]",
        "canonical-equivalence": "[\"é\",\"e\\u0301\",\"\\u00e9\",\"\\u212b\",\"\\u00c5\"]"
                                 .encode(),
        "objects": b"[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1},{\"a\":1.0,\"b\":2}]",
        "nested": b"[[1,[2]],[1.0,[2.0]],[1,[2,3]]]",
    }
    for name, text in equality.items():
        vseed(f"equal-{name}", V_EQUALITY, text)


VARLINK_DICT = [
    "{", "}", "[", "]", ":", ",", "\"", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r",
    "\\t", "\\u", "\\u0000", "\\u00e9", "\\ud83d\\ude00", "\\ud800", "\\udc00", "true",
    "false", "null", "-", "0", "-0", ".5", "e+", "E-", "1e400", "9223372036854775808",
    "9007199254740993", "\x00", " ", "\r\n", "\xc3\xa9", "\xed\xa0\x80", "\xf0\x9f\x98\x80",
    "\xc0\xaf", "\xff", "\"method\":", "\"parameters\":", "\"more\":true", "\"oneway\":true",
    "\"upgrade\":", "\"continues\":true", "\"error\":", "\"event\":", "\"data\":",
    "\"room_id\":", "\"client_id\":", "io.chatlink.Daemon.", "org.varlink.service.",
]


def varlink_dict() -> list[str]:
    methods, types, errors = interface()
    words = list(VARLINK_DICT)
    for method, (params, outs) in sorted(methods.items()):
        words.append(f"\"io.chatlink.Daemon.{method}\"")
        words += [f"\"{name}\":" for name, _ in params + outs]
    for error in sorted(errors):
        words.append(f"\"io.chatlink.Daemon.{error}\"")
    for fields in types.values():
        words += [f"\"{name}\":" for name, _ in fields]
    return list(dict.fromkeys(words))


# MARK: - Config (Tests/Fuzz/ConfigFuzzer.swift)

C_FILES, C_DEFAULTS, C_SETTING = range(3)
# Flags A of the defaults mode.
D_SPACED, D_INDENTED, D_TRAILING, D_CRLF, D_DROPIN, D_CONTINUED, D_COMMENTS, D_DOUBLED = (
    1 << n for n in range(8))
D_RESPELL = 1  # flags B

# The fuzzer's settingKeys, in its order (the [Envelope] ones sorted by name).
ENVELOPE_KEYS = ["EventField", "DataField", "RoomField", "MessageField", "SenderField",
                 "CountField", "ClientIDField", "JoinEvent", "LeaveEvent", "SendEvent",
                 "MessageEvent"]
SETTING_KEYS = [
    ("Backend", "URL"), ("Backend", "TokenFile"), ("Backend", "Header"),
    ("Backend", "Subprotocol"), ("Backend", "CAFile"), ("Backend", "Proxy"),
    ("Backend", "Protocol"), ("Backend", "Rooms"), ("Backend", "Sender"),
    ("Backend", "PingIntervalSec"), ("Backend", "PongTimeoutSec"),
    ("Backend", "ConnectTimeoutSec"), ("Backend", "ReconnectMinSec"),
    ("Backend", "ReconnectMaxSec"), ("Backend", "Compression"), ("Backend", "MaxMessageSize"),
    ("Store", "Directory"), ("Store", "Sync"), ("Store", "SyncIntervalMSec"),
    ("Store", "MaxFileSize"), ("Store", "MaxFiles"), ("Outbox", "MaxMessages"),
    ("Control", "Socket"), ("Control", "SocketMode"), ("Control", "SocketGroup"),
    ("Daemon", "LogLevel"),
] + [("Envelope", key) for key in sorted(ENVELOPE_KEYS)]

# Valid and invalid values of every key (mode 2 writes one per seed).
VALUES = {
    "URL": (["ws://127.0.0.1:8765/", "wss://chat.example.com/ws?room=7", "ws://[::1]:9001/",
             "WSS://Host.Example:443", "ws://a:65535?x"],
            ["http://a/", "ws://", "ws://a:0/", "ws://a:65536/", "ws://u:p@a/", "ws://a/#f",
             "ws://a b/", "ws://[::1/", "ws://[::1]x/", "wss://:443/", ""]),
    "TokenFile": (["/etc/chatlink/token", ""], []),
    "Header": (["Origin: https://example.com", "X-Client:chatlink", "X-Empty:", ""],
               ["no colon", ": value", "Bad Name: v", "Authorization: Bearer s3cret",
                "authorization: x", "Host: evil", "Sec-WebSocket-Key: x", "X-A: a\rb"]),
    "Subprotocol": (["chat.v2 chat.v1", "chat,superchat", ""], ["a/b", "a;b", "\"q\""]),
    "CAFile": (["/etc/ssl/ca.pem", ""], []),
    "Proxy": (["http://proxy:3128", "http://[::1]:8080/", "proxy", ""],
              ["https://proxy:3128", "http://u:p@proxy/", "http://proxy:0", "http://p/x"]),
    "Protocol": (["envelope", "raw", "RAW"], ["json", ""]),
    "Rooms": (["7 8, 9", "a,a b", ""], []),
    "Sender": (["ops-bot", "名前"], [""]),
    "PingIntervalSec": (["10", "2.5s", "500ms", "1min 30s", "1 h", "7d", "100ms"],
                        ["soon", "-1", "0", "0.05", "8d", "1e3", "5 parsecs", "1..2", ".", "",
                         "1" * 400]),
    "PongTimeoutSec": (["10", "0.1"], ["0.09"]),
    "ConnectTimeoutSec": (["30s"], ["0s"]),
    "ReconnectMinSec": (["0.01", "1"], ["0.001", "120"]),
    "ReconnectMaxSec": (["2min", "60"], ["0.5"]),
    "Compression": (["yes", "no", "on", "off", "1", "0", "true", "F"], ["maybe", ""]),
    "MaxMessageSize": (["16M", "1024", "1K", "2G", "1TB"],
                       ["1023", "16X", "M", "-1K", "99999999999999999999", "9000000T", ""]),
    "Directory": (["/var/lib/chatlink", "/srv/chat"], ["relative", ""]),
    "Sync": (["always", "batch", "none", "NONE"], ["sometimes"]),
    "SyncIntervalMSec": (["50", "60000", "+1"], ["0", "60001", "-5", "5ms"]),
    "MaxFileSize": (["64M", "4096", "4K"], ["4095", "1K"]),
    "MaxFiles": (["8", "2", "10000"], ["1", "0", "10001", "two"]),
    "MaxMessages": (["10000", "1"], ["0", "10000001"]),
    "Socket": (["/run/chatlink/control.sock", "/" + "s" * 106], ["run/x.sock", "/" + "s" * 107]),
    "SocketMode": (["0660", "600", "7777", "0"], ["0999", "06600", "rw", ""]),
    "SocketGroup": (["chatlink", "adm"], [""]),
    "LogLevel": (["trace", "debug", "info", "notice", "warning", "error", "critical", "DEBUG"],
                 ["verbose", ""]),
}
for _key in ENVELOPE_KEYS:
    VALUES[_key] = (["channel", "post"], [""])

config_seeds: dict[str, bytes] = {}


def cseed(name: str, mode: int, payload: bytes | str, a: int = 0, b: int = 0) -> None:
    assert name not in config_seeds, name
    data = bytes([mode, a & 0xFF, b & 0xFF]) + (
        payload.encode() if isinstance(payload, str) else payload)
    assert len(data) <= 16384, (name, len(data))
    config_seeds[name] = data


def files(name: str, *texts: str | bytes) -> None:
    """Mode 0: the main file and up to two drop-ins, separated by NUL."""
    cseed(name, C_FILES, b"\x00".join(t.encode() if isinstance(t, str) else t for t in texts))


BASE = "[Backend]\nURL=ws://127.0.0.1:8765/\n"


def config_seeds_all() -> None:
    shipped = (ROOT / "config" / "chatlinkd.conf").read_text()
    files("shipped", shipped)
    files("shipped-crlf", shipped.replace("\n", "\r\n"))
    files("shipped-with-dropins", shipped, "[Backend]\nRooms=7 8\nHeader=X-A: 1\n",
          "[Backend]\nRooms=\nRooms=9\nURL=wss://other.example/ws\n[Store]\nSync=always\n")
    # The defaults mode: none, all, and each way of writing them.
    cseed("defaults-none", C_DEFAULTS, b"")
    cseed("defaults-all", C_DEFAULTS, b"\xff" * 8)
    ways = {"spaced": D_SPACED, "indented": D_INDENTED, "trailing": D_TRAILING,
            "crlf": D_CRLF, "dropin": D_DROPIN, "continued": D_CONTINUED,
            "comments": D_COMMENTS, "doubled": D_DOUBLED,
            "continued-comments": D_CONTINUED | D_COMMENTS,
            "everything-but-crlf": 0xFF & ~D_CRLF}
    for name, a in ways.items():
        cseed(f"defaults-all-{name}", C_DEFAULTS, b"\xff" * 8, a)
    for i in range(4):
        cseed(f"defaults-respelled-{i}", C_DEFAULTS, b"\xff" * 8, 0, D_RESPELL | i << 1)
    cseed("defaults-alternate-bits", C_DEFAULTS, b"\x55" * 8, D_SPACED | D_DROPIN, D_RESPELL)
    # Every key, with valid and invalid values, in the main file, a drop-in, or both.
    for index, (section, key) in enumerate(SETTING_KEYS):
        valid, invalid = VALUES[key]
        for n, value in enumerate(valid):
            cseed(f"set-{key}-ok-{n}", C_SETTING, value, index, n % 3)
        for n, value in enumerate(invalid):
            cseed(f"set-{key}-bad-{n}", C_SETTING, value, index, n % 3)
    cseed("set-unknown-index", C_SETTING, "x", len(SETTING_KEYS) + 3)
    # Syntax: sections, comments, continuation lines, whitespace, line endings.
    files("syntax-comments", "# comment\n; another\n  # indented\n" + BASE + "#Sender=x\n")
    files("syntax-continuation", BASE + "Rooms=1 \\\n  2 \\\n# ignored\n; ignored\n  3\n")
    files("syntax-continuation-at-eof", BASE + "Rooms=1 \\")
    files("syntax-continuation-into-section", BASE + "Sender=a \\\n[Store]\nSync=none\n")
    files("syntax-continuation-empty-line", BASE + "Sender=a \\\n\nSync=none\n")
    files("syntax-continuation-trailing-blank", BASE + "Rooms=a \\\n b \\ \n c\n")
    files("syntax-continuation-tab", BASE + "Rooms=a\t\\\t\n\tb\n")
    files("syntax-crlf", BASE.replace("\n", "\r\n") + "Rooms=1 2\r\n")
    files("syntax-crlf-value", BASE + "Sender=a\r\nb\n")
    files("syntax-lone-cr", BASE + "Sender=a\rb\nHeader=X-A: a\rb\n")
    files("syntax-cr-at-eof", BASE + "Sender=a\r")
    files("syntax-spaces", "  [Backend]  \n\tURL = ws://a/ \t\n Sender\t=\tbob \n")
    files("syntax-empty", "")
    files("syntax-no-section", "URL=ws://a/\n")
    files("syntax-bad-section", "[Backend\nURL=ws://a/\n")
    files("syntax-empty-section", "[]\n")
    files("syntax-section-chars", "[Back end]\n", )
    files("syntax-unknown-section", BASE + "[Nope]\nX=1\n")
    files("syntax-unknown-key", BASE + "PingInterval=10\n")
    files("syntax-lowercase-key", BASE + "sender=x\n")
    files("syntax-no-equals", BASE + "just text\n")
    files("syntax-empty-key", BASE + "=value\n")
    files("syntax-key-chars", BASE + "Send-er=x\nSend_er=y\n")
    files("syntax-value-equals", BASE + "Header=X-A: a=b=c\n")
    files("syntax-unicode", "[Backend]\nURL=ws://ünïcödé.example/\nSender=é\u0301\u200d🙂\n"
          "[Envelope]\nRoomField=ру́м\n")
    files("syntax-combining-after-equals", BASE + "Sender=\u0301x\n")
    files("syntax-invalid-utf8", BASE.encode() + b"Sender=\xff\xfe\xc0\xaf\n")
    files("syntax-nul-splits", BASE, "", "[Store]\nMaxFiles=3\n")
    files("syntax-bom", "\ufeff" + BASE)
    # Validation across files.
    files("validate-no-url", "[Store]\nSync=none\n")
    files("validate-min-over-max", BASE + "ReconnectMinSec=10\nReconnectMaxSec=5\n")
    files("validate-min-over-max-dropin", BASE + "ReconnectMaxSec=5\n",
          "[Backend]\nReconnectMinSec=10\n")
    files("validate-raw-with-rooms", BASE + "Protocol=raw\nRooms=7\n")
    files("validate-raw-rooms-reset", BASE + "Protocol=raw\nRooms=7\n", "[Backend]\nRooms=\n")
    files("validate-url-only-in-dropin", "[Store]\nMaxFiles=2\n", BASE)
    files("validate-error-in-second-dropin", BASE, "[Store]\nMaxFiles=3\n",
          "[Store]\nMaxFiles=1\n")
    files("validate-parse-error-after-bad-value", BASE + "MaxFiles=1\n", "[Backend\n")
    # Drop-ins override in order; list keys append; empty assignments reset.
    files("dropin-override",
          BASE + "Rooms=1 2\nHeader=X-A: 1\nSubprotocol=a\nSender=one\n",
          "[Backend]\nURL=ws://b/\nRooms=\nRooms=3\nHeader=\nSubprotocol=b c\nSender=two\n",
          "[Backend]\nRooms=3 4 3\nSubprotocol=\nTokenFile=/t\nTokenFile=\n[Daemon]\n"
          "LogLevel=DEBUG\n")
    files("dropin-section-does-not-carry", BASE, "Sender=x\n")
    files("dropin-continuation-does-not-carry", BASE + "Sender=a \\", "b\n")


CONFIG_DICT_EXTRA = [
    "\n", "\r\n", "\r", "\\\n", " \\\n", "\t", " = ", "=", "#", ";", "[", "]", ":", ",",
    "\x00", "ws://", "wss://", "http://", "[::1]", ":65535", "127.0.0.1", "/", "?", "@", "%",
    "ms", "min", "s", "h", "d", "usec", "K", "M", "G", "T", "B", "0660", "yes", "no",
    "envelope", "raw", "always", "batch", "none", "trace", "debug", "info", "critical",
    "Authorization", "Host", "Sec-WebSocket-Key", "\xc3\xa9", "\xcc\x81", "\xef\xbb\xbf",
]


def config_dict() -> list[str]:
    words = []
    for section, key in SETTING_KEYS:
        words += [f"[{section}]\n", f"{key}="]
    return list(dict.fromkeys(words + CONFIG_DICT_EXTRA))


# MARK: - Writing

def write_corpus(directory: Path, corpus: dict[str, bytes]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        if not old.name.startswith("crash-"):
            old.unlink()
    for name, data in sorted(corpus.items()):
        assert not name.startswith("crash-"), name
        (directory / name).write_bytes(data)
    digest = hashlib.sha256(b"".join(corpus[n] for n in sorted(corpus))).hexdigest()[:16]
    kept = sum(1 for f in directory.iterdir() if f.name.startswith("crash-"))
    print(f"wrote {len(corpus)} seeds to {os.path.relpath(directory)} (sha256 {digest}); "
          f"kept {kept} crash inputs")


def dict_entry(word: str) -> str:
    """A libFuzzer dictionary line: printable ASCII as is, the rest as \\xNN."""
    out = []
    for byte in word.encode():
        if 0x20 <= byte < 0x7F and byte not in (0x22, 0x5C):
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "\"" + "".join(out) + "\""


def write_dict(path: Path, title: str, words: list[str]) -> None:
    lines = [f"# libFuzzer dictionary for {title}.",
             "# Generated by Tests/Fuzz/make_seed_corpus.py: edit the script, not this file."]
    path.write_text("\n".join(lines + [dict_entry(w) for w in words]) + "\n")
    print(f"wrote {len(words)} entries to {os.path.relpath(path)}")


# ---------------------------------------------------------------------------- socketio

socketio_seeds: dict[str, bytes] = {}


def sio_frame(payload: bytes | str, binary: bool = False) -> bytes:
    """One frame of Tests/Fuzz/SocketIOFuzzer.swift's input: kind, 2-byte length, payload."""
    data = payload.encode() if isinstance(payload, str) else payload
    return bytes([1 if binary else 0]) + len(data).to_bytes(2, "big") + data


def sio_seed(name: str, flags: int, *frames: bytes) -> None:
    assert name not in socketio_seeds, name
    socketio_seeds[name] = bytes([flags]) + b"".join(frames)


OPEN = '0{"sid":"e1","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}'


def socketio_seeds_all() -> None:
    sio_seed("setup-main", 0, sio_frame(OPEN), sio_frame('40{"sid":"n1"}'), sio_frame("2"))
    sio_seed("setup-chat", 1, sio_frame(OPEN), sio_frame('40/chat,{"sid":"n1"}'))
    sio_seed("refused", 0, sio_frame(OPEN), sio_frame('44{"message":"unauthorized"}'))
    sio_seed("disconnect", 1, sio_frame("41/chat"), sio_frame("1"), sio_frame("6"))
    sio_seed("events", 0, sio_frame('42["message",{"room_id":7,"text":"hi"}]'),
             sio_frame('42["m",{"room_id":"ops"},[1,{"a":null}]]'), sio_frame('42[ "t" ]'),
             sio_frame('4212["ask",{"room_id":7}]'), sio_frame('42["m",\n{"x":"\u00e9"}]'))
    sio_seed("events-chat", 1, sio_frame('42/chat,3["m",1]'), sio_frame('42/chat["x"]'))
    sio_seed("acks", 6, sio_frame('432[{"ok":true}]'), sio_frame('433[{"error":"muted"}]'),
             sio_frame('434[{"error":{"code":4}}]'), sio_frame('431[]'), sio_frame('432[]'))
    sio_seed("binary-event", 0,
             sio_frame('452-7["file",{"room_id":7,"a":{"_placeholder":true,"num":0}},'
                       '{"_placeholder":true,"num":1}]'),
             sio_frame(b"\x00\x01\x02", binary=True), sio_frame(b"\xff", binary=True))
    sio_seed("binary-ack", 2, sio_frame('461-2[{"_placeholder":true,"num":0}]'),
             sio_frame(b"\x01", binary=True))
    sio_seed("garbage", 0, sio_frame("hello"), sio_frame('{"a":1}'), sio_frame("49"),
             sio_frame('42{"not":"array"}'), sio_frame("5300-[]"), sio_frame(b"\x09", binary=True))


# ---------------------------------------------------------------------------- mqtt

mqtt_seeds: dict[str, bytes] = {}


def mqtt_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def mqtt_packet(header: int, body: bytes) -> bytes:
    return bytes([header]) + mqtt_varint(len(body)) + body


def mqtt_str(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return len(data).to_bytes(2, "big") + data


def mqtt_publish(topic: str, payload: bytes, qos: int = 0, pid: int = 1, props: bytes = b"",
                 v5: bool = True, flags: int = 0) -> bytes:
    body = mqtt_str(topic) + (pid.to_bytes(2, "big") if qos else b"")
    if v5:
        body += mqtt_varint(len(props)) + props
    return mqtt_packet(0x30 | qos << 1 | flags, body + payload)


def mqtt_seed(name: str, flags: int, *frames: bytes, text: bool = False) -> None:
    assert name not in mqtt_seeds, name
    mqtt_seeds[name] = bytes([flags]) + b"".join(
        bytes([1 if text else 0]) + len(f).to_bytes(2, "big") + f for f in frames)


def mqtt_seeds_all() -> None:
    props = (b"\x03" + mqtt_str("application/json") + b"\x26" + mqtt_str("k") + mqtt_str("v")
             + b"\x08" + mqtt_str("reply/1") + b"\x09" + mqtt_str(b"\x01\x02") + b"\x0b\x2a")
    mqtt_seed("publish-v5", 0x00, mqtt_publish("chat/7", b'{"a":1}', qos=1, pid=5, props=props),
              mqtt_publish("chat/ops", b"plain", qos=0) + mqtt_publish("bin", b"\xff\x00", qos=2, pid=6))
    mqtt_seed("publish-v311", 0x01, mqtt_publish("a/b", b"hi", qos=1, pid=3, v5=False),
              mqtt_publish("r", b"retained", v5=False, flags=1))
    mqtt_seed("acks-v5", 0x06, mqtt_packet(0x40, b"\x00\x02"),
              mqtt_packet(0x40, b"\x00\x03\x97\x05\x1f" + mqtt_str("quota")[:0] + b"\x00\x02hi"),
              mqtt_packet(0x90, b"\xea\x61\x00\x01"), mqtt_packet(0x62, b"\x00\x06"),
              mqtt_packet(0xd0, b""))
    mqtt_seed("acks-v311", 0x05, mqtt_packet(0x40, b"\x00\x02"), mqtt_packet(0x90, b"\xea\x61\x80"),
              mqtt_packet(0xb0, b"\xea\x62"))
    mqtt_seed("disconnect-v5", 0x00, mqtt_packet(0xe0, b"\x87\x00"), mqtt_packet(0xe0, b"\x8b"))
    mqtt_seed("connect-and-subscribe", 0x00,
              mqtt_packet(0x10, mqtt_str("MQTT") + b"\x05\xc2\x00\x1e\x05\x11\x00\x00\x00\x3c"
                          + mqtt_str("c1") + mqtt_str("u") + mqtt_str("pw")),
              mqtt_packet(0x82, b"\xea\x61\x00" + mqtt_str("chat/#") + b"\x01"))
    mqtt_seed("malformed", 0x00, b"\x36\x01\x00", b"\x30\xff\xff\xff\xff\x01")
    mqtt_seed("text-frame", 0x00, b"hello", text=True)
    mqtt_seed("split-packet", 0x00, mqtt_publish("t", b"x" * 300, qos=1, pid=9)[:7],
              mqtt_publish("t", b"x" * 300, qos=1, pid=9)[7:])
    # Bit 7: QoS 2. Two sends (packet ids 2 and 3): a PUBREC asks for the first's release, the
    # second's PUBREC refuses it, a PUBCOMP completes the first; inbound, a QoS 2 message, its
    # redelivery (DUP) and its PUBREL; then a CONNACK without the session.
    mqtt_seed("qos2-v5", 0x82, mqtt_packet(0x50, b"\x00\x02"), mqtt_packet(0x50, b"\x00\x03\x97"),
              mqtt_packet(0x70, b"\x00\x02"),
              mqtt_publish("chat/7", b"once", qos=2, pid=11) + mqtt_publish("chat/7", b"once", qos=2, pid=11, flags=8),
              mqtt_packet(0x62, b"\x00\x0b"), mqtt_packet(0x20, b"\x00\x00\x00"))
    mqtt_seed("qos2-v311", 0x83, mqtt_packet(0x50, b"\x00\x02"), mqtt_packet(0x70, b"\x00\x02"),
              mqtt_publish("a/b", b"once", qos=2, pid=7, v5=False), mqtt_packet(0x62, b"\x00\x07"))


# ---------------------------------------------------------------------------- stomp

stomp_seeds: dict[str, bytes] = {}

# Flags of Tests/Fuzz/STOMPFuzzer.swift's first byte.
ST_NO_BEATS, ST_SMALL = 1, 2


def st_sends(n: int) -> int:
    return (n & 7) << 2


def st_frame(command: str, headers: list[tuple[str, str]] = (), body: bytes | str = b"",
             length: bool = False) -> bytes:
    """One STOMP frame's bytes; headers as given (the caller escapes them)."""
    data = body.encode() if isinstance(body, str) else body
    lines = [command] + [f"{name}:{value}" for name, value in headers]
    if length:
        lines.append(f"content-length:{len(data)}")
    return ("\n".join(lines) + "\n\n").encode() + data + b"\0"


def st_message(payload: bytes | str, binary: bool = False) -> bytes:
    """One WebSocket message of the fuzzer's input: kind, 2-byte length, payload."""
    return sio_frame(payload, binary)


def st_seed(name: str, flags: int, *messages: bytes) -> None:
    assert name not in stomp_seeds, name
    stomp_seeds[name] = bytes([flags]) + b"".join(messages)


ST_CONNECTED = st_frame("CONNECTED", [("version", "1.2"), ("session", "session-1"),
                                      ("heart-beat", "10000,10000"), ("server", "RabbitMQ/4.0")])


def st_msg(n: int, body: bytes | str = "hi", destination: str = "/topic/chat.7",
           length: bool = False, extra: list[tuple[str, str]] = ()) -> bytes:
    return st_frame("MESSAGE", [("destination", destination), ("message-id", f"T_sub-1@@s@@{n}"),
                                ("redelivered", "false"), ("subscription", "sub-1"),
                                ("ack", f"T_sub-1@@s@@{n}")] + list(extra), body, length)


def stomp_seeds_all() -> None:
    st_seed("setup", st_sends(2), st_message(ST_CONNECTED), st_message("\n"),
            st_message(st_frame("RECEIPT", [("receipt-id", "sub-1")])),
            st_message(st_frame("RECEIPT", [("receipt-id", "send-1")])),
            st_message(st_msg(1, '{"room_id":7,"text":"hi"}')))
    st_seed("setup-11", 0, st_message(st_frame("CONNECTED", [("version", "1.1"),
                                                             ("heart-beat", "0,5000")])),
            st_message(st_msg(1, "x")))
    st_seed("setup-10", 0, st_message(st_frame("CONNECTED", [("session", "s")])))
    st_seed("refused", 0, st_message(st_frame(
        "ERROR", [("message", "Bad CONNECT"), ("content-type", "text/plain")],
        "Access refused for user 'guest'\n")))
    st_seed("packed", st_sends(3),
            st_message(ST_CONNECTED + b"\n" + st_msg(1, "a") + b"\r\n" + st_msg(2, b"\x00\xff",
                                                                              length=True)
                       + st_frame("RECEIPT", [("receipt-id", "send-2")]), binary=True))
    whole = st_msg(3, "hello, split " * 8)
    st_seed("split", 0, st_message(ST_CONNECTED), st_message(whole[:17]),
            st_message(whole[17:60]), st_message(whole[60:] + st_msg(4, "[1,2]")[:5]),
            st_message(st_msg(4, "[1,2]")[5:]))
    st_seed("binary-body", ST_NO_BEATS, st_message(ST_CONNECTED),
            st_message(st_msg(5, bytes(range(256)), length=True), binary=True))
    st_seed("escapes", 0, st_message(ST_CONNECTED), st_message(st_msg(
        6, "x", destination="/exchange/x/a\\cb", extra=[("k\\n", "v\\r\\n\\\\"), ("k\\n", "2")])))
    st_seed("crlf", 0, st_message(ST_CONNECTED.replace(b"\n", b"\r\n", 3)),
            st_message(st_msg(7).replace(b"\n", b"\r\n", 5)))
    st_seed("errors", st_sends(3), st_message(ST_CONNECTED),
            st_message(st_frame("ERROR", [("message", "no"), ("receipt-id", "send-1")])),
            st_message(st_frame("ERROR", [("message", "no"), ("receipt-id", "sub-2")])),
            st_message(st_frame("ERROR", [("message", "Server cancelled subscription")],
                                "bye")))
    st_seed("receipts", st_sends(7), st_message(ST_CONNECTED),
            st_message(b"".join(st_frame("RECEIPT", [("receipt-id", f"send-{n}")])
                                for n in (3, 1, 3, 9, 2))),
            st_message(st_frame("RECEIPT")))
    st_seed("small-limit", ST_SMALL, st_message(ST_CONNECTED), st_message(st_msg(8, "y" * 300)))
    st_seed("garbage", 0, st_message(ST_CONNECTED), st_message("HELLO\n\n\0"),
            st_message(st_frame("SEND", [("destination", "/a")])),
            st_message(st_frame("MESSAGE", [("a", "\\t")])),
            st_message(b"MESSAGE\ncontent-length:5\n\nab\0"), st_message(b"\rX"))
    st_seed("before-connected", 0, st_message(st_msg(9)), st_message("\n\n"))


# ---------------------------------------------------------------------------- metrics

metrics_seeds: dict[str, bytes] = {}

M_LIMIT_8K, M_LIMIT_64, M_LIMIT_16, M_LIMIT_3 = range(4)
M_STRUCTURED = 4


def m_seed(name: str, flags: int, payload: bytes | str, chunks: int = 0) -> None:
    assert name not in metrics_seeds, name
    data = payload.encode() if isinstance(payload, str) else payload
    metrics_seeds[name] = bytes([flags, chunks]) + data


PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def metrics_seeds_all() -> None:
    m_seed("prometheus", M_LIMIT_8K, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9105\r\nUser-Agent: "
           f"Prometheus/2.42.0\r\nAccept: {PROMETHEUS_ACCEPT}\r\nAccept-Encoding: gzip\r\n\r\n", chunks=2)
    m_seed("curl", M_LIMIT_8K, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n", chunks=1)
    m_seed("head-lf", M_LIMIT_8K, "HEAD /metrics?x=1 HTTP/1.0\nAccept: text/plain\n\n")
    m_seed("refused-openmetrics", M_LIMIT_8K,
           "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;q=0\r\naccept: */*\r\n\r\n")
    m_seed("post-body", M_LIMIT_8K, "POST /metrics HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody")
    m_seed("not-found", M_LIMIT_8K, "GET / HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n")
    m_seed("http2", M_LIMIT_8K, "GET /metrics HTTP/2.0\r\n\r\n")
    m_seed("preface", M_LIMIT_8K, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    m_seed("no-colon", M_LIMIT_8K, "GET /metrics HTTP/1.1\r\nno colon\r\n\r\n")
    m_seed("tls-hello", M_LIMIT_8K, bytes.fromhex("16030100a5010000a10303") + bytes(range(32)) + b"\n\n")
    m_seed("at-limit-crlf", M_LIMIT_16, "GET /metrics HTTP/1.1\r\n\r\n", chunks=1)
    m_seed("over-limit", M_LIMIT_64, "GET /metrics HTTP/1.1\r\nX-Pad: " + "a" * 80 + "\r\n\r\n", chunks=3)
    m_seed("tiny-limit", M_LIMIT_3, "G\n\r\n")
    m_seed("utf8-header", M_LIMIT_8K, "GET /metrics HTTP/1.1\r\nAccept:\u0301 text/plain\r\nX-\u00e9: \xff\r\n\r\n".encode(
        "utf-8", "surrogateescape"))
    m_seed("structured-get", M_STRUCTURED | M_LIMIT_8K, bytes([0, 0, 0, 2 | (1 << 2)]) + b"\x03localhost")
    m_seed("structured-accepts", M_STRUCTURED | M_LIMIT_8K,
           bytes([1, 1, 1, 3 | (2 << 2)]) + b"\x00application/openmetrics-text;q=0.5\x00\x01\t*/*")
    m_seed("structured-small", M_STRUCTURED | M_LIMIT_64, bytes([2, 3, 0, 0]) + b"\x04" + b"v" * 40, chunks=1)
# ---------------------------------------------------------------------------- dedupe

dedupe_seeds: dict[str, bytes] = {}


def dd_seed(name: str, mode: int, payload: bytes) -> None:
    assert name not in dedupe_seeds, name
    dedupe_seeds[name] = bytes([mode]) + payload


def dd_record(dir_out: bool = False, room: int = 0, id_kind: int = 0, payload: int = 0,
              content: bytes = b"") -> bytes:
    kinds = int(dir_out) | (room & 3) << 1 | (id_kind & 3) << 3 | (payload & 3) << 5
    return bytes([kinds, len(content)]) + content


def dedupe_seeds_all() -> None:
    lines = [
        b'{"seq":1,"time":"2026-12-02T12:00:00.000001Z","dir":"in","room":7,"type":"json","id":"42",'
        b'"data":{"event":"message","data":{"room_id":7,"msg_id":"42","message":"hi"}}}',
        b'{"seq":2,"time":"2026-12-02T12:00:00.000002Z","dir":"in","room":"ops","type":"json","id":"a\\\"b\\u00e9",'
        b'"data":{}}',
        b'{"seq":3,"time":"2026-12-02T12:00:00.000003Z","dir":"out","room":7,"type":"json","id":"0123456789abcdef",'
        b'"data":{}}',
        b'{"seq":4,"time":"2026-12-02T12:00:00.000004Z","dir":"in","room":null,"type":"text","data":"x"}',
        b'{"seq":5,"dir":"in","room":7,"id":-12.5e3,"data":{"id":"nested","dir":"in"}}',
        b'{"seq":6,"dir":"in","room":7,"id":{"a":1},"data":{}}',
        b'{"seq":7,"dir":"in","room":7,"id":"","data":{}}',
        b'{"seq":8,"dir":"in","id":[1],"data":{}}',
        b'{"seq":9,"dir":"in","room":7,"id":null}',
        b'{"seq":10,"dir":"in","room":7,"id":true}',
        b'{"seq":11,"dir":"in","dir":"out","room":7,"id":"dup"}',
        b'{"seq":12,"dir":"\\u0069n","room":7,"id":"escaped dir"}',
        b'{"seq":13,"dir":"in","room":7,"id":"torn',
        b'not json at all',
        b'',
        b'  {"dir" : "in" , "id" : 5 , "room" : "7" }  ',
    ]
    dd_seed("lines", 0, b"\n".join(lines))
    for i, line in enumerate(lines):
        dd_seed(f"line-{i:02}", 0, line)
    dd_seed("written-plain", 1, dd_record(room=1, id_kind=1, content=b"abc")
            + dd_record(dir_out=True, room=2, id_kind=1, payload=1, content=b"out")
            + dd_record(room=2, id_kind=2, payload=2, content=bytes(range(10)))
            + dd_record(room=0, id_kind=3, payload=3, content="é\"\\".encode())
            + dd_record(room=3, id_kind=1, payload=0, content=b"")
            + dd_record(room=1, id_kind=0, payload=1, content=b"no id"))
    dd_seed("written-unicode", 1, dd_record(room=2, id_kind=1, content="\u2028\U0001F600\x7f".encode())
            + dd_record(room=2, id_kind=3, content=b"\xff\xfe"))
    ops = bytes([3, 2,  # capacity 3, 3 rooms
                 0 | 1 << 2, 5, 0 | 1 << 2, 5, 0 | 1 << 2, 6, 0 | 1 << 2, 7, 0 | 1 << 2, 8, 2 | 1 << 2, 5,
                 0 | 2 << 2, 1, 0 | 3 << 2, 1, 0 | 4 << 2, 1, 2 | 1 << 2, 8, 0 | 0 << 2, 9, 2 | 0 << 2, 9])
    dd_seed("window-evictions", 2, ops)
    dd_seed("window-restore", 2, bytes([4, 3, 0 | 1 << 2, 10, 3 | 1 << 2, 0x80 | 5, 1, 2, 3, 10, 4,
                                        0 | 1 << 2, 1, 2 | 1 << 2, 3, 3 | 2 << 2, 2, 9, 9, 1 | 2 << 2, 9]))
    dd_seed("window-off", 2, bytes([0, 0, 0 | 1 << 2, 1, 0 | 1 << 2, 1, 3 | 1 << 2, 0x82, 1, 2, 2 | 1 << 2, 1]))
    dd_seed("snapshot-two-rooms", 3, bytes([8, 12]) + bytes([k % 20 | (k % 2) << 6 for k in range(12)]))
    dd_seed("snapshot-damaged", 3, bytes([4, 10]) + bytes([k | 1 << 6 for k in range(10)])
            + bytes([0, 40, 0xFF, 0, 90, 0x01, 0, 60, 0]))
    dd_seed("window-full", 2, bytes([16, 3]) + b"".join(bytes([(k % 3) << 2, k % 40]) for k in range(120)))

# ---------------------------------------------------------------------------- xmpp

xmpp_seeds: dict[str, bytes] = {}

X_LIMIT_256, X_DEPTH_4, X_ELEMENTS_8 = 1, 2, 3
X_SASL, X_PLAIN, X_SHA256, X_NEGOTIATION, X_RESUME, X_DIALECT = 4, 8, 16, 32, 64, 128


def x_seed(name: str, flags: int, *frames: str | bytes, chunks: int = 0) -> None:
    assert name not in xmpp_seeds, name
    data = b"\0".join(f.encode() if isinstance(f, str) else f for f in frames)
    assert b"\0" not in b"".join(f.encode() if isinstance(f, str) else f for f in frames), name
    xmpp_seeds[name] = bytes([flags, chunks]) + data
    assert len(xmpp_seeds[name]) <= 70000, name


def x_sasl(name: str, data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    import base64
    return f"<{name} xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>{base64.b64encode(raw).decode()}</{name}>"


X_FRAMING = "urn:ietf:params:xml:ns:xmpp-framing"
X_OPEN = (f"<open xmlns='{X_FRAMING}' version='1.0' from='localhost' "
          "id='3b0f0c9e-6c1d-4c63-9f7e-1c4f5b2a7d10' xml:lang='en'/>")
X_CLOSE = f"<close xmlns='{X_FRAMING}'/>"
X_FEATURES = ("<stream:features xmlns:stream='http://etherx.jabber.org/streams' xmlns='jabber:client'>"
              "<mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism>"
              "<mechanism>PLAIN</mechanism></mechanisms></stream:features>")
X_BOUND = ("<stream:features xmlns:stream='http://etherx.jabber.org/streams' xmlns='jabber:client'>"
           "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><required/></bind>"
           "<session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session>"
           "<sm xmlns='urn:xmpp:sm:2'><optional/></sm><sm xmlns='urn:xmpp:sm:3'><optional/></sm>"
           "<csi xmlns='urn:xmpp:csi:0'/></stream:features>")
X_BIND_RESULT = ("<iq xmlns='jabber:client' type='result' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>"
                 "<jid>bot@localhost/chatlink-0123456789ab</jid></bind></iq>")
X_ENABLED = "<enabled xmlns='urn:xmpp:sm:3' id='b0b9a1c4-5d2e' resume='true' max='600'/>"
X_PRESENCE_110 = ("<presence xmlns='jabber:client' from='lobby@conference.localhost/chatlink' "
                  "to='bot@localhost/chatlink-0123456789ab' id='join-1'>"
                  "<x xmlns='http://jabber.org/protocol/muc#user'><status code='100'/>"
                  "<item affiliation='none' jid='bot@localhost/chatlink-0123456789ab' role='participant'/>"
                  "<status code='110'/></x></presence>")
X_GROUPCHAT = ("<message xmlns='jabber:client' from='lobby@conference.localhost/alice' "
               "to='bot@localhost/chatlink-0123456789ab' type='groupchat' id='m-42' xml:lang='en'>"
               "<body>h\u00e9llo &amp; &lt;welcome&gt; \U0001F44B</body>"
               "<stanza-id xmlns='urn:xmpp:sid:0' id='9f4e1c2a-0001' by='lobby@conference.localhost'/>"
               "<delay xmlns='urn:xmpp:delay' from='lobby@conference.localhost' stamp='2026-12-06T17:00:00Z'/>"
               "</message>")
X_MAM = ("<message xmlns='jabber:client' to='bot@localhost/chatlink-0123456789ab' from='lobby@conference.localhost'>"
         "<result xmlns='urn:xmpp:mam:2' queryid='q1' id='9f4e1c2a-0002'><forwarded xmlns='urn:xmpp:forward:0'>"
         "<delay xmlns='urn:xmpp:delay' stamp='2026-12-06T16:59:00Z'/>"
         "<message xmlns='jabber:client' from='lobby@conference.localhost/bob' type='groupchat' id='m-41'>"
         "<body>earlier</body></message></forwarded></result></message>")
X_FIN = ("<iq xmlns='jabber:client' type='result' id='q1'><fin xmlns='urn:xmpp:mam:2' complete='true'>"
         "<set xmlns='http://jabber.org/protocol/rsm'><first index='0'>9f4e1c2a-0002</first>"
         "<last>9f4e1c2a-0002</last><count>1</count></set></fin></iq>")
X_ERROR = ("<message xmlns='jabber:client' from='lobby@conference.localhost' type='error' id='s-7'>"
           "<error type='cancel' by='lobby@conference.localhost'>"
           "<not-acceptable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>"
           "<text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>You are not in the room</text></error></message>")
X_STREAM_ERROR = ("<stream:error xmlns:stream='http://etherx.jabber.org/streams'>"
                  "<not-well-formed xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>")
X_RFC5802_FIRST = "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"
X_RFC7677_FIRST = "r=fyko+d2lbbFgONRv9qkxdawL%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"


# Frames captured from Prosody 0.12.3 over WebSocket (Tests/XMPPTests/ProsodyTranscripts.swift has
# the whole transcripts): a PLAIN session with a MUC join and a message, and a SCRAM-SHA-1 one.
X_CAPTURED_PLAIN = [
    "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='ce3e1046-447c-4703-80ce-769bfb4949e4'/>",
    "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism></mechanisms></stream:features>",
    "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>",
    "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='d8d9ba9c-0826-42f2-ad72-23aee0bbd6a5'/>",
    "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><sm xmlns='urn:xmpp:sm:2'><optional/></sm><sm xmlns='urn:xmpp:sm:3'><optional/></sm><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><required/></bind><session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session><sub xmlns='urn:xmpp:features:pre-approval'/><c hash='sha-1' node='http://prosody.im' ver='RCsTrxK3Do+ACD6FaemxkXdEIlM=' xmlns='http://jabber.org/protocol/caps'/><ver xmlns='urn:xmpp:features:rosterver'/></stream:features>",
    "<iq xmlns='jabber:client' id='bind-1' type='result'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>user@localhost/chatlink-0123456789ab</jid></bind></iq>",
    "<enabled xmlns='urn:xmpp:sm:3' max='600' id='cvKcPm3stSFO' resume='true'/>",
    "<presence from='lobby@conference.localhost/chatlink' xmlns='jabber:client' id='join-1' xml:lang='en' to='user@localhost/chatlink-0123456789ab'><occupant-id xmlns='urn:xmpp:occupant-id:0' id='7nqseSPpKxgQ5Yu368U0eYQEtrKDmBqN8/XsTrl1Df4='/><x xmlns='http://jabber.org/protocol/muc#user'><status code='201'/><item role='moderator' jid='user@localhost/chatlink-0123456789ab' affiliation='owner'/><status code='110'/></x></presence>",
    "<message xmlns='jabber:client' type='groupchat' from='lobby@conference.localhost' to='user@localhost/chatlink-0123456789ab'><subject/></message>",
    "<r xmlns='urn:xmpp:sm:3'/>",
    "<message from='lobby@conference.localhost/chatlink' type='groupchat' xmlns='jabber:client' id='m-1' xml:lang='en' to='user@localhost/chatlink-0123456789ab'><body>héllo &amp; &lt;welcome&gt; 👋</body><origin-id id='m-1' xmlns='urn:xmpp:sid:0'/><occupant-id xmlns='urn:xmpp:occupant-id:0' id='7nqseSPpKxgQ5Yu368U0eYQEtrKDmBqN8/XsTrl1Df4='/><stanza-id by='lobby@conference.localhost' xmlns='urn:xmpp:sid:0' id='BAOTSyQMpYRATLro7L-dRQA4'/></message>",
    "<a xmlns='urn:xmpp:sm:3' h='2'/>",
    "<message from='nosuchroom@conference.localhost' type='error' xmlns='jabber:client' id='m-2' to='user@localhost/chatlink-0123456789ab'><error type='cancel' by='conference.localhost'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>",
    "<a xmlns='urn:xmpp:sm:3' h='3'/>",
    "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>",
]
X_CAPTURED_SCRAM = [
    "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='3de34282-5ca6-4d25-a376-800d57349ca8'/>",
    "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism></mechanisms></stream:features>",
    "<challenge xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>cj1meWtvK2QybGJiRmdPTlJ2OXFreGRhd0xhNzUyOTQ3Ny1mMzdhLTQ4ODUtOTc2YS05OTlhMDYxN2RjY2Qscz1NekV4TmpBeU5URXRaR0kxTVMwMFpXSTVMV0kyT1RBdE9EWTROVGhoTTJObFptTmwsaT0xMDAwMA==</challenge>",
    "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>dj1BbWt1bmZ4cHUvMS9na0lHeWVPR3dSQTZabWs9</success>",
    "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='dacc6345-59d7-423b-8121-f11f3447fbcc'/>",
    "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><sm xmlns='urn:xmpp:sm:2'><optional/></sm><sm xmlns='urn:xmpp:sm:3'><optional/></sm><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><required/></bind><session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session><sub xmlns='urn:xmpp:features:pre-approval'/><c hash='sha-1' node='http://prosody.im' ver='RCsTrxK3Do+ACD6FaemxkXdEIlM=' xmlns='http://jabber.org/protocol/caps'/><ver xmlns='urn:xmpp:features:rosterver'/></stream:features>",
    "<iq xmlns='jabber:client' id='bind-1' type='result'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>user@localhost/chatlink-0123456789ab</jid></bind></iq>",
    "<enabled xmlns='urn:xmpp:sm:3' max='600' id='cq5TVSgzzDEC' resume='true'/>",
    "<a xmlns='urn:xmpp:sm:3' h='0'/>",
    "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>",
    "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/><text>Unable to authorize you with the authentication credentials you&apos;ve sent.</text></failure>",
]


def xmpp_seeds_all() -> None:
    x_seed("prosody-session", 0, X_OPEN, X_FEATURES, x_sasl("success", "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="),
           X_OPEN, X_BOUND, X_BIND_RESULT, X_ENABLED, X_PRESENCE_110, X_GROUPCHAT,
           "<r xmlns='urn:xmpp:sm:3'/>", "<a xmlns='urn:xmpp:sm:3' h='42'/>", X_ERROR, X_MAM, X_FIN,
           X_STREAM_ERROR, X_CLOSE, chunks=2)
    x_seed("prosody-captured", 0, *X_CAPTURED_PLAIN, chunks=2)
    x_seed("prosody-captured-scram", X_NEGOTIATION, *X_CAPTURED_SCRAM, chunks=3)
    x_seed("prosody-session-bytes", 0, X_OPEN, X_GROUPCHAT, X_PRESENCE_110, X_CLOSE, chunks=1)
    x_seed("negotiation", X_NEGOTIATION, X_OPEN, X_FEATURES, x_sasl("challenge", X_RFC5802_FIRST),
           x_sasl("success", "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="), X_OPEN, X_BOUND, X_BIND_RESULT, X_ENABLED,
           chunks=2)
    x_seed("negotiation-resume", X_NEGOTIATION | X_RESUME, X_OPEN, X_FEATURES,
           x_sasl("challenge", X_RFC5802_FIRST), x_sasl("success", "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="), X_OPEN,
           X_BOUND, "<failed xmlns='urn:xmpp:sm:3' h='3'><item-not-found "
           "xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></failed>", X_BIND_RESULT, X_ENABLED)
    x_seed("negotiation-resumed", X_NEGOTIATION | X_RESUME, X_OPEN, X_FEATURES,
           x_sasl("challenge", X_RFC5802_FIRST), x_sasl("success", "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="), X_OPEN,
           X_BOUND, "<resumed xmlns='urn:xmpp:sm:3' previd='sm-1' h='5'/>", X_GROUPCHAT)
    x_seed("negotiation-refused", X_NEGOTIATION, X_OPEN, X_FEATURES,
           "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/></failure>", X_OPEN)
    room = "lobby@conference.localhost"
    x_seed("dialect", X_DIALECT,
           f"<message xmlns='jabber:client' from='{room}/eve' type='groupchat' id='m1'><body>hi</body>"
           f"<stanza-id xmlns='urn:xmpp:sid:0' id='sid-2' by='{room}'/></message>",
           f"<message xmlns='jabber:client' from='{room}'><result xmlns='urn:xmpp:mam:2' queryid='mam-1' "
           "id='sid-1b'><forwarded xmlns='urn:xmpp:forward:0'><delay xmlns='urn:xmpp:delay' "
           f"stamp='2026-12-06T10:00:00Z'/><message xmlns='jabber:client' from='{room}/bob' "
           "type='groupchat' id='o1'><body>old</body></message></forwarded></result></message>",
           "<r xmlns='urn:xmpp:sm:3'/>",
           f"<iq xmlns='jabber:client' type='result' id='mam-1' from='{room}'><fin xmlns='urn:xmpp:mam:2' "
           "complete='true'><set xmlns='http://jabber.org/protocol/rsm'><last>sid-1b</last></set></fin></iq>",
           "<message xmlns='jabber:client' from='bob@localhost/x' to='user@localhost' type='chat'>"
           "<body>psst</body><stanza-id xmlns='urn:xmpp:sid:0' id='c-1' by='user@localhost'/></message>",
           "<iq xmlns='jabber:client' type='get' id='p1' from='localhost'><ping xmlns='urn:xmpp:ping'/></iq>",
           "<a xmlns='urn:xmpp:sm:3' h='3'/>")
    x_seed("dialect-broken", X_DIALECT, "<stream:error xmlns:stream='http://etherx.jabber.org/streams'>"
           "<conflict xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>",
           f"<message xmlns='jabber:client' from='{room}/eve' type='groupchat'><body>after</body></message>")
    x_seed("see-other-uri", 0, f"<close xmlns='{X_FRAMING}' see-other-uri='wss://other.example/xmpp'/>")
    x_seed("sasl-scram-sha1", X_SASL, x_sasl("challenge", X_RFC5802_FIRST),
           x_sasl("success", "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="), chunks=3)
    x_seed("sasl-scram-sha256", X_SASL | X_SHA256, x_sasl("challenge", X_RFC7677_FIRST),
           x_sasl("challenge", "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
           "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>")
    x_seed("sasl-scram-bad", X_SASL, x_sasl("challenge", "m=x,r=fyko+d2lbbFgONRv9qkxdawLx,s=QSXC,i=0"),
           x_sasl("challenge", "e=invalid-proof"))
    x_seed("sasl-plain", X_SASL | X_PLAIN, "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>=</success>")
    x_seed("sasl-failure", X_SASL, "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/>"
           "<text xml:lang='en'>Unable to authorize you with the authentication credentials you've sent."
           "</text></failure>")
    x_seed("doctype", 0, "<!DOCTYPE message SYSTEM 'http://evil/x.dtd'><message/>", X_GROUPCHAT)
    lol = "<?xml version='1.0'?><!DOCTYPE lolz [<!ENTITY lol0 'lol'>"
    for level in range(1, 10):
        lol += f"<!ENTITY lol{level} '" + f"&lol{level - 1};" * 10 + "'>"
    x_seed("billion-laughs", 0, lol + "]><lolz>&lol9;</lolz>", X_GROUPCHAT)
    x_seed("quadratic-blowup", 0, "<!DOCTYPE b [<!ENTITY a '" + "x" * 8000 + "'>]><b>" + "&a;" * 8000 + "</b>")
    x_seed("pi-comment", 0, "<a><?evil data?></a>", "<a><!-- hi --></a>", "<?xml version='1.0'?><a/>",
           "<?xml-stylesheet href='x'?><a/>", b"\xef\xbb\xbf<?xml version='1.0' encoding='UTF-8'?><a>x</a>")
    x_seed("cdata-entities", 0, "<b><![CDATA[<!DOCTYPE x> <?pi?> <!-- c -->]]>&amp;&#x1F44B;&#10;</b>",
           "<b a='&apos;&quot;&#9;'>&lol;</b>", "<b>&#0;</b>", "<p:a xmlns:p='urn:p' p:x='1'/>")
    x_seed("deep", X_DEPTH_4, "<a><b><c><d/></c></b></a>", "<a><b><c><d><e/></d></c></b></a>", "<a>" * 40)
    x_seed("many", X_ELEMENTS_8, "<a>" + "<b/>" * 7 + "</a>", "<a>" + "<b/>" * 8 + "</a>")
    x_seed("oversize", X_LIMIT_256, "<a>" + "x" * 249 + "</a>", "<a>" + "x" * 250 + "</a>", chunks=3)
    x_seed("malformed", 0, "", "<a>", "<a></b>", "<a/><b/>", "text", "<a x='1' x='2'/>", "<p:a/>",
           b"<a>\xff</a>", "<a>\x01</a>", "<a xmlns:p=''/>")
    x_seed("long-namespace", 0, "<a xmlns='urn:" + "n" * 4000 + "'>" + "<b/>" * 200 + "</a>")


def main() -> int:
    raw_seeds()
    conn_seeds()
    http_seeds()
    utf8_seeds()
    deflate_seeds()
    server_seeds()
    write_corpus(OUT, seeds)
    varlink_seeds_all()
    write_corpus(FUZZ / "corpus" / "varlink", varlink_seeds)
    write_dict(FUZZ / "varlink.dict", "Tests/Fuzz/VarlinkFuzzer.swift: JSON and Varlink tokens",
               varlink_dict())
    config_seeds_all()
    write_corpus(FUZZ / "corpus" / "config", config_seeds)
    write_dict(FUZZ / "config.dict", "Tests/Fuzz/ConfigFuzzer.swift: chatlinkd.conf syntax and keys",
               config_dict())
    socketio_seeds_all()
    write_corpus(FUZZ / "corpus" / "socketio", socketio_seeds)
    mqtt_seeds_all()
    write_corpus(FUZZ / "corpus" / "mqtt", mqtt_seeds)
    stomp_seeds_all()
    write_corpus(FUZZ / "corpus" / "stomp", stomp_seeds)
    metrics_seeds_all()
    write_corpus(FUZZ / "corpus" / "metrics", metrics_seeds)
    dedupe_seeds_all()
    write_corpus(FUZZ / "corpus" / "dedupe", dedupe_seeds)
    xmpp_seeds_all()
    write_corpus(FUZZ / "corpus" / "xmpp", xmpp_seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
