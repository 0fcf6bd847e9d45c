"""The Socket.IO peer of the ChatLink benchmark: a short idiomatic python-socketio AsyncClient.

    sio_client.py URL N OUT

Connects over WebSocket only (transports=['websocket'], as chatlinkd does) and writes every event
it receives as one JSON line in chatlinkd's store format for a Socket.IO event to OUT,
{"seq","time","dir":"in","room","type":"json","data":{"event","args"}}, line buffered (every
line reaches the kernel as it arrives, no fsync). After the N-th line it prints
"done <time.monotonic()>" and waits for stdin to close. N = 0 means never done.
"""

import asyncio
import sys
import time
from datetime import datetime, timezone
import json

import socketio


async def main(url: str, n: int, out: str) -> None:
    sio = socketio.AsyncClient(reconnection=False)
    seq = 0
    with open(out, "a", buffering=1, encoding="utf-8") as f:

        @sio.on("*")
        def any_event(event, *args):  # every event the server emits, whatever its name
            nonlocal seq
            seq += 1
            first = args[0] if args else None
            record = {
                "seq": seq,
                "time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "dir": "in",
                "room": first.get("room_id") if isinstance(first, dict) else None,
                "type": "json",
                "data": {"event": event, "args": list(args)},
            }
            f.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
            if seq == n:
                print(f"done {time.monotonic():.6f}", flush=True)

        await sio.connect(url, transports=["websocket"])
        await asyncio.to_thread(sys.stdin.read)
        await sio.disconnect()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
