"""Hosts of their own on one machine, for cluster tests: Linux network namespaces on a bridge, links cut and healed.

``NetLab.create(hosts)`` makes, in the root namespace, a bridge with a /24 from 198.18.0.0/15 (reserved for network
tests; only links made here carry it, nothing leaves the machine) and, for each named host, a namespace joined to
the bridge by a veth pair, with an address of its own. Services of the root namespace (the Spark master, the
broker, moto) bind extra addresses of the bridge (``service_address(i)``), so a cut can single one out.

``cut(host, address)`` makes ``host`` lose ``address`` the way a dead route does: its packets to that address are
sent to a link-layer address nobody has (a permanent neighbour entry), so they vanish on the bridge; connections
time out, nothing is refused. ``heal`` deletes the entry (ARP resolves the real one again). Why neighbour entries
and not ``tc``: the kernels these tests run on may lack ``netem`` and tc's drop action (the CI VM's does); a
neighbour entry needs nothing but veth and bridge.

Everything is named ``smz<pid>x<n>...`` after the process that made it: ``close()`` removes it, and ``sweep_stale()``
(called by ``create``) removes what a killed earlier run left, whose pid is gone. ``available()`` says, in one line,
why namespaces cannot be made here (no privilege, no ``ip``), or None.
"""

from __future__ import annotations

import fcntl
import ipaddress
import itertools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NetLab", "available", "sweep_stale"]

_PREFIX = "smz"
_NAME = re.compile(rf"^{_PREFIX}(\d+)")
#: a locally administered MAC that no interface here has: frames sent to it are dropped on the bridge
_NOWHERE_MAC = "02:00:5e:00:53:ff"
_LOCK = Path(tempfile.gettempdir()) / "samza-netlab.lock"
_WORKER_HOST_BASE = 11  # host i of the lab is .11 + i; the root namespace's services are .1 to .10
_LABS = itertools.count()  # labs made by this process: each gets a tag of its own


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Delete the namespaces and links an earlier run left (named ``smz<pid>`` with that pid gone)."""
    removed = []
    if shutil.which("ip") is None:
        return removed
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = _NAME.match(name)
        if m and not _pid_alive(int(m.group(1))):
            _ip("netns", "del", name, check=False)
            removed.append(name)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        parts = line.split(":")
        if len(parts) < 2:
            continue
        name = parts[1].strip().split("@")[0]
        m = _NAME.match(name)
        if m and not _pid_alive(int(m.group(1))):
            _ip("link", "del", name, check=False)
            removed.append(name)
    return removed


def available() -> str | None:
    """None if namespaces and veth links can be made here; else one line saying why not."""
    if not os.path.exists("/proc/self/ns/net"):
        return "network namespaces: not on Linux"
    if shutil.which("ip") is None:
        return "network namespaces: no 'ip' command (Debian: apt-get install iproute2)"
    probe = f"{_PREFIX}{os.getpid()}probe"
    done = _ip("netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"network namespaces cannot be made here ({done.stderr.strip() or 'no privilege'})"
    try:
        veth = _ip("link", "add", f"{_PREFIX}{os.getpid()}p", "type", "veth", "peer", "name", "p1", "netns", probe,
                   check=False)
        if veth.returncode != 0:
            return f"veth links cannot be made here ({veth.stderr.strip()})"
        return None
    finally:
        _ip("link", "del", f"{_PREFIX}{os.getpid()}p", check=False)
        _ip("netns", "del", probe, check=False)


def _subnets_in_use() -> set[ipaddress.IPv4Network]:
    used = set()
    for line in _ip("-o", "-4", "addr", "show", check=False).stdout.splitlines():
        m = re.search(r"inet (\S+)", line)
        if m:
            used.add(ipaddress.ip_interface(m.group(1)).network)
    return used


@dataclass
class NetLab:
    """A bridge and one namespace per host; see the module docstring. Use :meth:`create`, then :meth:`close`."""

    tag: str
    subnet: ipaddress.IPv4Network
    hosts: dict[str, str] = field(default_factory=dict)  # host name -> namespace
    service_addresses: list[str] = field(default_factory=list)
    _cuts: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def create(cls, hosts: list[str], services: int = 4) -> NetLab:
        """A lab with ``hosts`` (short names) and ``services`` extra addresses of the bridge (.1, .2, ...)."""
        sweep_stale()
        tag = f"{_PREFIX}{os.getpid()}x{next(_LABS)}"  # 15 characters at most with the 'v<i>' of a veth
        _LOCK.touch(exist_ok=True)
        with open(_LOCK) as lock:  # two runs must not pick the same /24
            fcntl.flock(lock, fcntl.LOCK_EX)
            used = _subnets_in_use()
            subnet = next(net for net in ipaddress.ip_network("198.18.0.0/15").subnets(new_prefix=24)
                          if net not in used and not str(net).startswith("198.18.0."))
            lab = cls(tag, subnet)
            try:
                lab._make_bridge(services)
            except BaseException:
                lab.close()
                raise
        try:
            for index, host in enumerate(hosts):
                lab._make_host(host, index)
        except BaseException:
            lab.close()
            raise
        return lab

    # ------------------------------------------------------------------------------ addresses
    @property
    def bridge(self) -> str:
        return f"{self.tag}b"

    def service_address(self, index: int) -> str:
        """The root namespace's ``index``-th address on the bridge (0: .1, the bridge's own)."""
        return self.service_addresses[index]

    def address(self, host: str) -> str:
        return str(self.subnet[_WORKER_HOST_BASE + list(self.hosts).index(host)])

    def namespace(self, host: str) -> str:
        return self.hosts[host]

    def in_host(self, host: str | None, cmd: list[str]) -> list[str]:
        """``cmd`` run in ``host``'s namespace (None: the root namespace). ``ip netns exec`` execs the command:
        same process, so a parent-death signal asked for before it still holds."""
        return list(cmd) if host is None else ["ip", "netns", "exec", self.hosts[host], *cmd]

    def host_of_pid(self, pid: int) -> str | None:
        """Which host's namespace process ``pid`` runs in (None: the root namespace or unknown)."""
        try:
            mine = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            return None
        for host, ns in self.hosts.items():
            try:
                if os.stat(f"/run/netns/{ns}").st_ino == mine:
                    return host
            except OSError:
                continue
        return None

    # ------------------------------------------------------------------------------ faults
    def cut(self, host: str, address: str) -> None:
        """From now on ``host``'s packets to ``address`` are silently lost (see the module docstring)."""
        ns, veth = self.hosts[host], "eth0"
        _ip("-n", ns, "neigh", "replace", address, "lladdr", _NOWHERE_MAC, "dev", veth, "nud", "permanent")
        self._cuts.add((host, address))

    def heal(self, host: str, address: str) -> None:
        _ip("-n", self.hosts[host], "neigh", "del", address, "dev", "eth0", check=False)
        self._cuts.discard((host, address))

    def heal_all(self) -> None:
        for host, address in list(self._cuts):
            self.heal(host, address)

    # ------------------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Remove every namespace and link of this lab (their processes should be gone first)."""
        for ns in self.hosts.values():
            _ip("netns", "del", ns, check=False)
        _ip("link", "del", self.bridge, check=False)
        for index in range(len(self.hosts) + 1):
            _ip("link", "del", f"{self.tag}v{index}", check=False)
        self.hosts.clear()

    def _make_bridge(self, services: int) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        for index in range(services):
            address = str(self.subnet[1 + index])
            _ip("addr", "add", f"{address}/24", "dev", self.bridge)
            self.service_addresses.append(address)
        _ip("link", "set", self.bridge, "up")

    def _make_host(self, host: str, index: int) -> None:
        ns, outside = f"{self.tag}-{host}", f"{self.tag}v{index}"
        _ip("netns", "add", ns)
        self.hosts[host] = ns
        _ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", outside, "master", self.bridge)
        _ip("link", "set", outside, "up")
        _ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
