"""The drain-only baseline: a WebSocket client that reads the bytes and does nothing else.

    drain.py HOST PORT BYTES

Does the opening handshake by hand, then reads into one reusable buffer until BYTES bytes of
frames have arrived; prints "done <time.monotonic()>" and waits for stdin to close. It parses
no frame, so it shows what loopback and the source can deliver: the physical limit.
"""

import base64
import os
import socket
import sys
import time


def main() -> None:
    host, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s = socket.create_connection((host, port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(
        f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("drain.py: closed during the handshake")
        head += chunk
    got = len(head) - head.index(b"\r\n\r\n") - 4
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    while got < total:
        n = s.recv_into(view)
        if n == 0:
            sys.exit(f"drain.py: closed after {got} of {total} bytes")
        got += n
    print(f"done {time.monotonic():.6f}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
