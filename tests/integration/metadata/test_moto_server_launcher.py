"""The moto launcher works outside pytest: ``python -m samza_devkit.moto_server --port 0``."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import boto3

from samza_devkit.moto_server import MotoServerProcess, wait_until_answering
from samza_devkit.waits import deadline_after


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
    deadline = deadline_after(15)
    while time.monotonic() < deadline:
        try:
            wait_until_answering(endpoint, timeout=0.5)
        except RuntimeError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"moto server (pid {child_pid}) still answers after its parent died")


def test_fault_injection_answers_aws_errors_over_http_counts_and_clears(moto_server, aws_faults) -> None:
    """The devkit's fault rules (``aws_faults``): matching requests get the AWS error as the service sends it,
    the rest reach moto, ``applied`` rules let moto do the work first, and every matching request is counted."""
    import urllib.error

    import pytest
    from botocore.config import Config
    from botocore.exceptions import ClientError

    from samza_devkit.aws_faults import AwsFaults

    client = boto3.client("dynamodb", endpoint_url=moto_server, region_name="us-east-1",
                          config=Config(retries={"total_max_attempts": 1, "mode": "standard"}))
    table = f"faults-{time.time_ns()}"
    client.create_table(TableName=table, KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")
    try:
        other = aws_faults.watch("PutItem", match="no-such-table")
        throttle = aws_faults.add("PutItem", times=1, match=table)
        lost = aws_faults.add("PutItem", code="InternalServerError", status=500, times=1, skip=1, applied=True,
                              match=table)
        with pytest.raises(ClientError) as caught:
            client.put_item(TableName=table, Item={"k": {"S": "throttled"}})
        assert caught.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
        with pytest.raises(ClientError) as caught:
            client.put_item(TableName=table, Item={"k": {"S": "applied"}})
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
        client.put_item(TableName=table, Item={"k": {"S": "plain"}})
        keys = {i["k"]["S"] for i in client.scan(TableName=table, ConsistentRead=True)["Items"]}
        assert keys == {"applied", "plain"}  # the throttled write never reached moto, the "lost" one did
        assert aws_faults.counts(throttle) == {"seen": 3, "failed": 1}
        assert aws_faults.counts(lost) == {"seen": 3, "failed": 1}
        assert aws_faults.counts(other) == {"seen": 0, "failed": 0}
        aws_faults.clear()
        with pytest.raises(KeyError):
            aws_faults.counts(throttle)
        with pytest.raises(urllib.error.HTTPError):  # a rule without an operation is refused, naming the problem
            AwsFaults(moto_server)._request("POST", {"code": "X"})
    finally:
        client.delete_table(TableName=table)
        client.close()


def test_a_hold_rule_applies_the_write_and_answers_it_only_when_released(moto_server, aws_faults) -> None:
    """``hold``: moto carries the matching request out at once and its real answer waits for ``release`` (what
    the cluster test cuts a link in between); ``remote`` limits a rule to one client address."""
    import threading

    client = boto3.client("dynamodb", endpoint_url=moto_server, region_name="us-east-1")
    table = f"hold-{time.time_ns()}"
    client.create_table(TableName=table, KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")
    try:
        elsewhere = aws_faults.add("PutItem", match=table, remote="198.18.0.99", hold=True)
        held = aws_faults.add("PutItem", match=table, remote="127.0.0.1", hold=True, times=1)
        answered = threading.Event()
        writer = threading.Thread(target=lambda: (client.put_item(TableName=table, Item={"k": {"S": "held"}}),
                                                  answered.set()), daemon=True)
        writer.start()
        deadline = deadline_after(30)
        while not aws_faults.counts(held)["failed"] and time.monotonic() < deadline:
            time.sleep(0.05)
        reader = boto3.client("dynamodb", endpoint_url=moto_server, region_name="us-east-1")
        item = reader.get_item(TableName=table, Key={"k": {"S": "held"}}, ConsistentRead=True).get("Item")
        assert item == {"k": {"S": "held"}} and not answered.is_set()  # written, the answer still held
        aws_faults.release(held)
        assert answered.wait(30)
        client.put_item(TableName=table, Item={"k": {"S": "after"}})  # times=1: later writes are not held
        assert aws_faults.counts(elsewhere) == {"seen": 0, "failed": 0}
    finally:
        client.delete_table(TableName=table)
