"""A lazy file system for power-cut tests: the page cache lives in this process, the disk is a
backing directory, and only what was made durable survives a simulated power cut.

    lazyfs.py BACKING MOUNTPOINT CONTROL_SOCKET

At mount, the backing directory's tree is loaded and counts as durable. Every operation then
works on the in-memory tree (what a process sees: the page cache), and per inode the file system
keeps what has reached "disk":

- a file's data becomes durable only on fsync/fdatasync of that file;
- a directory's entries (create, mkdir, rename, unlink, rmdir: the names and which inode each
  names) become durable only on fsync of that directory.

That is the strict POSIX model, as LazyFS models ext4 without auto_da_alloc: a new file whose
directory was never fsynced is gone after the cut, and a rename not followed by a directory
fsync is undone. (syncfs is not forwarded by FUSE, so it makes nothing durable here.)

The control socket takes one command per line and answers one line, "ok ..." or "error ...":

    cut SEED TORN [LIVE]
                    the power cut: from now on every operation fails with EIO; the backing
                    directory is rewritten to hold only the durable state, plus, when TORN is 1,
                    for each file a random prefix (chosen with SEED) of its writes since its last
                    fsync, the last of them torn at a random byte (partial page writeback).
                    With LIVE, what processes saw at that moment is written there too.
                    Answers "ok {json}" with what was at risk.
    hold            fsyncs (files and directories) wait until "release"
    release         lets held fsyncs go on (they then make their state durable)
    stats           "ok {json}": fsyncs, directory fsyncs, held fsyncs, bytes not yet durable
    quit            unmount; without a cut before, the whole live state is written to the
                    backing directory (a clean shutdown syncs everything)

Run it as root (only root's processes see the mount); end it with "quit" or SIGTERM, then
make sure the mount point is unmounted (`umount -l`), as lazymount.py does.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import stat
import sys
import time

import pyfuse3
import trio

ROOT = pyfuse3.ROOT_INODE


class Node:
    """One inode: what processes see (data or entries) and what is durable."""

    def __init__(self, ino: int, mode: int, data: bytes = b""):
        self.ino = ino
        self.mode = mode
        now = time.time_ns()
        self.atime = self.mtime = self.ctime = now
        self.nlink = 1
        if stat.S_ISDIR(mode):
            self.entries: dict[bytes, int] = {}
            self.durable_entries: dict[bytes, int] = {}
        else:
            self.data = bytearray(data)
            self.durable = bytearray(data)
            # The writes and truncates since the last fsync, in order: ("w", offset, bytes)
            # and ("t", length). A power cut may keep a prefix of them (partial writeback).
            self.pending: list[tuple] = []

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    def make_durable(self) -> None:
        if self.is_dir:
            self.durable_entries = dict(self.entries)
        else:
            for op in self.pending:
                apply(self.durable, op)
            self.pending.clear()


def apply(data: bytearray, op: tuple, limit: int | None = None) -> None:
    """Applies a write or truncate to `data`; `limit` keeps only that many bytes of a write."""
    if op[0] == "t":
        length = op[1]
        if length < len(data):
            del data[length:]
        else:
            data.extend(b"\0" * (length - len(data)))
        return
    _, offset, buf = op
    if limit is not None:
        buf = buf[:limit]
    if offset > len(data):
        data.extend(b"\0" * (offset - len(data)))
    data[offset:offset + len(buf)] = buf


def write_tree(root: str, tree: dict) -> None:
    """Makes the directory `root` hold exactly `tree` ({path: bytes, or None for a directory})."""
    os.makedirs(root, exist_ok=True)
    for name in os.listdir(root):
        full = os.path.join(root, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)
    for path in sorted(tree):
        if not path:
            continue
        full = os.path.join(root, path)
        if tree[path] is None:
            os.makedirs(full, exist_ok=True)
        else:
            with open(full, "wb") as f:
                f.write(tree[path])


class LazyFS(pyfuse3.Operations):
    enable_writeback_cache = False

    def __init__(self, backing: str):
        super().__init__()
        self.backing = backing
        self.nodes: dict[int, Node] = {}
        self.next_ino = ROOT + 1
        self.handles: dict[int, tuple[int, bool]] = {}  # fh -> (ino, append)
        self.next_fh = 1
        self.cut = False
        self.held: trio.Event | None = None
        self.counts = {"fsync": 0, "fsyncdir": 0, "held": 0, "renames": 0}
        root = Node(ROOT, stat.S_IFDIR | 0o755)
        self.nodes[ROOT] = root
        self._load(backing, root)
        root.make_durable()

    # -- the disk

    def _new(self, mode: int, data: bytes = b"") -> Node:
        node = Node(self.next_ino, mode, data)
        self.next_ino += 1
        self.nodes[node.ino] = node
        return node

    def _load(self, path: str, directory: Node) -> None:
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            info = os.lstat(full)
            if stat.S_ISDIR(info.st_mode):
                child = self._new(info.st_mode)
                self._load(full, child)
            elif stat.S_ISREG(info.st_mode):
                with open(full, "rb") as f:
                    child = self._new(info.st_mode, f.read())
            else:
                continue  # only files and directories are modelled
            child.mtime = info.st_mtime_ns
            child.make_durable()
            directory.entries[os.fsencode(name)] = child.ino
        directory.make_durable()

    def surviving(self, rng: random.Random | None) -> tuple[dict, dict]:
        """The tree a power cut leaves, as {path: bytes or None for a directory}, and figures
        on what was at risk. With `rng`, each file keeps a random prefix of its pending writes,
        the last one torn at a random byte."""
        tree: dict[str, bytes | None] = {}
        risk = {"files": 0, "unsynced_bytes": 0, "torn_files": 0, "undurable_names": 0}
        seen: set[int] = set()

        def walk(node: Node, path: str) -> None:
            if node.ino in seen:
                return  # a directory entry both in its old and its new place
            seen.add(node.ino)
            tree[path] = None
            live_names = set(node.entries)
            risk["undurable_names"] += len(live_names ^ set(node.durable_entries))
            for name, ino in node.durable_entries.items():
                child = self.nodes[ino]
                child_path = os.path.join(path, os.fsdecode(name))
                if child.is_dir:
                    walk(child, child_path)
                    continue
                data = bytearray(child.durable)
                if child.pending:
                    risk["files"] += 1
                    risk["unsynced_bytes"] += sum(len(op[2]) for op in child.pending if op[0] == "w")
                    if rng is not None:
                        keep = rng.randint(0, len(child.pending))
                        for op in child.pending[:keep]:
                            apply(data, op)
                        if keep < len(child.pending) and child.pending[keep][0] == "w":
                            op = child.pending[keep]
                            cut_at = rng.randint(0, len(op[2]))
                            if cut_at:
                                apply(data, op, limit=cut_at)
                                risk["torn_files"] += 1
                tree[child_path] = bytes(data)

        walk(self.nodes[ROOT], "")
        return tree, risk

    def live_tree(self) -> dict:
        tree: dict[str, bytes | None] = {}

        def walk(node: Node, path: str) -> None:
            tree[path] = None
            for name, ino in node.entries.items():
                child = self.nodes[ino]
                child_path = os.path.join(path, os.fsdecode(name))
                if child.is_dir:
                    walk(child, child_path)
                else:
                    tree[child_path] = bytes(child.data)

        walk(self.nodes[ROOT], "")
        return tree

    def write_backing(self, tree: dict) -> None:
        """Replaces the backing directory's content with `tree`."""
        write_tree(self.backing, tree)

    # -- helpers

    def _node(self, ino: int) -> Node:
        if self.cut:
            raise pyfuse3.FUSEError(errno.EIO)
        node = self.nodes.get(ino)
        if node is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return node

    def _dir(self, ino: int) -> Node:
        node = self._node(ino)
        if not node.is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        return node

    def _attr(self, node: Node) -> pyfuse3.EntryAttributes:
        a = pyfuse3.EntryAttributes()
        a.st_ino = node.ino
        a.generation = 0
        # No caching in the kernel: every lookup and stat asks this process.
        a.entry_timeout = 0
        a.attr_timeout = 0
        a.st_mode = node.mode
        a.st_nlink = node.nlink if not node.is_dir else 2
        a.st_uid = 0
        a.st_gid = 0
        a.st_rdev = 0
        a.st_size = len(node.data) if not node.is_dir else 4096
        a.st_blksize = 4096
        a.st_blocks = (a.st_size + 511) // 512
        a.st_atime_ns = node.atime
        a.st_mtime_ns = node.mtime
        a.st_ctime_ns = node.ctime
        return a

    async def _wait_if_held(self) -> None:
        if self.held is not None:
            self.counts["held"] += 1
            await self.held.wait()
        if self.cut:
            raise pyfuse3.FUSEError(errno.EIO)

    # -- operations

    async def lookup(self, parent_inode, name, ctx=None):
        parent = self._dir(parent_inode)
        if name == b".":
            return self._attr(parent)
        if name == b"..":
            for node in self.nodes.values():
                if node.is_dir and parent_inode in node.entries.values():
                    return self._attr(node)
            return self._attr(parent)
        ino = parent.entries.get(name)
        if ino is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return self._attr(self.nodes[ino])

    async def getattr(self, inode, ctx=None):
        return self._attr(self._node(inode))

    async def setattr(self, inode, attr, fields, fh, ctx):
        node = self._node(inode)
        if fields.update_size:
            if node.is_dir:
                raise pyfuse3.FUSEError(errno.EISDIR)
            op = ("t", attr.st_size)
            apply(node.data, op)
            node.pending.append(op)
            node.mtime = time.time_ns()
        if fields.update_mode:
            node.mode = (node.mode & ~0o7777) | (attr.st_mode & 0o7777)
        if fields.update_mtime:
            node.mtime = attr.st_mtime_ns
        if fields.update_atime:
            node.atime = attr.st_atime_ns
        node.ctime = time.time_ns()
        return self._attr(node)

    async def access(self, inode, mode, ctx):
        self._node(inode)
        return True

    async def statfs(self, ctx):
        s = pyfuse3.StatvfsData()
        s.f_bsize = s.f_frsize = 4096
        s.f_blocks = s.f_bfree = s.f_bavail = 1 << 22
        s.f_files = s.f_ffree = s.f_favail = 1 << 20
        s.f_namemax = 255
        return s

    async def forget(self, inode_list):
        pass  # inodes are kept: their durable state may still be named by a directory

    async def opendir(self, inode, ctx):
        self._dir(inode)
        return inode

    async def readdir(self, fh, start_id, token):
        node = self._dir(fh)
        names = sorted(node.entries)
        for i in range(start_id, len(names)):
            child = self.nodes[node.entries[names[i]]]
            if not pyfuse3.readdir_reply(token, names[i], self._attr(child), i + 1):
                break

    async def releasedir(self, fh):
        pass

    async def fsyncdir(self, fh, datasync):
        node = self._dir(fh)
        await self._wait_if_held()
        self.counts["fsyncdir"] += 1
        node.make_durable()

    async def mkdir(self, parent_inode, name, mode, ctx):
        parent = self._dir(parent_inode)
        if name in parent.entries:
            raise pyfuse3.FUSEError(errno.EEXIST)
        node = self._new(stat.S_IFDIR | (mode & 0o7777))
        parent.entries[name] = node.ino
        return self._attr(node)

    async def rmdir(self, parent_inode, name, ctx):
        parent = self._dir(parent_inode)
        ino = parent.entries.get(name)
        if ino is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        if self.nodes[ino].entries:
            raise pyfuse3.FUSEError(errno.ENOTEMPTY)
        del parent.entries[name]

    async def unlink(self, parent_inode, name, ctx):
        parent = self._dir(parent_inode)
        ino = parent.entries.get(name)
        if ino is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        if self.nodes[ino].is_dir:
            raise pyfuse3.FUSEError(errno.EISDIR)
        del parent.entries[name]
        self.nodes[ino].nlink -= 1

    async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
        if flags:
            raise pyfuse3.FUSEError(errno.EINVAL)
        old = self._dir(parent_inode_old)
        new = self._dir(parent_inode_new)
        ino = old.entries.get(name_old)
        if ino is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        target = new.entries.get(name_new)
        if target is not None and target != ino:
            if self.nodes[target].is_dir and self.nodes[target].entries:
                raise pyfuse3.FUSEError(errno.ENOTEMPTY)
            self.nodes[target].nlink -= 1
        del old.entries[name_old]
        new.entries[name_new] = ino
        self.counts["renames"] += 1

    async def create(self, parent_inode, name, mode, flags, ctx):
        parent = self._dir(parent_inode)
        if name in parent.entries:
            if flags & os.O_EXCL:
                raise pyfuse3.FUSEError(errno.EEXIST)
            node = self.nodes[parent.entries[name]]
        else:
            node = self._new(stat.S_IFREG | (mode & 0o7777))
            parent.entries[name] = node.ino
        return self._open(node, flags), self._attr(node)

    def _open(self, node: Node, flags: int) -> pyfuse3.FileInfo:
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = (node.ino, bool(flags & os.O_APPEND))
        return pyfuse3.FileInfo(fh=fh)

    async def open(self, inode, flags, ctx):
        node = self._node(inode)
        if node.is_dir:
            raise pyfuse3.FUSEError(errno.EISDIR)
        return self._open(node, flags)

    async def read(self, fh, off, size):
        ino, _ = self.handles[fh]
        node = self._node(ino)
        return bytes(node.data[off:off + size])

    async def write(self, fh, off, buf):
        ino, append = self.handles[fh]
        node = self._node(ino)
        if append:
            off = len(node.data)
        op = ("w", off, bytes(buf))
        apply(node.data, op)
        node.pending.append(op)
        node.mtime = node.ctime = time.time_ns()
        return len(buf)

    async def flush(self, fh):
        pass

    async def release(self, fh):
        self.handles.pop(fh, None)

    async def fsync(self, fh, datasync):
        # The node is looked up first: a held fsync's process may be killed and its file
        # released while it waits.
        node = self._node(self.handles[fh][0])
        await self._wait_if_held()
        self.counts["fsync"] += 1
        node.make_durable()

    # -- control

    def command(self, line: str) -> str:
        words = line.split()
        if not words:
            return "error empty command"
        if words[0] == "cut":
            seed = int(words[1]) if len(words) > 1 else 0
            torn = len(words) > 2 and words[2] == "1"
            self.cut = True
            tree, risk = self.surviving(random.Random(seed) if torn else None)
            if len(words) > 3:
                # What processes saw at the cut, for the checker to compare against.
                write_tree(words[3], self.live_tree())
            self.write_backing(tree)
            if self.held is not None:
                self.held.set()  # held fsyncs now fail: the power is off
                self.held = None
            return "ok " + json.dumps({**risk, **self.counts})
        if words[0] == "hold":
            if self.held is None:
                self.held = trio.Event()
            return "ok"
        if words[0] == "release":
            if self.held is not None:
                self.held.set()
                self.held = None
            return "ok"
        if words[0] == "stats":
            pending = sum(
                sum(len(op[2]) for op in n.pending if op[0] == "w")
                for n in self.nodes.values() if not n.is_dir)
            return "ok " + json.dumps({**self.counts, "unsynced_bytes": pending})
        if words[0] == "quit":
            if not self.cut:
                self.write_backing(self.live_tree())
            pyfuse3.terminate()
            return "ok"
        return f"error unknown command {words[0]!r}"


async def serve_control(fs: LazyFS, path: str) -> None:
    listener = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    await listener.bind(path)
    listener.listen(8)

    async def client(conn):
        with conn:
            buf = b""
            while True:
                data = await conn.recv(4096)
                if not data:
                    return
                buf += data
                while b"\n" in buf:
                    line, _, buf = buf.partition(b"\n")
                    try:
                        reply = fs.command(line.decode())
                    except Exception as e:  # noqa: BLE001 - answered, not fatal
                        reply = f"error {e!r}"
                    out = reply.encode() + b"\n"
                    while out:
                        out = out[await conn.send(out):]

    async with trio.open_nursery() as nursery:
        while True:
            conn, _ = await listener.accept()
            nursery.start_soon(client, conn)


async def run(fs: LazyFS, control: str) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_control, fs, control)
        await pyfuse3.main(max_tasks=16)
        nursery.cancel_scope.cancel()


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    backing, mountpoint, control = sys.argv[1:]
    fs = LazyFS(backing)
    options = set(pyfuse3.default_options)
    options.add("fsname=lazyfs")
    options.discard("default_permissions")
    pyfuse3.init(fs, mountpoint, options)
    signal.signal(signal.SIGTERM, lambda *_: fs.command("quit"))
    try:
        trio.run(run, fs, control)
    finally:
        pyfuse3.close(unmount=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
