"""Splits a perf profile of chatlinkd's inbound flood into the stages of the inbound path, as
nanoseconds of CPU per message: the table bench/README.md keeps, remade by `make profile`.

    perf script -i perf.data | swift demangle --simplified | stages.py MESSAGES CPU_SECONDS

A sample belongs to the innermost frame of its call chain that names a stage (so a
swift_retain inside the JSON scanner counts for the scanner); samples that name none are
"other". A stage's ns per message is its share of the samples times the process's CPU seconds
over the messages, which assumes the perf window (it attaches after start-up) saw the same mix
as the rest of the flood.
"""

from __future__ import annotations

import sys

import perf_breakdown

# (stage, substrings of demangled or kernel frame names), in the order of the inbound path.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("read: socket to buffer", ("sock_recvmsg", "tcp_recvmsg", "__libc_recv", "ksys_read",
                                "__GI___libc_read", "SocketStream.readAvailable")),
    ("inflate", ("inflate", "Inflater")),
    ("frames: decode, unmask, assemble", ("FrameDecoder", "FrameSession", "MessageAssembler",
                                          "Unmask", "unmask")),
    ("UTF-8 validation", ("UTF8Validator",)),
    ("envelope scan", ("JSONScanner", "EnvelopeProtocol")),
    ("record formatting: seq, time, escaping", ("TimestampFormatter", "StoreRecord", "appendDecimal",
                                                "JSONString", "RecordFormatter")),
    ("link core and delivery", ("LinkCore", "BackendLink", "DurableAcknowledgements", "DeliveryLedger")),
    ("store: buffer append, room index", ("MessageStore", "RotatingLog", "RoomIndex", "AppendFile")),
    ("write: page-cache copy", ("ksys_write", "vfs_write", "__GI___libc_write", "__libc_write",
                                "ksys_pwrite", "writev")),
    ("fsync", ("fdatasync", "do_fsync", "fsync")),
    ("subscriber fan-out, status", ("ControlServer", "ControlService", "Subscription", "forwardLinkEvents",
                                    "DaemonEvent", "Varlink")),
    ("event loop", ("EventLoop", "sd_event", "SocketStream", "WorkerShared")),
]
ORDER = [name for name, _ in STAGES] + ["other"]


def stage_of(stack: list[str]) -> str:
    """The stage of one sample: its innermost frame that names one."""
    for frame in stack:
        for name, marks in STAGES:
            if any(mark in frame for mark in marks):
                return name
    return "other"


def table(stream, messages: int, cpu_seconds: float) -> list[str]:
    counts = dict.fromkeys(ORDER, 0)
    total = 0
    for stack in perf_breakdown.samples(stream):
        counts[stage_of(stack)] += 1
        total += 1
    if not total:
        return ["(no samples)"]
    lines = ["| stage | share of samples | ns per message |", "|---|---|---|"]
    for name in ORDER:
        share = counts[name] / total
        lines.append(f"| {name} | {100 * share:.1f} % | {share * cpu_seconds / messages * 1e9:.0f} |")
    lines.append(f"| all ({total:,} samples, {cpu_seconds:.2f} CPU s, {messages:,} messages) | 100 % | "
                 f"{cpu_seconds / messages * 1e9:.0f} |")
    return lines


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: stages.py MESSAGES CPU_SECONDS < perf-script-output")
    print("\n".join(table(sys.stdin, int(sys.argv[1]), float(sys.argv[2]))))
