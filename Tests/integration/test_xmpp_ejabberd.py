"""Protocol=xmpp against ejabberd 23.01, for compatibility: the private node of
Tests/Fixtures/ejabberd.py (XMPP over WebSocket for chatlinkd; one per module), with the slixmpp
peer of xmpp_peer.py over c2s TCP in the rooms. Prosody is the reference server
(test_xmpp.py); this set checks that what differs in ejabberd (the SASL mechanisms it offers,
its stream management, its MAM result pages, its MUC presences, its stanza-ids) changes
nothing of what chatlinkd stores or confirms.

- Join and inbound: chatlinkd signs in with SCRAM-SHA-256 and joins two rooms; 1,000 groupchat
  messages the peer posts are each stored once, in order per room, with the room's stanza-id
  as the record's id.
- A send: `chatlinkctl send --room ROOM TEXT` reaches the peer and is confirmed by the room's
  reflection of its id; a chat in (stored with its stanza-id) and out (confirmed by `<a h/>`).
- Resumption: three reconnects during a flood, each session resumed, nothing stored twice.
- Catch-up: chatlinkd stopped while the peer posts, started again: all caught up from the
  room's archive once, in order; then the same across a restart of ejabberd itself; and
  ejabberd restarted under a running chatlinkd: the resumption refused, the archive fills in.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from conftest import BIN, REPO, wait_until
from xmpp_peer import (bodies, daemons, in_rooms, inbound, messages, out_of_order,  # noqa: F401
                       peer_in, private_server, reconnects_while_posting, stored)

sys.path.insert(0, str(REPO / "Tests" / "Fixtures"))
import ejabberd as ejabberd_fixture  # noqa: E402

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def ejabberd():
    for e in private_server(ejabberd_fixture.Ejabberd.start, "ejabberd"):
        print(f"FIGURES ejabberd started in {e.started_in:.1f} s")
        yield e


def once_in_order(d, sent: list[tuple[str, str]], rooms: list[str]) -> tuple[list[dict], list[str]]:
    """The inbound records of `d` whose bodies are among `sent`, and what is wrong with them:
    a body out of its room's order, or one missing or stored twice (empty when nothing is)."""
    wanted = {b for _, b in sent}
    records = [r for r in inbound(d) if r["data"].get("body") in wanted]
    got = [r["data"]["body"] for r in records]
    problems = out_of_order(records, sent, rooms)
    if not len(got) == len(set(got)) == len(sent):
        problems.append(f"{len(got)} stored ({len(set(got))} distinct) of {len(sent)} sent")
    return records, problems


def test_joins_two_rooms_and_stores_a_thousand_groupchat_messages_once_in_order(daemons, tmp_path, ejabberd):
    t0 = time.monotonic()
    with in_rooms(daemons, tmp_path, ejabberd, 2) as (d, peer, rooms):
        joined_in = time.monotonic() - t0
        sent = messages(rooms, "flood", 1000)
        t0 = time.monotonic()
        peer.post(sent)
        stored(d, sent)
        elapsed = time.monotonic() - t0
        records, problems = once_in_order(d, sent, rooms)
        status = d.status()
        print(f"FIGURES ejabberd inbound: a fresh account and peer in {len(rooms)} rooms in "
              f"{joined_in:.1f} s; {len(sent)} sent, {len(records)} stored, "
              f"{len(sent) / elapsed:.0f} msg/s end to end; connects {status['connects']}")
        assert not problems, problems[:10]
        assert all(r["data"]["type"] == "groupchat" and r["data"]["nick"] == peer.user
                   and r["data"]["from"] == f"{r['room']}/{peer.user}" for r in records)
        # ejabberd's stanza-ids are the archive's microsecond timestamps, unique in a room's
        # archive only (as XEP-0359 asks): two rooms may give one id. So an id is its room's.
        ids = [(r["room"], r.get("id")) for r in records]
        shared = len(ids) - len({i for _, i in ids})
        print(f"FIGURES ejabberd stanza-ids: {shared} shared by messages of the two rooms")
        assert all(i for _, i in ids) and len(set(ids)) == len(ids), "every record carries its stanza-id"
        assert all(r["data"]["stanza_id"] == r["id"] for r in records)
        assert status["connects"] == 1 and status["state"] == "open", status
        assert "unexpected frame from the backend" not in d.log_text()
        # ejabberd offers SCRAM-SHA-256 (Prosody only SCRAM-SHA-1): chatlinkd takes the strongest.
        assert f"Accepted c2s SCRAM-SHA-256 authentication for {d.user}@" in ejabberd.log_text()


def test_a_send_reaches_the_room_confirmed_by_its_reflection_and_chats_go_both_ways(daemons, tmp_path, ejabberd):
    with in_rooms(daemons, tmp_path, ejabberd, 1) as (d, peer, rooms):
        t0 = time.monotonic()
        result = subprocess.run(
            [str(BIN / "chatlinkctl"), "--socket", d.socket_path, "--json", "send", "--room",
             rooms[0], "hello from chatlinkd"], capture_output=True, text=True, timeout=20)
        assert result.returncode == 0, result.stderr
        got = peer.wait_for(lambda m: m["body"] == "hello from chatlinkd")[0]
        wait_until(lambda: d.status()["outbox"] == 0, 10, message="the send confirmed")
        confirmed_in = time.monotonic() - t0
        status = d.status()
        print(f"FIGURES ejabberd send: confirmed in {confirmed_in:.2f} s; confirmed "
              f"{status['confirmed']}, failed {status['failed']}")
        assert got["nick"] == d.user and got["room"] == rooms[0], got
        assert status["confirmed"] == 1 and status["failed"] == 0, status
        wait_until(lambda: bodies(d, "hello from chatlinkd"), 10, message="the reflection stored")
        reflection = next(r for r in inbound(d) if r["data"]["body"] == "hello from chatlinkd")
        assert reflection["data"]["id"] == got["id"], (reflection, got)
        assert reflection["id"] == reflection["data"]["stanza_id"], reflection

        # A chat both ways: stored under the peer with the stanza-id ejabberd's archive of our
        # account gave (by our bare JID), our reply confirmed by the server's <a h/>.
        peer.chat(f"{d.user}@{ejabberd.domain}", "psst, bot")
        wait_until(lambda: bodies(d, "psst, bot"), 10, message="the chat stored")
        chat = next(r for r in inbound(d) if r["data"]["body"] == "psst, bot")
        assert chat["room"] == f"{peer.user}@{ejabberd.domain}" and chat["data"]["type"] == "chat", chat
        assert chat.get("id") and chat["data"]["stanza_id"] == chat["id"], chat
        reply = d.send("psst yourself", room=chat["room"])
        assert peer.wait_for(lambda m: m["body"] == "psst yourself")[0]["id"] == reply["id"]
        wait_until(lambda: d.status()["outbox"] == 0, 10, message="the chat send confirmed")
        assert d.status()["confirmed"] == 2 and d.status()["failed"] == 0


def test_connections_lost_during_a_flood_resume_the_session_and_nothing_is_stored_twice(daemons, tmp_path, ejabberd):
    """Three reconnects (the daemon running) while the peer posts 600: each time ejabberd
    resumes the XEP-0198 session (<resumed/>) and resends what was not acknowledged; every
    message stored once, in order."""
    with in_rooms(daemons, tmp_path, ejabberd, 1) as (d, peer, rooms):
        sent = messages(rooms, "resume", 600)
        reconnects_while_posting(d, peer, sent, 3)
        stored(d, sent)
        records, problems = once_in_order(d, sent, rooms)
        resumed = d.log_text().count("resumed the backend session")
        status = d.status()
        print(f"FIGURES ejabberd resumption: {len(sent)} sent, {len(records)} stored, connects "
              f"{status['connects']}, resumed {resumed}, duplicates dropped "
              f"{status['duplicates_dropped']}")
        assert not problems, problems[:10]
        assert status["connects"] == 4, status
        assert resumed == 3, "each reconnect resumed the session"
        assert "unexpected frame from the backend" not in d.log_text()


def posted_while_stopped(d, peer, sent: list[tuple[str, str]]) -> float:
    """The peer posts `sent` while `d` is stopped, then `d` starts: the seconds from its start
    until it stored them all."""
    peer.post(sent)
    t0 = time.monotonic()
    d.start()
    stored(d, sent)
    return time.monotonic() - t0


def test_what_is_posted_while_chatlinkd_is_stopped_is_caught_up_from_the_archive_once(daemons, tmp_path, ejabberd):
    """Stopped, the peer posts 300 (more than one of ejabberd's MAM pages), started again: each
    room's archive is asked for what came after the newest stored stanza-id; then ejabberd
    itself restarts while chatlinkd is stopped and 100 more are posted after it: caught up
    again. Every message stored once, each room in order, none a gap."""
    with in_rooms(daemons, tmp_path, ejabberd, 2) as (d, peer, rooms):
        first = messages(rooms, "first", 40)
        peer.post(first)
        stored(d, first, 30)
        d.stop()
        away = messages(rooms, "away", 300)
        caught_up_in = posted_while_stopped(d, peer, away)
        live = messages(rooms, "live", 40)
        peer.post(live)
        stored(d, live, 30)

        # ejabberd restarts while chatlinkd is stopped: its Mnesia archive and rooms survive.
        d.stop()
        t0 = time.monotonic()
        ejabberd.restart()
        restarted_in = time.monotonic() - t0
        restart = messages(rooms, "restart", 100)
        with peer_in(ejabberd, rooms) as poster:
            second_in = posted_while_stopped(d, poster, restart)

        sent = first + away + live + restart
        records, problems = once_in_order(d, sent, rooms)
        archived = sum(1 for r in records if (r.get("meta") or {}).get("delay"))
        status = d.status()
        print(f"FIGURES ejabberd catch-up: {len(away)} posted while stopped, caught up in "
              f"{caught_up_in:.1f} s; ejabberd restarted in {restarted_in:.1f} s, {len(restart)} "
              f"caught up in {second_in:.1f} s; {len(records)} stored of {len(sent)}, "
              f"{archived} from the archive, history gaps {status['history_gaps']}")
        assert not problems, problems[:10]
        assert archived >= len(away) + len(restart), "what was posted while stopped came from the archive"
        ids = [(r["room"], r["id"]) for r in records]
        assert len(ids) == len(set(ids)), "each stanza-id once in its room"
        assert status["history_gaps"] == 0, status
        assert "unexpected frame from the backend" not in d.log_text()


def test_ejabberd_restarted_under_chatlinkd_refuses_the_resumption_and_the_archive_fills_in(daemons, tmp_path, ejabberd):
    """ejabberd restarts while chatlinkd runs: its stream-management sessions are gone, so the
    resumption is refused (<failed/>), a new session joins again and catches up from the
    archive; what was posted before and after the restart is stored once, each room in order."""
    with in_rooms(daemons, tmp_path, ejabberd, 2) as (d, peer, rooms):
        up = messages(rooms, "up", 100)
        peer.post(up)
        stored(d, up, 30)
        t0 = time.monotonic()
        ejabberd.restart()
        back = messages(rooms, "back", 100)
        with peer_in(ejabberd, rooms) as poster:
            poster.post(back)
        stored(d, back)
        back_in = time.monotonic() - t0
        sent = up + back
        records, problems = once_in_order(d, sent, rooms)
        status = d.status()
        refused = d.log_text().count("could not resume the last session")
        print(f"FIGURES ejabberd restart under chatlinkd: all stored {back_in:.1f} s after the "
              f"restart began; {len(records)} stored of {len(sent)}; connects "
              f"{status['connects']}, resumptions refused {refused}, history gaps "
              f"{status['history_gaps']}")
        assert not problems, problems[:10]
        assert status["connects"] >= 2 and status["state"] == "open", status
        assert refused >= 1, "the restarted server refused the resumption"
        assert status["history_gaps"] == 0, status
        # Its shutdown ends the stream with <system-shutdown/> (logged as the connection's
        # end); nothing it sent after was out of place.
        assert "unexpected frame from the backend" not in d.log_text()
