"""A network namespace joined to the host by a veth pair, for faults below TCP. The kernel
here has no netem (nor u32/matchall filters), so the faults are queueing disciplines on both
ends of the veth: `pfifo limit 0` drops every packet (a true black hole: no ACK, no RST, a
half-open connection for both peers), `tbf` limits the rate with a small queue, so a flood
meets a congested link with tail drops that TCP must retransmit. Everything it creates is
named with the run's prefix and removed by `delete()` (and by Tests/chaos/run.sh's trap)."""

from __future__ import annotations

import os
import subprocess

PREFIX = os.environ.get("CHAOS_NETNS_PREFIX", f"chaos{os.getpid()}")
IFTAG = os.environ.get("CHAOS_IFTAG", str(os.getpid() % 10000))  # veth names: ch<IFTAG>h<i>, ch<IFTAG>n<i>


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=20)


class NetNS:
    """ns `name`; host side `host_if` with `host_ip`, namespace side `ns_if` with `ns_ip`."""

    def __init__(self, index: int = 0):
        self.name = f"{PREFIX}-{index}"
        self.host_if = f"ch{IFTAG}h{index}"
        self.ns_if = f"ch{IFTAG}n{index}"
        net = 200 + index
        self.host_ip = f"10.254.{net}.1"
        self.ns_ip = f"10.254.{net}.2"
        self.created = False

    def create(self) -> "NetNS":
        sh("ip", "netns", "add", self.name)
        self.created = True
        sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        sh("ip", "link", "set", self.ns_if, "netns", self.name)
        sh("ip", "addr", "add", f"{self.host_ip}/30", "dev", self.host_if)
        sh("ip", "link", "set", self.host_if, "up")
        self.ns("ip", "addr", "add", f"{self.ns_ip}/30", "dev", self.ns_if)
        self.ns("ip", "link", "set", self.ns_if, "up")
        self.ns("ip", "link", "set", "lo", "up")
        return self

    def ns(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", self.name, *args, check=check)

    @property
    def wrapper(self) -> list[str]:
        """Prefix that runs a command inside the namespace (it execs, the pid stays)."""
        return ["ip", "netns", "exec", self.name]

    def qdisc(self, spec: str | None) -> None:
        """Applies `tc qdisc replace … root SPEC` on both ends (both directions); None removes it."""
        for run, dev in ((sh, self.host_if), (self.ns, self.ns_if)):
            if spec:
                run("tc", "qdisc", "replace", "dev", dev, "root", *spec.split())
            else:
                run("tc", "qdisc", "del", "dev", dev, "root", check=False)

    def blackhole(self, on: bool) -> None:
        self.qdisc("pfifo limit 0" if on else None)

    def delete(self) -> None:
        if not self.created:
            return
        sh("ip", "link", "del", self.host_if, check=False)
        sh("ip", "netns", "del", self.name, check=False)
        self.created = False


def cleanup_all(prefix: str = PREFIX) -> None:
    out = sh("ip", "netns", "list", check=False).stdout
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(prefix + "-"):
            sh("ip", "netns", "del", name, check=False)
