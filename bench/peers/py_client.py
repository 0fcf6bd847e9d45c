"""The Python peer of the ChatLink benchmark: a short idiomatic `websockets` client.

    py_client.py URL N OUT

Reads messages and writes each as one JSON line in chatlinkd's store format to OUT, line
buffered (every line reaches the kernel as it arrives, no fsync). After the N-th line it prints
"done <time.monotonic()>" and waits for stdin to close. N = 0 means never done (idle scenario).
"""

import asyncio
import base64
import json
import sys
import time
from datetime import datetime, timezone

from websockets.asyncio.client import connect


async def main(url: str, n: int, out: str) -> None:
    async with connect(url, max_size=16 << 20) as ws:
        with open(out, "a", buffering=1, encoding="utf-8") as f:
            seq = 0
            async for message in ws:
                seq += 1
                record = {
                    "seq": seq,
                    "time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    "dir": "in",
                    "room": None,
                }
                if isinstance(message, bytes):
                    record |= {"type": "binary", "data": base64.b64encode(message).decode()}
                else:
                    try:
                        data = json.loads(message)
                        if isinstance(data, dict) and isinstance(data.get("data"), dict):
                            record["room"] = data["data"].get("room_id")
                        record |= {"type": "json", "data": data}
                    except ValueError:
                        record |= {"type": "text", "data": message}
                f.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
                if seq == n:
                    print(f"done {time.monotonic():.6f}", flush=True)
                    await asyncio.to_thread(sys.stdin.read)
                    return


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
