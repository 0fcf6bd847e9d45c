"""The benchmark report: Markdown tables, target checks and load lines, written to stdout and
to a results file at the end; progress lines go to stderr while the run goes on."""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path


def fmt(value, digits: int) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def ratio_text(numerator, denominator) -> str:
    if not numerator or not denominator:
        return "—"
    return f"{numerator / denominator:.2f}×"


def check(text: str, ok: bool) -> tuple[str, bool]:
    return text, ok


class Report:
    def __init__(self, path: Path, header: list[str]):
        self.path = path
        self.started = time.monotonic()
        self.lines = ["# ChatLink benchmark (`make bench`)", ""] + [f"- {h}" for h in header] + [""]
        self.summary: list[tuple[str, bool]] = []
        for h in header:
            self.progress(h)

    def progress(self, text: str) -> None:
        print(f"[bench {time.monotonic() - self.started:6.0f} s] {text}", file=sys.stderr, flush=True)

    def table(self, title: str, columns: list[str], rows: list[list[str]]) -> None:
        self.lines += [f"## {title}", "", "| " + " | ".join(columns) + " |",
                       "|" + "|".join("---" for _ in columns) + "|"]
        self.lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        self.lines.append("")
        self.progress(f"done: {title.split(':')[0]}")

    def targets(self, checks: list[tuple[str, bool]]) -> None:
        for text, ok in checks:
            self.lines.append(f"- {'✓' if ok else '✗'} {text}")
            self.summary.append((text, ok))
        self.lines.append("")

    def note(self, text: str) -> None:
        self.lines += [text, ""]

    def load(self, load) -> None:
        self.lines += [f"Machine load during this scenario: {load.text()}.", ""]

    def failure(self, name: str, error: Exception) -> None:
        detail = "".join(traceback.format_exception(error)).rstrip()
        self.progress(f"scenario {name} FAILED: {error}")
        self.lines += [f"## {name}: FAILED", "", "```", detail, "```", ""]
        self.summary.append((f"scenario {name} ran to the end", False))

    def finish(self, load) -> None:
        met = sum(ok for _, ok in self.summary)
        self.lines += ["## Summary", "", f"{met} of {len(self.summary)} targets met.", ""]
        self.lines += [f"- {'✓' if ok else '✗'} {text}" for text, ok in self.summary]
        self.lines += ["", f"Whole run: {load.text()}.", ""]
        text = "\n".join(self.lines)
        self.path.write_text(text)
        print(text)
        self.progress(f"report written to {self.path}")
