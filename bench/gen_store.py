"""Writes a big message store directly in chatlinkd's store format (README "Message store"),
rotated the way the daemon rotates it: files of just over MaxFileSize, the newest named
messages.jsonl, older ones messages.jsonl.1, .2, … (the oldest has the highest number).

    gen_store.py [--ids] DIRECTORY RECORDS [MAX_FILE_SIZE]

Rooms: 1…20 take turns in a shuffled order (about 5% of the records each); room 999 is rare: one
record in every RECORDS/100, so a query for its last 100 records has to read the whole store.
With --ids every record carries the backend's message id as chatlinkd stores one it was told of
(`[Envelope] IDField=msg_id`): `"msg_id":"m-…"` in the event's data, and the record's `"id"`
after its `"type"` (StoreRecord.swift); the text is shorter by as much, so a record keeps about
the same size. The result is cached: a marker file names the parameters, and a second call
returns at once.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source import flood_messages  # noqa: E402  the same chat-like texts as the flood

VERSION = 1
COMMON_ROOM = 7
RARE_ROOM = 999
LINE = (
    '{"seq":%d,"time":"%s","dir":"in","room":%d,"type":"json","data":{"event":"message",'
    '"data":{"room_id":%d,"message":"%s","sender":"user-%d","time":"%s"}}}\n'
)
# A record with the backend's id, as the store writes it: "id" between "type" and "data".
ID_LINE = (
    '{"seq":%d,"time":"%s","dir":"in","room":%d,"type":"json","id":"%s","data":{"event":"message",'
    '"data":{"room_id":%d,"msg_id":"%s","message":"%s","sender":"user-%d","time":"%s"}}}\n'
)


def timestamps(n: int):
    """RFC 3339 UTC times with microseconds, 0.5 s apart from 2026-11-01T00:00:00Z."""
    import datetime

    base = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)
    day_cache: dict[int, str] = {}
    for i in range(n):
        micros = i * 500_000 + (i * 7919) % 500_000
        day, rest = divmod(micros, 86_400_000_000)
        date = day_cache.get(day)
        if date is None:
            date = day_cache[day] = (base + datetime.timedelta(days=day)).strftime("%Y-%m-%d")
        seconds, us = divmod(rest, 1_000_000)
        h, r = divmod(seconds, 3600)
        m, s = divmod(r, 60)
        yield f"{date}T{h:02d}:{m:02d}:{s:02d}.{us:06d}Z"


def generate(directory: Path, records: int, max_file_size: int = 64 << 20, ids: bool = False) -> list[Path]:
    """Writes the store (unless the marker says it is there); returns its files, newest first.
    With `ids`, every record carries a message id (`m-` and its index, unique in the store)."""
    directory = Path(directory)
    marker = directory / f".generated-v{VERSION}-{records}-{max_file_size}{'-ids' if ids else ''}"
    if marker.exists():
        return sorted(directory.glob("messages.jsonl*"), key=generation)
    directory.mkdir(parents=True, exist_ok=True)
    for old in list(directory.glob("messages.jsonl*")) + list(directory.glob(".generated-*")):
        old.unlink()
    texts = [m.decode().split('"message":"', 1)[1].split('"', 1)[0].split(" ", 1)[1]
             for m in flood_messages(1000, 200, ids_in_rooms=20 if ids else 0)]
    rng = random.Random(7)
    rare_every = max(1, records // 100)
    parts: list[Path] = []
    out = None
    size = 0
    batch: list[str] = []
    order = list(range(1, 21))
    for i, stamp in enumerate(timestamps(records)):
        if i % 20 == 0:
            rng.shuffle(order)
        room = RARE_ROOM if i % rare_every == rare_every // 2 else order[i % 20]
        text = f"#{i:07d} {texts[i % 1000]}"
        if ids:
            mid = f"m-{i:08d}"
            batch.append(ID_LINE % (i + 1, stamp, room, mid, room, mid, text, i % 50, stamp))
        else:
            batch.append(LINE % (i + 1, stamp, room, room, text, i % 50, stamp))
        if len(batch) == 4096 or i == records - 1:
            data = "".join(batch).encode()
            batch = []
            if out is None:
                parts.append(directory / f"part-{len(parts):04d}")
                out = open(parts[-1], "wb")
                size = 0
            out.write(data)
            size += len(data)
            if size >= max_file_size:  # the daemon rotates once a write takes it past the limit
                out.close()
                out = None
    if out:
        out.close()
    # Oldest part gets the highest generation; the newest is the live file.
    for index, part in enumerate(parts):
        gen = len(parts) - 1 - index
        os.replace(part, directory / ("messages.jsonl" if gen == 0 else f"messages.jsonl.{gen}"))
    if not (directory / "messages.jsonl").exists():
        (directory / "messages.jsonl").touch()
    marker.touch()
    return sorted(directory.glob("messages.jsonl*"), key=generation)


def generation(path: Path) -> int:
    suffix = path.name.removeprefix("messages.jsonl")
    return int(suffix[1:]) if suffix else 0


if __name__ == "__main__":
    with_ids = sys.argv[1:2] == ["--ids"]
    argv = sys.argv[2:] if with_ids else sys.argv[1:]
    files = generate(Path(argv[0]), int(argv[1]), int(argv[2]) if len(argv) > 2 else 64 << 20, ids=with_ids)
    print(f"{len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.0f} MB")
