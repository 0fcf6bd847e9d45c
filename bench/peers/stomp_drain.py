"""The STOMP drain-only baseline: how fast RabbitMQ's web-stomp hands out a queue to a client
that does nothing but take each message and ACK it (the ceiling for any client of this broker).

    stomp_drain.py HOST PORT PATH DESTINATION N

A raw WebSocket client (subprotocol v12.stomp, no extensions): CONNECT (guest, virtual host /,
heart-beats off), SUBSCRIBE with ack:client-individual and no prefetch-count, then for every
MESSAGE an ACK with its ack header; the ACKs for all messages of one read go out in one write.
Nothing is parsed beyond the frame boundaries and the ack header, nothing is stored. Prints
"connected <time.monotonic()>" at CONNECTED and "done <time.monotonic()>" after the N-th
message, then waits for stdin to close.
"""

import base64
import os
import socket
import struct
import sys
import threading
import time


def client_frame(payload: bytes) -> bytes:
    """A masked, final text frame (a client's)."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x81, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
    # XOR with the repeated mask, as one big integer (fast enough for these short frames).
    key = (mask * (n // 4 + 1))[:n]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
    return head + mask + masked


def stomp(command: str, headers: dict) -> bytes:
    return (command + "\n" + "".join(f"{k}:{v}\n" for k, v in headers.items()) + "\n").encode() + b"\0"


def main(host: str, port: int, path: str, destination: str, n: int) -> None:
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"Sec-WebSocket-Protocol: v12.stomp\r\n\r\n").encode())
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        data = sock.recv(65536)
        if not data:
            sys.exit("closed during the handshake")
        buffer += data
    head, _, buffer = buffer.partition(b"\r\n\r\n")
    if b" 101 " not in head.split(b"\r\n")[0]:
        sys.exit(f"handshake refused: {head[:200]!r}")
    sock.sendall(client_frame(stomp("CONNECT", {"accept-version": "1.2", "host": "/", "login": "guest",
                                                "passcode": "guest", "heart-beat": "0,0"})))
    count = 0
    message = bytearray()
    while count < n:
        data = sock.recv(1 << 20)
        if not data:
            sys.exit(f"the broker closed the connection after {count} messages")
        buffer += data
        acks = []
        offset = 0
        while True:  # whole WebSocket frames in buffer[offset:]
            if len(buffer) - offset < 2:
                break
            b0, b1 = buffer[offset], buffer[offset + 1]
            length, header = b1 & 0x7F, 2
            if length == 126:
                if len(buffer) - offset < 4:
                    break
                length, header = struct.unpack_from("!H", buffer, offset + 2)[0], 4
            elif length == 127:
                if len(buffer) - offset < 10:
                    break
                length, header = struct.unpack_from("!Q", buffer, offset + 2)[0], 10
            if len(buffer) - offset < header + length:
                break
            payload = buffer[offset + header:offset + header + length]
            offset += header + length
            opcode = b0 & 0x0F
            if opcode == 0x8:
                sys.exit(f"the broker closed the WebSocket after {count} messages: {payload[2:200]!r}")
            if opcode not in (0x0, 0x1, 0x2):
                continue
            message += payload
            if not b0 & 0x80:
                continue
            # One or more STOMP frames (RabbitMQ sends one per WebSocket message).
            for raw in bytes(message).split(b"\0"):
                raw = raw.lstrip(b"\r\n")
                if raw.startswith(b"MESSAGE\n"):
                    start = raw.index(b"\nack:") + 5
                    acks.append(client_frame(b"ACK\nid:" + raw[start:raw.index(b"\n", start)] + b"\n\n\0"))
                    count += 1
                    if count == n:
                        print(f"done {time.monotonic():.6f}", flush=True)
                elif raw.startswith(b"CONNECTED\n"):
                    print(f"connected {time.monotonic():.6f}", flush=True)
                    sock.sendall(client_frame(stomp("SUBSCRIBE", {"id": "1", "destination": destination,
                                                                  "ack": "client-individual"})))
                elif raw.startswith(b"ERROR\n"):
                    sys.exit(f"ERROR: {raw[:300]!r}")
            message = bytearray()
        buffer = buffer[offset:]
        if acks:
            sock.sendall(b"".join(acks))
    threading.Thread(target=lambda: sock.recv(1), daemon=True).start()
    sys.stdin.read()
    sock.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]))
