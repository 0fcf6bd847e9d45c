#!/usr/bin/env python3
"""Judge an Autobahn|Testsuite client run: read <outdir>/index.json and fail on any bad case.

    check_results.py OUTDIR [--agent chatlink] [--expect-count N] [--expect-ids FILE]

The strings come from autobahntestsuite/case/case.py (25.10.1):
  behavior      OK, NON-STRICT, INFORMATIONAL (pass); FAILED, UNIMPLEMENTED (fail).
                UNIMPLEMENTED is what 12.*/13.* report when permessage-deflate was not
                negotiated: we ship deflate, so it is a failure here.
  behaviorClose OK, INFORMATIONAL (pass); FAILED, UNCLEAN, WRONG CODE, FAILED BY CLIENT (fail).
                NON-STRICT is also accepted, though no case sets it. WRONG CODE means the
                agent closed with a code the case does not allow (e.g. not 1002/1007); the
                suite's HTML shows it in the non-strict colour, but it is a real deviation.
                FAILED BY CLIENT is only set when the suite is the client, so not here.
Anything else (a string from a newer suite) is a failure too: unknown means unjudged.

index.json only holds the cases that were run, so a subset run is judged on its subset;
--expect-ids (the ids the harness asked for) turns a silently skipped case into a failure.

Exit 0 if every case passes and at least one (or the expected number) was reported, else 1.
"""

import argparse
import json
import os
import sys

BEHAVIOR_PASS = {"OK", "NON-STRICT", "INFORMATIONAL"}
CLOSE_PASS = {"OK", "INFORMATIONAL", "NON-STRICT"}
# Columns of the summary, in order; every outcome seen is counted in its column.
COLUMNS = ["OK", "NON-STRICT", "INFORMATIONAL", "FAILED", "UNIMPLEMENTED", "UNCLEAN",
           "WRONG CODE"]


def id_key(case_id):
    """'9.10.2' -> (9, 10, 2): the suite's own order (string order would put 10.* before 2.*)."""
    try:
        return tuple(int(x) for x in case_id.split("."))
    except ValueError:
        return (sys.maxsize, case_id)


def shorten(text, limit=160):
    text = " ".join(str(text).split())
    # Descriptions are HTML; the first sentence-ish is enough for a console line.
    text = text.replace("<br>", " ").replace("<br/>", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_detail(outdir, entry):
    path = os.path.join(outdir, entry.get("reportfile", ""))
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def main():
    ap = argparse.ArgumentParser(description="Judge Autobahn fuzzingserver results.")
    ap.add_argument("outdir", help="the fuzzing server's outdir (holds index.json)")
    ap.add_argument("--agent", default="chatlink")
    ap.add_argument("--expect-count", type=int, metavar="N",
                    help="fail if fewer than N cases were reported (full suite: 517)")
    ap.add_argument("--expect-ids", metavar="FILE",
                    help="file with one case id per line that must all be reported")
    args = ap.parse_args()

    index_path = os.path.join(args.outdir, "index.json")
    try:
        with open(index_path) as f:
            index = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_results: cannot read {index_path}: {e}")
        return 1
    cases = index.get(args.agent, {})
    if not cases:
        agents = ", ".join(sorted(index)) or "none"
        print(f"check_results: no cases for agent {args.agent!r} in {index_path} "
              f"(agents present: {agents})")
        return 1

    ids = sorted(cases, key=id_key)
    behavior_counts = {c: 0 for c in COLUMNS}
    close_counts = {c: 0 for c in COLUMNS}
    failing, non_strict = [], []
    for case_id in ids:
        entry = cases[case_id]
        b, bc = entry.get("behavior", "?"), entry.get("behaviorClose", "?")
        behavior_counts[b] = behavior_counts.get(b, 0) + 1
        close_counts[bc] = close_counts.get(bc, 0) + 1
        if b == "NON-STRICT" or bc == "NON-STRICT":
            non_strict.append(case_id)
        if b not in BEHAVIOR_PASS or bc not in CLOSE_PASS:
            failing.append(case_id)

    problems = []
    missing = []
    if args.expect_count is not None and len(ids) < args.expect_count:
        problems.append(f"only {len(ids)} cases reported, expected {args.expect_count}")
    if args.expect_ids:
        with open(args.expect_ids) as f:
            expected = [line.strip() for line in f if line.strip()]
        missing = [i for i in expected if i not in cases]
        extra = sorted(set(cases) - set(expected), key=id_key)
        if missing:
            problems.append(f"{len(missing)} requested case(s) not reported: "
                            + " ".join(missing[:40]) + (" ..." if len(missing) > 40 else ""))
        if extra:
            # Judged like the rest; just say so, since the agent ran more than asked.
            print(f"note: {len(extra)} case(s) reported that were not requested: "
                  + " ".join(extra[:40]))

    # Summary: one row per field, one column per outcome, plus anything unexpected.
    extra_cols = sorted((set(behavior_counts) | set(close_counts)) - set(COLUMNS))
    cols = COLUMNS + extra_cols
    width = max(len(c) for c in cols) + 1
    print(f"Autobahn results for agent {args.agent!r}: {len(ids)} cases ({index_path})")
    print(f"{'':14}" + "".join(f"{c:>{width}}" for c in cols))
    for name, counts in (("behavior", behavior_counts), ("behaviorClose", close_counts)):
        print(f"{name:14}" + "".join(f"{counts.get(c, 0):>{width}}" for c in cols))

    if non_strict:
        print(f"NON-STRICT ({len(non_strict)}): " + " ".join(non_strict))

    if failing:
        print(f"FAILING ({len(failing)}):")
        for case_id in failing:
            entry = cases[case_id]
            detail = load_detail(args.outdir, entry)
            print(f"  {case_id:10} behavior={entry.get('behavior')} "
                  f"behaviorClose={entry.get('behaviorClose')} "
                  f"remoteCloseCode={entry.get('remoteCloseCode')}")
            if detail:
                print(f"      description: {shorten(detail.get('description', ''))}")
                print(f"      expectation: {shorten(detail.get('expectation', ''))}")
                print(f"      result: {shorten(detail.get('result', ''))}")
                print(f"      resultClose: {shorten(detail.get('resultClose', ''))}")

    for p in problems:
        print(f"check_results: {p}")

    # Last line in the plain "N passed, N failed" form; a requested case that never ran counts
    # as failed.
    print(f"AUTOBAHN: {len(ids) - len(failing)} passed, {len(failing) + len(missing)} failed")
    return 1 if failing or problems else 0


if __name__ == "__main__":
    sys.exit(main())
