"""The STOMP peer of the ChatLink benchmark: a short idiomatic stomp.py subscriber.

    stomp_client.py HOST PORT DESTINATION N OUT

STOMP 1.2 over TCP to RabbitMQ (login guest, virtual host /), heart-beats off. It subscribes to
DESTINATION (a durable queue, which holds what was sent while nobody listened) with
ack:client-individual and no prefetch-count (the broker's default, as chatlinkd subscribes);
every MESSAGE is written to OUT as one JSON line in chatlinkd's store format,
{"seq","time","dir":"in","room":destination,"type":"json","data":body,"meta":{"message_id"}},
line buffered (each line reaches the kernel as it arrives, no fsync), and then ACKed. It prints
"connected <time.monotonic()>" at the CONNECTED frame, "done <time.monotonic()>" after the N-th
line, and then waits for stdin to close.
"""

import json
import sys
import time
from datetime import datetime, timezone

import stomp


class Writer(stomp.ConnectionListener):
    def __init__(self, conn, n: int, out):
        self.conn, self.n, self.out, self.seq = conn, n, out, 0

    def on_connected(self, frame):
        print(f"connected {time.monotonic():.6f}", flush=True)

    def on_error(self, frame):
        print(f"error {frame.headers.get('message')} {frame.body}", file=sys.stderr, flush=True)

    def on_message(self, frame):
        self.seq += 1
        headers = frame.headers
        record = {
            "seq": self.seq,
            "time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "dir": "in",
            "room": headers.get("destination"),
            "type": "json",
            "data": json.loads(frame.body),
            "meta": {"message_id": headers.get("message-id")},
        }
        self.out.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.conn.ack(headers["ack"])
        if self.seq == self.n:
            print(f"done {time.monotonic():.6f}", flush=True)


def main(host: str, port: int, destination: str, n: int, out: str) -> None:
    conn = stomp.Connection12([(host, port)], vhost="/", heartbeats=(0, 0))
    with open(out, "a", buffering=1, encoding="utf-8") as f:
        conn.set_listener("writer", Writer(conn, n, f))
        conn.connect("guest", "guest", wait=True)
        conn.subscribe(destination, id="1", ack="client-individual")
        sys.stdin.read()
        conn.disconnect()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
