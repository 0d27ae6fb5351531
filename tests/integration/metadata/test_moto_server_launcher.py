"""The moto launcher works outside pytest: ``python -m samza_devkit.moto_server --port 0``."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import boto3

from samza_devkit.moto_server import MotoServerProcess, wait_until_answering


def test_command_line_prints_endpoint_serves_aws_and_stops_on_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "samza_devkit.moto_server", "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.fullmatch(r"listening on (http://127\.0\.0\.1:(\d+))\n", line)
        assert match, line
        endpoint = match.group(1)
        wait_until_answering(endpoint, timeout=30)
        client = boto3.client("kinesis", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        client.create_stream(StreamName="launcher-check", ShardCount=2)
        assert "launcher-check" in client.list_streams()["StreamNames"]
        client.close()
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0  # bounded: SIGTERM stops it (a hang fails here); the time is a figure
        print(f"moto launcher stopped {time.monotonic() - started:.1f}s after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_process_wrapper_gives_distinct_free_ports_and_cleans_up() -> None:
    a, b = MotoServerProcess(), MotoServerProcess()
    with a as endpoint_a, b as endpoint_b:
        assert endpoint_a != endpoint_b
        child = a._proc
        assert child is not None and child.poll() is None
    assert child.poll() == 0  # stopped by SIGTERM, exit code 0
    try:
        wait_until_answering(endpoint_a, timeout=1)
        answered = True
    except RuntimeError:
        answered = False
    assert not answered


def test_server_exits_when_its_parent_dies() -> None:
    # a parent that starts the launcher and is then SIGKILLed: the launcher must not linger as an orphan
    code = ("import sys, time; from samza_devkit.moto_server import MotoServerProcess; "
            "s = MotoServerProcess(); print(s.start(), s._proc.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    endpoint, child_pid = parent.stdout.readline().split()
    wait_until_answering(endpoint, timeout=30)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            wait_until_answering(endpoint, timeout=0.5)
        except RuntimeError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"moto server (pid {child_pid}) still answers after its parent died")
