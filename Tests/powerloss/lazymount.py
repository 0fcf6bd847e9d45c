"""lazyfs.py as a subprocess: mounted, commanded over its control socket, and always ended by
PID and unmounted (`LazyMount.stop`), for the power-cut harness and the integration tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

LAZYFS = Path(__file__).resolve().parent / "lazyfs.py"


class LazyMount:
    """lazyfs.py over `backing` at `mountpoint`; ended by PID and unmounted, even on failure."""

    def __init__(self, backing: Path, mountpoint: Path, control: Path):
        self.backing, self.mountpoint, self.control = backing, mountpoint, control
        self.proc: subprocess.Popen | None = None

    def start(self) -> "LazyMount":
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, str(LAZYFS), str(self.backing), str(self.mountpoint), str(self.control)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"lazyfs exited: {self.proc.stderr.read().decode()[-2000:]}")
            if os.path.ismount(self.mountpoint) and self.control.exists():
                try:
                    self.command("stats")
                    return self
                except OSError:
                    pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("lazyfs did not mount within 15 s")

    def command(self, line: str, timeout: float = 30) -> str:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(str(self.control))
            s.sendall(line.encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                data = s.recv(65536)
                if not data:
                    break
                buf += data
        reply = buf.decode().strip()
        if not reply.startswith("ok"):
            raise RuntimeError(f"lazyfs {line!r}: {reply}")
        return reply[2:].strip()

    def cut(self, seed: int, torn: bool = True, live: Path | None = None) -> dict:
        """The power cut; with `live`, what processes saw at that moment is written there."""
        return json.loads(self.command(f"cut {seed} {1 if torn else 0}" + (f" {live}" if live else "")))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.command("quit", timeout=10)
                self.proc.wait(10)
            except (OSError, RuntimeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(5)
        if os.path.ismount(self.mountpoint):
            subprocess.run(["umount", "-l", str(self.mountpoint)], check=False)
