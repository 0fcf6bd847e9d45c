"""Polls chatlinkd's GetStatus from its own process (so the test's threads and GIL cannot
slow it down) and prints one JSON object: the slowest answer and every sample.

    python poll_status.py SOCKET SECONDS [INTERVAL]
"""

import json
import socket
import sys
import time


def main() -> None:
    path, duration = sys.argv[1], float(sys.argv[2])
    interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.02
    samples = []
    failures = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < duration:
        t = time.monotonic()
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(path)
            s.sendall(b'{"method":"io.chatlink.Daemon.GetStatus"}\0')
            buf = b""
            while not buf.endswith(b"\0"):
                data = s.recv(65536)
                if not data:
                    raise OSError("closed without a reply")
                buf += data
            s.close()
            status = json.loads(buf[:-1])["parameters"]["status"]
            samples.append([round(t - t0, 3), round(time.monotonic() - t, 4), status["received"]])
        except (OSError, ValueError, KeyError) as e:
            failures.append([round(t - t0, 3), repr(e)])
        time.sleep(interval)
    slowest = max((s[1] for s in samples), default=None)
    print(json.dumps({"max": slowest, "count": len(samples), "failures": failures, "samples": samples}))


if __name__ == "__main__":
    main()
