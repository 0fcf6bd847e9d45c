"""OpenSSL is loaded on first use: a ws:// daemon never maps it; a wss:// one loads it and works.

chatlinkd does not link libssl and libcrypto (Transport/OpenSSLLibrary.swift): the dynamic
loader would map and relocate both before main, resident memory that a ws:// daemon never
uses (bench/README.md has the figure). The backend here is Tests/Fixtures/backend.py
(its echo protocol) with Python's ssl module.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO, wait_until


def mapped_libraries(pid: int) -> set[str]:
    with open(f"/proc/{pid}/maps") as maps:
        return {line.split()[-1].rsplit("/", 1)[-1] for line in maps if "/" in line}


def openssl_in(libraries: set[str]) -> set[str]:
    return {name for name in libraries if name.startswith(("libssl.so", "libcrypto.so"))}


def test_a_ws_daemon_never_maps_openssl(daemon):
    daemon.wait_state("open")
    daemon.send("over plain ws")
    wait_until(lambda: daemon.status()["confirmed"] >= 1, 10, message="the send confirmed")
    assert openssl_in(mapped_libraries(daemon.proc.pid)) == set()


def test_a_wss_daemon_loads_openssl_verifies_the_server_and_delivers(make_daemon, tmp_path):
    server = subprocess.Popen(
        [sys.executable, str(REPO / "Tests" / "Fixtures" / "backend.py"), "--host", "localhost", "--tls", "valid",
         "--certdir", str(tmp_path / "certs")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(server.stdout.readline())
        assert started["url"].startswith("wss://localhost:"), started
        d = make_daemon({"Backend": {"CAFile": started["ca"]}}, url=started["url"])
        status = d.wait_state("open")
        assert status["url"] == started["url"]
        assert openssl_in(mapped_libraries(d.proc.pid)) == {"libssl.so.3", "libcrypto.so.3"}
        receipt = d.send("over wss")
        wait_until(lambda: d.status()["confirmed"] >= 1, 10, message="the send confirmed")
        outbound = [r for r in d.records() if r["dir"] == "out"]
        assert [r["id"] for r in outbound] == [receipt["id"]]
    finally:
        server.stdin.close()
        server.wait(10)
