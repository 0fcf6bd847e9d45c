"""What the broker scenarios (7 mqtt, 8 stomp) share. A broker queues N messages for a subject
that is away, then the subject connects and takes them. Filling the broker is not timed, so
the figure is the subject's, whatever the publisher's speed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from harness import CACHE, CHATLINKD, Chatlinkd, DurablePoller, Lines, Varlink, median, spawn
from report import Report, check, fmt, ratio_text
import brokers
from scenarios.settings import SCALE
from scenarios.steps import count_lines, fresh, last_line

BROKER_N = 100_000 // SCALE
BROKER_PACKAGES = ("paho-mqtt", "stomp.py")


def chatlinkd_knows(protocol: str) -> bool:
    """Whether this build of chatlinkd takes `Protocol=<protocol>` (chatlinkd --check-config)."""
    daemon = Chatlinkd(fresh("check-config"), "ws://127.0.0.1:1/", Backend={"Protocol": protocol})
    result = subprocess.run([str(CHATLINKD), "--config", str(daemon.config), "--check-config"],
                            capture_output=True)
    return result.returncode == 0


def wait_connected(client: Varlink, proc: subprocess.Popen, since: float, timeout: float = 30) -> float:
    """Polls GetStatus every millisecond until chatlinkd's state is open and returns the time of
    the last reply before that (`since`, its spawn, if the first reply is already open): its
    drain is timed from no later than its connect, so the figure errs against it."""
    last = since
    deadline = time.monotonic() + timeout
    while True:
        state = client.status()["state"]
        now = time.monotonic()
        if state == "open":
            return last
        if now > deadline or proc.poll() is not None:
            raise RuntimeError(f"chatlinkd did not connect to the broker (state {state}); see {CACHE / 'logs'}")
        last = now
        time.sleep(0.001)


def run_checked(args, what: str, timeout: float = 600) -> str:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}): {result.stderr.strip()[-400:]}")
    return result.stdout


def drain_chatlinkd(daemon: Chatlinkd, n: int, timeout: float) -> tuple:
    """Starts chatlinkd on a broker that holds n messages for it; (proc, connected, done, status)."""
    since = time.monotonic()
    proc = daemon.start()
    client = daemon.client()
    connected = wait_connected(client, proc, since)
    poller = DurablePoller(client, interval=0.002, target=n)
    poller.start()
    if not poller.reached.wait(timeout) or poller.error:
        status = client.status() if not poller.error else {}
        raise RuntimeError(f"chatlinkd did not make {n} records durable: {poller.error or status}")
    done = poller.samples[-1][0]
    poller.stop()
    status = client.status()
    client.close()
    return proc, connected, done, status


def drain_peer(args, timeout: float) -> tuple:
    """Starts a peer subscriber that prints "connected T" and "done T"; (proc, connected, done)."""
    proc = spawn(args)
    lines = Lines(proc)
    connected = lines.expect(lambda l: float(l.split()[1]) if l.startswith("connected ") else None, 30, "connected")
    return proc, connected, lines.done(timeout)


def check_records(subject: str, files, newest: Path, n: int) -> tuple[int, str]:
    """The same messages, each exactly once, the last one last; returns (lines, last line)."""
    lines = count_lines(files)
    tail = last_line(newest)
    if lines != n or f'"#{n - 1:07d} '.encode() not in tail:
        raise RuntimeError(f"{subject}: {lines} lines of {n}, last line {tail[:160]!r}")
    return lines, tail.decode("utf-8", "replace")


def broker_table(report: Report, title: str, labels: dict, results: dict, peer: str) -> None:
    """The table of a broker scenario: medians, the range, CPU, RSS, the broker's CPU, ratios."""
    def med(subject, key):
        return median(t.values[key] for t in results[subject])

    peer_rate, peer_cpu = (med(peer, "rate"), med(peer, "cpu")) if results.get(peer) else (None, None)
    rows = []
    for subject, trials in results.items():
        rate = med(subject, "rate")
        rates = [t.values["rate"] for t in trials]
        rows.append([
            labels[subject], fmt(med(subject, "seconds"), 2), f"{rate:,.0f}", f"{min(rates):,.0f}–{max(rates):,.0f}",
            fmt(med(subject, "cpu"), 2), fmt(med(subject, "hwm"), 1), fmt(med(subject, "broker_cpu"), 2),
            ratio_text(rate, peer_rate), ratio_text(peer_cpu, med(subject, "cpu")),
            fmt(median(t.others_percent for t in trials), 0) + "%",
        ])
    report.table(title, ["client", "time s", "msgs/s", "range", "CPU s", "peak RSS MB", "broker CPU s",
                         f"× {peer} msgs/s", f"{peer} CPU ÷ CPU", "others' CPU"], rows)


def broker_target(results: dict, peer: str, what: str) -> tuple[str, bool]:
    ours = median(t.values["rate"] for t in results["chatlinkd"])
    theirs = median(t.values["rate"] for t in results[peer])
    def times(x):
        return f"{x:.1f}×" if x >= 1 else f"{x:.3f}×"

    per_rep = ", ".join(times(a.values["rate"] / b.values["rate"]) for a, b in zip(results["chatlinkd"], results[peer]))
    return check(f"{what} drain msgs/s ≥ 5× {peer}: {ours:,.0f} vs {theirs:,.0f} = {times(ours / theirs)} "
                 f"(repetition by repetition: {per_rep})", ours >= 5 * theirs)


def mosquitto_version() -> str:
    out = subprocess.run([brokers.MOSQUITTO, "-h"], capture_output=True, text=True).stdout
    return out.split()[2] if out.startswith("mosquitto version") else "?"


def rabbitmq_version() -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "rabbitmq-server"], capture_output=True, text=True).stdout
    return out.split("-")[0] or "?"
