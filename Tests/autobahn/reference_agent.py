#!/usr/bin/env python3
"""Reference Autobahn client agent: an echo client built on Python's `websockets`.

Not part of the product. It exists to (1) validate Tests/autobahn/run.sh and check_results.py
without our Swift agent, and (2) give a known peer whose results ours can be compared with
(shared/notes/autobahn.md lists its expected failures). Same CLI as chatlink-autobahn:

    reference_agent.py --url ws://127.0.0.1:9001 --agent NAME [--cases LIST]

It needs `websockets` (tested with 17.4), which the repo does not install; e.g.
    python3 -m pip install --target /tmp/ab-ref websockets==17.4
    AGENT_PYTHONPATH=/tmp/ab-ref Tests/autobahn/run.sh Tests/autobahn/reference_agent.py --cases '1.*'
(or PYTHONPATH=/tmp/ab-ref for a direct run).

Protocol with the fuzzing server (autobahntestsuite/fuzzing.py):
  /getCaseCount            -> one text message, the JSON number of cases in the server's spec
  /getCaseInfo?case=N      -> one text message {"id": "1.1.1", "description": ...}
  /runCase?case=N&agent=A  -> run case N (1-based index into the sorted case ids); echo all
  /updateReports?agent=A   -> server writes index.json and the per-case reports
"""

import argparse
import asyncio
import json
import re
import sys
import time

from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

# Generous per-case bound: the slowest cases (9.* with 16 MiB messages, 12.*/13.* deflate) take
# seconds; the suite's own timeouts close a case well before this.
CASE_TIMEOUT = 300.0


def connect_opts():
    return dict(
        max_size=None,       # 9.* send messages up to 16 MiB
        max_queue=None,
        ping_interval=None,  # no keepalive pings: they would be extra events in the case log
        proxy=None,          # never route loopback traffic through a proxy from the env
        compression="deflate",
        open_timeout=30,
        close_timeout=10,
    )


async def read_one(url):
    async with connect(url, **connect_opts()) as ws:
        msg = await ws.recv()
        # Drain until the server's close, so the handshake completes cleanly.
        try:
            async for _ in ws:
                pass
        except WebSocketException:
            pass
        return msg


def pattern_matcher(patterns):
    """Autobahn's CaseSet.resolveCasePatternList semantics: a pattern with '*' is a regex
    ('.' literal, '*' any run) matched from the start of the id; anything else is exact."""
    literal, regexes = set(), []
    for p in patterns:
        if "*" in p:
            regexes.append(re.compile(p.replace(".", r"\.").replace("*", ".*")))
        else:
            literal.add(p)
    return lambda case_id: case_id in literal or any(r.match(case_id) for r in regexes)


async def run_case(base, n, agent):
    url = f"{base}/runCase?case={n}&agent={agent}"
    try:
        async with connect(url, **connect_opts()) as ws:
            async for msg in ws:
                await ws.send(msg)
    except WebSocketException:
        pass  # the case decides whether that close/failure was right
    except OSError as e:
        print(f"case {n}: {e}", file=sys.stderr)


async def main():
    ap = argparse.ArgumentParser(description="Autobahn echo agent (websockets)")
    ap.add_argument("--url", required=True, help="fuzzing server, e.g. ws://127.0.0.1:9001")
    ap.add_argument("--agent", required=True, help="agent name in the reports")
    ap.add_argument("--cases", help="comma-separated case ids/patterns, e.g. '1.1.1,12.*'")
    args = ap.parse_args()
    base = args.url.rstrip("/")

    count = json.loads(await read_one(f"{base}/getCaseCount"))
    numbers = list(range(1, count + 1))
    ids = {}
    if args.cases:
        match = pattern_matcher([c.strip() for c in args.cases.split(",") if c.strip()])
        selected = []
        for n in numbers:
            ids[n] = json.loads(await read_one(f"{base}/getCaseInfo?case={n}"))["id"]
            if match(ids[n]):
                selected.append(n)
        numbers = selected
    print(f"{count} cases on the server; running {len(numbers)}", flush=True)

    def label(n):
        return f"{n} ({ids[n]})" if n in ids else str(n)

    failed_to_finish = 0
    for n in numbers:
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(run_case(base, n, args.agent), CASE_TIMEOUT)
        except asyncio.TimeoutError:
            failed_to_finish += 1
            print(f"case {label(n)}: timed out", file=sys.stderr)
        dt = time.monotonic() - t0
        if dt > 5:
            print(f"case {label(n)} took {dt:.1f} s", flush=True)

    await read_one_close(f"{base}/updateReports?agent={args.agent}")
    return 1 if failed_to_finish else 0


async def read_one_close(url):
    # /updateReports sends no message, only a close once the reports are written.
    async with connect(url, **connect_opts()) as ws:
        try:
            async for _ in ws:
                pass
        except WebSocketException:
            pass


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
