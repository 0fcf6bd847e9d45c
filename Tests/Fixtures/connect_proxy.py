#!/usr/bin/env python3
"""connect_proxy.py: a minimal HTTP CONNECT proxy for ChatLink's proxy tests (stdlib only).

Usage:
    python3 Tests/Fixtures/connect_proxy.py [--refuse STATUS]

Listens on 127.0.0.1 on a free port and prints one JSON line: {"port": N}. Each client sends
`CONNECT host:port HTTP/1.1`; the proxy connects to the target (loopback only), answers
`HTTP/1.1 200 Connection established`, and relays bytes both ways. With --refuse it answers
that status instead. Every CONNECT target is logged to stderr ("CONNECT host:port"), so tests
can check the tunnel was used. Exits when stdin reaches EOF (the test ended).
"""
import argparse
import asyncio
import json
import sys


async def relay(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def handle(reader, writer, refuse):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        writer.close()
        return
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    print(line, file=sys.stderr, flush=True)
    parts = line.split()
    if refuse:
        writer.write(b"HTTP/1.1 %d Refused\r\nContent-Length: 0\r\n\r\n" % refuse)
        await writer.drain()
        writer.close()
        return
    if len(parts) != 3 or parts[0] != "CONNECT":
        writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
        writer.close()
        return
    host, _, port = parts[1].rpartition(":")
    host = host.strip("[]")
    if host not in ("127.0.0.1", "::1", "localhost"):
        writer.write(b"HTTP/1.1 403 Forbidden\r\n\r\n")
        writer.close()
        return
    try:
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
    except OSError:
        writer.write(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
        writer.close()
        return
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await writer.drain()
    await asyncio.gather(relay(reader, up_writer), relay(up_reader, writer))


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--refuse", type=int, default=0)
    args = parser.parse_args()
    server = await asyncio.start_server(lambda r, w: handle(r, w, args.refuse), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(json.dumps({"port": port}), flush=True)
    loop = asyncio.get_running_loop()
    stdin_closed = loop.create_future()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def watch():
        await reader.read()
        stdin_closed.set_result(None)

    asyncio.ensure_future(watch())
    await stdin_closed
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
