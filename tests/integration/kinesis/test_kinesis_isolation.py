"""One query per job.name and metadata store (the driver lease), through real samza-kinesis queries, on a
``file:`` store and on an ``s3://`` store (moto's S3 server, conditional writes)."""

from __future__ import annotations

import os
import socket
import time

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.query_harness import failure_of, lease_of
from spark_samza_source.metadata import open_store, redact_uri
from spark_samza_source.metadata.lease import KEY, NAMESPACE

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LONG_TTL = {"job.ownership.ttl": "10m"}  # no heartbeat renewal during these short runs


@pytest.fixture(params=["file", "s3"])
def ks(request, ks):
    """The Kinesis query harness with its job's metadata store on local files or in a bucket on moto's S3."""
    if request.param == "s3":
        ks.store_uri = request.getfixturevalue("s3_store_uri")
        assert open_store(ks.store_uri, ks.job).atomic_conditionals is True
    return ks


def put(ks, stream: str, values: range) -> None:
    kh.put_records(ks.client, stream, [(f"pk-{i}", str(i).encode()) for i in values])


def test_a_second_query_with_the_same_job_fails_fast_and_the_first_keeps_running(ks):
    stream = ks.create_stream(2, "iso")
    put(ks, stream, range(20))
    first = ks.start_collecting("first", stream)
    ks.wait_for(lambda: len(ks.collected("first")) >= 20, what="first query reads")
    owner = lease_of(ks)
    assert owner["host"] == socket.gethostname() and owner["pid"] != os.getpid()
    assert len(owner["query"]) == 1 and owner["query"][0].startswith("query:")  # the offsets' query id

    started = time.monotonic()
    message = failure_of(ks.start_collecting("second", stream))
    assert time.monotonic() - started < 60
    assert f"job.name '{ks.job}' is already in use in metadata store '{redact_uri(ks.store_uri)}'" in message
    assert f"host {owner['host']}, pid {owner['pid']}" in message and "expires at" in message
    assert "give this query its own job.name" in message
    assert ks.collected("second") == []

    assert first.isActive and lease_of(ks)["owner"] == owner["owner"]
    put(ks, stream, range(20, 30))
    ks.wait_for(lambda: len(ks.collected("first")) >= 30, what="first query keeps reading")
    first.stop()
    assert sorted(int(r.data) for r in ks.collected("first")) == list(range(30))


def test_the_same_query_restarted_from_its_checkpoint_is_let_in_at_once(ks):
    stream = ks.create_stream(2, "same")
    put(ks, stream, range(30))
    assert len(ks.run_available_now("same", stream, **LONG_TTL)) == 30
    left = lease_of(ks)
    # As if that run's driver had been on another machine and crashed a moment ago: fresh for ten minutes.
    now = int(time.time() * 1000)
    open_store(ks.store_uri, ks.job).put(NAMESPACE, KEY, dict(
        left, owner="f" * 32, host="driver-on-another-host", pid=4242, machine="another-machine", renewedMs=now,
        ttlMs=600_000))

    with pytest.raises(Exception) as err:  # a different query (new checkpoint) under that job.name
        ks.run_available_now("other", stream)
    assert "host driver-on-another-host, pid 4242" in str(err.value) and "already in use" in str(err.value)

    put(ks, stream, range(30, 40))
    again = ks.run_available_now("same", stream, **LONG_TTL)  # the same checkpoint: its query id matches the lease
    assert sorted(int(r.data) for r in again) == list(range(30, 40))
    after = lease_of(ks)  # None if the runner was killed in the middle of a renewal: it is gone either way
    assert after is None or (after["host"] == socket.gethostname() and after["query"] == left["query"])
