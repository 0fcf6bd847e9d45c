"""Protocol=xmpp against a real server: the private Prosody 0.12 of Tests/Fixtures/prosody.py
(XMPP over WebSocket for chatlinkd; one per module), with slixmpp over c2s TCP as the
independent peer in the rooms.

- Inbound: chatlinkd joins two MUC rooms; 10,000 groupchat messages the peer posts are each
  stored once, in order per room, with the room's stanza-id as the record's id.
- Sends: `chatlinkctl send --room ROOM TEXT` reaches the peer in the room, and is confirmed by
  the room's reflection of its id.
- A wrong password: the server's refusal in status, retried at ReconnectMaxSec= and no faster.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from broker_checks import attempts, first_in_order
from conftest import BIN, REPO, Daemon, wait_until
from xmpp_peer import (Peer, bodies, daemons, joined, private_server, rooms_of,  # noqa: F401 (daemons: a fixture)
                       xmpp_daemon)

sys.path.insert(0, str(REPO / "Tests" / "Fixtures"))
import prosody as prosody_fixture  # noqa: E402


pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def prosody():
    # The rooms' archive in SQLite: the default file store reads a room's whole archive for
    # every message and query, which makes a catch-up of 10,000 take most of a minute.
    yield from private_server(
        lambda directory: prosody_fixture.Prosody.start(directory, muc_extra=prosody_fixture.SQL_ARCHIVE),
        "prosody")


# ---------------------------------------------------------------------------- inbound


@pytest.mark.timeout(420)  # 10,000 through Prosody: minutes on a loaded machine
def test_ten_thousand_groupchat_messages_in_two_rooms_are_each_stored_once_in_order(daemons, tmp_path, prosody):
    rooms = rooms_of(prosody, 2)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        sent = [(rooms[i % 2], f"flood-{i}") for i in range(10_000)]
        t0 = time.monotonic()
        peer.post(sent)

        def mine():
            return [r for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)
                    and r["data"].get("body", "").startswith("flood-")]
        wait_until(lambda: len({r["data"]["body"] for r in mine()}) >= len(sent), 60,
                   message="all 10,000 stored")
        elapsed = time.monotonic() - t0
        records = mine()
        bodies = [r["data"]["body"] for r in records]
        problems = []
        for room in rooms:
            problems += first_in_order([r["data"]["body"] for r in records if r["room"] == room],
                                       [b for rm, b in sent if rm == room])
        print(f"FIGURES xmpp inbound: sent {len(sent)}, stored {len(records)}, distinct "
              f"{len(set(bodies))}, {len(sent) / elapsed:.0f} msg/s end to end")
        assert not problems, problems
        assert len(bodies) == len(set(bodies)) == len(sent), "each stored exactly once"
        assert all(r["data"]["type"] == "groupchat" and r["data"]["nick"] == peer.user
                   and r["data"]["from"] == f"{r['room']}/{peer.user}" for r in records)
        ids = [r.get("id") for r in records]
        assert all(ids) and len(set(ids)) == len(ids), "every record carries its stanza-id"
        assert all(r["data"]["stanza_id"] == r["id"] for r in records)
        status = d.status()
        assert status["connects"] == 1 and status["state"] == "open", status
    finally:
        peer.close()


def test_connections_lost_during_a_flood_are_resumed_and_nothing_is_stored_twice(daemons, tmp_path, prosody):
    """Reconnect (the connection closed, the daemon running) five times while the peer posts:
    each time the server resumes the session (XEP-0198), resends what was not acknowledged, and
    the store has every message once, in order."""
    rooms = rooms_of(prosody, 1)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        sent = [(rooms[0], f"resume-{i}") for i in range(2000)]
        poster = threading.Thread(target=peer.post, args=(sent,), daemon=True)
        poster.start()
        for _ in range(5):
            time.sleep(0.3)
            assert "error" not in d.call("io.chatlink.Daemon.Reconnect")
            d.wait_state("open", timeout=20)
        poster.join(120)

        def mine():
            return [r for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)
                    and r["data"].get("body", "").startswith("resume-")]
        wait_until(lambda: len({r["data"]["body"] for r in mine()}) >= len(sent), 60,
                   message="all 2,000 stored")
        records = mine()
        bodies = [r["data"]["body"] for r in records]
        resumed = d.log_text().count("resumed the backend session")
        status = d.status()
        print(f"FIGURES xmpp resumption: sent {len(sent)}, stored {len(records)}, distinct "
              f"{len(set(bodies))}, connects {status['connects']}, resumed {resumed}")
        assert first_in_order(bodies, [b for _, b in sent]) == []
        assert len(bodies) == len(set(bodies)), "nothing stored twice"
        assert status["connects"] == 6, status
        assert resumed >= 5, "each reconnect resumed the session"
    finally:
        peer.close()


@pytest.mark.timeout(420)  # 10,000 through Prosody: minutes on a loaded machine
def test_what_is_posted_while_chatlinkd_is_stopped_is_caught_up_from_the_archive_once(daemons, tmp_path, prosody):
    """Stopped, then started again (no session to resume): each room's archive is asked for
    what came after the newest stored stanza-id, page by page (Prosody's pages hold 50), and
    the store has everything once, in order, the live messages after the archived ones."""
    rooms = rooms_of(prosody, 2)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        before = [(rooms[i % 2], f"before-{i}") for i in range(40)]
        peer.post(before)
        wait_until(lambda: len(bodies(d, "before-")) >= len(before), 30, message="the first 40 stored")
        d.stop()
        away = [(rooms[i % 2], f"away-{i}") for i in range(10_000)]
        peer.post(away)
        t0 = time.monotonic()
        d.start()
        d.wait_state("open", timeout=20)
        after = [(rooms[i % 2], f"after-{i}") for i in range(40)]
        peer.post(after)
        sent = before + away + after
        wait_until(lambda: len(set(bodies(d, ""))) >= len(sent), 120, message="all 10,080 stored")
        elapsed = time.monotonic() - t0
        records = [r for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)]
        problems = []
        for room in rooms:
            problems += first_in_order([r["data"]["body"] for r in records if r["room"] == room],
                                       [b for rm, b in sent if rm == room])
        got = [r["data"]["body"] for r in records]
        archived = sum(1 for r in records if (r.get("meta") or {}).get("delay"))
        print(f"FIGURES xmpp catch-up: {len(away)} posted while stopped, stored {len(records)} of "
              f"{len(sent)} ({len(set(got))} distinct), {archived} from the archive, "
              f"{elapsed:.1f} s from the restart")
        assert not problems, problems
        assert len(got) == len(set(got)) == len(sent), "each stored once"
        assert archived >= len(away), "the messages posted while stopped came from the archive"
        assert d.status()["history_gaps"] == 0
    finally:
        peer.close()


def test_an_id_the_archive_no_longer_has_falls_back_to_the_time_and_is_a_counted_gap(daemons, tmp_path, prosody):
    """The newest stored id of a room is one the archive does not have (as after its item
    limit dropped it): Prosody answers item-not-found, the gap is counted and logged, and the
    catch-up asks for what the archive holds from a minute before that record's time: what
    was posted while chatlinkd was stopped is stored, and what it brings again is not."""
    rooms = rooms_of(prosody, 1)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        before = [(rooms[0], f"kept-{i}") for i in range(20)]
        peer.post(before)
        wait_until(lambda: len(bodies(d, "kept-")) >= len(before), 30, message="the first 20 stored")
        d.stop()
        # The newest record of the room now names an id the archive never had.
        last = max(r["seq"] for r in d.records())
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        line = json.dumps({"seq": last + 1, "time": stamp, "dir": "in", "room": rooms[0],
                           "type": "json", "id": "no-such-id", "data": {"body": "marker"}},
                          separators=(",", ":"))
        with open(d.store_dir / "messages.jsonl", "a") as f:
            f.write(line + "\n")
        away = [(rooms[0], f"gone-{i}") for i in range(120)]
        peer.post(away)
        d.start()
        wait_until(lambda: len(bodies(d, "gone-")) >= len(away), 30, message="caught up from the time")
        status = d.status()
        got = bodies(d, "kept-") + bodies(d, "gone-")
        print(f"FIGURES xmpp time fallback: history_gaps {status['history_gaps']}, stored "
              f"{len(got)} of {len(before) + len(away)} ({len(set(got))} distinct), "
              f"duplicates dropped {status['duplicates_dropped']}")
        assert status["history_gaps"] == 1, status
        assert bodies(d, "gone-") == [b for _, b in away], "the missed ones, once each, in order"
        assert bodies(d, "kept-") == [b for _, b in before], "nothing stored twice"
        assert status["duplicates_dropped"] >= len(before), "the minute before came again"
        assert "history" in d.log_text() and rooms[0] in d.log_text()
    finally:
        peer.close()


class FrontDoor:
    """A WebSocket server on loopback that answers every XMPP stream with RFC 7395's
    `<open/>` then `<close see-other-uri=…/>`, sending the client to `target`."""

    def __init__(self, domain: str, target: str):
        import websockets.asyncio.server as ws_server
        self.loop = asyncio.new_event_loop()
        self.streams = 0

        async def handler(ws):
            await ws.recv()
            self.streams += 1
            await ws.send(f"<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' from='{domain}' "
                          "id='front' version='1.0' xml:lang='en'/>")
            await ws.send(f"<close xmlns='urn:ietf:params:xml:ns:xmpp-framing' see-other-uri='{target}'/>")
            await ws.wait_closed()

        async def serve():
            return await ws_server.serve(handler, "127.0.0.1", 0, subprotocols=["xmpp"])
        self.server = self.loop.run_until_complete(serve())
        self.url = f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/xmpp-websocket"
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def test_a_see_other_uri_is_followed_and_the_session_goes_on_there(daemons, tmp_path, prosody):
    """chatlinkd is configured with a front door that sends every stream to Prosody (RFC 7395
    §3.6.1): the next connection goes there at once, and messages flow."""
    rooms = rooms_of(prosody, 1)
    front = FrontDoor(prosody.domain, prosody.ws_url)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms, url=front.url)
        joined(d, peer, rooms)
        status = d.status()
        assert status["url"] == prosody.ws_url, status
        assert front.streams == 1
        assert "the backend moved the session to " + prosody.ws_url in d.log_text()
        peer.post([(rooms[0], "moved-1")])
        wait_until(lambda: bodies(d, "moved-") == ["moved-1"], 10, message="stored there")
        print(f"FIGURES xmpp see-other-uri: followed after {front.streams} stream, "
              f"connects {status['connects']}, failures {status.get('failures', 0)}")
    finally:
        peer.close()
        front.close()


def test_catch_up_all_imports_the_whole_archive_of_a_room_never_stored(daemons, tmp_path, prosody):
    rooms = rooms_of(prosody, 1)
    peer = Peer(prosody, rooms)
    try:
        history = [(rooms[0], f"history-{i}") for i in range(120)]
        peer.post(history)
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms, overrides={"XMPP": {"CatchUp": "all"}})
        joined(d, peer, rooms)
        wait_until(lambda: len(bodies(d, "history-")) >= len(history), 30, message="the archive imported")
        assert bodies(d, "history-") == [b for _, b in history], "once each, in archive order"
    finally:
        peer.close()


def test_kill_9_during_a_flood_loses_nothing_and_stores_nothing_twice(daemons, tmp_path, prosody):
    """kill -9 five times while the peer floods two rooms: every restart catches up from the
    archives after the newest stored stanza-ids; in the end every message is stored once, each
    room in order."""
    rooms = rooms_of(prosody, 2)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        sent = [(rooms[i % 2], f"kill-{i}") for i in range(3000)]
        stop = threading.Event()

        def flood():
            for start in range(0, len(sent), 100):
                if stop.is_set():
                    return
                peer.post(sent[start:start + 100])
                time.sleep(0.05)
        poster = threading.Thread(target=flood, daemon=True)
        poster.start()
        kills = 0
        while poster.is_alive() and kills < 5:
            time.sleep(0.4)
            d.kill()
            kills += 1
            d.start()
            d.wait_state("open", timeout=20)
        poster.join(180)
        assert not poster.is_alive(), "the flood did not finish"
        wait_until(lambda: len(set(bodies(d, "kill-"))) >= len(sent), 90, message="all 3,000 stored")
        got = bodies(d, "kill-")
        records = [r for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)
                   and r["data"]["body"].startswith("kill-")]
        problems = []
        for room in rooms:
            problems += first_in_order([r["data"]["body"] for r in records if r["room"] == room],
                                       [b for rm, b in sent if rm == room])
        status = d.status()
        print(f"FIGURES xmpp kill -9: {kills} kills during {len(sent)}; stored {len(got)}, distinct "
              f"{len(set(got))}, duplicates dropped {status.get('duplicates_dropped')}, "
              f"history gaps {status['history_gaps']}")
        assert kills == 5, "the flood outlasted five kills"
        assert not problems, problems
        assert len(got) == len(set(got)) == len(sent), "each stored exactly once"
        ids = [r["id"] for r in records]
        assert len(ids) == len(set(ids)), "each stanza-id once"
        # The room routes to the killed process's session, which the server still keeps, until
        # the new one joins: those stanzas come before <enabled/> and are no fault.
        assert "broke its protocol" not in d.log_text()
    finally:
        peer.close()


# ---------------------------------------------------------------------------- sends


def test_a_send_reaches_the_room_and_is_confirmed_by_its_reflection(daemons, tmp_path, prosody):
    rooms = rooms_of(prosody, 1)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        result = subprocess.run(
            [str(BIN / "chatlinkctl"), "--socket", d.socket_path, "--json", "send", "--room",
             rooms[0], "hello from chatlinkd"], capture_output=True, text=True, timeout=20)
        assert result.returncode == 0, result.stderr
        got = peer.wait_for(lambda m: m["body"] == "hello from chatlinkd")[0]
        assert got["nick"] == d.user and got["room"] == rooms[0], got
        wait_until(lambda: d.status()["outbox"] == 0, 10, message="the send confirmed")
        status = d.status()
        assert status["confirmed"] >= 1 and status["failed"] == 0, status
        # The reflection is stored too, under the room, with our client id as the stanza's id.
        wait_until(lambda: any(r["dir"] == "in" and r["data"]["body"] == "hello from chatlinkd"
                               for r in d.records() if isinstance(r["data"], dict)), 10,
                   message="the reflection stored")
        reflection = next(r for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)
                          and r["data"]["body"] == "hello from chatlinkd")
        assert reflection["data"]["id"] == got["id"], (reflection, got)
    finally:
        peer.close()


def test_chats_in_and_out_are_stored_under_the_peer_and_confirmed_by_the_servers_count(daemons, tmp_path, prosody):
    rooms = rooms_of(prosody, 1)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        peer_jid = f"{peer.user}@{prosody.domain}"
        peer.chat(f"{d.user}@{prosody.domain}", "psst, bot")
        wait_until(lambda: any(r["dir"] == "in" and isinstance(r["data"], dict)
                               and r["data"]["body"] == "psst, bot" for r in d.records()), 10,
                   message="the chat stored")
        record = next(r for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)
                      and r["data"]["body"] == "psst, bot")
        assert record["room"] == peer_jid and record["data"]["type"] == "chat", record
        assert record.get("id") and record["data"]["stanza_id"] == record["id"], record
        reply = d.send("psst yourself", room=peer_jid)
        got = peer.wait_for(lambda m: m["body"] == "psst yourself")[0]
        assert got["from"].startswith(f"{d.user}@{prosody.domain}/"), got
        assert got["id"] == reply["id"], (got, reply)
        wait_until(lambda: d.status()["outbox"] == 0, 10, message="the chat send confirmed")
        assert d.status()["confirmed"] >= 1
    finally:
        peer.close()


def test_chats_sent_while_chatlinkd_is_stopped_are_caught_up_from_the_account_archive_once(daemons, tmp_path, prosody):
    """Stopped, then started again: the account's own archive is asked for the chats it holds
    from a minute before the newest stored record, which are stored under the peer, in order,
    the one stored before the stop not again."""
    rooms = rooms_of(prosody, 1)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        bot = f"{d.user}@{prosody.domain}"
        peer.chat(bot, "chat-before")
        wait_until(lambda: bodies(d, "chat-before") == ["chat-before"], 10, message="the first chat stored")
        d.stop()
        away = [f"chat-away-{i}" for i in range(60)]
        for body in away:
            peer.chat(bot, body)
        # The server has them all once it answers a round trip after them.
        assert len(peer.archive()) >= len(away) + 1
        d.start()
        wait_until(lambda: len(bodies(d, "chat-away-")) >= len(away), 30, message="the chats caught up")
        records = [r for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)
                   and r["data"].get("body", "").startswith("chat-")]
        print(f"FIGURES xmpp chat catch-up: {len(away)} chats while stopped, stored "
              f"{len(records) - 1}, {sum(1 for r in records if (r.get('meta') or {}).get('delay'))} "
              f"from the archive")
        assert bodies(d, "chat-away-") == away, "each once, in order"
        assert bodies(d, "chat-before") == ["chat-before"], "not stored twice"
        assert all(r["room"] == f"{peer.user}@{prosody.domain}" and r["data"]["type"] == "chat"
                   for r in records), records[:2]
        ids = [r["id"] for r in records]
        assert len(set(ids)) == len(ids)
        assert d.status()["history_gaps"] == 0
    finally:
        peer.close()


def test_prosody_restarted_during_sends_every_confirmed_send_reaches_the_room(daemons, tmp_path, prosody):
    """The server restarts while 300 sends go out: the session cannot be resumed, a new one
    joins and catches up, the unconfirmed sends go out again; every one is confirmed and in
    the room's archive (a send the room had taken but whose reflection the restart cut off
    goes out twice: Prosody's rooms do not drop a repeated origin-id)."""
    rooms = rooms_of(prosody, 1)
    peer = Peer(prosody, rooms)
    try:
        d = xmpp_daemon(daemons, tmp_path, prosody, rooms)
        joined(d, peer, rooms)
        texts = [f"restart-{i}" for i in range(300)]

        def send_all():
            for text in texts:
                d.send(text, room=rooms[0])
                time.sleep(0.005)
        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        time.sleep(0.5)
        prosody.restart()
        sender.join(60)
        wait_until(lambda: d.status()["outbox"] == 0, 60, message="every send confirmed")
        status = d.status()
        joined(d, peer, rooms, timeout=30)
        archived = [b for b in peer.archive(rooms[0]) if b.startswith("restart-")]
        counts = {t: archived.count(t) for t in texts}
        twice = sorted(t for t, n in counts.items() if n > 1)
        print(f"FIGURES xmpp prosody restart: sent {len(texts)}, confirmed {status['confirmed']}, "
              f"failed {status['failed']}, in the archive {len(set(archived))}, more than once "
              f"{len(twice)} {twice[:5]}, connects {status['connects']}")
        assert status["failed"] == 0 and status["connects"] >= 2, status
        assert all(n >= 1 for n in counts.values()), [t for t, n in counts.items() if n == 0][:10]
        assert first_in_order(archived, texts) == []
    finally:
        peer.close()


# ---------------------------------------------------------------------------- refusals


def test_a_wrong_password_is_refused_clearly_retried_slowly_and_loses_no_queued_send(daemons, tmp_path, prosody):
    hi = 1.5
    d = xmpp_daemon(daemons, tmp_path, prosody, rooms_of(prosody, 1), password="not-the-token",
                    overrides={"Backend": {"ReconnectMaxSec": hi}})
    t0 = time.monotonic()
    wait_until(lambda: len(attempts(d, t0)) >= 4, 3 * hi + 10, message="four connection attempts")
    times = attempts(d, t0)
    gaps = [round(b - a, 2) for a, b in zip(times, times[1:])]
    status = d.status()
    error = status.get("last_error") or ""
    print(f"gaps between attempts {gaps}; last_error {error!r}")
    assert status["connects"] == 0 and status["state"] != "open", status
    assert f"the XMPP server refused the login of {d.user}@{prosody.domain}: not-authorized" in error, status
    assert "check [XMPP] JID= and TokenFile=" in error, status
    assert all(g >= hi - 0.1 for g in gaps), f"a refusal was retried faster than ReconnectMaxSec={hi}: {gaps}"
    assert d.token not in d.log_text()
    # What is sent meanwhile stays queued, and goes out once the password works.
    room = d.sections["Backend"]["Rooms"]
    queued = [d.send(f"queued-{i}", room=room) for i in range(3)]
    assert all(q["state"] == "queued" for q in queued), queued
    peer = Peer(prosody, [room])
    try:
        prosody.register(d.user, d.token)
        wait_until(lambda: d.status()["outbox"] == 0, 3 * hi + 20, message="the queued sends confirmed")
        got = peer.wait_for(lambda m: m["body"].startswith("queued-"), count=3)
        assert [m["body"] for m in got] == [f"queued-{i}" for i in range(3)], got
    finally:
        peer.close()


# ---------------------------------------------------------------------------- a hostile server


class HostileServer:
    """A scripted XMPP-over-WebSocket server (websockets, subprotocol xmpp) that accepts any
    PLAIN login, binds, confirms the join, sends one good groupchat message and then `bad`,
    the frame under test; on every connection alike."""

    ROOM = "lobby@conference.localhost"

    def __init__(self, bad: str):
        self.bad = bad
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self._serve(), self.loop).result(10)
        self.port = self.server.sockets[0].getsockname()[1]
        self.connections = 0

    async def _serve(self):
        from websockets.asyncio.server import serve
        return await serve(self._session, "127.0.0.1", 0, subprotocols=["xmpp"])

    async def _session(self, ws):
        from websockets.exceptions import ConnectionClosed
        self.connections += 1
        framing = "urn:ietf:params:xml:ns:xmpp-framing"
        opened = f"<open xmlns='{framing}' from='localhost' id='s' version='1.0'/>"
        streams = "xmlns:stream='http://etherx.jabber.org/streams'"
        try:
            await ws.recv()
            await ws.send(opened)
            await ws.send(f"<stream:features {streams}><mechanisms xmlns='urn:ietf:params:xml:ns:"
                          "xmpp-sasl'><mechanism>PLAIN</mechanism></mechanisms></stream:features>")
            await ws.recv()
            await ws.send("<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>")
            await ws.recv()
            await ws.send(opened)
            await ws.send(f"<stream:features {streams}><bind xmlns='urn:ietf:params:xml:ns:"
                          "xmpp-bind'/></stream:features>")
            await ws.recv()
            await ws.send("<iq xmlns='jabber:client' type='result' id='bind-1'><bind xmlns='urn:"
                          "ietf:params:xml:ns:xmpp-bind'><jid>bot@localhost/r</jid></bind></iq>")
            while "conference" not in await ws.recv():
                pass
            await ws.send(f"<presence xmlns='jabber:client' from='{self.ROOM}/bot'><x xmlns='http://"
                          "jabber.org/protocol/muc#user'><status code='110'/></x></presence>")
            await ws.send(f"<message xmlns='jabber:client' from='{self.ROOM}/eve' type='groupchat' "
                          f"id='good-{self.connections}'><body>good</body></message>")
            await ws.send(self.bad)
            async for _ in ws:
                pass
        except ConnectionClosed:
            pass

    def close(self):
        self.server.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


BOMB = ("<?xml version='1.0'?><!DOCTYPE m [<!ENTITY a 'aaaaaaaaaa'><!ENTITY b '&a;&a;&a;&a;&a;"
        "&a;&a;&a;&a;&a;'><!ENTITY c '&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;'>]><message xmlns='jabber:client' "
        f"from='{HostileServer.ROOM}/eve' type='groupchat'><body>&c;</body></message>")


@pytest.mark.parametrize("name,bad,reason", [
    ("entity bomb", BOMB, "the XMPP server sent a DOCTYPE in the XML stream"),
    ("processing instruction", f"<?evil x?><message xmlns='jabber:client' from='{HostileServer.ROOM}/eve' "
                               "type='groupchat'><body>pi</body></message>",
     "the XMPP server sent a processing instruction (evil)"),
    # MaxMessageSize= stops it a layer below, in the WebSocket (1009), before XML is read.
    ("oversized", f"<message xmlns='jabber:client' from='{HostileServer.ROOM}/eve' type='groupchat'>"
                  f"<body>{'x' * 70000}</body></message>", "message exceeds 65536 bytes"),
])
def test_a_malicious_frame_ends_the_session_with_the_reason_and_nothing_of_it_is_stored(
        daemons, tmp_path, name, bad, reason):
    server = HostileServer(bad)
    try:
        d = Daemon(tmp_path / "d", f"ws://127.0.0.1:{server.port}/xmpp-websocket", {
            "Backend": {"Protocol": "xmpp", "Rooms": HostileServer.ROOM, "MaxMessageSize": "64K"},
            "XMPP": {"JID": "bot@localhost"}})
        daemons.append(d)
        d.start()
        # The reason is in the log, and a broken session's in status as the last error (a
        # WebSocket close of our own, 1009, is logged as how the connection ended).
        d.wait_log(reason, timeout=15)
        if name != "oversized":
            wait_until(lambda: reason in (d.status().get("last_error") or ""), 15,
                       message=f"the session ended for the {name}")
        wait_until(lambda: server.connections >= 2, 15, message="a reconnect")
        assert d.running(), "the daemon never exits on bad input"
        bodies = [r["data"]["body"] for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)]
        print(f"{name}: status {d.status()}; stored {bodies}")
        assert bodies and set(bodies) == {"good"}, bodies
    finally:
        server.close()

