# -*- coding: utf-8 -*-
"""Loopback-only Autobahn|Testsuite fuzzing server (client-testing mode).

Python 2: run it with the venv that scripts/setup-autobahn.sh builds, e.g.
    .cache/autobahn-venv/bin/python -u Tests/autobahn/fuzzingserver.py --port 9001 --outdir DIR

Why not `wstest -m fuzzingserver -s spec.json`: wstest calls listenWS(factory) with the default
interface '' and so binds 0.0.0.0, and starts a web UI on 8080 unless told `-u 0`. This launcher
does what autobahntestsuite.fuzzing.startServer does (FuzzingServerFactory(spec) + listenWS),
minus TLS and the web UI, bound to 127.0.0.1 only.

Two additions:
  * On shutdown (SIGTERM/SIGINT from run.sh) the reports are written if cases were run since
    the last /updateReports, so an agent that crashed or timed out still leaves an index.json
    covering the cases it completed.
  * --resolve-cases LIST prints the case ids a pattern list selects (Autobahn's own matcher)
    and exits, so the harness knows which ids to expect from `agent --cases LIST`.
"""

from __future__ import print_function

import argparse
import json
import sys

# autobahntestsuite's reactor chooser must be imported before anything else from Twisted:
# it installs the epoll reactor on Linux (as wstest does).
import autobahntestsuite.choosereactor  # noqa: F401  (side effect)

from twisted.internet import reactor

from autobahn.twisted.websocket import listenWS
from autobahntestsuite import fuzzing
from autobahntestsuite.case import (Cases, CaseBasename, CaseCategories, CaseSetname,
                                    CaseSubCategories)
from autobahntestsuite.caseset import CaseSet

HOST = "127.0.0.1"


def make_spec(port, outdir):
    # Same shape as autobahntestsuite.spectemplate.SPEC_FUZZINGSERVER.
    return {
        "url": "ws://%s:%d" % (HOST, port),
        "outdir": outdir,
        "cases": ["*"],
        "exclude-cases": [],
        "exclude-agent-cases": {},
    }


def split_cases(arg):
    return [c.strip() for c in arg.split(",") if c.strip()]


def resolve_cases(patterns):
    """Ids selected by a pattern list, in run order, exactly as the server resolves a spec's
    "cases". Unknown literal ids are an error (the server would KeyError on them later)."""
    case_set = CaseSet(CaseSetname, CaseBasename, Cases, CaseCategories, CaseSubCategories)
    try:
        ids = case_set.parseSpecCases({"cases": patterns, "exclude-cases": []})
        unknown = [i for i in ids if i not in case_set.CasesById]
    except ValueError:  # a literal that is not dotted numbers, e.g. 'abc'
        unknown = [p for p in patterns if "*" not in p and p not in case_set.CasesById]
    if unknown:
        raise SystemExit("fuzzingserver: unknown case id(s): %s (a group needs a wildcard, '1.1.*')"
                         % ", ".join(unknown))
    return ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=9001)
    ap.add_argument("--outdir", default="./reports/clients",
                    help="where index.json and the per-case reports go")
    ap.add_argument("--spec", help="JSON spec file; its url must be ws://127.0.0.1:<port>. "
                                   "Default: built from --port/--outdir, all cases.")
    ap.add_argument("--resolve-cases", metavar="LIST",
                    help="print the case ids that LIST (comma-separated ids/patterns) selects, "
                         "one per line, and exit")
    ap.add_argument("--debug", action="store_true")
    args = ap.parse_args()

    if args.resolve_cases is not None:
        for case_id in resolve_cases(split_cases(args.resolve_cases)):
            print(case_id)
        return 0

    if args.spec:
        with open(args.spec) as f:
            spec = json.load(f)
        spec.setdefault("outdir", args.outdir)
    else:
        spec = make_spec(args.port, args.outdir)

    factory = fuzzing.FuzzingServerFactory(spec, debug=args.debug)
    # The factory parses host/port out of spec["url"]; refuse anything but loopback, whatever
    # a hand-written spec says.
    if factory.isSecure or factory.host != HOST:
        raise SystemExit("fuzzingserver: spec url must be ws://%s:<port>, got %s"
                         % (HOST, spec["url"]))

    # Track whether reports are stale, so shutdown writes them only when needed.
    state = {"dirty": False}
    log_case, create_reports = factory.logCase, factory.createReports

    def logCase(results):
        state["dirty"] = True
        log_case(results)

    def createReports(*a, **kw):
        create_reports(*a, **kw)
        state["dirty"] = False

    factory.logCase, factory.createReports = logCase, createReports

    def on_shutdown():
        if state["dirty"]:
            print("Shutting down with unreported cases; writing reports to %s" % factory.outdir)
            createReports()

    reactor.addSystemEventTrigger("before", "shutdown", on_shutdown)

    listenWS(factory, interface=HOST)
    print("Listening on %s:%d (no web UI); reports in %s" % (HOST, factory.port, factory.outdir))
    sys.stdout.flush()
    reactor.run()  # installs SIGINT/SIGTERM handlers that stop the reactor cleanly
    return 0


if __name__ == "__main__":
    sys.exit(main())
