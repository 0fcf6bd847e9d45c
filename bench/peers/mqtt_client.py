"""The MQTT peer of the ChatLink benchmark: a short idiomatic paho-mqtt subscriber.

    mqtt_client.py [--v311] [--login USER:PASSWORD] session HOST PORT CLIENT_ID FILTER
        create the persistent session and its QoS 1 subscription, then leave
    mqtt_client.py [--v311] [--login USER:PASSWORD] drain HOST PORT CLIENT_ID FILTER N OUT
        resume that session and take what the broker queued for it

MQTT 5 over TCP (3.1.1 with --v311, for RabbitMQ 3.10), clean_start False and a session expiry of
an hour (3.1.1: clean_session False), so the broker queues QoS 1 messages for the session while
the client is away; it subscribes in on_connect, as paho's
examples do (the broker keeps the session's subscription anyway). Every message is written to
OUT as one JSON line in chatlinkd's store format for an MQTT message,
{"seq","time","dir":"in","room":topic,"type":"json","data":payload,"meta":{"qos":1}}, line
buffered (each line reaches the kernel as it arrives, no fsync); paho acknowledges a QoS 1
message (PUBACK) as soon as on_message returns. It prints "connected <time.monotonic()>" at the
CONNACK, "done <time.monotonic()>" after the N-th line, and then waits for stdin to close.
"""

import argparse
import json
import sys
import threading
import time
from datetime import datetime, timezone

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

SESSION_EXPIRY = 3600


V311 = False
LOGIN: str | None = None


def client(client_id: str) -> mqtt.Client:
    if V311:
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv311,
                        clean_session=False)
    else:
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    if LOGIN:
        user, _, password = LOGIN.partition(":")
        c.username_pw_set(user, password)
    return c


def connect(c: mqtt.Client, host: str, port: int) -> None:
    if V311:
        c.connect(host, port, keepalive=60)
        return
    properties = Properties(PacketTypes.CONNECT)
    properties.SessionExpiryInterval = SESSION_EXPIRY
    c.connect(host, port, keepalive=60, clean_start=False, properties=properties)


def session(host: str, port: int, client_id: str, topic_filter: str) -> None:
    c = client(client_id)
    subscribed = threading.Event()
    c.on_connect = lambda c, _u, _f, rc, _p: c.subscribe(topic_filter, qos=1)
    c.on_subscribe = lambda *_: subscribed.set()
    connect(c, host, port)
    c.loop_start()
    if not subscribed.wait(15):
        sys.exit("no SUBACK within 15 s")
    c.disconnect()
    c.loop_stop()
    print("subscribed", flush=True)


def drain(host: str, port: int, client_id: str, topic_filter: str, n: int, out: str) -> None:
    c = client(client_id)
    seq = 0
    with open(out, "a", buffering=1, encoding="utf-8") as f:

        def on_connect(c, _userdata, _flags, reason_code, _properties):
            print(f"connected {time.monotonic():.6f} {reason_code}", flush=True)
            c.subscribe(topic_filter, qos=1)

        def on_message(_c, _userdata, message):
            nonlocal seq
            seq += 1
            record = {
                "seq": seq,
                "time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "dir": "in",
                "room": message.topic,
                "type": "json",
                "data": json.loads(message.payload),
                "meta": {"qos": message.qos},
            }
            f.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
            if seq == n:
                print(f"done {time.monotonic():.6f}", flush=True)

        c.on_connect, c.on_message = on_connect, on_message
        connect(c, host, port)
        c.loop_start()
        sys.stdin.read()
        c.disconnect()
        c.loop_stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--v311", action="store_true")
    parser.add_argument("--login")
    parser.add_argument("mode", choices=["session", "drain"])
    parser.add_argument("rest", nargs="+")
    args = parser.parse_args()
    V311, LOGIN = args.v311, args.login
    host, port, client_id, topic_filter = args.rest[0], int(args.rest[1]), args.rest[2], args.rest[3]
    if args.mode == "session":
        session(host, port, client_id, topic_filter)
    else:
        drain(host, port, client_id, topic_filter, int(args.rest[4]), args.rest[5])
