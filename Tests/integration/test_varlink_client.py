"""Issue 4: an independent Varlink client (the Python `varlink` package) against a running
chatlinkd: introspection, GetStatus, Send, History and a streaming Subscribe."""

from __future__ import annotations

import json

import pytest
import varlink

from conftest import Subscription, read_store, wait_delivered, wait_until

pytestmark = pytest.mark.timeout(60)

METHODS = {"GetStatus", "Send", "SendBatch", "Join", "Leave", "ListRooms", "History", "Subscribe", "Reconnect", "Ping", "GetMetrics"}


def test_getinfo_names_the_product_and_both_interfaces(daemon):
    with daemon.ctl("org.varlink.service") as svc:
        info = svc.GetInfo()
    assert info["product"] == "chatlinkd"
    assert info["vendor"] and info["version"] and info["url"]
    assert {"org.varlink.service", "io.chatlink.Daemon"} <= set(info["interfaces"])


def test_interface_descriptions_parse_as_varlink_idl(daemon):
    with daemon.ctl("org.varlink.service") as svc:
        service = varlink.Interface(svc.GetInterfaceDescription(interface="org.varlink.service")["description"])
        chatlink = varlink.Interface(svc.GetInterfaceDescription(interface="io.chatlink.Daemon")["description"])
        with pytest.raises(varlink.VarlinkError) as err:
            svc.GetInterfaceDescription(interface="io.example.Nope")
    assert err.value.error() == "org.varlink.service.InterfaceNotFound"
    assert service.name == "org.varlink.service"
    assert {"GetInfo", "GetInterfaceDescription"} <= set(service.members)
    assert chatlink.name == "io.chatlink.Daemon"
    assert METHODS <= set(chatlink.members), set(chatlink.members)
    assert {"NotConnected", "OutboxFull", "InvalidParameter", "Status", "Event"} <= set(chatlink.members)


def test_getstatus_reports_the_open_connection(daemon, backend):
    daemon.wait_state("open")
    with daemon.ctl() as c:
        status = c.GetStatus()["status"]
    assert status["state"] == "open"
    assert status["url"] == backend.url
    assert status["rooms"] == ["7", "ops"]
    assert status["connects"] >= 1 and status["outbox"] == 0
    for key in ("received", "sent", "confirmed", "connects", "outbox", "last_seq", "durable_seq"):
        assert isinstance(status[key], int), key
    assert status["store_path"] == str(daemon.store_dir / "messages.jsonl")
    assert status["text"] and status["version"]
    assert daemon.token not in json.dumps(status)


def test_send_is_queued_delivered_and_listed_by_history(daemon, backend):
    daemon.wait_state("open")
    with daemon.ctl() as c:
        receipt = c.Send(room="7", text="hello from python varlink")
    assert receipt["state"] == "queued"
    assert isinstance(receipt["id"], str) and receipt["id"]
    assert isinstance(receipt["count"], int) and receipt["count"] >= 1
    wait_until(lambda: receipt["id"] in backend.delivered_ids(), 5, message="delivery at the backend")
    sent = [d for d in backend.sends() if d.get("client_id") == receipt["id"]][0]
    assert sent["room_id"] == 7 and sent["message"] == "hello from python varlink" and sent["sender"] == "it-bot"

    assert backend.push(7, "pushed into 7") == 1
    assert backend.push("ops", "pushed into ops") == 1

    def stored():
        records, _ = read_store(daemon.store_dir)
        texts = [r["data"]["data"].get("message") for r in records if r["type"] == "json"]
        outs = [r for r in records if r["dir"] == "out" and r.get("id") == receipt["id"]]
        return records if outs and "pushed into 7" in texts and "pushed into ops" in texts else None

    records = wait_until(stored, 5, message="the sent and pushed messages in the store")
    by_seq = {r["seq"]: r for r in records}

    with daemon.ctl() as c:
        everything = c.History(limit=100)["records"]
        room7 = c.History(room="7", limit=100)["records"]
        newest = c.History(limit=1)["records"]
        since = c.History(since_seq=records[0]["seq"], limit=100)["records"]
    # Every record History returns is the stored line, newest last.
    assert [r["seq"] for r in everything] == sorted(by_seq)
    assert all(r == by_seq[r["seq"]] for r in everything)
    assert newest == [everything[-1]]
    assert [r["seq"] for r in since] == [r["seq"] for r in everything[1:]]
    assert room7 and all(r["room"] == 7 for r in room7)
    assert any(r["dir"] == "out" and r.get("id") == receipt["id"] for r in room7)
    assert any(r["dir"] == "in" and r["data"]["data"]["message"] == "pushed into 7" for r in room7)
    assert not any(r["room"] == "ops" for r in room7)


def test_subscribe_stream_starts_with_a_status_event(daemon):
    daemon.wait_state("open")
    with Subscription(daemon) as sub:
        first = sub.wait_for(lambda e: True, 5, "the first Subscribe reply")
    assert first["event"] == "status"
    assert first["text"] and first["time"].endswith("Z")


def test_subscribe_streams_message_events_carrying_the_stored_record(daemon, backend):
    daemon.wait_state("open")
    with Subscription(daemon) as sub:
        sub.wait_for(lambda e: e["event"] == "status", 5)
        backend.push(7, "watch this")
        event = sub.wait_for(
            lambda e: e["event"] == "message" and e.get("record", {}).get("data", {}).get("data", {}).get("message")
            == "watch this",
            5,
            "a message event for the pushed message",
        )
    # The event goes out as the record is appended; the disk thread writes it a moment later.
    seq = event["record"]["seq"]
    wait_until(lambda: daemon.status()["durable_seq"] >= seq, 5, message=f"seq {seq} durable")
    records, _ = read_store(daemon.store_dir)
    stored = [r for r in records if r["seq"] == seq]
    assert stored == [event["record"]]
    assert event["record"]["dir"] == "in" and event["record"]["room"] == 7


def test_subscribe_streams_sent_and_confirmed_events_with_the_id(daemon, backend):
    daemon.wait_state("open")
    with Subscription(daemon, room="7") as sub:
        sub.wait_for(lambda e: e["event"] == "status", 5)
        receipt = daemon.send("tracked message", room=7)
        sent = sub.wait_for(lambda e: e["event"] == "sent" and e.get("id") == receipt["id"], 5, "a sent event")
        confirmed = sub.wait_for(
            lambda e: e["event"] == "confirmed" and e.get("id") == receipt["id"], 5, "a confirmed event"
        )
    assert sent["room"] == "7" and confirmed["room"] == "7"


def test_subscribe_streams_disconnected_and_connected_events(daemon, backend):
    daemon.wait_state("open")
    with Subscription(daemon) as sub:
        sub.wait_for(lambda e: e["event"] == "status", 5)
        backend.close_all(1012, "restarting")
        sub.wait_for(lambda e: e["event"] == "disconnected" and e.get("code") == 1012, 5, "a disconnected event")
        sub.wait_for(lambda e: e["event"] == "connected", 5, "a connected event")


def test_sendbatch_queues_every_text_in_order_with_consecutive_counts(daemon, backend):
    daemon.wait_state("open")
    texts = [f"batch {i} \"quoted\" ü" for i in range(300)]
    with daemon.ctl() as c:
        single = c.Send(room="ops", text="before the batch")
        reply = c.SendBatch(room="ops", texts=texts)
        default_room = c.SendBatch(texts=["to the default room"])
    assert reply["state"] == "queued"
    assert len(reply["ids"]) == 300 and len(set(reply["ids"])) == 300
    assert reply["count"] == single["count"] + 1
    assert default_room["count"] == reply["count"] + 300
    acked = [{"id": i, "room": "ops", "text": t} for i, t in zip(reply["ids"], texts)]
    wait_delivered(backend, acked)
    counts = {d["client_id"]: d["count"] for d in backend.sends()}
    assert [counts[i] for i in reply["ids"]] == list(range(reply["count"], reply["count"] + 300))
    wait_until(lambda: default_room["ids"][0] in backend.delivered_ids(), 5, message="default room")
    sent = [d for d in backend.sends() if d.get("client_id") == default_room["ids"][0]][0]
    assert sent["room_id"] == 7  # Rooms=7 ops: the first is the default
    wait_until(lambda: daemon.status()["outbox"] == 0, 10, message="every message confirmed")


def test_a_sendbatch_that_does_not_fit_the_outbox_is_refused_whole(make_daemon, backend):
    backend.refuse(503)
    daemon = make_daemon({"Outbox": {"MaxMessages": 5}})
    with daemon.ctl() as c:
        kept = c.SendBatch(room="7", texts=["a", "b", "c"])
        with pytest.raises(varlink.VarlinkError) as err:
            c.SendBatch(room="7", texts=["d", "e", "f"])
        assert err.value.error() == "io.chatlink.Daemon.OutboxFull"
        assert err.value.parameters()["limit"] == 5
        assert c.GetStatus()["status"]["outbox"] == 3
        fits = c.SendBatch(room="7", texts=["d", "e"])
    backend.accept()
    acked = [{"id": i, "room": "7", "text": t} for i, t in zip(kept["ids"] + fits["ids"], "abcde")]
    wait_delivered(backend, acked)
    assert "f" not in [d.get("message") for d in backend.sends()]


def test_send_with_more_replies_queued_sent_confirmed(daemon, backend):
    daemon.wait_state("open")
    states = []
    with daemon.ctl(timeout=5) as c:
        for reply in c.Send(room="7", text="follow me", _more=True):
            states.append((reply["state"], reply["id"]))
    assert [s for s, _ in states] == ["queued", "sent", "confirmed"]
    assert len({i for _, i in states}) == 1
