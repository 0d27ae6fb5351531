"""The cluster harness's network: a cut loses packets silently (connections time out, nothing is refused), a heal
restores them, and what a killed run left behind is swept. Needs network namespaces (root, iproute2)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest

from samza_devkit.netlab import NetLab, available, sweep_stale

pytestmark = pytest.mark.skipif(available() is not None, reason=f"{available()}")

_CONNECT = ("import socket, sys\n"
            "s = socket.socket(); s.settimeout(2)\n"
            "try:\n"
            "    s.connect((sys.argv[1], int(sys.argv[2]))); print('connected')\n"
            "except OSError as e:\n"
            "    print(type(e).__name__)\n")


def _connect_from(lab: NetLab, host: str, address: str, port: int) -> str:
    cmd = lab.in_host(host, [sys.executable, "-c", _CONNECT, address, str(port)])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout.strip()


def test_a_cut_link_times_out_and_a_healed_one_connects():
    lab = NetLab.create(["a", "b"], services=2)
    try:
        server = socket.create_server((lab.service_address(1), 0))
        port = server.getsockname()[1]
        threading.Thread(target=lambda: [server.accept() for _ in range(3)], daemon=True).start()
        assert _connect_from(lab, "a", lab.service_address(1), port) == "connected"
        lab.cut("a", lab.service_address(1))
        assert _connect_from(lab, "a", lab.service_address(1), port) == "TimeoutError"  # silence, not a refusal
        assert _connect_from(lab, "b", lab.service_address(1), port) == "connected"  # only that host lost it
        lab.heal("a", lab.service_address(1))
        assert _connect_from(lab, "a", lab.service_address(1), port) == "connected"
        server.close()
    finally:
        lab.close()
    assert lab.tag not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert lab.tag not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


def test_sweep_removes_what_a_killed_run_left_and_keeps_a_live_one():
    live = NetLab.create(["a"], services=1)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale_ns, stale_link, stale_bridge = f"smz{dead.pid}-w0", f"smz{dead.pid}v0", f"smz{dead.pid}b"
    try:
        subprocess.run(["ip", "netns", "add", stale_ns], check=True)
        subprocess.run(["ip", "link", "add", stale_link, "type", "veth", "peer", "name", "eth0", "netns", stale_ns],
                       check=True)
        subprocess.run(["ip", "link", "add", stale_bridge, "type", "bridge"], check=True)
        removed = sweep_stale()
        assert stale_ns in removed and stale_bridge in removed
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        assert stale_ns not in listed and live.namespace("a") in listed
        assert stale_link not in links and stale_bridge not in links and live.bridge in links
    finally:
        live.close()
        subprocess.run(["ip", "netns", "del", stale_ns], capture_output=True)
        subprocess.run(["ip", "link", "del", stale_bridge], capture_output=True)
