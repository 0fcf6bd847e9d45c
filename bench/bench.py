"""ChatLink's benchmark suite (issue 6): chatlinkd against peer clients, in one run.

    .venv/bin/python bench/bench.py          (normally through `make bench` / bench/run.sh)

Environment:
    BENCH_QUICK=1          about 10x smaller N everywhere (a smoke run of a minute or two)
    BENCH_REPS=3           interleaved repetitions per measurement (medians are reported)
    BENCH_ONLY=a,b         run only these scenarios: inbound, latency, outbound, store, idle, socketio,
                           mqtt, stomp, scale, dedupe, xmpp
    BENCH_MQTT_INFLIGHT=20 Mosquitto's max_inflight_messages in the mqtt scenario (its default)
    BENCH_IDLE_SECONDS=60  length of one idle window
    BENCH_CALLGRIND=0      dedupe: skip the instructions a message (callgrind, a few minutes)
    BENCH_BASELINE_BIN=DIR dedupe: also start DIR/chatlinkd (an older build) with the id store

Each scenario is a module of bench/scenarios, one kind of trial each (inbound flood, latency,
outbound, big store, idle, Socket.IO, the MQTT and STOMP brokers, scale, the dedupe window's
cost, XMPP through Prosody); this driver runs them in order. Every scenario prints a Markdown table with the median of
the repetitions, the ratio to each peer measured in the same run, the issue's target with ✓/✗,
and the machine load while it ran. The report goes to stdout and to .cache/bench/results-<date>.md.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import brokers  # noqa: E402
from harness import CACHE, CHATLINKCTL, CHATLINKD, DEVSERVER, GOPEER, NCPU, PYTHON, REPO, LoadMeter, stop_all  # noqa: E402
from report import Report  # noqa: E402
from scenarios import dedupe, idle, inbound, latency, mqtt, outbound, scale, socketio, stomp, store, xmpp  # noqa: E402
from scenarios.broker_drain import BROKER_PACKAGES, mosquitto_version, rabbitmq_version  # noqa: E402
from scenarios.settings import QUICK, REPS, RUN  # noqa: E402
from scenarios.socketio import SIO_PACKAGES  # noqa: E402

ONLY = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))
SCENARIOS = [("inbound", inbound.run), ("latency", latency.run), ("outbound", outbound.run),
             ("store", store.run), ("idle", idle.run), ("socketio", socketio.run),
             ("mqtt", mqtt.run), ("stomp", stomp.run), ("scale", scale.run), ("dedupe", dedupe.run),
             ("xmpp", xmpp.run)]


def describe() -> list[str]:
    def first_line(args):
        try:
            return subprocess.run(args, capture_output=True, text=True).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    commit = first_line(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "Sources", "Package.swift"],
                           capture_output=True, text=True).stdout.strip()
    model = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                  if l.startswith("model name")), "?")
    ws = subprocess.run([PYTHON, "-c", "import websockets; print(websockets.__version__)"], capture_output=True, text=True).stdout.strip()
    versions = "from importlib.metadata import version as v; print(*(v(p) for p in SIO_PACKAGES))"
    sio = subprocess.run([PYTHON, "-c", versions.replace("SIO_PACKAGES", repr(SIO_PACKAGES))],
                         capture_output=True, text=True).stdout.split()
    sio = ("python-socketio {} (python-engineio {}, aiohttp {})".format(*sio) if len(sio) == 3
           else "python-socketio not installed")
    brokers_text = subprocess.run([PYTHON, "-c", versions.replace("SIO_PACKAGES", repr(BROKER_PACKAGES))],
                                  capture_output=True, text=True).stdout.split()
    brokers_text = (f"paho-mqtt {brokers_text[0]}, stomp.py {brokers_text[1]}" if len(brokers_text) == 2
                    else "paho-mqtt/stomp.py not installed")
    brokers_text += f"; Mosquitto {mosquitto_version()}, RabbitMQ {rabbitmq_version()}"
    prosody = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "prosody"], capture_output=True, text=True).stdout
    slixmpp = subprocess.run([PYTHON, "-c", "import slixmpp; print(slixmpp.__version__)"], capture_output=True,
                             text=True).stdout.strip()
    brokers_text += f"; Prosody {prosody.split('-')[0] or '?'}, slixmpp {slixmpp or '?'}"
    return [
        f"commit {commit}{' with uncommitted changes under Sources/' if dirty else ''}; "
        f"{NCPU} × {model}; Linux {platform.release()}",
        f"{first_line([str(CHATLINKD), '--version'])} (release, scripts/build-release.sh: static Swift runtime, chatlinkctl a static PIE); "
        f"{first_line(['swift', '--version'])}; {first_line(['go', 'version'])}; websockets {ws}; {sio}; {brokers_text}",
        f"mode: {'QUICK (N ÷ 10)' if QUICK else 'full'}, {REPS} interleaved repetitions per figure",
    ]


def main() -> int:
    (CACHE / "logs").mkdir(parents=True, exist_ok=True)
    RUN.mkdir(parents=True, exist_ok=True)
    for binary in (CHATLINKD, CHATLINKCTL, DEVSERVER, GOPEER):
        if not binary.exists():
            sys.exit(f"bench.py: {binary} is missing; run bench/run.sh (make bench)")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    report = Report(CACHE / f"results-{stamp}.md", describe())
    meter = LoadMeter()
    failed = []
    for name, scenario in SCENARIOS:
        if ONLY and name not in ONLY:
            continue
        try:
            scenario(report)
        except Exception as error:  # noqa: BLE001 - report it and go on with the next scenario
            failed.append(name)
            report.failure(name, error)
            stop_all()  # nothing of a failed scenario may run on into the next one
    report.finish(meter.stop(extra=brokers.unreaped_cpu))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
