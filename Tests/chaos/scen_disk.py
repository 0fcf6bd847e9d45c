"""Scenario 4: disk full. The store directory is on a small tmpfs made for the run.

A. Out of space: while inbound traffic flows, a filler file takes every free byte. While
   full: status shows it (store_error, STATUS "STORE DEGRADED"), a send gets
   io.chatlink.Daemon.StorageFailed, the connection stays up, no partial or corrupt line is
   in the file, and the write retries are counted (README: "retried every second"). Once the
   filler is gone: the daemon resumes by itself, every message pushed meanwhile is stored,
   every send acknowledged before is intact (its "out" record) and delivered; a restart
   afterwards finds the store whole.
B. Out of inodes at a rotation: a tmpfs with few inodes, small store files and no retention
   limit, so a rotation needs a new file; the inodes are taken while traffic flows. Same
   expectations: no record written twice, seq strictly increasing, messages.jsonl still
   there, and recovery by itself once inodes are free.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import time
from pathlib import Path

from lib import (
    RUN_DIR,
    Backend,
    Pusher,
    Scenario,
    StoreChecker,
    audit_scenario,
    frozen,
    log,
    make_daemon,
    q,
    rss_kib,
    send_batch,
    settle,
    wait_all_delivered,
    wait_joined,
    wait_open,
)


def mount_tmpfs(path: Path, options: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "chaos-tmpfs", str(path)], check=True)
    return path


def umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill_bytes(path: Path) -> int:
    """Writes `path` until the filesystem has no byte left; returns the bytes written."""
    total = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 64 << 10, 4096, 512, 1):
            block = b"\0" * size
            while True:
                try:
                    n = os.write(fd, block)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
                total += n
                if n < size:
                    break
    finally:
        os.close(fd)
    return total


def fill_inodes(directory: Path) -> int:
    directory.mkdir(exist_ok=True)
    n = 0
    while True:
        try:
            (directory / f"i{n}").touch()
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            return n
        n += 1


def count_write_attempts(pid: int, seconds: float) -> tuple[int, int]:
    """strace the daemon for `seconds`: (write() calls that failed with ENOSPC, ftruncate calls)."""
    out = subprocess.run(["timeout", str(seconds), "strace", "-f", "-qq", "-e", "trace=write,ftruncate",
                          "-e", "status=failed,successful", "-p", str(pid)], capture_output=True, text=True)
    text = out.stderr
    return len(re.findall(r"= -1 ENOSPC", text)), len(re.findall(r"ftruncate\(", text))


def run(sc: Scenario) -> None:
    backend = Backend().start()
    sc.backends.append(backend)
    mounts = []
    try:
        a = mount_tmpfs(RUN_DIR / sc.name / "tmpfs-space", "size=8m,mode=0755")
        mounts.append(a)
        part_a(sc, backend, a)
        b = mount_tmpfs(RUN_DIR / sc.name / "tmpfs-inodes", "size=16m,nr_inodes=48,mode=0755")
        mounts.append(b)
        part_b(sc, backend, b)
    finally:
        audit_scenario(sc)
        for d in sc.daemons:
            d.cleanup()
        backend.stop()
        for m in mounts:
            umount(m)


def store_daemon(sc: Scenario, backend: Backend, name: str, store: Path, extra: dict | None = None):
    store_cfg = {"Directory": str(store), **(extra or {})}
    d = make_daemon(sc, name, backend.url, {"Store": store_cfg}, start=False)
    d.store_dir = store
    d.configure({"Store": store_cfg})
    d.start()
    return d


def persistent_bad(checker: StoreChecker) -> list[str]:
    """Lines that do not parse, and still do not a moment later (a write can be under way)."""
    first = checker.read()["bad"]
    if not first:
        return []
    time.sleep(0.15)
    second = set(checker.read()["bad"])
    return [b for b in first if b in second]


def part_a(sc: Scenario, backend: Backend, mnt: Path) -> None:
    log("disk: out of space")
    d = store_daemon(sc, backend, "space", mnt / "state")
    if not sc.check("A: daemon runs with its store on the tmpfs", wait_open(d, 15)):
        return
    wait_joined(backend, 7)
    checker = StoreChecker(d.store_dir)
    pusher = Pusher(backend, rate=100, tag="disk", size=1000)
    pusher.start()
    time.sleep(2)
    before, _ = send_batch(d, 10, "before-full")
    sc.ack(before)
    sc.check("A: sends before the fill delivered", wait_all_delivered(backend, before, 10) is not None)
    settle(lambda: (s := d.try_status()) and s["outbox"] == 0, 10)
    connects = d.try_status()["connects"]
    rss0 = rss_kib(d.pid)

    # ---- fill
    t0 = time.monotonic()
    filler = mnt / "filler"
    filled = fill_bytes(filler)
    sc.fault("disk full", f"filler file took the last {filled // 1024} KiB of an 8 MiB tmpfs")
    st = settle(lambda: (s := d.try_status()) and s.get("store_error") and s, 10)
    if sc.check("A: status shows the store error", st is not None):
        sc.time("A: disk full → store_error in status", time.monotonic() - t0)
        sc.check("A: STATUS text says STORE DEGRADED", "STORE DEGRADED" in st["text"], st["text"])
        sc.check("A: the error names the cause", "No space left on device" in st["store_error"], st["store_error"])
    acked, errors = send_batch(d, 5, "while-full")
    sc.ack(acked)
    names = {e.get("error") for e in errors}
    reasons = [e.get("parameters", {}).get("reason", "") for e in errors]
    sc.check("A: new sends are refused with io.chatlink.Daemon.StorageFailed",
             len(errors) == 5 and names == {"io.chatlink.Daemon.StorageFailed"},
             f"{len(errors)} refused {sorted(n for n in names if n)}, {len(acked)} accepted; reason {reasons[:1]}")
    sc.check("A: the refusal says why", reasons and all("No space left on device" in r for r in reasons), reasons[:1])
    attempts, truncates = count_write_attempts(d.pid, 3)
    sc.figure("A: while full, store write attempts (strace, 3 s)",
              f"{attempts} write() calls failed with ENOSPC, {truncates} ftruncate roll-backs, "
              f"with {pusher.rate:.0f} inbound messages/s")
    sc.check("A: while full, writes are retried about once a second (README: 'retried every second'), "
             "not on every inbound message", attempts <= 3 * 3 + 2, f"{attempts / 3:.0f} failed writes/s")
    full_for = q(10, 5)
    bad_seen = []
    states = set()
    t_end = time.monotonic() + full_for
    while time.monotonic() < t_end:
        bad_seen += persistent_bad(checker)
        s = d.try_status()
        states.add(s["state"] if s else "no answer")
        time.sleep(0.4)
    ping = d.call("io.chatlink.Daemon.Ping")
    st = d.try_status() or {}
    sc.check("A: the connection stays up while the disk is full", states == {"open"} and st.get("connects") == connects
             and "error" not in ping, f"states {sorted(states)}, connects {connects} → {st.get('connects')}, ping {ping.get('parameters')}")
    sc.check("A: no partial or corrupt line in the store while full", not bad_seen, bad_seen[:2])
    sc.figure("A: RSS while full", f"{rss0} → {rss_kib(d.pid)} KiB (records waiting in memory)")

    # ---- free
    t1 = time.monotonic()
    filler.unlink()
    st = settle(lambda: (s := d.try_status()) and not s.get("store_error") and s, 15)
    if sc.check("A: the daemon resumes by itself once space is free (store_error clears)", st is not None):
        sc.time("A: space freed → store_error cleared", time.monotonic() - t1)
    time.sleep(1)
    pusher.stop()
    pushed = pusher.pushed
    r = settle(lambda: (r := checker.read("disk ")) and len(r["records"]) >= pushed and r, 20) or checker.read("disk ")
    st = d.try_status() or {}
    stayed = st.get("connects") == connects
    sc.in_pushed += pushed
    sc.in_stored += len(r["records"])
    sc.in_strict = True
    if stayed:
        sc.in_lost += max(0, pushed - len(r["records"]))
    sc.check("A: every message pushed while full was stored afterwards", len(r["records"]) >= pushed,
             f"{len(r['records'])} of {pushed}")
    with frozen(d):
        r = checker.read()
    sc.check("A: store whole: every line parses, seq strictly increasing, no repeat or gap",
             not r["bad"] and not r["problems"], "; ".join(r["bad"][:2] + r["problems"]))
    after, _ = send_batch(d, 10, "after-full")
    sc.ack(after)
    sc.check("A: sends after recovery delivered", wait_all_delivered(backend, after, 15) is not None)
    outs = {x.get("id") for x in StoreChecker_out(d.store_dir)}
    missing = [a["id"] for a in before if a["id"] not in outs]
    sc.check("A: every send acknowledged before the fill is intact (its 'out' record is in the store)", not missing,
             f"missing {missing[:3]}")

    # ---- restart: what is on disk is all there is
    delivered_before = len(backend.delivered_ids())
    d.stop()
    d.start()
    st = wait_open(d, 15)
    settle(lambda: (s := d.try_status()) and s["outbox"] == 0, 15)
    with frozen(d):
        r2 = checker.read()
    sc.check("A: after a restart the store is whole and seq continues", not r2["bad"] and not r2["problems"]
             and r2["last"] >= r["last"], "; ".join(r2["bad"][:2] + r2["problems"]))
    time.sleep(1)
    sc.figure("A: deliveries replayed by the restart (acks lost while the disk was full)",
              len(backend.delivered_ids()) - delivered_before)


def StoreChecker_out(store_dir: Path) -> list[dict]:
    import json

    out = []
    for p in Path(store_dir).glob("messages.jsonl*"):
        for line in p.read_bytes().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("dir") == "out":
                out.append(rec)
    return out


def part_b(sc: Scenario, backend: Backend, mnt: Path) -> None:
    log("disk: out of inodes at a rotation")
    d = store_daemon(sc, backend, "inodes", mnt / "state", {"MaxFileSize": "64K", "MaxFiles": "1000"})
    if not sc.check("B: daemon runs with its store on the tmpfs", wait_open(d, 15)):
        return
    wait_joined(backend, 7)
    checker = StoreChecker(d.store_dir)
    pusher = Pusher(backend, rate=100, tag="inode", size=300)
    pusher.start()
    time.sleep(1.5)
    before, _ = send_batch(d, 5, "before-inodes")
    sc.ack(before)
    wait_all_delivered(backend, before, 10)
    connects = d.try_status()["connects"]
    t0 = time.monotonic()
    n = fill_inodes(mnt / "inodes")
    sc.fault("no inodes", f"{n} empty files took every free inode (rotation needs a new file)")
    st = settle(lambda: (s := d.try_status()) and s.get("store_error") and s, 10)
    if sc.check("B: status shows the store error", st is not None):
        sc.time("B: inodes exhausted → store_error in status", time.monotonic() - t0)
    time.sleep(q(4, 3))
    names = sorted(p.name for p in d.store_dir.iterdir())
    with frozen(d):
        r = checker.read()
    sc.figure("B: store files while out of inodes", f"{names[:3]}…{names[-3:]} ({len(names)} files)")
    sc.check("B: messages.jsonl still exists while rotation fails", "messages.jsonl" in names, names[:4])
    sc.check("B: no record written twice while rotation fails (seq strictly increasing, no repeat)",
             not r["problems"], "; ".join(r["problems"]) + f" ({len(r['seqs'])} lines for last seq {d.try_status()['last_seq']})"
             if r["problems"] else "")
    t1 = time.monotonic()
    for p in (mnt / "inodes").iterdir():
        p.unlink()
    st = settle(lambda: (s := d.try_status()) and not s.get("store_error") and s, 10)
    if sc.check("B: the daemon resumes by itself once inodes are free", st is not None,
                "" if st else f"still: {(d.try_status() or {}).get('store_error')}"):
        sc.time("B: inodes freed → store_error cleared", time.monotonic() - t1)
    pusher.stop()
    stt = d.try_status() or {}
    sc.check("B: the connection stays up", stt.get("connects") == connects and stt.get("state") == "open",
             f"connects {connects} → {stt.get('connects')}")
    df = subprocess.run(["df", "-h", str(mnt)], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    sc.figure("B: tmpfs usage afterwards", df)
    settle(lambda: len({x["seq"] for x in checker.read("inode ")["records"]}) >= pusher.pushed, 15)
    with frozen(d):
        r = checker.read("inode ")
    distinct = len({x["seq"] for x in r["records"]})
    sc.in_pushed += pusher.pushed
    sc.in_stored += distinct
    if stt.get("connects") == connects:
        sc.in_lost += max(0, pusher.pushed - distinct)
    sc.check("B: every message pushed while out of inodes was stored once inodes were free",
             distinct >= pusher.pushed, f"{distinct} of {pusher.pushed}")
    sc.figure("B: inbound", f"{pusher.pushed} pushed, {distinct} distinct seqs stored in {len(r['records'])} lines")
