"""xmpp_peer.py: what the XMPP suites share (test_xmpp.py against Prosody,
test_xmpp_ejabberd.py against ejabberd): the slixmpp peer, chatlinkd with Protocol=xmpp as a
fresh account of the server, and the checks on what it stored.

`p`, the server, is a fixture of Tests/Fixtures (prosody.Prosody, ejabberd.Ejabberd): it has
`register(user, password)`, `domain`, `muc`, `ws_url` and `c2s_port`. Import the `daemons`
fixture into the test module to use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shutil
import sys
import tempfile
import threading
import time

import pytest

from broker_checks import first_in_order
from conftest import REPO, Daemon, finish_daemons, wait_until

sys.path.insert(0, str(REPO / "Tests" / "Fixtures"))
from prosody import slixmpp_client  # noqa: E402  (the tests' servers are all set up alike)

_users = itertools.count(1)


# ---------------------------------------------------------------------------- the peer


class Peer:
    """slixmpp over c2s on its own thread and asyncio loop: joins rooms, posts, keeps what the
    rooms send it (groupchat: room, nick, body, id)."""

    def __init__(self, p, rooms: list[str]):
        self.user = f"peer{next(_users)}"
        p.register(self.user, "peer-pass")
        self.lock = threading.Condition()
        self.received: list[dict] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = self._call(self._make(p, rooms))

    async def _make(self, p, rooms):
        client = slixmpp_client(f"{self.user}@{p.domain}", "peer-pass",
                                ["xep_0045", "xep_0199", "xep_0313"])
        started = asyncio.Event()
        self.closing = False

        def disconnected(_):
            # A restarted server: connect again (session_start joins the rooms again).
            if not self.closing:
                self.loop.call_later(0.5, client.connect, "127.0.0.1", p.c2s_port)

        async def session_start(_):
            client.send_presence()
            for room in rooms:
                await client.plugin["xep_0045"].join_muc_wait(room, self.user, maxstanzas=0)
            started.set()

        def groupchat(msg):
            with self.lock:
                self.received.append({"room": str(msg["from"].bare), "nick": msg["mucnick"],
                                      "body": msg["body"], "id": msg["id"]})
                self.lock.notify_all()

        def chat(msg):
            if msg["type"] != "chat":
                return
            with self.lock:
                self.received.append({"room": None, "from": str(msg["from"]), "nick": None,
                                      "body": msg["body"], "id": msg["id"]})
                self.lock.notify_all()

        client.add_event_handler("session_start", session_start)
        client.add_event_handler("groupchat_message", groupchat)
        client.add_event_handler("message", chat)
        client.add_event_handler("disconnected", disconnected)
        client.connect("127.0.0.1", p.c2s_port)
        await asyncio.wait_for(started.wait(), 20)
        return client

    def _call(self, coroutine, timeout: float = 30):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def occupants(self, room: str) -> list[str]:
        async def roster():
            return list(self.client.plugin["xep_0045"].get_roster(room) or [])
        return self._call(roster())

    def post(self, messages: list[tuple[str, str]]) -> None:
        """Posts (room, body) pairs as groupchat, in order, and waits until the rooms reflected
        the last of each room back (so the server has them all)."""
        async def post():
            for room, body in messages:
                self.client.send_message(mto=room, mbody=body, mtype="groupchat")
                await asyncio.sleep(0)
        self._call(post(), timeout=120)
        lasts = {room: body for room, body in messages}
        # Prosody takes a few ms of CPU a message (more on a loaded machine): 10,000 take a while.
        self.wait_for(lambda m: (m["room"], m["body"]) in lasts.items() and m["nick"] == self.user,
                      count=len(lasts), timeout=max(60, len(messages) / 40))

    def chat(self, to: str, body: str) -> None:
        async def send():
            self.client.send_message(mto=to, mbody=body, mtype="chat")
        self._call(send())

    def wait_for(self, predicate, count: int = 1, timeout: float = 20) -> list[dict]:
        with self.lock:
            if not self.lock.wait_for(lambda: len([m for m in self.received if predicate(m)]) >= count,
                                      timeout):
                pytest.fail(f"the peer did not receive {count} matching message(s); "
                            f"last received: {self.received[-3:]}")
            return [m for m in self.received if predicate(m)]

    def archive(self, room: str | None = None) -> list[str]:
        """The bodies the room's archive holds, oldest first (without a room: the peer's own
        archive of chats, its sends included)."""
        async def read():
            bodies = []
            where = {"jid": room} if room else {}
            async for message in self.client.plugin["xep_0313"].iterate(rsm={"max": 50}, **where):
                bodies.append(message["mam_result"]["forwarded"]["stanza"]["body"])
            return bodies
        return self._call(read(), timeout=60)

    def close(self) -> None:
        self.closing = True
        try:
            self._call(self._disconnect(), timeout=10)
        except Exception:  # noqa: BLE001 (a dead connection is closed already)
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    async def _disconnect(self):
        self.client.disconnect()
        await asyncio.sleep(0.2)
        # Every task finished, so none is cancelled later on a stopped loop (slixmpp's __del__).
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)


# ---------------------------------------------------------------------------- the daemon


@pytest.fixture
def daemons(tmp_path):
    made: list[Daemon] = []
    yield made
    finish_daemons(made)


def xmpp_daemon(daemons, tmp_path, p, rooms, password: str | None = None, overrides=None,
                start: bool = True, url: str | None = None) -> Daemon:
    """chatlinkd with Protocol=xmpp as a fresh account of `p`: the token file holds its
    password (or `password` is registered instead, to test a wrong one)."""
    user = f"bot{next(_users)}"
    sections = {"Backend": {"Protocol": "xmpp", "Rooms": ",".join(rooms)},
                "XMPP": {"JID": f"{user}@{p.domain}"}}
    for section, keys in (overrides or {}).items():
        sections.setdefault(section, {}).update(keys)
    d = Daemon(tmp_path / f"{user}", url or p.ws_url, sections)
    daemons.append(d)
    d.user = user
    p.register(user, password or d.token)
    if start:
        d.start()
    return d


def rooms_of(p, count: int) -> list[str]:
    n = next(_users)
    return [f"room{n}-{i}@{p.muc}" for i in range(count)]


@contextlib.contextmanager
def in_rooms(daemons, tmp_path, p, count: int):
    """`count` fresh rooms of `p`, the peer in them and chatlinkd (a fresh account) joined to
    them: yields (daemon, peer, rooms); the peer leaves after."""
    rooms = rooms_of(p, count)
    with peer_in(p, rooms) as peer:
        d = xmpp_daemon(daemons, tmp_path, p, rooms)
        joined(d, peer, rooms)
        yield d, peer, rooms


@contextlib.contextmanager
def peer_in(p, rooms: list[str]):
    """A fresh peer (a new account) in `rooms` of `p`, closed after: for a server just
    restarted, rather than waiting for the old peer's reconnection (slixmpp backs off 1, 3,
    7, 15 s, ...)."""
    peer = Peer(p, rooms)
    try:
        yield peer
    finally:
        peer.close()


def private_server(start, name: str):
    """For a module fixture: the server `start(directory)` returns, in a folder under /tmp
    itself (it runs as its own user, which pytest's 0700 folders keep out); stopped and the
    folder removed after."""
    directory = tempfile.mkdtemp(prefix=f"clit-{name}-", dir="/tmp")
    server = start(directory)
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


def joined(d: Daemon, peer: Peer, rooms: list[str], timeout: float = 20) -> None:
    d.wait_state("open", timeout=timeout)
    for room in rooms:
        wait_until(lambda: d.user in peer.occupants(room), timeout,
                   message=f"{d.user} in {room} as the peer sees it")
    wait_until(lambda: "joining" not in (d.status().get("session_note") or ""), timeout,
               message="every join confirmed")


def bodies(d: Daemon, prefix: str) -> list[str]:
    return [r["data"]["body"] for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)
            and r["data"].get("body", "").startswith(prefix)]


def inbound(d: Daemon) -> list[dict]:
    """The inbound records of `d` that hold a message object (XMPP stores every one so)."""
    return [r for r in d.records() if r["dir"] == "in" and isinstance(r["data"], dict)]


def messages(rooms: list[str], prefix: str, count: int) -> list[tuple[str, str]]:
    """`count` (room, body) pairs, the bodies `prefix-0`, `prefix-1`, …, taking the rooms in turn."""
    return [(rooms[i % len(rooms)], f"{prefix}-{i}") for i in range(count)]


def stored(d: Daemon, sent: list[tuple[str, str]], timeout: float = 60) -> None:
    """Waits until `d` stored every body of `sent` (its prefix names it in the failure)."""
    prefix = sent[0][1].rsplit("-", 1)[0] + "-"
    wait_until(lambda: len(set(bodies(d, prefix)) & {b for _, b in sent}) >= len(sent), timeout,
               message=f"the {len(sent)} {prefix}… messages stored")


def out_of_order(records: list[dict], sent: list[tuple[str, str]], rooms: list[str]) -> list[str]:
    """How the bodies of `records` differ, room by room, from the order they were `sent` in."""
    problems = []
    for room in rooms:
        problems += first_in_order([r["data"]["body"] for r in records if r["room"] == room],
                                   [b for rm, b in sent if rm == room])
    return problems


def reconnects_while_posting(d: Daemon, peer: Peer, sent: list[tuple[str, str]], times: int) -> None:
    """The peer posts `sent` while `d` is told to reconnect `times` times (its connection
    closed, the daemon running), each time back open before the next; returns once all is
    posted."""
    poster = threading.Thread(target=peer.post, args=(sent,), daemon=True)
    poster.start()
    for _ in range(times):
        time.sleep(0.3)
        assert "error" not in d.call("io.chatlink.Daemon.Reconnect")
        d.wait_state("open", timeout=20)
    poster.join(120)
    assert not poster.is_alive(), "the peer did not finish posting"
