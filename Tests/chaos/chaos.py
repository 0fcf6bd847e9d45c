"""`make chaos`: chatlinkd under faults, with figures. Run through Tests/chaos/run.sh.

Environment:
    CHAOS_QUICK=1           everything scaled down (about 6 minutes)
    CHAOS_SOAK_SECONDS=N    the soak's length (default 1200; 60 with CHAOS_QUICK)
    CHAOS_ONLY=a,b          only these scenarios (network backend crash disk abuse soak security ids xmpp)
    CHAOS_SEED=N            the random seed (printed; rerun with it to repeat a run's choices)
    CHAOS_RUN_DIR           where daemons keep their files (set by run.sh)
"""

from __future__ import annotations

import datetime as dt
import importlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lib  # noqa: E402
from lib import QUICK, REPO, RUN_DIR, SEED, Scenario, audit_scenario, cleanup_daemons, fault_summary, log  # noqa: E402

SCENARIOS = [
    ("network", "scen_network", "1. network faults (fault proxy, netns)"),
    ("backend", "scen_backend", "2. backend behaviour (HTTP refusals, close codes, ping flood)"),
    ("crash", "scen_crash", "3. kill -9 during floods and sends"),
    ("disk", "scen_disk", "4. disk full (tmpfs)"),
    ("abuse", "scen_abuse", "5. control-socket abuse"),
    ("soak", "scen_soak", "6. soak with a flapping backend"),
    ("security", "scen_security", "7. security (token, access, file modes, TLS)"),
    ("ids", "scen_ids", "8. kill -9 with envelope ids and catch-up (history backend)"),
    ("xmpp", "scen_xmpp", "9. kill -9 during an XMPP flood (Prosody, archive catch-up)"),
]


class Deadline(Exception):
    pass


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _deadline(signum, frame):
    raise Deadline("the suite's time budget ran out")


def fmt_time(longest) -> str:
    if not longest:
        return "–"
    what, secs = longest
    return f"{secs:.2f} s ({what})"


def table_rows(results: list[Scenario]) -> list[list[str]]:
    rows = []
    for sc in results:
        inbound = f"{sc.in_stored}/{sc.in_pushed}" if sc.in_pushed else "–"
        rows.append([
            sc.title.split(" ", 1)[0] + " " + sc.name,
            fault_summary(sc.faults) or "–",
            str(len(sc.acked)),
            str(sc.delivered),
            str(sc.lost),
            str(sc.duplicates),
            inbound,
            fmt_time(sc.longest),
            f"{sum(c.ok for c in sc.checks)}/{len(sc.checks)}",
            ("PASS" if sc.ok else "FAIL") + (f" ({len(sc.known)} known)" if sc.known else ""),
            f"{sc.duration:.0f} s",
        ])
    return rows


HEAD = ["scenario", "faults injected", "sent", "received", "lost", "dup", "inbound stored/pushed",
        "longest detection/recovery", "checks", "result", "time"]


def print_table(results: list[Scenario]) -> str:
    rows = table_rows(results)
    # The faults column is long: wrap it in the terminal table.
    width = [len(h) for h in HEAD]
    wrapped = []
    for r in rows:
        faults = r[1]
        parts, line = [], ""
        for item in faults.split(", "):
            if line and len(line) + len(item) + 2 > 48:
                parts.append(line + ",")
                line = item
            else:
                line = f"{line}, {item}" if line else item
        parts.append(line)
        wrapped.append((r, parts))
        for i, cell in enumerate(r):
            if i != 1:
                width[i] = max(width[i], len(cell))
        width[1] = max(width[1], max(len(p) for p in parts))
    out = []
    sep = "+" + "+".join("-" * (w + 2) for w in width) + "+"
    out.append(sep)
    out.append("| " + " | ".join(h.ljust(w) for h, w in zip(HEAD, width)) + " |")
    out.append(sep)
    for r, parts in wrapped:
        for k, part in enumerate(parts):
            cells = [(c if k == 0 else "") for c in r]
            cells[1] = part
            out.append("| " + " | ".join(c.ljust(w) for c, w in zip(cells, width)) + " |")
        out.append(sep)
    text = "\n".join(out)
    print(text, flush=True)
    return text


def markdown(results: list[Scenario], started: dt.datetime, total: float, aborted: str | None) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "Sources"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    binary = os.environ.get("CHATLINK_BIN_ORIGIN", os.environ.get("CHATLINK_BIN", "?"))
    lines = [
        f"# chatlinkd chaos suite: {started.strftime('%Y-%m-%d %H:%M:%S UTC')}",
        "",
        f"- commit `{commit}`{' (Sources/ modified in the work tree)' if dirty else ''}; binary `{binary}`",
        f"- mode: {'CHAOS_QUICK' if QUICK else 'full'}; seed {SEED} (rerun with CHAOS_SEED={SEED}); "
        f"total {total / 60:.1f} min; machine: {os.cpu_count()} CPUs",
        f"- result: **{'PASS' if all(s.ok for s in results) and not aborted else 'FAIL'}**"
        + (f" (aborted: {aborted})" if aborted else ""),
        "",
        "| " + " | ".join(HEAD) + " |",
        "|" + "|".join("---" for _ in HEAD) + "|",
    ]
    for r in table_rows(results):
        lines.append("| " + " | ".join(c.replace("|", "/") for c in r) + " |")
    lines += [
        "",
        "*sent*: sends the daemon acknowledged on its control socket (each with a client id); "
        "*received*: how many of those client ids the backend saw at least once; *lost*: acknowledged "
        "sends the backend never saw, plus inbound messages that had to be stored and were not "
        "(complete frames before a cut, floods over a connection that stayed up, messages pushed "
        "while the disk was full, records reported durable before a kill -9); *dup*: extra "
        "deliveries of the same client id (at-least-once); *inbound stored/pushed*: backend-pushed "
        "messages found in the store / pushed; *result*: PASS or FAIL, with the number of known issues "
        "(daemon bugs outside this branch's reach, listed under the scenario; they do not fail it).",
        "",
    ]
    for sc in results:
        lines.append(f"## {sc.title}: {'PASS' if sc.ok else 'FAIL'} ({sc.duration:.0f} s)")
        lines.append("")
        if sc.error:
            lines += ["**Error:**", "", "```", sc.error.strip(), "```", ""]
        if sc.faults:
            lines.append(f"Faults ({len(sc.faults)}): " + "; ".join(sc.fault_details))
            lines.append("")
        if sc.figures:
            lines.append("Figures:")
            lines.append("")
            for k, v in sc.figures:
                lines.append(f"- {k}: {v}")
            lines.append("")
        if sc.times:
            lines.append("Detection and recovery times:")
            lines.append("")
            for k, v in sc.times:
                lines.append(f"- {k}: {v:.2f} s")
            lines.append("")
        lines.append("Checks:")
        lines.append("")
        for c in sc.checks:
            lines.append(f"- {'✔' if c.ok else '✘ **FAIL**'} {c.name}" + (f" ({c.detail})" if c.detail else ""))
        if sc.lost_out:
            lines.append(f"- ✘ **lost acknowledged sends**: {sc.lost_out[:10]}")
        for k in sc.known:
            lines.append(f"- ⚠ known issue, not fixed on this branch: {k}")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> int:
    random.seed(SEED)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    signal.signal(signal.SIGALRM, _deadline)
    soak = float(os.environ.get("CHAOS_SOAK_SECONDS", "60" if QUICK else "1200"))
    budget = int(os.environ.get("CHAOS_TIMEOUT", str(int(soak + (1500 if not QUICK else 600)))))
    signal.alarm(budget)
    only = [s for s in os.environ.get("CHAOS_ONLY", "").replace(" ", ",").split(",") if s]
    unknown = [s for s in only if s not in {n for n, _, _ in SCENARIOS}]
    if unknown:
        print(f"chaos: unknown scenario(s) {unknown}; known: {[n for n, _, _ in SCENARIOS]}", file=sys.stderr)
        return 2
    started = dt.datetime.now(dt.timezone.utc)
    t_start = time.monotonic()
    log(f"chatlinkd chaos suite: {'quick' if QUICK else 'full'} run, seed {SEED}, binary {lib.BIN_CHATLINKD}, "
        f"run dir {RUN_DIR}, budget {budget} s")
    results: list[Scenario] = []
    aborted = None
    for name, module, title in SCENARIOS:
        if only and name not in only:
            continue
        sc = Scenario(name, title)
        results.append(sc)
        log(f"=== {title}")
        try:
            mod = importlib.import_module(module)
            mod.run(sc)
        except (KeyboardInterrupt, Deadline) as e:
            sc.error = f"{type(e).__name__}: {e}"
            aborted = sc.error
        except BaseException:  # noqa: BLE001 - includes pytest's Failed from conftest helpers
            sc.error = traceback.format_exc()
            log(f"scenario {name} raised:\n{sc.error}")
        finally:
            try:
                audit_scenario(sc)
            except BaseException:  # noqa: BLE001
                sc.check("token audit ran", False, traceback.format_exc(limit=2))
            cleanup_daemons(sc)
            for b in sc.backends:
                sc.add_deliveries(b)
            sc.duration = time.monotonic() - sc.started
            if sc.lost_out:
                log(f"  LOST acknowledged sends: {len(sc.lost_out)}: {sc.lost_out[:5]}")
            log(f"=== {title}: {'PASS' if sc.ok else 'FAIL'} in {sc.duration:.0f} s "
                f"({sum(c.ok for c in sc.checks)}/{len(sc.checks)} checks)")
            if sc.ok:
                # Keep the logs, drop bulky stores of passing scenarios.
                for d in sc.daemons:
                    size = sum(p.stat().st_size for p in d.store_dir.glob("*") if p.is_file()) \
                        if d.store_dir.exists() and not os.path.ismount(d.store_dir) else 0
                    if size > 16 << 20:
                        shutil.rmtree(d.store_dir, ignore_errors=True)
        if aborted:
            break
    signal.alarm(0)
    total = time.monotonic() - t_start
    print()
    print(f"chatlinkd chaos suite ({'quick' if QUICK else 'full'}, seed {SEED}, {total / 60:.1f} min)")
    print_table(results)
    md = markdown(results, started, total, aborted)
    out_dir = REPO / ".cache" / "chaos"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"results-{started.strftime('%Y%m%d-%H%M%S')}.md"
    path.write_text(md)
    print(f"results: {path}")
    failed = [sc.name for sc in results if not sc.ok]
    for sc in results:
        for c in sc.checks:
            if not c.ok:
                print(f"FAILED {sc.name}: {c.name}" + (f" ({c.detail})" if c.detail else ""))
        if sc.error:
            print(f"ERROR {sc.name}: {sc.error.strip().splitlines()[-1]}")
        for k in sc.known:
            print(f"KNOWN ISSUE {sc.name}: {k}")
        if sc.lost:
            print(f"LOST {sc.name}: {sc.lost} ({len(sc.lost_out)} acknowledged sends, {sc.in_lost} inbound)")
    if aborted:
        print(f"ABORTED: {aborted}")
    print("chaos: " + ("all scenarios passed" if not failed and not aborted else f"FAILED: {', '.join(failed) or aborted}"))
    return 0 if not failed and not aborted else 1


if __name__ == "__main__":
    sys.exit(main())
