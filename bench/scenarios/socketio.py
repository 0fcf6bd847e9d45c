"""6. Socket.IO inbound flood: chatlinkd (Protocol=socketio) beside python-socketio's client."""

from __future__ import annotations

import json
import shutil

from harness import (
    BENCH, PYTHON, Chatlinkd, DurablePoller, LoadMeter, Lines, Trial, cpu_seconds, hwm_mb, median, spawn, stop,
)
from report import Report, check, fmt, ratio_text
import source
from scenarios.settings import BLOBS, MESSAGE_SIZE, REPS, SCALE
from scenarios.steps import count_lines, fresh, interleaved, last_line, settle_disk, source_proc

SOCKETIO_N = 1_000_000 // SCALE


SOCKETIO_SUBJECTS = ["chatlinkd", "python-socketio"]
SIO_PACKAGES = ("python-socketio", "python-engineio", "aiohttp")
SOCKETIO_LABELS = {
    "chatlinkd": "chatlinkd (Protocol=socketio, Sync=batch)",
    "python-socketio": "python-socketio AsyncClient peer",
}


def socketio_trial(subject: str, n: int) -> Trial:
    blob = source.build_socketio_flood(n, MESSAGE_SIZE, BLOBS)
    settle_disk()
    work = fresh("socketio")
    meter = LoadMeter()
    src, src_lines, port = source_proc("socketio", blob)
    url = f"ws://127.0.0.1:{port}/"  # both clients make it /socket.io/?EIO=4&transport=websocket
    timeout = max(120, n / 5_000)
    expected_text = f'"text":"#{n - 1:07d} '.encode()
    poller, status = None, {}
    if subject == "chatlinkd":
        daemon = Chatlinkd(work, url, Backend={"Protocol": "socketio"}, Store={"Sync": "batch"})
        proc = daemon.start()
        poller = DurablePoller(daemon.client(), interval=0.002, target=n)
        poller.start()
        connected = src_lines.json("connected", 30)
        if not poller.reached.wait(timeout) or poller.error:
            raise RuntimeError(f"chatlinkd did not make {n} records durable: {poller.error}")
        done = poller.samples[-1][0]
        files = sorted(daemon.store.glob("messages.jsonl*"))
        newest = daemon.store / "messages.jsonl"
    else:
        out = work / "out.jsonl"
        proc = spawn([PYTHON, BENCH / "peers" / "sio_client.py", url, n, out])
        connected = src_lines.json("connected", 30)
        done = Lines(proc).done(timeout)
        files, newest = [out], out
    seconds = done - connected
    cpu, hwm, src_cpu = cpu_seconds(proc.pid), hwm_mb(proc.pid), cpu_seconds(src.pid)
    if poller:
        poller.stop()
        status = poller.client.status()
        poller.client.close()
    stop(proc)
    try:  # once its client has gone, the source tells what it sent: path, auth, its events
        client = src_lines.json("client", 10)
    except (TimeoutError, RuntimeError):
        client = None
    stop(src)
    load = meter.stop()
    # the same events, each exactly once, the last one last, stored as Socket.IO events
    lines = count_lines(files)
    tail = last_line(newest)
    if lines != n or expected_text not in tail or b'"event":"message"' not in tail:
        raise RuntimeError(f"{subject}: {lines} lines of {n}, last line {tail[:160]!r}")
    shutil.rmtree(work, ignore_errors=True)
    values = {"seconds": seconds, "rate": n / seconds, "cpu": cpu, "hwm": hwm, "source_cpu": src_cpu,
              "client": client, "status": status, "tail": tail.decode("utf-8", "replace")}
    return Trial(subject, values, load.others_percent)


def run(report: Report) -> None:
    n = SOCKETIO_N
    source.build_socketio_flood(n, MESSAGE_SIZE, BLOBS)  # before timing anything
    meter = LoadMeter()
    results: dict[str, list[Trial]] = {s: [] for s in SOCKETIO_SUBJECTS}
    for rep, subject in interleaved(SOCKETIO_SUBJECTS, REPS):
        trial = socketio_trial(subject, n)
        results[subject].append(trial)
        v = trial.values
        report.progress(f"socketio N={n} rep {rep + 1} {subject}: {v['rate']:,.0f} msg/s, "
                        f"{v['cpu']:.2f} CPU s, {v['hwm']:.1f} MB, others {trial.others_percent:.0f}%")
    load = meter.stop()

    def med(subject, key):
        return median(t.values[key] for t in results[subject])

    py_rate, py_cpu = med("python-socketio", "rate"), med("python-socketio", "cpu")
    rows = []
    for subject in SOCKETIO_SUBJECTS:
        rate = med(subject, "rate")
        rates = [t.values["rate"] for t in results[subject]]
        rows.append([
            SOCKETIO_LABELS[subject], fmt(med(subject, "seconds"), 2), f"{rate:,.0f}",
            f"{min(rates):,.0f}–{max(rates):,.0f}", fmt(med(subject, "cpu"), 2), fmt(med(subject, "hwm"), 1),
            ratio_text(rate, py_rate), ratio_text(py_cpu, med(subject, "cpu")),
            fmt(median(t.others_percent for t in results[subject]), 0) + "%",
        ])
    report.table(
        f"6. Socket.IO inbound flood: N = {n:,} events of ~{MESSAGE_SIZE} B "
        f"(`42[\"message\",{{\"room_id\":1,\"n\":i,\"text\":…}}]`), time from the namespace connect's "
        f"answer until every event is a line (chatlinkd: durable, fsynced; peer: written, no fsync)",
        ["client", "time s", "msgs/s", "range", "CPU s", "peak RSS MB", "× python-socketio msgs/s",
         "python-socketio CPU ÷ CPU", "others' CPU"],
        rows,
    )
    d_rate = med("chatlinkd", "rate")
    per_rep = ", ".join(f"{a.values['rate'] / b.values['rate']:.1f}×"
                        for a, b in zip(results["chatlinkd"], results["python-socketio"]))
    report.targets([check(f"Socket.IO inbound msgs/s ≥ 10× python-socketio: {d_rate:,.0f} vs {py_rate:,.0f} = "
                          f"{d_rate / py_rate:.1f}× (repetition by repetition: {per_rep})", d_rate >= 10 * py_rate)])
    first = {s: results[s][0].values for s in SOCKETIO_SUBJECTS}
    said = "; ".join(
        f"{s}: GET {v['client'].get('path')}, namespace {v['client'].get('namespace')}, "
        f"auth {json.dumps(v['client'].get('auth'))}, events emitted {len(v['client'].get('events', []))}, "
        f"pongs {v['client'].get('pongs')}"
        for s, v in first.items() if v.get("client"))
    st = first["chatlinkd"]["status"]
    src_cpu = median(t.values["source_cpu"] for t in results["chatlinkd"])
    report.note(
        f"The source (`source.py socketio`) answers the upgrade of /socket.io/?EIO=4&transport=websocket, "
        f"sends the Engine.IO open packet (pingInterval 25 s, pingTimeout 20 s), answers the client's "
        f"namespace connect with `40{{\"sid\":…}}` and at once writes the pre-encoded events, pinging every "
        f"25 s meanwhile (python-socketio drops a server silent for 30 s); it used {src_cpu:.2f} CPU s while "
        f"feeding chatlinkd. Time starts when the namespace connect is answered (the handshakes' round trips "
        f"are not the clients' throughput); chatlinkd's ends at the first GetStatus reply (polled every 2 ms) "
        f"with durable_seq = N, the peer's at its own clock read after writing line N. The peer writes each "
        f"event as chatlinkd's store does, `{{\"seq\",\"time\",\"dir\":\"in\",\"room\",\"type\":\"json\","
        f"\"data\":{{\"event\",\"args\"}}}}`, line-buffered. What the source saw (first repetition): {said}. "
        f"chatlinkd's status after the flood: protocol {st.get('protocol')}, session {st.get('session')}, "
        f"namespace {st.get('namespace')}.")
    report.note(f"chatlinkd's last record: `{first['chatlinkd']['tail'][:300]}`")
    report.load(load)
