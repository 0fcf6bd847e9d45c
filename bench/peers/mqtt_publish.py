"""The benchmark's MQTT publisher (untimed): fills a broker with QoS 1 messages, fast.

    mqtt_publish.py HOST PORT TOPIC LINES_FILE

Publishes every line of LINES_FILE (without its newline) as one QoS 1 message to TOPIC, over
MQTT 3.1.1 on TCP: the PUBLISH packets are encoded up front and written in 1 MiB chunks while a
thread counts the PUBACKs; it exits once the broker has acknowledged every message (for a QoS 1
PUBLISH, Mosquitto sends the PUBACK once it has queued the message for every subscribed session).
Prints "published N SECONDS". A packet id is never reused on one connection, so more than
65,535 messages go over several connections, one after the other.

Neither mosquitto_pub -l nor paho-mqtt is used: mosquitto_pub disconnects at the end of its
input without waiting for what is still in its queue (Mosquitto 2.0.11 then logs "disconnected
due to out of memory" and about 35,000 of 100,000 lines arrive), and paho-mqtt publishes about
6,000 messages/s here, which made filling the broker take longer than draining it.
"""

import socket
import struct
import sys
import threading
import time


def remaining_length(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + remaining_length(len(body)) + body


def utf8(text: str) -> bytes:
    data = text.encode()
    return struct.pack("!H", len(data)) + data


BATCH = 65535  # packet ids 1…65535, each once per connection


def publish(host: str, port: int, topic: str, payloads: list[bytes]) -> None:
    """One connection: every payload published at QoS 1, back when all are acknowledged."""
    n = len(payloads)
    topic_bytes = utf8(topic)
    publishes = b"".join(packet(0x32, topic_bytes + struct.pack("!H", i + 1) + p) for i, p in enumerate(payloads))
    client_id = f"chatbench-pub-{time.monotonic_ns()}"
    # CONNECT: MQTT 3.1.1, clean session, keepalive 60 s.
    connect = packet(0x10, utf8("MQTT") + bytes([4, 0x02]) + struct.pack("!H", 60) + utf8(client_id))
    sock = socket.create_connection((host, port))
    sock.sendall(connect)
    connack = sock.recv(4)
    if len(connack) < 4 or connack[0] != 0x20 or connack[3] != 0:
        sys.exit(f"CONNACK refused: {connack!r}")
    acked = 0
    done = threading.Event()

    def read_acks():
        nonlocal acked
        buffer = b""
        while acked < n:
            data = sock.recv(1 << 16)
            if not data:
                break
            buffer += data
            # PUBACK is 40 02 <id>: 4 bytes each; nothing else comes on this connection.
            whole = len(buffer) // 4
            for k in range(whole):
                if buffer[4 * k] != 0x40:
                    sys.stderr.write(f"unexpected packet {buffer[4 * k:4 * k + 4]!r}\n")
            acked += whole
            buffer = buffer[4 * whole:]
        done.set()

    threading.Thread(target=read_acks, daemon=True).start()
    view = memoryview(publishes)
    for start in range(0, len(view), 1 << 20):
        sock.sendall(view[start:start + (1 << 20)])
    if not done.wait(max(60, n / 2000)) or acked < n:
        sys.exit(f"only {acked} of {n} acknowledged")
    sock.sendall(b"\xe0\x00")  # DISCONNECT
    sock.close()


def main(host: str, port: int, topic: str, path: str) -> None:
    with open(path, "rb") as f:
        payloads = f.read().splitlines()
    t0 = time.monotonic()
    for start in range(0, len(payloads), BATCH):
        publish(host, port, topic, payloads[start:start + BATCH])
    print(f"published {len(payloads)} {time.monotonic() - t0:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
