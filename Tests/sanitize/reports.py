#!/usr/bin/env python3
"""The sanitizers' reports of a `make sanitize` run, collected from their log files.

Every sanitized process (chatlinkd, chatlinkctl, the unit test bundle) writes its reports to
`log_path` (ASAN_OPTIONS, TSAN_OPTIONS; UBSan's go through ASan's runtime), one file per
process, `<prefix>.<pid>`, in a folder per build. A report never goes unseen: stderr may be
swallowed by whatever started the process, a file is not.

    reports.py check DIR...          prints every report in the folders, names demangled,
                                     and exits 1 when there is any
    reports.py expect DIR KIND...    exits 0 when each KIND (a report's words, or several
                                     joined by "|": any of them) is found in a report of DIR
                                     that names SanitizerProof, else prints what DIR holds
                                     and exits 1
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# The first line of each kind of report, as the runtimes word it.
HEADERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
           "ThreadSanitizer:", "runtime error:", "UndefinedBehaviorSanitizer")


def report_files(folder: Path) -> list[Path]:
    """The report files of `folder` (none when it does not exist), oldest first."""
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if p.is_file()), key=lambda p: p.stat().st_mtime)


def demangled(text: str) -> str:
    """`text` with Swift symbols demangled (swift demangle reads them in running text)."""
    try:
        run = subprocess.run(["swift", "demangle", "--simplified"], input=text, capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return text
    return run.stdout if run.returncode == 0 and run.stdout else text


def describe(files: list[Path], limit: int = 200_000) -> str:
    """Every report of `files` in full (demangled), each under its file's name."""
    parts = []
    for p in files:
        text = p.read_text(errors="replace")
        parts.append(f"==== {p}\n{text[:limit]}")
    return demangled("\n".join(parts))


def kinds(files: list[Path]) -> list[str]:
    """The first line of each report in `files`, for a summary."""
    found = []
    for p in files:
        for line in p.read_text(errors="replace").splitlines():
            if any(h in line for h in HEADERS) and "SUMMARY" not in line:
                found.append(f"{p.name}: {line.strip()}")
    return found


def check(folders: list[Path]) -> int:
    files = [f for folder in folders for f in report_files(folder)]
    if not files:
        print(f"sanitize: no reports in {', '.join(map(str, folders))}")
        return 0
    print(describe(files))
    print(f"sanitize: {len(files)} report file(s):")
    for line in kinds(files) or [f.name for f in files]:
        print(f"  {line}")
    return 1


def expect(folder: Path, wanted: list[str]) -> int:
    files = report_files(folder)
    text = "\n".join(p.read_text(errors="replace") for p in files)
    missing = [k for k in wanted if not any(alternative in text for alternative in k.split("|"))]
    if not files or missing or "SanitizerProof" not in demangled(text):
        print(f"sanitize: expected {wanted} from the SanitizerProof in {folder}; got:")
        print(describe(files) if files else "  (no report at all)")
        return 1
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "check":
        return check([Path(a) for a in argv[1:]])
    if len(argv) >= 3 and argv[0] == "expect":
        return expect(Path(argv[1]), argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
