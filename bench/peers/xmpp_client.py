"""The XMPP peer of `make bench`: slixmpp (c2s over TCP; it has no WebSocket transport), taking
what a MUC room sends, or its archive, into a file of JSON lines as chatlinkd's store would, but
without fsync.

    xmpp_client.py live C2S_PORT USER PASSWORD ROOM N OUT   join ROOM, take N groupchat messages
    xmpp_client.py mam  C2S_PORT USER PASSWORD ROOM N OUT   page ROOM's archive, 50 at a time

Signs in as USER@localhost (SCRAM-SHA-1 without TLS, loopback), joins ROOM with no history, and
writes each groupchat message with a body (`live`), or each result of the archive queries of
xep_0313's iterate (`mam`), as one line `{"seq","time","dir":"in","room","id","data":{"body",
"from","id","type","nick","stanza_id"}}` (line-buffered, no fsync). Prints "connected T"
(time.monotonic()) at the TCP connection, "joined T", "first T", and "done T" after the N-th
message; then waits for stdin to close.
"""

import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "Fixtures"))
from prosody import Prosody  # noqa: E402  (its slixmpp_client: the tests' peer is set up the same way)


def stamp(what: str) -> None:
    print(f"{what} {time.monotonic():.6f}", flush=True)


async def main(mode: str, port: str, user: str, password: str, room: str, n: str, out_path: str) -> None:
    n = int(n)
    out = open(out_path, "w", buffering=1, encoding="utf-8")
    client = Prosody.slixmpp_client(user, password, ["xep_0045", "xep_0313", "xep_0359"])
    finished = asyncio.Event()
    count = 0

    def write(message, stanza_id: str) -> None:
        nonlocal count
        count += 1
        if count == 1:
            stamp("first")
        sender = message["from"]
        data = {"body": message["body"], "from": str(sender), "id": message["id"], "type": "groupchat",
                "nick": sender.resource, "stanza_id": stanza_id}
        out.write(json.dumps({"seq": count, "time": time.time(), "dir": "in", "room": room, "id": stanza_id,
                              "data": data}, ensure_ascii=False) + "\n")
        if count == n:
            stamp("done")
            finished.set()

    def groupchat(message):
        if mode == "live" and message["body"]:
            write(message, message["stanza_id"]["id"])

    async def session_start(_):
        client.send_presence()
        await client.plugin["xep_0045"].join_muc_wait(room, user, maxstanzas=0)
        stamp("joined")
        if mode == "mam":
            async for result in client.plugin["xep_0313"].iterate(jid=room, rsm={"max": 50}):
                write(result["mam_result"]["forwarded"]["stanza"], result["mam_result"]["id"])
            if count != n:
                print(f"the archive held {count} messages, not {n}", file=sys.stderr, flush=True)
                finished.set()

    client.add_event_handler("connected", lambda _: stamp("connected"))
    client.add_event_handler("session_start", session_start)
    client.add_event_handler("groupchat_message", groupchat)
    client.connect("127.0.0.1", int(port))
    await finished.wait()
    out.close()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    client.disconnect()
    await asyncio.sleep(0.1)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
