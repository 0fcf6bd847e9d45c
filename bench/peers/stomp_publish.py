"""The benchmark's STOMP publisher (untimed): fills a durable queue, fast.

    stomp_publish.py HOST PORT DESTINATION LINES_FILE

Sends every line of LINES_FILE (without its newline) as one persistent SEND to DESTINATION
(`/queue/NAME`: RabbitMQ declares the durable queue NAME on the first SEND), over STOMP 1.2 on
TCP, encoded up front and written in 1 MiB chunks; every 1,000th SEND and the last ask for a
RECEIPT, which RabbitMQ gives once the broker has taken that message and the ones before it
(publisher confirms, in order on one channel). Exits after the last RECEIPT; prints
"published N SECONDS". stomp.py is not used: with a receipt per frame it sends one at a time.
"""

import socket
import sys
import time

RECEIPT_EVERY = 1000


def frame(command: str, headers: dict, body: bytes = b"") -> bytes:
    head = command + "\n" + "".join(f"{k}:{v}\n" for k, v in headers.items()) + "\n"
    return head.encode() + body + b"\0"


def read_frames(sock, buffer: bytearray):
    """Yields (command, headers) of each whole frame the broker sends (heart-beats skipped)."""
    while True:
        while b"\0" not in buffer:
            data = sock.recv(1 << 16)
            if not data:
                raise ConnectionError("the broker closed the connection")
            buffer += data
        raw, _, rest = bytes(buffer).partition(b"\0")
        buffer[:] = rest
        text = raw.lstrip(b"\r\n").decode("utf-8", "replace")
        if not text:
            continue
        lines = text.split("\n")
        headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
        yield lines[0], headers


def main(host: str, port: int, destination: str, path: str) -> None:
    with open(path, "rb") as f:
        payloads = f.read().splitlines()
    n = len(payloads)
    t0 = time.monotonic()
    sock = socket.create_connection((host, port))
    buffer = bytearray()
    frames = read_frames(sock, buffer)
    sock.sendall(frame("CONNECT", {"accept-version": "1.2", "host": "/", "login": "guest",
                                   "passcode": "guest", "heart-beat": "0,0"}))
    command, headers = next(frames)
    if command != "CONNECTED":
        sys.exit(f"{command}: {headers.get('message')}")
    receipts = []
    out = bytearray()
    for i, payload in enumerate(payloads):
        headers = {"destination": destination, "persistent": "true", "content-type": "application/json",
                   "content-length": len(payload)}
        if (i + 1) % RECEIPT_EVERY == 0 or i == n - 1:
            headers["receipt"] = f"r{i + 1}"
            receipts.append(f"r{i + 1}")
        out += frame("SEND", headers, payload)
    view = memoryview(out)
    for start in range(0, len(view), 1 << 20):
        sock.sendall(view[start:start + (1 << 20)])
    last = receipts[-1]
    for command, headers in frames:
        if command == "ERROR":
            sys.exit(f"ERROR: {headers.get('message')}")
        if command == "RECEIPT" and headers.get("receipt-id") == last:
            break
    sock.sendall(frame("DISCONNECT", {}))
    sock.close()
    print(f"published {n} {time.monotonic() - t0:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
