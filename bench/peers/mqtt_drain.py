"""The MQTT drain-only baseline: how fast Mosquitto's websockets listener hands a persistent
session's queue to a client that does nothing but take each message and acknowledge it (the
ceiling for any client of this broker, over the same transport as chatlinkd).

    mqtt_drain.py session HOST PORT PATH CLIENT_ID FILTER      create the session, subscribe, leave
    mqtt_drain.py drain HOST PORT PATH CLIENT_ID FILTER N      resume it and take N messages

A raw WebSocket client (subprotocol mqtt, no extensions) speaking MQTT 5: CONNECT with clean
start off and a session expiry of an hour, SUBSCRIBE at QoS 1 (again after every connect, as
chatlinkd and paho do), then a PUBACK for every QoS 1 PUBLISH; the PUBACKs for all messages of
one read go out in one write. Nothing is parsed beyond the packet boundaries and packet ids,
nothing is stored. Prints "connected <time.monotonic()>" at the CONNACK and "done
<time.monotonic()>" after the N-th message, then waits for stdin to close.
"""

import base64
import os
import socket
import struct
import sys
import threading
import time

from stomp_drain import client_frame


def binary_frame(payload: bytes) -> bytes:
    frame = bytearray(client_frame(payload))
    frame[0] = 0x82  # binary, final
    return bytes(frame)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def utf8(text: str) -> bytes:
    return struct.pack("!H", len(text.encode())) + text.encode()


def packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + varint(len(body)) + body


def connect_packet(client_id: str) -> bytes:
    properties = b"\x11" + struct.pack("!I", 3600)  # session expiry interval
    body = utf8("MQTT") + bytes([5, 0x00]) + struct.pack("!H", 60) + varint(len(properties)) + properties
    return packet(0x10, body + utf8(client_id))


def subscribe_packet(topic_filter: str) -> bytes:
    return packet(0x82, struct.pack("!H", 65000) + b"\x00" + utf8(topic_filter) + b"\x01")


def websocket(host: str, port: int, path: str, protocol: str = "mqtt") -> socket.socket:
    """A raw WebSocket client connection (no extensions) with this subprotocol."""
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"Sec-WebSocket-Protocol: {protocol}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(1)  # byte by byte: what follows the response is the broker's
        if not data:
            sys.exit("closed during the handshake")
        head += data
    if b" 101 " not in head.split(b"\r\n")[0]:
        sys.exit(f"handshake refused: {head[:200]!r}")
    return sock


def run(mode: str, host: str, port: int, path: str, client_id: str, topic_filter: str, n: int) -> None:
    sock = websocket(host, port, path)
    sock.sendall(binary_frame(connect_packet(client_id)))
    frames = b""  # WebSocket bytes not yet a whole frame
    stream = b""  # MQTT bytes not yet a whole packet
    count = 0
    while mode == "session" or count < n:
        data = sock.recv(1 << 20)
        if not data:
            sys.exit(f"the broker closed the connection after {count} messages")
        frames += data
        offset = 0
        chunks = []
        while len(frames) - offset >= 2:
            b0, b1 = frames[offset], frames[offset + 1]
            length, header = b1 & 0x7F, 2
            if length == 126:
                if len(frames) - offset < 4:
                    break
                length, header = struct.unpack_from("!H", frames, offset + 2)[0], 4
            elif length == 127:
                if len(frames) - offset < 10:
                    break
                length, header = struct.unpack_from("!Q", frames, offset + 2)[0], 10
            if len(frames) - offset < header + length:
                break
            if b0 & 0x0F == 0x8:
                sys.exit(f"the broker closed the WebSocket after {count} messages")
            chunks.append(frames[offset + header:offset + header + length])
            offset += header + length
        frames = frames[offset:]
        stream += b"".join(chunks)
        acks = []
        pos = 0
        while len(stream) - pos >= 2:
            first = stream[pos]
            length, shift, k = 0, 0, pos + 1
            while k < len(stream):
                length |= (stream[k] & 0x7F) << shift
                shift += 7
                k += 1
                if not stream[k - 1] & 0x80:
                    break
            else:
                break
            if len(stream) - k < length:
                break
            kind = first >> 4
            if kind == 3:  # PUBLISH: topic, then the packet id at QoS 1
                topic_length = struct.unpack_from("!H", stream, k)[0]
                if (first >> 1) & 3:
                    packet_id = stream[k + 2 + topic_length:k + 4 + topic_length]
                    acks.append(b"\x40\x02" + packet_id)
                count += 1
                if count == n:
                    print(f"done {time.monotonic():.6f}", flush=True)
            elif kind == 2:  # CONNACK
                if stream[k + 1] != 0:
                    sys.exit(f"CONNACK refused: reason {stream[k + 1]:#x}")
                if mode == "drain":
                    print(f"connected {time.monotonic():.6f}", flush=True)
                sock.sendall(binary_frame(subscribe_packet(topic_filter)))
            elif kind == 9 and mode == "session":  # SUBACK
                sock.sendall(binary_frame(b"\xe0\x00"))  # DISCONNECT, normal: the session stays
                sock.close()
                print("subscribed", flush=True)
                return
            pos = k + length
        stream = stream[pos:]
        if acks:
            sock.sendall(binary_frame(b"".join(acks)))
    threading.Thread(target=lambda: sock.recv(1), daemon=True).start()
    sys.stdin.read()
    sock.close()


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6],
        int(sys.argv[7]) if len(sys.argv) > 7 else 0)
