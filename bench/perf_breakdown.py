"""Summarises `perf script` call chains (demangled) read from stdin.

    perf script -i perf.data | swift demangle --simplified | perf_breakdown.py MODE [FRAME] [N]

    top                the N frames with the most inclusive samples (self + callees)
    callees FRAME      how FRAME's inclusive samples split over the functions it calls directly
    callers FRAME      which functions called FRAME, weighted by FRAME's inclusive samples

FRAME is a substring of the demangled name ("swift_retain", "EnvelopeProtocol.decode").
Percentages are of all samples in the input. Used by bench/profile.py.
"""

from __future__ import annotations

import collections
import sys


def samples(stream):
    """Yields each sample's call chain, innermost frame first, offsets stripped."""
    stack: list[str] = []
    for line in stream:
        line = line.rstrip("\n")
        if not line.strip():
            if stack:
                yield stack
            stack = []
        elif line.startswith((" ", "\t")):
            parts = line.strip().split(" ", 1)
            name = parts[1].rsplit(" (", 1)[0] if len(parts) > 1 else parts[0]
            stack.append(name.split("+0x", 1)[0])
    if stack:
        yield stack


def summarise(stream, mode: str, frame: str | None, top: int) -> list[str]:
    total = 0
    counts: collections.Counter = collections.Counter()
    matched = 0
    for stack in samples(stream):
        total += 1
        if mode == "top":
            counts.update(set(stack))
        elif mode == "callees":
            for depth, name in enumerate(stack):
                if frame in name:
                    matched += 1
                    counts[stack[depth - 1] if depth else "(self)"] += 1
                    break
        elif mode == "callers":
            for depth, name in enumerate(stack):
                if frame in name:
                    matched += 1
                    counts[stack[depth + 1] if depth + 1 < len(stack) else "(root)"] += 1
                    break
    total = max(total, 1)
    out = []
    if mode != "top":
        out.append(f"{frame}: {100 * matched / total:.1f}% of {total} samples ({mode}):")
    for name, n in counts.most_common(top):
        out.append(f"{100 * n / total:6.2f}%  {name[:150]}")
    return out


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "top"
    frame = sys.argv[2] if len(sys.argv) > 2 and mode != "top" else None
    top = int(sys.argv[-1]) if sys.argv[-1].isdigit() else 20
    print("\n".join(summarise(sys.stdin, mode, frame, top)))
