"""8. STOMP drain: chatlinkd (Protocol=stomp over RabbitMQ's web-stomp) beside stomp.py and a
drain-only baseline."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from harness import BENCH, NCPU, PYTHON, Chatlinkd, LoadMeter, Trial, cpu_seconds, hwm_mb, median, stop
from report import Report
import brokers
import source
from scenarios.broker_drain import (
    BROKER_N, broker_table, broker_target, chatlinkd_knows, check_records, drain_chatlinkd, drain_peer,
    rabbitmq_version, run_checked,
)
from scenarios.settings import BLOBS, MESSAGE_SIZE, REPS, RUN
from scenarios.steps import fresh, interleaved, settle_disk

STOMP_LABELS = {
    "chatlinkd": "chatlinkd (Protocol=stomp: STOMP 1.2 over web-stomp, Compression=no, Sync=batch, ACK after fsync)",
    "stomp.py": "stomp.py subscriber (STOMP 1.2 over TCP, ACK on receipt)",
    "drain": "drain-only baseline (raw STOMP 1.2 over web-stomp: ACKs, stores nothing)",
}


def stomp_trial(subject: str, rep: int, n: int, lines_file: Path, broker: "brokers.RabbitMQ") -> Trial:
    settle_disk()
    work = fresh("stomp")
    meter = LoadMeter()
    broker_cpu_start = broker.cpu()  # the broker outlives the trial: its CPU is ours, not others'
    destination = f"/queue/bench-{subject.replace('.', '')}-{rep}"
    timeout = max(120, n / 1_000)
    # 1. The broker holds N persistent messages in a durable queue nobody reads yet (not timed):
    # the queue is the subscription that outlives the subscriber, as a persistent MQTT session is.
    published = run_checked([PYTHON, BENCH / "peers" / "stomp_publish.py", "127.0.0.1", broker.stomp_port,
                             destination, lines_file], "stomp_publish.py")
    # 2. The subject subscribes with client-individual acks and takes them (timed).
    broker_cpu = broker.cpu()
    status = {}
    if subject == "chatlinkd":
        token = work / "token"
        token.write_text("guest\n")
        daemon = Chatlinkd(work / "chatlinkd", broker.ws_url,
                           Backend={"Protocol": "stomp", "Rooms": destination, "TokenFile": token,
                                    "Compression": os.environ.get("BENCH_STOMP_DEFLATE", "no")},
                           STOMP={"Username": "guest", "VirtualHost": "/"}, Store={"Sync": "batch"})
        proc, connected, done, status = drain_chatlinkd(daemon, n, timeout)
        files, newest = sorted(daemon.store.glob("messages.jsonl*")), daemon.store / "messages.jsonl"
    elif subject == "drain":
        proc, connected, done = drain_peer([PYTHON, BENCH / "peers" / "stomp_drain.py", "127.0.0.1",
                                            broker.web_stomp_port, "/ws", destination, n], timeout)
        files, newest = [], None
    else:
        out = work / "out.jsonl"
        proc, connected, done = drain_peer(
            [PYTHON, BENCH / "peers" / "stomp_client.py", "127.0.0.1", broker.stomp_port, destination, n, out],
            timeout)
        files, newest = [out], out
    seconds = done - connected
    cpu, hwm = cpu_seconds(proc.pid), hwm_mb(proc.pid)
    broker_cpu = broker.cpu() - broker_cpu
    stop(proc)
    load = meter.stop(extra=broker.cpu() - broker_cpu_start)
    tail = check_records(subject, files, newest, n)[1] if files else ""
    shutil.rmtree(work, ignore_errors=True)
    values = {"seconds": seconds, "rate": n / seconds, "cpu": cpu, "hwm": hwm, "broker_cpu": broker_cpu,
              "broker_hwm": broker.hwm(), "publish_seconds": float(published.split()[2]),
              "status": status, "tail": tail}
    return Trial(subject, values, load.others_percent)


def run(report: Report) -> None:
    n = BROKER_N
    lines_file = source.build_broker_lines(n, MESSAGE_SIZE, BLOBS)
    subjects = (["chatlinkd"] if chatlinkd_knows("stomp") else []) + ["stomp.py", "drain"]
    shutil.rmtree(RUN / "check-config", ignore_errors=True)
    meter = LoadMeter()
    t0 = time.monotonic()
    unreaped = brokers.unreaped_cpu
    broker = brokers.RabbitMQ(fresh("rabbitmq")).start()
    report.progress(f"stomp: RabbitMQ ready in {time.monotonic() - t0:.0f} s")
    results: dict[str, list[Trial]] = {s: [] for s in subjects}
    try:
        for rep, subject in interleaved(subjects, REPS):
            trial = stomp_trial(subject, rep, n, lines_file, broker)
            results[subject].append(trial)
            v = trial.values
            report.progress(f"stomp N={n} rep {rep + 1} {subject}: {v['rate']:,.0f} msg/s, {v['cpu']:.2f} CPU s, "
                            f"{v['hwm']:.1f} MB, broker {v['broker_cpu']:.2f} CPU s, others {trial.others_percent:.0f}%")
        broker_hwm = broker.hwm()
    finally:
        broker.stop()
        shutil.rmtree(broker.work, ignore_errors=True)
    load = meter.stop(extra=brokers.unreaped_cpu - unreaped)
    broker_table(report, f"8. STOMP drain: N = {n:,} persistent messages of ~{MESSAGE_SIZE} B that RabbitMQ held "
                 f"in a durable queue while nobody read it, time from the subject's connect until every message "
                 f"is a line (chatlinkd: durable, fsynced, ACKed after the fsync; peer: written, no fsync)",
                 STOMP_LABELS, results, "stomp.py")
    if "chatlinkd" in results:
        report.targets([broker_target(results, "stomp.py", "STOMP")])
    else:
        report.note("**chatlinkd not measured: this build has no Protocol=stomp** (`chatlinkd --check-config` "
                    "refuses it); the peer's figure stands alone and the 5× target is not checked. Once "
                    "Protocol=stomp is in, this scenario measures chatlinkd beside it with no change.")
    peer_rate = median(t.values["rate"] for t in results["stomp.py"])
    ceiling = median(t.values["rate"] for t in results["drain"])
    report.note(
        f"What the broker allows: the 5× target asks for {5 * peer_rate:,.0f} msgs/s, while RabbitMQ gave the "
        f"drain-only baseline, which does nothing but ACK each message, {ceiling:,.0f} msgs/s "
        f"({ceiling / peer_rate:.1f}× stomp.py) through web-stomp, using "
        f"{median(t.values['broker_cpu'] for t in results['drain']):.1f} CPU s of the {NCPU} CPUs for it: "
        f"on this machine the broker, not the client, bounds a STOMP drain.")
    publish = median(t.values["publish_seconds"] for ts in results.values() for t in ts)
    report.note(
        f"One private RabbitMQ {rabbitmq_version()} for the scenario (web-stomp for chatlinkd, the plain "
        f"STOMP listener for stomp.py; guest/guest, virtual host /), a fresh durable queue per trial: "
        f"`peers/stomp_publish.py` sends the N messages to `/queue/bench-…` (persistent, pre-encoded "
        f"SEND frames, a receipt every 1,000; median {publish:.1f} s, not timed), then the subject "
        f"subscribes to it with `ack:client-individual` and no prefetch-count (the broker's default) and "
        f"takes them. chatlinkd's time starts at the last GetStatus reply before its state was open and "
        f"ends at the first with durable_seq = N; stomp.py's runs from its CONNECTED frame to its own clock "
        f"after line N, each message written as a store-format line (line-buffered) and then ACKed. "
        f"chatlinkd runs with Compression=no, as the peers do not compress either: with permessage-deflate "
        f"(chatlinkd's default; BENCH_STOMP_DEFLATE=yes measures it) RabbitMQ deflates every MESSAGE frame, "
        f"which costs the broker CPU that a broker-bound drain has none of to spare. "
        f"'broker CPU' is the Erlang VM's during the drain; its peak RSS over the scenario was "
        f"{broker_hwm:.0f} MB.")
    if "chatlinkd" in results:
        st = results["chatlinkd"][0].values["status"]
        report.note(f"chatlinkd's status after the drain: protocol {st.get('protocol')}, session {st.get('session')}, "
                    f"subprotocol {st.get('subprotocol')}, received {st.get('received')}, connects {st.get('connects')}. "
                    f"Its last record: `{results['chatlinkd'][0].values['tail'][:300]}`")
    report.load(load)
