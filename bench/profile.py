"""Profiles chatlinkd where the benchmark finds it slow, with perf (cpu-clock, frame-pointer call
chains; Swift keeps frame pointers), and prints the hot spots.

    bench/profile.sh [flood|send|ctl|history ...]     (default: flood)

    flood    chatlinkd while 1,000,000 messages arrive (scenario 1)
    send     chatlinkd while `chatlinkctl send -` streams 200,000 lines (scenario 3a)
    ctl      200 runs of `chatlinkctl --version`: process start-up (scenario 3b)
    history  chatlinkd answering history for the rare room of the big store (scenario 4a)

Each prints the top self symbols, the top inclusive frames and a split of the frames that
matter, and keeps the text in .cache/bench/profile-<what>.txt (perf data next to it).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_store  # noqa: E402
import perf_breakdown  # noqa: E402
import source  # noqa: E402
import stages  # noqa: E402
from harness import (  # noqa: E402
    BENCH, CACHE, CHATLINKCTL, GOPEER, PYTHON, Chatlinkd, DurablePoller, Lines, cpu_seconds, spawn, stop,
)

QUICK = __import__("os").environ.get("BENCH_QUICK") == "1"


def perf_attach(pid: int, data: Path) -> subprocess.Popen:
    proc = spawn(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-g", "-p", pid, "-o", data],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # perf needs a moment before it samples
    return proc


def perf_detach(proc: subprocess.Popen) -> None:
    stop(proc, sig=signal.SIGINT, timeout=60)  # SIGINT: perf writes its data and exits


def demangled_script(data: Path, comm: str | None = None) -> list[str]:
    args = ["perf", "script", "-i", str(data)] + (["--comm", comm] if comm else [])
    script = subprocess.run(args, capture_output=True, text=True).stdout
    return subprocess.run(["swift", "demangle", "--simplified"], input=script, capture_output=True,
                          text=True).stdout.splitlines(keepends=True)


def flat(data: Path, comm: str | None, top: int = 25) -> list[str]:
    args = ["perf", "report", "-i", str(data), "--no-children", "--sort", "dso,sym", "--stdio", "-g", "none"]
    if comm:
        args += ["--comm", comm]
    text = subprocess.run(args, capture_output=True, text=True).stdout
    text = subprocess.run(["swift", "demangle", "--simplified"], input=text, capture_output=True, text=True).stdout
    return [l[:160] for l in text.splitlines() if "%" in l and not l.startswith("#")][:top]


def summary(title: str, data: Path, comm: str | None, splits: list[tuple[str, str]]) -> str:
    lines = [f"### {title}", "", "Top self symbols (perf report --no-children):", *flat(data, comm), ""]
    script = demangled_script(data, comm)
    lines += ["Top inclusive frames:", *perf_breakdown.summarise(iter(script), "top", None, 30), ""]
    for mode, frame in splits:
        lines += perf_breakdown.summarise(iter(script), mode, frame, 12) + [""]
    return "\n".join(lines)


def backend(n: int):
    proc = spawn([GOPEER, "count", "-n", n])
    lines = Lines(proc)
    port = lines.expect(lambda l: int(l.split()[1]) if l.startswith("port ") else None, 15, "port")
    return proc, lines, port


def wait_open(client):
    while client.status()["state"] != "open":
        time.sleep(0.01)


def profile_flood() -> str:
    n = 100_000 if QUICK else 1_000_000
    blob = source.build_flood(n, 200, False, CACHE / "blobs")
    work = CACHE / "run" / "profile"
    shutil.rmtree(work, ignore_errors=True)
    src = spawn([PYTHON, BENCH / "source.py", "flood", blob])
    src_lines = Lines(src)
    port = src_lines.json("port", 15)
    # chatlinkd connects at once; perf misses its first half second, a small share of a flood.
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Compression": "no"})
    proc = daemon.start()
    data = CACHE / "perf-flood.data"
    perf = perf_attach(proc.pid, data)
    poller = DurablePoller(daemon.client(), 0.002, n)
    poller.start()
    connected = src_lines.json("connected", 30)
    poller.reached.wait(300)
    seconds = poller.samples[-1][0] - connected
    cpu = cpu_seconds(proc.pid)
    perf_detach(perf)
    poller.stop()
    daemon.stop()
    stop(src)
    shutil.rmtree(work, ignore_errors=True)
    stage_table = stages.table(iter(demangled_script(data)), n, cpu)
    return "\n".join([
        f"### chatlinkd's inbound path by stage: {n:,} messages (bench/stages.py)", "", *stage_table, ""]) + summary(
        f"chatlinkd, inbound flood of {n:,} (under perf: {n / seconds:,.0f} msg/s, {cpu:.2f} CPU s)", data, None,
        [("callers", "swift_retain"), ("callers", "swift_release"), ("callees", "EnvelopeProtocol.decode"),
         ("callees", "BackendSession.webSocket(_:didReceive:)"), ("callees", "JSONScanner.scan"),
         ("callees", "WebSocketClient.stream(_:didReceive:)")])


def profile_send() -> str:
    n = 20_000 if QUICK else 200_000
    lines_file = CACHE / "run" / f"send-{n}.txt"
    lines_file.parent.mkdir(parents=True, exist_ok=True)
    lines_file.write_text("".join(f"bench line {i:07d}: the build is green, deploy at 14:00\n" for i in range(n)))
    work = CACHE / "run" / "profile"
    shutil.rmtree(work, ignore_errors=True)
    be, be_lines, port = backend(n)
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Backend={"Rooms": "1"})
    proc = daemon.start()
    client = daemon.client()
    wait_open(client)
    data = CACHE / "perf-send.data"
    perf = perf_attach(proc.pid, data)
    with open(lines_file, "rb") as stdin:
        t0 = time.monotonic()
        ctl = spawn([CHATLINKCTL, "--socket", daemon.socket, "send", "--room", "1", "-"], stdin=stdin,
                    stdout=subprocess.DEVNULL)
        done = be_lines.done(300)
        ctl.wait(60)
    cpu = cpu_seconds(proc.pid)
    perf_detach(perf)
    client.close()
    daemon.stop()
    stop(be)
    shutil.rmtree(work, ignore_errors=True)
    return summary(
        f"chatlinkd, `chatlinkctl send -` of {n:,} lines (under perf: {n / (done - t0):,.0f} msg/s, daemon {cpu:.2f} CPU s)",
        data, None,
        [("callees", "ControlConnection.stream"), ("callees", "Outbox.finished"),
         ("callees", "BackendSession.confirm(where:)"), ("callees", "BackendSession.flushOutbox"),
         ("callees", "Outbox.enqueue"), ("callers", "__send"), ("callers", "SocketStream.write")])


def profile_ctl() -> str:
    data = CACHE / "perf-ctl.data"
    runs = 200
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-g", "-o", str(data), "--", "sh", "-c",
                    f"for i in $(seq {runs}); do '{CHATLINKCTL}' --version >/dev/null; done"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    stat = subprocess.run(["perf", "stat", "-r", "50", str(CHATLINKCTL), "--version"], capture_output=True, text=True).stderr
    stat = [l.strip() for l in stat.splitlines() if any(k in l for k in ("task-clock", "page-faults", "elapsed"))]
    return summary(f"chatlinkctl start-up, {runs} runs of --version; perf stat: " + "; ".join(stat), data, "chatlinkctl",
                   [("callees", "_dl_start_user"), ("callees", "ParsableCommand.main"),
                    ("callees", "CommandParser.parse")])


def profile_history() -> str:
    store = CACHE / "bigstore" / "state"
    gen_store.generate(store, 500_000 if QUICK else 5_000_000)
    work = CACHE / "run" / "profile"
    shutil.rmtree(work, ignore_errors=True)
    be, _, port = backend(0)
    daemon = Chatlinkd(work, f"ws://127.0.0.1:{port}/", Store={"Directory": store, "MaxFiles": 24})
    proc = daemon.start()
    daemon.client().close()
    data = CACHE / "perf-history.data"
    perf = perf_attach(proc.pid, data)
    t0 = time.monotonic()
    subprocess.run([str(CHATLINKCTL), "--socket", daemon.socket, "history", "--room", str(gen_store.RARE_ROOM),
                    "--limit", "100"], stdout=subprocess.DEVNULL, check=True)
    seconds = time.monotonic() - t0
    perf_detach(perf)
    daemon.stop()
    stop(be)
    return summary(f"chatlinkd, history of the rare room over the big store (under perf: {seconds:.2f} s)", data, None,
                   [("callees", "HistoryReader.read")])


PROFILES = {"flood": profile_flood, "send": profile_send, "ctl": profile_ctl, "history": profile_history}


def main() -> None:
    (CACHE / "logs").mkdir(parents=True, exist_ok=True)
    for what in sys.argv[1:] or ["flood"]:
        text = PROFILES[what]()
        (CACHE / f"profile-{what}.txt").write_text(text + "\n")
        print(text, flush=True)


if __name__ == "__main__":
    main()
