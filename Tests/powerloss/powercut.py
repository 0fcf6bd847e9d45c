"""Power cuts under chatlinkd: the daemon runs with its store on lazyfs.py, a workload runs, the
power is cut at a random moment (only what was fsynced survives, plus torn unsynced writes), and
the daemon is started again on what is left. After every cut the rules of README "Durability"
are checked; every broken rule is a violation.

    powercut.py [--cuts N] [--seconds S] [--seed N] [--scenario NAME ...] [--expect-violation]

The binaries come from $CHATLINK_BIN. Needs root (FUSE). Exits 1 on any violation (or, with
--expect-violation, when there was none), 2 when the harness itself could not run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))
sys.path.insert(0, str(HERE.parent / "Fixtures"))
from backend import Backend, Publisher  # noqa: E402
from conftest import BIN, Daemon, Sender, Subscription, delivery_problems, read_store  # noqa: E402
from lazymount import LazyMount  # noqa: E402

# A flood still being written when its daemon is killed makes asyncio warn once per frame.
logging.getLogger("asyncio").setLevel(logging.ERROR)


# ---------------------------------------------------------------------------- scenarios


@dataclass
class Scenario:
    name: str
    sync: str
    store: dict = field(default_factory=dict)
    flood: int = 0  # inbound messages per round
    senders: int = 0  # threads of single acknowledged sends
    batches: bool = False  # chatlinkctl send - batches
    blackhole: bool = False  # the backend confirms nothing until a random moment (outbox grows)
    restart: bool = False  # a reload and a clean restart before the workload
    # Whether the daemon creates its store directory (its first mkdir must be made durable);
    # otherwise the directory is on the disk already, so the files' own creation is tested.
    fresh_store: bool = True
    # The envelope's catch-up extension against the backend's history mode: the flood is
    # published with ids, joins carry the newest stored id, and every replay starts
    # `REPLAY_OVERLAP` messages early (redeliveries the dedupe window must drop).
    catchup: bool = False
    # Catch-up floods: how long one lasts, and when in it the cut may come (seconds).
    flood_seconds: float = 1 / 3
    cut_window: tuple[float, float] = (0.02, 0.45)


SCENARIOS = [
    Scenario("flood always", "always", flood=4000, senders=1),
    Scenario("flood batch", "batch", flood=4000, senders=1),
    Scenario("flood none", "none", flood=4000),
    Scenario("sends batch", "batch", senders=2, batches=True, fresh_store=False),
    Scenario("rotation batch", "batch", {"MaxFileSize": "64K", "MaxFiles": "1000"}, flood=3000, senders=1,
             fresh_store=False),
    Scenario("rotation always", "always", {"MaxFileSize": "32K", "MaxFiles": "1000"}, flood=3000,
             fresh_store=False),
    Scenario("outbox compaction", "batch", senders=2, batches=True, blackhole=True, fresh_store=False),
    Scenario("reload restart", "batch", flood=2000, senders=1, restart=True),
    # Smaller floods than the others: every restart rebuilds the dedupe window from the store's
    # tail, slowly in a debug build, and the store keeps every cut's survivors.
    Scenario("dedupe batch", "batch", flood=2000, catchup=True),
    # The window's snapshot written every second while the flood goes on (two seconds of it):
    # cuts land before, during and after its writes, and each start reads the snapshot and the
    # records after it.
    Scenario("dedupe checkpoints batch", "batch", {"DedupeSnapshotSec": "1"}, flood=2000, catchup=True,
             flood_seconds=2.0, cut_window=(0.5, 2.8)),
]

CATCHUP_ROOMS = (7, "ops")
REPLAY_OVERLAP = 200


@dataclass
class Tally:
    cuts: int = 0
    at_risk: int = 0  # records written but not reported durable when the power went
    lost: int = 0  # of those, records gone after the restart
    torn: int = 0  # torn lines left in the store after the restart (recovery must cut them)
    repaired: int = 0  # torn last lines recovery cut off (allowed)
    duplicates: int = 0
    acked_lost: int = 0
    acked: int = 0
    largest_window_ms: float = 0.0
    renames: int = 0  # rotations and compactions that happened (each renames files)
    mid_rename: int = 0  # cuts with a store or outbox file name not yet durable
    ids_lost: int = 0  # catch-up: messages whose records a cut took
    ids_restored: int = 0  # of those, stored again once the backend redelivered them
    redeliveries_dropped: int = 0  # catch-up: duplicates the restarted daemons dropped
    snapshot_starts: int = 0  # catch-up: restarts whose dedupe window came from its snapshot
    violations: list[str] = field(default_factory=list)


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass
class StoreFile:
    generation: int  # 0: the live file, n: messages.jsonl.n
    lines: list[bytes]  # whole lines, without their newline
    tail: bytes  # bytes after the last newline (a torn line)


def store_files(store_dir: Path) -> list[StoreFile]:
    """The store files of a directory nothing writes to, oldest first."""
    files = []
    for p in store_dir.glob("messages.jsonl*"):
        suffix = p.name[len("messages.jsonl"):]
        if suffix == "" or (suffix.startswith(".") and suffix[1:].isdigit()):
            data = p.read_bytes()
            *lines, tail = data.split(b"\n")
            files.append(StoreFile(int(suffix[1:] or 0), lines, tail))
    return sorted(files, key=lambda f: -f.generation)


def parse_line(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
        return record if isinstance(record.get("seq"), int) else None
    except ValueError:
        return None


def records_by_seq(files: list[StoreFile]) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for f in files:
        for line in f.lines:
            record = parse_line(line)
            if record is not None:
                out.setdefault(record["seq"], line)
    return out


class BatchSender(threading.Thread):
    """`chatlinkctl --json send -` with many lines: every receipt it prints is acknowledged."""

    def __init__(self, socket_path: str, prefix: str, count: int = 1500, pad: int = 0):
        super().__init__(daemon=True)
        self.socket_path, self.prefix, self.count = socket_path, prefix, count
        self.suffix = " " + "p" * pad if pad else ""
        self.acked: list[dict] = []
        self.proc: subprocess.Popen | None = None

    def run(self):
        lines = "".join(f"{self.prefix}-{i}{self.suffix}\n" for i in range(self.count))
        self.proc = subprocess.Popen(
            [str(BIN / "chatlinkctl"), "--socket", self.socket_path, "--json", "send", "--room", "ops", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            self.proc.stdin.write(lines)
            self.proc.stdin.close()
        except OSError:
            pass
        for i, line in enumerate(self.proc.stdout):
            try:
                receipt = json.loads(line)
            except ValueError:
                continue
            self.acked.append({**receipt, "room": "ops", "text": f"{self.prefix}-{i}{self.suffix}"})
        self.proc.wait()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        self.join(10)


class CutSender(Sender):
    """The suite's Sender, quiet when the power cut fails its last send (StorageFailed/EIO)."""

    def run(self):
        try:
            super().run()
        except AssertionError:
            return


class PowerDaemon(Daemon):
    """The integration suite's daemon, with its store on the lazy mount."""

    def __init__(self, workdir: Path, backend_url: str, store_dir: Path, overrides: dict):
        super().__init__(workdir, backend_url, overrides)
        self.store_dir = store_dir
        self.configure(overrides)


def run_scenario(sc: Scenario, cuts: int, rng: random.Random, root: Path, deadline: float,
                 stop_at_violation: bool = False) -> Tally:
    """`cuts` power cuts (fewer once `deadline`, a monotonic time, has passed), each followed by
    a restart and the checks; `stop_at_violation` ends it at the first broken rule."""
    tally = Tally()
    backing, mnt, live = root / "disk", root / "mnt", root / "live"
    backing.mkdir(parents=True)
    if not sc.fresh_store:
        (backing / "state").mkdir(mode=0o750)
    backend = (Backend(history=(cuts + 1) * sc.flood, replay_overlap=REPLAY_OVERLAP) if sc.catchup
               else Backend()).start()
    interval_ms = 50
    overrides = {"Store": {"Sync": sc.sync, "SyncIntervalMSec": str(interval_ms), **sc.store},
                 "Outbox": {"MaxMessages": "100000"}}
    if sc.catchup:
        overrides["Envelope"] = {"IDField": "msg_id", "SinceField": "since"}
    lost_ids: dict = {}  # catch-up: per room, the ids whose records the last cut took
    cut_conn = 0  # catch-up: the backend's newest connection at the last cut
    # The store is a directory below the mount's root, so its own creation must be made durable.
    daemon = PowerDaemon(root / "daemon", backend.url, mnt / "state", overrides)
    mount = LazyMount(backing, mnt, root / "lazyfs.sock")
    acked_all: list[dict] = []
    durable = 0
    disk_last = 0
    room7: list[int] = []

    def violation(text: str) -> None:
        tally.violations.append(f"{sc.name}, cut {tally.cuts}: {text}")

    try:
        for round in range(cuts + 1):
            mount.start()
            started_at = time.monotonic()
            try:
                daemon.start(timeout=30)
            except BaseException as e:  # noqa: BLE001 - pytest.fail's exception included
                violation(f"the daemon did not reach READY on the surviving state: {e}")
                break
            status = daemon.status()
            if round > 0:
                check_restart(daemon, status, durable, disk_last, room7, violation)
                if sc.catchup:
                    check_catch_up(daemon, backend, lost_ids, cut_conn, tally, violation)
                    tally.snapshot_starts += any("dedupe window read from its snapshot" in line
                                                 for _, line in daemon.log_lines(started_at))
            if round == cuts or time.monotonic() > deadline:
                break
            if stop_at_violation and tally.violations:
                return tally
            if sc.catchup and round == 0:
                seed_rooms(daemon, backend)
            if sc.restart:
                daemon.send_signal(1)  # SIGHUP: a reload
                daemon.wait_ready()
                daemon.stop()
                daemon.start(timeout=30)
            if sc.blackhole:
                backend.blackhole()
            # The workload, and the cut at a random moment of it.
            # Under Sync=always a message event says its record is durable, as GetStatus does.
            sub = Subscription(daemon) if sc.sync == "always" else None
            if sub is not None:
                sub.wait_for(lambda e: e["event"] == "status", 5)  # the stream is in place
            senders = [CutSender(daemon.socket_path, f"c{round}s{i}") for i in range(sc.senders)]
            # A long outbox: big texts make the log pass the compaction threshold (1 MiB) often.
            batches = ([BatchSender(daemon.socket_path, f"c{round}b", 6000 if sc.blackhole else 1500,
                                    400 if sc.blackhole else 0)] if sc.batches else [])
            for t in senders + batches:
                t.start()
            if sc.catchup:
                # `flood_seconds` long (a third of a second unless the scenario says): many cuts land in it.
                flood = Publisher(backend, list(CATCHUP_ROOMS), sc.flood, rate=sc.flood / sc.flood_seconds,
                                  tag=f"c{round}-")
                flood.start()
            else:
                flood = backend.flood(sc.flood, size=200, room=7, tag=f"-c{round}") if sc.flood else None
            # Catch-up floods are short (see SCENARIOS): cut most of them in the middle.
            wait = rng.uniform(*sc.cut_window) if sc.catchup else rng.uniform(0.05, 1.2)
            if sc.blackhole:
                time.sleep(wait / 2)
                backend.unblackhole()  # the long outbox is confirmed in bursts from now on
                wait /= 2
            time.sleep(wait)
            try:
                before = daemon.status(timeout=2)
            except (OSError, ValueError, AssertionError):
                before = None
            # Every send acknowledged so far must survive: the receipts before the cut count.
            acked = [a for t in senders + batches for a in t.acked]
            told = [e["record"]["seq"] for e in (sub.snapshot() if sub else []) if e.get("event") == "message"]
            risk = mount.cut(rng.randrange(1 << 30), torn=True, live=live)
            cut_at = time.time()
            daemon.kill()
            if sub is not None:
                sub.close()
            for t in senders:
                t.stop.set()
            for t in senders + batches:
                t.stop() if isinstance(t, BatchSender) else t.join(10)
            if isinstance(flood, Publisher):
                flood.done.wait(30)
            elif flood is not None:
                try:
                    flood.result(30)
                except Exception:  # noqa: BLE001 - the daemon went away under the flood
                    pass
            if sc.blackhole:
                backend.unblackhole()
            mount.stop()
            tally.cuts += 1
            tally.renames += risk.get("renames", 0)
            acked_all += acked
            if before is not None and sc.sync != "none":
                durable = max(durable, before["durable_seq"], *told)
            names = {p.name for p in (live / "state").glob("*")} ^ {p.name for p in (backing / "state").glob("*")}
            tally.mid_rename += bool(names - {".index"})
            disk_last, room7 = check_disk(live / "state", backing / "state", durable, cut_at, sc, tally,
                                   violation, interval_ms, risk)
            if sc.catchup:
                cut_conn = max((c.id for c in backend.connections()), default=0)
                lost_ids = ids_taken_by_the_cut(live / "state", backing / "state")
                tally.ids_lost += sum(len(v) for v in lost_ids.values())
        if sc.store.get("DedupeSnapshotSec") and tally.cuts >= 3 and not tally.snapshot_starts:
            violation(f"none of {tally.cuts} restarts read the dedupe window's snapshot")
        # Every send acknowledged before a cut is delivered, at least once, in order.
        acked_all.sort(key=lambda a: a["count"])
        end = time.monotonic() + 30
        problems = delivery_problems(backend, acked_all)
        while problems and time.monotonic() < end:
            time.sleep(0.2)
            problems = delivery_problems(backend, acked_all)
        seen = {d.get("client_id") for d in backend.sends()}
        tally.acked_lost = sum(1 for a in acked_all if a["id"] not in seen)
        tally.acked = len(acked_all)
        for p in problems:
            violation(p)
    finally:
        daemon.cleanup()
        mount.stop()
        backend.stop()
    return tally


def check_disk(live_dir: Path, disk_dir: Path, durable: int, cut_at: float, sc: Scenario, tally: Tally,
               violation, interval_ms: int, risk: dict) -> tuple[int, list[int]]:
    """Checks what survived a cut against what processes saw at the cut; returns the last seq
    on disk (after the recovery's cut of a torn last line) and the seqs of room 7 there."""
    seen = records_by_seq(store_files(live_dir)) if live_dir.exists() else {}
    files = store_files(disk_dir) if disk_dir.exists() else []
    for f in files:
        if f.tail:
            if f.generation == 0:
                tally.repaired += 1  # the one tear recovery cuts off at start
            else:
                tally.torn += 1
                violation(f"messages.jsonl.{f.generation} ends in a torn line: a rotated file "
                          "must be complete")
        bad = [line for line in f.lines if parse_line(line) is None]
        tally.torn += len(bad)
        for line in bad[:3]:
            violation(f"a torn or corrupt line inside generation {f.generation}: {line[:120]!r}")
    seqs = [parse_line(line)["seq"] for f in files for line in f.lines if parse_line(line)]
    duplicates = len(seqs) - len(set(seqs))
    tally.duplicates += duplicates
    if duplicates:
        violation(f"{duplicates} seqs appear twice on disk")
    if any(b <= a for a, b in zip(seqs, seqs[1:])):
        violation("seq does not increase across the store files")
    have = records_by_seq(files)
    last = max(have, default=0)
    if sc.sync != "none":
        gone = [q for q in seen if q <= durable and q not in have]
        changed = [q for q in seen if q <= durable and q in have and have[q] != seen[q]]
        if gone:
            violation(f"{len(gone)} records reported durable (<= {durable}) are gone: seq {gone[:3]}..; "
                      f"lazyfs: {risk}")
        if changed:
            violation(f"{len(changed)} records reported durable changed: seq {changed[:3]}")
    written = max(seen, default=0)
    tally.at_risk += max(0, written - durable)
    lost = [q for q in seen if q > last]
    tally.lost += len(lost)
    if sc.sync == "batch" and lost:
        window = (cut_at - parse_time(json.loads(seen[min(lost)])["time"])) * 1000
        tally.largest_window_ms = max(tally.largest_window_ms, window)
        # The claim: a power cut loses what arrived in the last interval plus one fsync. A
        # loaded test machine gets a generous fsync allowance; the table shows the measure.
        if window > interval_ms + BATCH_FSYNC_ALLOWANCE_MS:
            violation(f"Sync=batch lost {len(lost)} records received {window:.0f} ms before the cut")
    room7 = [q for q, line in sorted(have.items()) if str(json.loads(line).get("room")) == "7"]
    return last, room7


# How long one fsync (plus the loop's turn) may take on a shared test machine, for the
# Sync=batch loss window rule.
BATCH_FSYNC_ALLOWANCE_MS = 1000


def check_restart(daemon, status, durable: int, disk_last: int, room7: list[int], violation) -> None:
    """The daemon restarted on the surviving state: its seq, and History through the indexes."""
    if status["last_seq"] < max(durable, disk_last):
        violation(f"restarted with last seq {status['last_seq']}, below the durable seq {durable} "
                  f"(disk holds up to {disk_last}): a seq would be used twice")
    since = max(0, disk_last - 3000)
    reply = daemon.call("io.chatlink.Daemon.History", {"room": "7", "since_seq": since, "limit": 10000})
    if "error" in reply:
        violation(f"History failed after the restart: {reply}")
        return
    got = [r["seq"] for r in reply["parameters"]["records"] if r["seq"] <= disk_last]
    want = [q for q in room7 if since < q <= disk_last]
    if got != want:
        extra = sorted(set(got) - set(want))
        missing = sorted(set(want) - set(got))
        violation(f"History of room 7 disagrees with the store: {len(got)} vs {len(want)} records "
                  f"({len(got) - len(set(got))} repeated, {len(extra)} not in the files, e.g. {extra[:3]}, "
                  f"{len(missing)} missing, e.g. {missing[:3]}; since {since}, disk up to {disk_last}, "
                  f"History from {got[:1]} to {got[-1:]})")


def message_ids(store_dir: Path) -> dict:
    """The ids of the inbound messages in a store nothing writes to, per room, in seq order."""
    out: dict = {}
    for f in store_files(store_dir) if store_dir.exists() else []:
        for line in f.lines:
            record = parse_line(line)
            if record and record.get("dir") == "in" and "id" in record:
                out.setdefault(record["room"], []).append(int(record["id"]))
    return out


def ids_taken_by_the_cut(live_dir: Path, disk_dir: Path) -> dict:
    """Per room, the ids whose records processes saw before the cut and the disk lost."""
    seen, kept = message_ids(live_dir), message_ids(disk_dir)
    return {room: set(ids) - set(kept.get(room, [])) for room, ids in seen.items()}


def seed_rooms(daemon, backend) -> None:
    """A first message in each room, made durable before any cut: a room with nothing stored
    is joined without `since`, and the backend then sends only what comes next (the extension's
    rule), so without it a cut that took a room's every record would lose its first flood."""
    deadline = time.monotonic() + 15
    while not all(backend.members(room) for room in CATCHUP_ROOMS):
        if time.monotonic() > deadline:
            raise RuntimeError("the daemon did not join its rooms within 15 s")
        time.sleep(0.05)
    for room in CATCHUP_ROOMS:
        backend.publish(room, "seed")
    while time.monotonic() < deadline:
        status = daemon.status()
        if status["last_seq"] >= len(CATCHUP_ROOMS) and status["durable_seq"] == status["last_seq"]:
            return
        time.sleep(0.05)
    raise RuntimeError("the seed messages were not stored within 15 s")


def check_catch_up(daemon, backend, lost_ids: dict, cut_conn: int, tally: Tally, violation) -> None:
    """The daemon restarted on what survived the cut joins after the newest surviving id: the
    backend replays from a little before it. Every message it ever published must end up
    stored exactly once, in order: those whose records the cut took stored again (the window
    was rebuilt from what survived, never from what the cut took), and the survivors sent
    again all dropped, no more and no fewer."""
    published = {room: backend.published(room) for room in CATCHUP_ROOMS}
    want = sum(len(v) for v in published.values())
    deadline = time.monotonic() + 60
    sinces: dict = {}
    while len(sinces) < len(CATCHUP_ROOMS) and time.monotonic() < deadline:
        sinces = {data["room_id"]: data.get("since") for _, conn, data in backend.join_data() if conn > cut_conn}
        time.sleep(0.05)
    if len(sinces) < len(CATCHUP_ROOMS) or None in sinces.values():
        violation(f"the restarted daemon did not join every room after its newest stored id: {sinces}")
        return
    # The survivors the backend sends again: from REPLAY_OVERLAP before the one after since.
    redelivered = sum(min(REPLAY_OVERLAP, int(since)) for since in sinces.values())
    while True:
        # Read once the store is quiet (everything durable, nothing written while reading),
        # so no write or rotation runs under the reader.
        status = daemon.status()
        records, bad = read_store(daemon.store_dir)
        after = daemon.status()
        stored: dict = {}
        for r in records:
            if r["dir"] == "in" and "id" in r:
                stored.setdefault(r["room"], []).append(int(r["id"]))
        quiet = status["durable_seq"] == status["last_seq"] == after["last_seq"] and not bad
        replayed = status["duplicates_dropped"] >= redelivered
        if quiet and replayed and sum(len(set(v)) for v in stored.values()) >= want:
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    tally.redeliveries_dropped += status["duplicates_dropped"]
    for room, ids in published.items():
        got = stored.get(room, [])
        missing = set(ids) - set(got)
        if missing:
            violation(f"room {room}: {len(missing)} published messages not stored after the restart, "
                      f"e.g. {sorted(missing)[:3]} ({len(lost_ids.get(room, ()))} taken by the cut)")
        if len(got) != len(set(got)):
            violation(f"room {room}: {len(got) - len(set(got))} messages stored twice")
        if got != sorted(got):
            violation(f"room {room}: messages stored out of order")
        tally.ids_restored += len(lost_ids.get(room, set()) & set(got))
    if status["duplicates_dropped"] != redelivered:
        violation(f"{redelivered} stored messages sent again after joins after {sinces}, "
                  f"{status['duplicates_dropped']} dropped")


def table(results: list[tuple[str, Tally]]) -> str:
    head = ("scenario", "cuts", "records at risk", "lost", "torn", "dup seqs", "acked sends", "acked lost",
            "torn tails cut", "renames", "cuts mid-rename", "max batch loss ms", "ids lost/restored",
            "redeliveries dropped", "snapshot starts", "violations")
    rows = [head] + [(n, t.cuts, t.at_risk, t.lost, t.torn, t.duplicates, t.acked, t.acked_lost, t.repaired, t.renames, t.mid_rename,
                      f"{t.largest_window_ms:.0f}" if t.largest_window_ms else "-",
                      f"{t.ids_lost}/{t.ids_restored}" if t.ids_lost or t.redeliveries_dropped else "-",
                      t.redeliveries_dropped or "-", t.snapshot_starts or "-", len(t.violations))
                     for n, t in results]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cuts", type=int, default=40, help="cuts per scenario")
    ap.add_argument("--seconds", type=float, default=3600, help="stop starting cuts after this long")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--scenario", action="append", help="only these (by name)")
    ap.add_argument("--expect-violation", action="store_true",
                    help="succeed only if there is a violation (for a deliberately broken daemon)")
    ap.add_argument("--skip-directory-fsync", metavar="REASONS",
                    help="run the debug daemon with CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC=REASONS "
                         "(all, or a list of mkdir,create,rotate,compact,snapshot)")
    args = ap.parse_args(argv)
    if args.skip_directory_fsync:
        os.environ["CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC"] = args.skip_directory_fsync
    if os.geteuid() != 0 or not Path("/dev/fuse").exists():
        print("powercut: needs root and /dev/fuse", file=sys.stderr)
        return 2
    chosen = [s for s in SCENARIOS if not args.scenario or s.name in args.scenario]
    print(f"powercut: seed {args.seed}, {args.cuts} cuts per scenario, {len(chosen)} scenarios", flush=True)
    start = time.monotonic()
    per = args.seconds / max(1, len(chosen))
    results = []
    with tempfile.TemporaryDirectory(prefix="powercut-") as tmp:
        for i, sc in enumerate(chosen):
            # One generator per scenario: a scenario's cuts replay alone with the same seed.
            rng = random.Random(f"{args.seed}/{sc.name}")
            tally = run_scenario(sc, args.cuts, rng, Path(tmp) / f"s{i}", start + per * (i + 1))
            results.append((sc.name, tally))
            print(f"  {sc.name}: {tally.cuts} cuts, {len(tally.violations)} violations", flush=True)
    print(table(results))
    violations = [v for _, t in results for v in t.violations]
    for v in violations[:40]:
        print("VIOLATION:", v)
    total = sum(t.cuts for _, t in results)
    print(f"powercut: {total} cuts, {len(violations)} violations (seed {args.seed})")
    if args.expect_violation:
        return 0 if violations else 1
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
