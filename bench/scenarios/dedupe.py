"""10. What the dedupe window costs (issue 33, "Cost"): the inbound flood with message ids, read
into the window (`[Envelope] IDField=msg_id`, "ids on") against the same flood with the ids
left in the data only (no IDField=, "ids off") and with the ids read and stored but no window
(`IDField=msg_id`, `DedupeWindow=0`: "ids, no window", so that the window's own share shows),
interleaved in the same run: msgs/s, CPU and callgrind's instructions a message (10a); memory
with every one of 10 rooms' windows full (10b); and start-up with a 5M-record store whose records
carry ids (10c, dedupe_startup.py)."""

from __future__ import annotations

import os
import shutil

import instructions
import source
from harness import (
    CACHE, CHATLINKD, Chatlinkd, DurablePoller, LoadMeter, Trial, cpu_seconds, median, status_kb, stop,
)
from report import Report, check, fmt
from scenarios import dedupe_startup
from scenarios.settings import BLOBS, MESSAGE_SIZE, REPS, SCALE, SYNC_INTERVAL_MS
from scenarios.steps import count_lines, fresh, interleaved, last_line, settle_disk, source_proc

DEDUPE_N = 2_000_000 // SCALE
DEDUPE_ROOMS = 10
DEDUPE_WINDOW = 10_000  # the daemon's default [Store] DedupeWindow=, which the trials leave alone
ID_FIELD = "msg_id"  # where source.flood_messages puts each message's id
SUBJECTS = ["ids off", "ids, no window", "ids on"]
# Each subject's `bench/instructions.py --ids=` mode.
CALLGRIND_MODES = {"ids off": "off", "ids, no window": "nowindow", "ids on": "on"}
# callgrind's flood of N and 2N a subject (instructions.py): every room's window is full before
# the second half starts, so the difference is the steady state, evictions included (BENCH_QUICK
# too: a smaller N would measure windows still growing).
CALLGRIND_N = max(100_000 // SCALE, DEDUPE_ROOMS * DEDUPE_WINDOW)
CALLGRIND = os.environ.get("BENCH_CALLGRIND", "1") != "0"
COST_LIMIT = 0.05  # ids on may cost the flood at most 5 %
MEMORY_LIMIT_KIB = 2 * 1024  # and peak RSS at most 2 MB (the suite's MB: 1,024 KiB)
MEMORY_KEYS = ("VmHWM", "VmRSS", "RssAnon")


def flood_trial(subject: str, n: int) -> Trial:
    """chatlinkd takes the id flood of n messages round DEDUPE_ROOMS rooms until every record is
    durable; then its memory is read, before it stops. Checked: n records, each with its id in
    the record with IDField= and none with ids off, and no duplicate dropped (every id is new)."""
    blob = source.build_id_flood(n, MESSAGE_SIZE, DEDUPE_ROOMS, BLOBS)
    settle_disk()
    work = fresh("dedupe")
    meter = LoadMeter()
    src, src_lines, port = source_proc("flood", blob)
    ids = subject != "ids off"
    window = {} if subject == "ids on" else {"DedupeWindow": 0} if ids else {}
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Compression": "no"},
                       Store={"Sync": "batch", "SyncIntervalMSec": SYNC_INTERVAL_MS, "MaxFiles": 16, **window},
                       **({"Envelope": {"IDField": ID_FIELD}} if ids else {}))
    proc = daemon.start()
    client = daemon.client()
    poller = DurablePoller(client, interval=0.002, target=n)
    poller.start()
    connected = src_lines.json("connected", 30)
    if not poller.reached.wait(max(120, n / 10_000)) or poller.error:
        raise RuntimeError(f"{subject}: chatlinkd did not make {n} records durable: {poller.error}")
    poller.stop()
    done = poller.samples[-1][0]
    status = client.status()
    memory = {key: status_kb(proc.pid, key) for key in MEMORY_KEYS}
    cpu = cpu_seconds(proc.pid)
    client.close()
    stop(proc)
    stop(src)
    load = meter.stop()
    files = sorted(daemon.store.glob("messages.jsonl*"))
    lines, tail = count_lines(files), last_line(daemon.store / "messages.jsonl")
    expected = f'"msg_id":"m-{n - 1:08d}"'.encode()
    if lines != n or expected not in tail or (b'"id":"m-' in tail) != ids:
        raise RuntimeError(f"{subject}: {lines} lines of {n}, last line {tail[:160]!r}")
    if status["duplicates_dropped"]:
        raise RuntimeError(f"{subject}: {status['duplicates_dropped']} duplicates dropped of a flood of new ids")
    shutil.rmtree(work, ignore_errors=True)
    seconds = done - connected
    return Trial(subject, {"seconds": seconds, "rate": n / seconds, "cpu": cpu, **memory},
                 load.others_percent)


def callgrind_instructions(report: Report) -> dict[str, float]:
    """Instructions a message of each subject (bench/instructions.py --ids=off|nowindow|on):
    floods of CALLGRIND_N and 2 × CALLGRIND_N under callgrind, the difference over CALLGRIND_N."""
    if not CALLGRIND or not shutil.which("valgrind"):
        return {}
    out = CACHE / "callgrind-dedupe.out"
    per_message = {}
    for subject in SUBJECTS:
        ids = CALLGRIND_MODES[subject]
        one = instructions.flood_instructions(CHATLINKD, CALLGRIND_N, out, ids)
        two = instructions.flood_instructions(CHATLINKD, 2 * CALLGRIND_N, out, ids)
        per_message[subject] = (two - one) / CALLGRIND_N
        report.progress(f"dedupe callgrind {subject}: {per_message[subject]:,.0f} instructions a message")
    return per_message


def run(report: Report) -> None:
    if DEDUPE_N // DEDUPE_ROOMS < DEDUPE_WINDOW:
        raise ValueError(f"{DEDUPE_N:,} messages do not fill {DEDUPE_ROOMS} windows of {DEDUPE_WINDOW:,}")
    source.build_id_flood(DEDUPE_N, MESSAGE_SIZE, DEDUPE_ROOMS, BLOBS)  # before timing anything
    meter = LoadMeter()
    reps = max(REPS, 7)  # a 5 % bound wants more than three, on a shared machine more than five
    trials: dict[str, list[Trial]] = {s: [] for s in SUBJECTS}
    for rep, subject in interleaved(SUBJECTS, reps):
        trial = flood_trial(subject, DEDUPE_N)
        trials[subject].append(trial)
        v = trial.values
        report.progress(f"dedupe flood rep {rep + 1} {subject}: {v['rate']:,.0f} msg/s, {v['cpu']:.2f} CPU s, "
                        f"VmHWM {v['VmHWM']:,} KiB, RssAnon {v['RssAnon']:,} KiB, others {trial.others_percent:.0f}%")
    per_message = callgrind_instructions(report)
    load = meter.stop()

    def med(subject, key):
        return median(t.values[key] for t in trials[subject])

    off, bare, on = SUBJECTS
    rows = []
    for subject in SUBJECTS:
        rates = [t.values["rate"] for t in trials[subject]]
        rows.append([
            subject, f"{med(subject, 'rate'):,.0f}", f"{min(rates):,.0f}–{max(rates):,.0f}",
            f"{med(subject, 'rate') / med(off, 'rate'):.3f}", fmt(med(subject, "cpu"), 2),
            f"{med(subject, 'cpu') / med(off, 'cpu'):.3f}", fmt(per_message.get(subject), 0),
            f"{per_message[subject] / per_message[off]:.3f}" if per_message else "—",
            fmt(median(t.others_percent for t in trials[subject]), 0) + "%",
        ])
    report.table(
        f"10a. Dedupe window, inbound flood: N = {DEDUPE_N:,} messages of ~{MESSAGE_SIZE} B with ids, round "
        f"{DEDUPE_ROOMS} rooms; ids on (`IDField={ID_FIELD}`: each id into its room's window, "
        f"DedupeWindow={DEDUPE_WINDOW:,}) against ids off (the same frames, no IDField=) and ids without a "
        f"window (IDField=, DedupeWindow=0), median of {reps}",
        ["chatlinkd", "msgs/s", "range", "÷ ids off", "CPU s", "÷ ids off",
         f"instructions a message (callgrind, {CALLGRIND_N:,} → {2 * CALLGRIND_N:,})", "÷ ids off", "others' CPU"],
        rows,
    )
    checks = []
    for base, what in ((off, "ids on costs the flood"), (bare, "the window alone costs the flood")):
        rate_ratio = med(on, "rate") / med(base, "rate")
        paired = [a.values["rate"] / b.values["rate"] for a, b in zip(trials[on], trials[base])]
        checks.append(check(
            f"{what} ≤ {COST_LIMIT:.0%} (ids on against {base}): {med(on, 'rate'):,.0f} vs "
            f"{med(base, 'rate'):,.0f} msgs/s = {rate_ratio:.3f} (repetition by repetition: "
            f"{', '.join(f'{r:.3f}' for r in paired)}; their median {median(paired):.3f})",
            rate_ratio >= 1 - COST_LIMIT))
        if per_message:
            extra = per_message[on] / per_message[base] - 1
            checks.append(check(
                f"{what} ≤ {COST_LIMIT:.0%} more instructions a message: {per_message[on]:,.0f} vs "
                f"{per_message[base]:,.0f} ({base}) = {extra:+.1%}", extra <= COST_LIMIT))
    report.targets(checks)
    if not per_message:
        report.note("Instructions were not counted (valgrind missing, or BENCH_CALLGRIND=0).")

    mem_rows = []
    for key, what in (("VmHWM", "peak RSS (VmHWM)"), ("VmRSS", "RSS at the end (VmRSS)"),
                      ("RssAnon", "anonymous memory at the end (RssAnon)")):
        values = {s: [t.values[key] for t in trials[s]] for s in SUBJECTS}
        mem_rows.append([what, *(f"{med(s, key):,.0f} ({min(values[s]):,}–{max(values[s]):,})" for s in SUBJECTS),
                         f"{med(on, key) - med(off, key):+,.0f}", f"{med(on, key) - med(bare, key):+,.0f}"])
    report.table(
        f"10b. Dedupe window, memory with {DEDUPE_ROOMS} rooms' windows full ({DEDUPE_N // DEDUPE_ROOMS:,} ids a "
        f"room, DedupeWindow={DEDUPE_WINDOW:,}): read from /proc/PID/status once every record is durable, "
        f"KiB, median (range) of {reps}",
        ["KiB", *SUBJECTS, "ids on − ids off", "ids on − no window"],
        mem_rows,
    )
    peak = med(on, "VmHWM") - med(off, "VmHWM")
    anon = med(on, "RssAnon") - med(off, "RssAnon")
    report.targets([
        check(f"the window costs peak RSS ≤ {MEMORY_LIMIT_KIB / 1024:.0f} MB at {DEDUPE_ROOMS} rooms: VmHWM "
              f"{med(on, 'VmHWM'):,.0f} vs {med(off, 'VmHWM'):,.0f} KiB = {peak:+,.0f} KiB", peak <= MEMORY_LIMIT_KIB),
        check(f"and anonymous memory ≤ {MEMORY_LIMIT_KIB / 1024:.0f} MB: RssAnon {med(on, 'RssAnon'):,.0f} vs "
              f"{med(off, 'RssAnon'):,.0f} KiB = {anon:+,.0f} KiB", anon <= MEMORY_LIMIT_KIB),
    ])
    report.note(
        "Every subject takes the same frames (`source.py`'s flood with `\"msg_id\":\"m-…\"` in each event's data, "
        f"rooms 1–{DEDUPE_ROOMS} in turn), Sync=batch every {SYNC_INTERVAL_MS} ms, Compression=no; every record "
        "is checked afterwards (N lines, the id in the record with IDField= only, no duplicate dropped). "
        "Time is from the 101 response until durable_seq = N (GetStatus polled every 2 ms); the "
        "instructions are user-space instructions of the whole daemon under callgrind "
        "(`bench/instructions.py --ids=off|nowindow|on`), which this VM's load does not move. Ids on against "
        "ids off is what ids cost in all (the scanner's third key, the id packed and stored with the record, "
        "the window); against ids without a window, what the window alone costs.")
    report.load(load)
    dedupe_startup.run(report)
