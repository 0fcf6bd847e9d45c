"""One resource sample of a process, from /proc: what the soaks fit (Tests/soak/fit.py)."""

from __future__ import annotations

import os

CLK_TCK = os.sysconf("SC_CLK_TCK")


def sample(pid: int) -> dict:
    """{"rss_kib", "anon_kib", "fds", "threads", "cpu_s"} of `pid` now: VmRSS and RssAnon of
    /proc/PID/status, the entries of /proc/PID/fd and /proc/PID/task, utime + stime of
    /proc/PID/stat. Raises OSError when the process is gone."""
    out: dict = {"rss_kib": None, "anon_kib": None}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                out["rss_kib"] = int(line.split()[1])
            elif line.startswith("RssAnon:"):
                out["anon_kib"] = int(line.split()[1])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    out["threads"] = len(os.listdir(f"/proc/{pid}/task"))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    out["cpu_s"] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    return out
