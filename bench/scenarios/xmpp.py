"""11. XMPP (issue 34): chatlinkd (Protocol=xmpp over Prosody's mod_websocket) beside slixmpp
and a drain-only baseline, in a flood into a MUC room (11a) and in a catch-up of the room's
archive (11b), on a private Prosody 0.12 (Tests/Fixtures/prosody.py) per repetition."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from harness import BENCH, PYTHON, REPO, Chatlinkd, DurablePoller, Lines, LoadMeter, Trial, cpu_seconds, hwm_mb, median, spawn, stop
from report import Report, check, fmt, ratio_text
import source
from scenarios.broker_drain import check_records, drain_chatlinkd, drain_peer, wait_connected
from scenarios.settings import BLOBS, MESSAGE_SIZE, REPS, SCALE
from scenarios.steps import fresh, interleaved, settle_disk

sys.path.insert(0, str(REPO / "Tests" / "Fixtures"))
from prosody import SQL_ARCHIVE, Prosody  # noqa: E402

XMPP_N = 100_000 // SCALE
SUBJECTS = ["chatlinkd", "slixmpp", "drain"]
LABELS = {
    "chatlinkd": "chatlinkd (Protocol=xmpp: RFC 7395 WebSocket, stream management acks after fsync, Sync=batch)",
    "slixmpp": "slixmpp (c2s over TCP, lines written, no fsync)",
    "drain": "drain-only baseline (raw XMPP over WebSocket, stream management acks, stores nothing)",
}
# The room's archive in SQLite (the fixture's SQL_ARCHIVE) on tmpfs, where SQLite's fsyncs cost
# nothing: Prosody's own durability is not what is measured.
MUC_ARCHIVE = SQL_ARCHIVE
PASSWORD = "bench-pass"


def runnable(pid: int) -> float:
    """Seconds Prosody's thread was on a CPU or waiting for one (/proc/PID/schedstat): over a
    flood, near the wall time means the server was the limit, even on a machine too busy to give
    it a whole core."""
    run, wait = Path(f"/proc/{pid}/schedstat").read_text().split()[:2]
    return (int(run) + int(wait)) / 1e9


def start_prosody() -> Prosody:
    directory = tempfile.mkdtemp(prefix="chatlink-bench-prosody-", dir="/dev/shm")
    os.chmod(directory, 0o755)  # Prosody runs as its own user
    server = Prosody.start(directory, muc_extra=MUC_ARCHIVE)
    for user in ["publisher", *SUBJECTS]:
        server.register(user, PASSWORD)
    return server


def daemon(work: Path, server: Prosody, room: str, **xmpp) -> Chatlinkd:
    token = work / "token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(PASSWORD + "\n")
    return Chatlinkd(work, server.ws_url, Backend={"Protocol": "xmpp", "Rooms": room, "TokenFile": token},
                     XMPP={"JID": f"chatlinkd@{server.domain}", **xmpp}, Store={"Sync": "batch"})


def peer_args(subject: str, mode: str, server: Prosody, room: str, n: int, out: Path) -> list:
    if subject == "drain":
        return [PYTHON, BENCH / "peers" / "xmpp_drain.py", mode, server.http_port, subject, PASSWORD, room, n]
    return [PYTHON, BENCH / "peers" / "xmpp_client.py", mode, server.c2s_port, subject, PASSWORD, room, n, out]


def records(subject: str, work: Path, n: int) -> str:
    if subject == "drain":
        return ""
    if subject == "chatlinkd":
        store = work / "state"
        return check_records(subject, sorted(store.glob("messages.jsonl*")), store / "messages.jsonl", n)[1]
    return check_records(subject, [work / "out.jsonl"], work / "out.jsonl", n)[1]


def flood(rep: int, n: int, lines_file: Path) -> tuple[dict[str, Trial], dict[str, Trial]]:
    """One repetition: a fresh Prosody; every subject joins the room, the publisher posts N
    messages (11a); then each subject in turn takes the room's archive from a fresh start (11b)."""
    settle_disk()
    work = fresh("xmpp")
    server = start_prosody()
    room = f"flood{rep}@{server.muc}"
    timeout = max(300, n / 100)
    live: dict[str, Trial] = {}
    caught: dict[str, Trial] = {}
    procs, lines = {}, {}
    publisher = None
    try:
        meter = LoadMeter()
        d = daemon(work / "chatlinkd", server, room)
        procs["chatlinkd"] = d.start()
        client = d.client()
        wait_connected(client, d.proc, time.monotonic())
        for subject in SUBJECTS[1:]:
            (work / subject).mkdir()
            procs[subject] = spawn(peer_args(subject, "live", server, room, n, work / subject / "out.jsonl"))
            lines[subject] = Lines(procs[subject])
            lines[subject].expect(lambda l: l.startswith("joined") or None, 30, f"{subject} joined")
        publisher = spawn([PYTHON, BENCH / "peers" / "xmpp_drain.py", "publish", server.http_port, "publisher",
                           PASSWORD, room, lines_file, "chatlinkd"])
        published = Lines(publisher)
        cpu0 = {s: cpu_seconds(p.pid) for s, p in procs.items()}
        publisher_cpu0 = cpu_seconds(publisher.pid)
        server_cpu0, runnable0 = cpu_seconds(server.pid), runnable(server.pid)
        poller = DurablePoller(client, interval=0.002, target=n)
        start = published.expect(lambda l: float(l.split()[1]) if l.startswith("start ") else None, 60, "start")
        poller.start()
        done = {s: lines[s].done(timeout) for s in SUBJECTS[1:]}
        if not poller.reached.wait(timeout) or poller.error:
            raise RuntimeError(f"chatlinkd did not make {n} records durable: {poller.error or client.status()}")
        done["chatlinkd"] = poller.samples[-1][0]
        poller.stop()
        status = client.status()
        client.close()
        last = max(done.values())
        server_cpu = cpu_seconds(server.pid) - server_cpu0
        server_busy = (runnable(server.pid) - runnable0) / (last - start)
        cpu = {s: cpu_seconds(p.pid) - cpu0[s] for s, p in procs.items()}
        # Ours, not others': the server, the subjects and the publisher, all still running.
        load = meter.stop(extra=server_cpu + sum(cpu.values()) + cpu_seconds(publisher.pid) - publisher_cpu0)
        for subject, proc in procs.items():
            seconds = done[subject] - start
            live[subject] = Trial(subject, {
                "seconds": seconds, "rate": n / seconds, "cpu": cpu[subject],
                "hwm": hwm_mb(proc.pid), "server_cpu": server_cpu, "server_share": server_cpu / (last - start),
                "server_busy": server_busy, "status": status, "tail": ""}, load.others_percent)
            stop(proc)
        for subject in SUBJECTS:
            live[subject].values["tail"] = records(subject, work / subject if subject != "chatlinkd"
                                                   else work / "chatlinkd", n)
        # 11b: each subject anew, from an empty store, takes the archive of those N messages.
        for subject in SUBJECTS[rep % 3:] + SUBJECTS[:rep % 3]:
            caught[subject] = catch_up(subject, work / f"catch-up-{subject}", server, room, n, timeout)
    finally:
        for proc in [*procs.values(), publisher]:
            if proc:
                stop(proc)
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return live, caught


def catch_up(subject: str, work: Path, server: Prosody, room: str, n: int, timeout: float) -> Trial:
    settle_disk()
    meter = LoadMeter()
    server_cpu0, runnable0 = cpu_seconds(server.pid), runnable(server.pid)
    status = {}
    if subject == "chatlinkd":
        proc, connected, done, status = drain_chatlinkd(daemon(work, server, room, CatchUp="all"), n, timeout)
    else:
        work.mkdir(parents=True)
        proc, connected, done = drain_peer(peer_args(subject, "mam", server, room, n, work / "out.jsonl"), timeout)
    server_cpu = cpu_seconds(server.pid) - server_cpu0
    server_busy = runnable(server.pid) - runnable0
    cpu, hwm = cpu_seconds(proc.pid), hwm_mb(proc.pid)
    stop(proc)
    load = meter.stop(extra=server_cpu)
    seconds = done - connected
    return Trial(subject, {"seconds": seconds, "rate": n / seconds, "cpu": cpu, "hwm": hwm, "server_cpu": server_cpu,
                           "server_share": server_cpu / seconds, "server_busy": server_busy / seconds, "status": status,
                           "tail": records(subject, work, n)}, load.others_percent)


def table(report: Report, title: str, results: dict[str, list[Trial]]) -> None:
    def med(subject, key):
        return median(t.values[key] for t in results[subject])

    rows = []
    for subject, trials in results.items():
        rates = [t.values["rate"] for t in trials]
        rows.append([
            LABELS[subject], fmt(med(subject, "seconds"), 2), f"{med(subject, 'rate'):,.0f}",
            f"{min(rates):,.0f}–{max(rates):,.0f}", fmt(med(subject, "cpu"), 2), fmt(med(subject, "hwm"), 1),
            fmt(med(subject, "server_cpu"), 2), f"{100 * med(subject, 'server_share'):.0f}%",
            f"{100 * med(subject, 'server_busy'):.0f}%",
            ratio_text(med(subject, "rate"), med("slixmpp", "rate")), ratio_text(med(subject, "rate"), med("drain", "rate")),
            fmt(median(t.others_percent for t in trials), 0) + "%",
        ])
    report.table(title, ["client", "time s", "msgs/s", "range", "CPU s", "peak RSS MB", "Prosody CPU s",
                         "Prosody CPU ÷ time", "Prosody runnable ÷ time", "× slixmpp", "× drain", "others' CPU"], rows)


def run(report: Report) -> None:
    n = XMPP_N
    lines_file = source.build_broker_lines(n, MESSAGE_SIZE, BLOBS)
    meter = LoadMeter()
    live: dict[str, list[Trial]] = {s: [] for s in SUBJECTS}
    caught: dict[str, list[Trial]] = {s: [] for s in SUBJECTS}
    for rep in range(REPS):
        flooded, archived = flood(rep, n, lines_file)
        for subject in SUBJECTS:
            live[subject].append(flooded[subject])
            caught[subject].append(archived[subject])
            a, b = flooded[subject].values, archived[subject].values
            report.progress(f"xmpp N={n} rep {rep + 1} {subject}: live {a['rate']:,.0f} msg/s ({a['cpu']:.2f} CPU s), "
                            f"catch-up {b['rate']:,.0f} msg/s ({b['cpu']:.2f} CPU s, Prosody {b['server_cpu']:.1f} s)")
    load = meter.stop()
    table(report, f"11a. XMPP flood into a MUC room: N = {n:,} groupchat messages of ~{MESSAGE_SIZE} B posted "
          f"by one publisher while all three subjects are in the room, time from the publisher's first "
          f"message until every message is a line (chatlinkd: durable, fsynced, acknowledged after the fsync; "
          f"slixmpp: written, no fsync)", live)
    rate = {s: median(t.values["rate"] for t in live[s]) for s in SUBJECTS}
    share = median(t.values["server_share"] for t in live["chatlinkd"])
    busy = median(t.values["server_busy"] for t in live["chatlinkd"])
    bound = busy >= 0.9
    report.targets([check(
        f"XMPP flood msgs/s: chatlinkd {rate['chatlinkd']:,.0f} = {rate['chatlinkd'] / rate['slixmpp']:.2f}× slixmpp "
        f"(target ≥ 5×) and {rate['chatlinkd'] / rate['drain']:.2f}× the drain-only client (target ≥ 0.9× where "
        f"Prosody is the limit: over the flood Prosody was on a CPU {100 * share:.0f}% of the time and "
        f"on a CPU or waiting for one {100 * busy:.0f}%, so it {'is' if bound else 'is not'} the limit)",
        rate["chatlinkd"] >= 5 * rate["slixmpp"] or (bound and rate["chatlinkd"] >= 0.9 * rate["drain"]))])
    st = live["chatlinkd"][0].values["status"]
    report.note(
        "A fresh Prosody 0.12 per repetition (Tests/Fixtures/prosody.py, data on /dev/shm), its MUC "
        "archive in SQLite (`storage = { muc_log = \"sql\" }`, `storage_archive_item_limit` raised, "
        "`muc_log_include_total = false`). chatlinkd, slixmpp and the drain-only client "
        "(`peers/xmpp_drain.py`, raw RFC 7395 frames on a socket, SASL PLAIN, stream management "
        "acknowledged at once) join the room with no history; then the publisher (`peers/xmpp_drain.py "
        "publish`, another account over WebSocket, every frame built before) posts the N messages as fast "
        "as Prosody reads them. All three are in the room together, so each sees the same flood, as the "
        "issue asks (\"slixmpp in the same room\"): Prosody sends every message to four occupants in turn, "
        "and a subject that falls behind is buffered for. Each time runs from the publisher's first send "
        "to the subject's N-th message (chatlinkd: the first GetStatus reply, polled every 2 ms, with "
        "durable_seq = N). 'Prosody CPU' is the server's CPU (utime+stime from /proc/PID/stat) over the "
        "flood, ÷ time its share of one core (Prosody is single-threaded); 'runnable' adds the time it "
        "waited for a CPU (/proc/PID/schedstat): near 100% means the server, not the clients, set the "
        "pace, whether on a core of its own or on a machine too busy to give it one. slixmpp writes each message as a JSON line like "
        "chatlinkd's record. chatlinkd's status after the flood: "
        f"protocol {st.get('protocol')}, session {st.get('session')}, received {st.get('received')}, "
        f"connects {st.get('connects')}.")
    report.note(f"chatlinkd's last record: `{live['chatlinkd'][0].values['tail'][:300]}`")
    table(report, f"11b. XMPP catch-up from a room's archive (XEP-0313): the same N = {n:,} messages, taken "
          f"by each subject in turn from a fresh start, time from its connection until message N is a line",
          caught)
    rate = {s: median(t.values["rate"] for t in caught[s]) for s in SUBJECTS}
    report.targets([check(
        f"XMPP catch-up of {n:,}: chatlinkd {rate['chatlinkd']:,.0f} msgs/s = "
        f"{rate['chatlinkd'] / rate['drain']:.2f}× the drain-only client paging the same archive "
        f"(reported; within 10 % taken as the mark)", rate["chatlinkd"] >= 0.9 * rate["drain"])])
    report.note(
        "chatlinkd with `[XMPP] CatchUp=all` and an empty store (the room never stored): once its join is "
        "confirmed it asks the archive for 50 results after the last page's id, one query at a time, and "
        "stores them in order, acknowledging nothing until each is durable. The drain does the same "
        "queries (50 per page, the next as soon as one is answered) with stream management on, as "
        "chatlinkd's, and stores nothing; it sets TCP_QUICKACK after every read, since Prosody keeps "
        "Nagle's algorithm on its sockets and the short <iq/> ending a page otherwise waits for the "
        "client's delayed ACK (in a trial run that tripled the drain's time); slixmpp pages with "
        "xep_0313's iterate, 50 at a time. Time from the WebSocket (TCP for slixmpp) being open to the "
        f"N-th message, sign-in and join included. chatlinkd's last record: "
        f"`{caught['chatlinkd'][0].values['tail'][:300]}`")
    report.load(load)
