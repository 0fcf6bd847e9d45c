"""Polls chatlinkd's GetStatus from its own process until SIGTERM (or SECONDS), then prints
one JSON object like Tests/integration/poll_status.py: the slowest answer and every sample.

    python Tests/chaos/poller.py SOCKET SECONDS [INTERVAL]
"""

import json
import signal
import socket
import sys
import time

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def main() -> None:
    signal.signal(signal.SIGTERM, on_term)
    path, duration = sys.argv[1], float(sys.argv[2])
    interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
    samples, failures = [], []
    t0 = time.monotonic()
    while not stop and time.monotonic() - t0 < duration:
        t = time.monotonic()
        s = socket.socket(socket.AF_UNIX)
        try:
            s.settimeout(30)
            s.connect(path)
            s.sendall(b'{"method":"io.chatlink.Daemon.GetStatus"}\0')
            buf = b""
            while not buf.endswith(b"\0"):
                data = s.recv(65536)
                if not data:
                    raise OSError("closed without a reply")
                buf += data
            status = json.loads(buf[:-1])["parameters"]["status"]
            samples.append([round(t - t0, 3), round(time.monotonic() - t, 4), status["received"]])
        except InterruptedError:
            break
        except (OSError, ValueError, KeyError) as e:
            if not stop:
                failures.append([round(t - t0, 3), repr(e)])
        finally:
            s.close()
        time.sleep(interval)
    slowest = max((x[1] for x in samples), default=None)
    print(json.dumps({"max": slowest, "count": len(samples), "failures": failures, "samples": samples}))


if __name__ == "__main__":
    main()
