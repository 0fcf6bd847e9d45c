"""The Python peer of a single chatlinkctl call: the same call made with the `varlink` package.

    varlink_call.py SOCKET status
    varlink_call.py SOCKET send ROOM TEXT

Prints the reply as JSON, as `chatlinkctl --json` would.
"""

import json
import sys

import varlink


def main() -> None:
    path, verb = sys.argv[1], sys.argv[2]
    with varlink.Client.new_with_address("unix:" + path) as client:
        with client.open("io.chatlink.Daemon", namespaced=False) as daemon:
            if verb == "status":
                reply = daemon.GetStatus()
            elif verb == "send":
                reply = daemon.Send(room=sys.argv[3], text=sys.argv[4])
            else:
                sys.exit(f"varlink_call.py: unknown verb {verb!r}")
    print(json.dumps(reply))


if __name__ == "__main__":
    main()
