"""7. MQTT drain: chatlinkd (Protocol=mqtt) beside paho-mqtt and a drain-only baseline, through
Mosquitto (7a) and RabbitMQ's web-mqtt (7b)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from harness import BENCH, PYTHON, Chatlinkd, LoadMeter, Trial, cpu_seconds, hwm_mb, median, stop
from report import Report
import brokers
import source
from scenarios.broker_drain import (
    BROKER_N, broker_table, broker_target, check_records, drain_chatlinkd, drain_peer, mosquitto_version,
    rabbitmq_version, run_checked, wait_connected,
)
from scenarios.settings import BLOBS, MESSAGE_SIZE, REPS, SCALE
from scenarios.steps import fresh, interleaved, settle_disk

BROKER_STRICT_N = 2_000 // SCALE * 2  # 7b: RabbitMQ's window holds chatlinkd near 200 msg/s
MQTT_INFLIGHT = int(os.environ.get("BENCH_MQTT_INFLIGHT", "20"))


MQTT_SUBJECTS = ["chatlinkd", "paho-mqtt", "drain"]
MQTT_LABELS = {
    "chatlinkd": "chatlinkd (Protocol=mqtt: MQTT 5 over WebSocket, Sync=batch, PUBACK after fsync)",
    "paho-mqtt": "paho-mqtt subscriber (MQTT 5 over TCP, PUBACK on receipt)",
    "drain": "drain-only baseline (raw MQTT 5 over WebSocket: PUBACKs, stores nothing)",
}
MQTT_TOPIC, MQTT_FILTER = "bench/1", "bench/#"


def mqtt_trial(subject: str, rep: int, n: int, lines_file: Path, rabbit: "brokers.RabbitMQ | None" = None) -> Trial:
    """One drain through Mosquitto (a fresh one per trial) or, given `rabbit`, through that
    RabbitMQ's MQTT plugins (3.1.1 only; each trial with its own client ids, so its own queue)."""
    settle_disk()
    work = fresh("mqtt")
    meter = LoadMeter()
    if rabbit:
        broker, ws_url, ws_port, tcp_port = rabbit, rabbit.mqtt_ws_url, rabbit.web_mqtt_port, rabbit.mqtt_port
        token = work / "token"
        token.write_text("guest\n")
        daemon_keys = {"Backend": {"TokenFile": token}, "MQTT": {"Version": "3.1.1", "Username": "guest"}}
        peer_options = ["--v311", "--login", "guest:guest"]
    else:
        broker = brokers.Mosquitto(work / "mosquitto", max_inflight=MQTT_INFLIGHT).start()
        ws_url, ws_port, tcp_port = broker.ws_url, broker.ws_port, broker.tcp_port
        daemon_keys, peer_options = {"Backend": {}, "MQTT": {"SessionExpirySec": 3600}}, []
    broker_cpu_start = broker.cpu()  # a shared broker outlives the trial: its CPU is ours, not others'
    peer = [PYTHON, BENCH / "peers" / "mqtt_client.py", *peer_options]
    client_id = {"chatlinkd": "chatlink", "paho-mqtt": "paho", "drain": "drain"}[subject] + f"-bench-{rep}"
    timeout = max(120, n / 100)
    # 1. The subject's persistent session with its QoS 1 subscription; then it goes away.
    if subject == "chatlinkd":
        daemon = Chatlinkd(work / "chatlinkd", ws_url,
                           Backend={"Protocol": "mqtt", "Rooms": MQTT_FILTER, **daemon_keys["Backend"]},
                           MQTT={"ClientID": client_id, "QoS": 1, **daemon_keys["MQTT"]},
                           Store={"Sync": "batch"})
        daemon.start()
        client = daemon.client()
        wait_connected(client, daemon.proc, time.monotonic())
        time.sleep(0.5)  # the SUBACK: one round trip on loopback
        client.close()
        daemon.stop()
        daemon.remove_store()
    elif subject == "drain":
        run_checked([PYTHON, BENCH / "peers" / "mqtt_drain.py", "session", "127.0.0.1", ws_port, "/",
                     client_id, MQTT_FILTER], "mqtt_drain.py session", 60)
    else:
        run_checked([*peer, "session", "127.0.0.1", tcp_port, client_id, MQTT_FILTER], "mqtt_client.py session", 60)
    # 2. The broker queues N messages for that session (not timed).
    published = run_checked([PYTHON, BENCH / "peers" / "mqtt_publish.py", "127.0.0.1", tcp_port,
                             MQTT_TOPIC, lines_file], "mqtt_publish.py")
    # 3. The subject comes back and takes them (timed).
    broker_cpu = broker.cpu()
    status = {}
    if subject == "chatlinkd":
        proc, connected, done, status = drain_chatlinkd(daemon, n, timeout)
        files, newest = sorted(daemon.store.glob("messages.jsonl*")), daemon.store / "messages.jsonl"
    elif subject == "drain":
        proc, connected, done = drain_peer([PYTHON, BENCH / "peers" / "mqtt_drain.py", "drain", "127.0.0.1",
                                            ws_port, "/", client_id, MQTT_FILTER, n], timeout)
        files, newest = [], None
    else:
        out = work / "out.jsonl"
        proc, connected, done = drain_peer([*peer, "drain", "127.0.0.1", tcp_port, client_id, MQTT_FILTER, n, out],
                                           timeout)
        files, newest = [out], out
    seconds = done - connected
    cpu, hwm = cpu_seconds(proc.pid), hwm_mb(proc.pid)
    broker_cpu, broker_hwm = broker.cpu() - broker_cpu, broker.hwm()
    stop(proc)
    extra = broker.cpu() - broker_cpu_start if rabbit else 0.0
    if not rabbit:
        broker.stop()
    load = meter.stop(extra=extra)
    tail = check_records(subject, files, newest, n)[1] if files else ""
    shutil.rmtree(work, ignore_errors=True)
    values = {"seconds": seconds, "rate": n / seconds, "cpu": cpu, "hwm": hwm, "broker_cpu": broker_cpu,
              "broker_hwm": broker_hwm, "publish_seconds": float(published.split()[2]),
              "status": status, "tail": tail}
    return Trial(subject, values, load.others_percent)


def run(report: Report) -> None:
    # 7a: Mosquitto, a fresh broker per trial.
    n = BROKER_N
    lines_file = source.build_broker_lines(n, MESSAGE_SIZE, BLOBS)
    meter = LoadMeter()
    results: dict[str, list[Trial]] = {s: [] for s in MQTT_SUBJECTS}
    for rep, subject in interleaved(MQTT_SUBJECTS, REPS):
        trial = mqtt_trial(subject, rep, n, lines_file)
        results[subject].append(trial)
        v = trial.values
        report.progress(f"mqtt N={n} rep {rep + 1} {subject}: {v['rate']:,.0f} msg/s, {v['cpu']:.2f} CPU s, "
                        f"{v['hwm']:.1f} MB, broker {v['broker_cpu']:.2f} CPU s, others {trial.others_percent:.0f}%")
    load = meter.stop()
    broker_table(report, f"7a. MQTT drain through Mosquitto: N = {n:,} QoS 1 messages of ~{MESSAGE_SIZE} B that "
                 f"the broker queued for the subject's persistent session while it was away, time from its "
                 f"connect until every message is a line (chatlinkd: durable, fsynced, acknowledged after the "
                 f"fsync; peer: written, no fsync)", MQTT_LABELS, results, "paho-mqtt")
    report.targets([broker_target(results, "paho-mqtt", "MQTT (Mosquitto)")])
    first = results["chatlinkd"][0].values
    st = first["status"]
    publish = median(t.values["publish_seconds"] for ts in results.values() for t in ts)
    window = ("Mosquitto's default" if MQTT_INFLIGHT == 20 else "set by BENCH_MQTT_INFLIGHT") \
        if MQTT_INFLIGHT else "no limit, set by BENCH_MQTT_INFLIGHT"
    report.note(
        f"Each trial has its own Mosquitto {mosquitto_version()}: `max_inflight_messages {MQTT_INFLIGHT}` "
        f"({window}), `max_queued_messages 0` (the default of 1,000 would drop the rest of a session's "
        f"backlog), `persistence false` (Mosquitto writes its database only at autosave and exit, never "
        f"per message, so it would not change a drain); a websockets listener for chatlinkd and the "
        f"baseline, plain TCP for paho and the publisher. max_inflight_messages is meant as the window of "
        f"QoS 1 messages sent to a client before their PUBACKs, but in 2.0.11 it binds only the first "
        f"round after a connect: each PUBACK lets the broker send up to that many more (acking the first "
        f"20 of a resumed session's backlog brought 400 more, unacknowledged), so the window multiplies "
        f"with every round. chatlinkd acknowledges a round at each group commit (every SyncIntervalMSec, "
        f"50 ms), so it takes a few commits before the window covers the backlog, and no limit at all "
        f"(BENCH_MQTT_INFLIGHT=0) makes its drain faster; paho, acknowledging each message as it comes, "
        f"is bound by its own speed either way. First each subject "
        f"connects once (clean start off, a session expiry of an hour), subscribes to `{MQTT_FILTER}` at "
        f"QoS 1 and leaves; then `peers/mqtt_publish.py` publishes the N messages to `{MQTT_TOPIC}` at "
        f"QoS 1 (pre-encoded PUBLISH packets; median {publish:.1f} s, not timed), each acknowledged once "
        f"queued for the session; then the subject connects again, resumes the session, subscribes again "
        f"(as all three do after every connect) and takes them. chatlinkd's time starts at the last "
        f"GetStatus reply (polled every ms from its spawn) before its state was open and ends at the "
        f"first reply (polled every 2 ms) with durable_seq = N; paho's runs from its on_connect (the "
        f"CONNACK) to its own clock after line N, the baseline's likewise. The peer writes each message "
        f"as chatlinkd's store does, `{{\"seq\",\"time\",\"dir\":\"in\",\"room\":topic,\"type\":\"json\","
        f"\"data\":payload,\"meta\":{{\"qos\":1}}}}`, line-buffered; the baseline stores nothing. 'broker "
        f"CPU' is Mosquitto's during the drain. chatlinkd's status after the drain: protocol "
        f"{st.get('protocol')}, session {st.get('session')}, subprotocol {st.get('subprotocol')}, received "
        f"{st.get('received')}, connects {st.get('connects')}.")
    report.note(f"chatlinkd's last record: `{first['tail'][:300]}`")
    report.load(load)

    # 7b: RabbitMQ's MQTT plugins, whose consumer prefetch (mqtt.prefetch, default 10) is a window
    # the broker keeps: a client that acknowledges only after its group commit waits for it.
    n = BROKER_STRICT_N
    lines_file = source.build_broker_lines(n, MESSAGE_SIZE, BLOBS)
    subjects = ["chatlinkd", "paho-mqtt"]
    meter = LoadMeter()
    t0 = time.monotonic()
    unreaped = brokers.unreaped_cpu
    rabbit = brokers.RabbitMQ(fresh("rabbitmq-mqtt"), mqtt=True).start()
    report.progress(f"mqtt: RabbitMQ ready in {time.monotonic() - t0:.0f} s")
    results = {s: [] for s in subjects}
    try:
        for rep, subject in interleaved(subjects, REPS):
            trial = mqtt_trial(subject, rep, n, lines_file, rabbit)
            results[subject].append(trial)
            v = trial.values
            report.progress(f"mqtt (RabbitMQ) N={n} rep {rep + 1} {subject}: {v['rate']:,.0f} msg/s, "
                            f"{v['cpu']:.2f} CPU s, broker {v['broker_cpu']:.2f} CPU s, others {trial.others_percent:.0f}%")
    finally:
        rabbit.stop()
        shutil.rmtree(rabbit.work, ignore_errors=True)
    load = meter.stop(extra=brokers.unreaped_cpu - unreaped)
    labels = {"chatlinkd": "chatlinkd (Protocol=mqtt, Version=3.1.1 over web-mqtt, Sync=batch, PUBACK after fsync)",
              "paho-mqtt": "paho-mqtt subscriber (MQTT 3.1.1 over TCP, PUBACK on receipt)"}
    broker_table(report, f"7b. MQTT drain through RabbitMQ {rabbitmq_version()} (web-mqtt; its default "
                 f"consumer prefetch of 10 unacknowledged messages): N = {n:,} QoS 1 messages of "
                 f"~{MESSAGE_SIZE} B queued for the subject's persistent session, as in 7a",
                 labels, results, "paho-mqtt")
    report.targets([broker_target(results, "paho-mqtt", "MQTT (RabbitMQ)")])
    report.note(
        "RabbitMQ hands a QoS 1 subscription at most `mqtt.prefetch` (default 10) unacknowledged "
        "messages and keeps to it. With Sync=batch chatlinkd acknowledges a message after the group "
        "commit that holds it, and the disk thread commits on its SyncIntervalMSec (50 ms) timer even "
        "when it is idle, so each window waits for the next tick: at most prefetch ÷ SyncIntervalMSec = "
        "10 ÷ 50 ms = 200 msg/s, whatever the disk could do. paho acknowledges as each message arrives "
        "and is bound by round trips only. One RabbitMQ for the table (plugins rabbitmq_mqtt and "
        "rabbitmq_web_mqtt, guest/guest), each trial with its own client ids, so its own queue. N is "
        "small because of that cap. chatlinkd's CPU here is mostly answering the GetStatus polls (every "
        "2 ms for 20 s; in 7a 100,000 messages cost it about 0.3 s).")
    report.load(load)
