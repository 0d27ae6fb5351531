"""One query per job.name and metadata store (the driver lease), through real samza-kafka queries."""

from __future__ import annotations

import os
import socket
import time

import pytest

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.query_harness import failure_of, lease_of
from spark_samza_source.metadata import open_store
from spark_samza_source.metadata.lease import KEY, NAMESPACE

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LONG_TTL = {"job.ownership.ttl": "10m"}  # no heartbeat renewal during these short runs


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (ProcessLookupError, FileNotFoundError):  # it exited between the kill(0) and the read
        return True


def foreign_lease(kq, *, ttl_ms: int, query: list[str] | None = None) -> dict:
    """The lease as a live driver on another machine would have written it just now."""
    now = int(time.time() * 1000)
    record = {"version": 1, "owner": "f" * 32, "host": "driver-on-another-host", "pid": 4242,
              "machine": "another-machine", "query": query or [], "acquiredMs": now - 60_000, "renewedMs": now,
              "ttlMs": ttl_ms}
    open_store(kq.store_uri, kq.job).put(NAMESPACE, KEY, record)
    return record


def test_a_second_query_with_the_same_job_fails_fast_and_the_first_keeps_running(kq):
    topic = create_topic(kq.bootstrap, unique_topic("iso"), 2)
    produce(kq.bootstrap, topic, [(b"k", f"a{i}".encode(), None, i % 2) for i in range(20)])
    first = kq.start_collecting("first", subscribe=topic)
    kq.wait_for(lambda: len(kq.collected("first")) >= 20, what="first query reads")
    owner = lease_of(kq)
    assert owner["host"] == socket.gethostname() and owner["pid"] != os.getpid()  # the driver-side runner

    started = time.monotonic()
    second = kq.start_collecting("second", subscribe=topic)
    message = failure_of(second)
    took = time.monotonic() - started
    # bounded-ness is the behaviour: "fails fast" means before the owner's lease (TTL 60 s) could expire
    assert took < 60, f"the second query took {took:.0f}s to fail"
    assert f"job.name '{kq.job}' is already in use in metadata store '{kq.store_uri}'" in message
    assert f"host {owner['host']}, pid {owner['pid']}" in message
    assert "expires at" in message and "TTL 60 s" in message
    assert "give this query its own job.name" in message and "stop the other query" in message
    assert kq.collected("second") == []

    # The first query was not disturbed: same lease owner, still reading.
    assert first.isActive and lease_of(kq)["owner"] == owner["owner"]
    produce(kq.bootstrap, topic, [(b"k", f"b{i}".encode(), None, i % 2) for i in range(10)])
    kq.wait_for(lambda: len(kq.collected("first")) >= 30, what="first query keeps reading")
    first.stop()

    # Its runner process ends with it, so a new query on this machine need not wait for the lease to expire.
    kq.wait_for(lambda: pid_gone(owner["pid"]), timeout=30, what="the first driver runner to exit")
    third = kq.start_collecting("third", subscribe=topic)
    kq.wait_for(lambda: len(kq.collected("third")) >= 30, timeout=50, what="a new query after the first stopped")
    assert lease_of(kq)["owner"] != owner["owner"]
    third.stop()


def test_a_lease_left_by_a_driver_on_another_host_blocks_until_its_ttl_passes(kq):
    topic = create_topic(kq.bootstrap, unique_topic("ttl"), 1)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(5)])
    record = foreign_lease(kq, ttl_ms=6_000)
    expires = record["renewedMs"] + record["ttlMs"]
    with pytest.raises(Exception) as err:
        kq.run_available_now_parquet("ttl", subscribe=topic)
    message = str(err.value)
    assert "host driver-on-another-host, pid 4242" in message and "TTL 6 s" in message
    assert f"metadata store '{kq.store_uri}'" in message
    assert time.time() * 1000 < expires, "the test machine was too slow to observe the block"

    time.sleep(max(0.0, (expires - time.time() * 1000) / 1000) + 0.5)  # nobody renews it: it expires
    query = kq.start_collecting("ttl-after", subscribe=topic, **{"job.ownership.ttl": "2s"})
    kq.wait_for(lambda: len(kq.collected("ttl-after")) >= 5, what="the query after the lease expired")
    # read while it runs (a heartbeat renewal leaves the key absent for an instant: look again then)
    record = lease_of(kq)
    query.stop()
    assert sorted(int(r.value) for r in kq.collected("ttl-after")) == list(range(5))
    assert record["host"] == socket.gethostname() and record["ttlMs"] == 2_000 and record["pid"] != 4242


def test_the_same_query_restarted_from_its_checkpoint_is_let_in_at_once(kq):
    topic = create_topic(kq.bootstrap, unique_topic("same"), 2)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode(), None, i % 2) for i in range(40)])
    kq.run_available_now_parquet("same", subscribe=topic, maxOffsetsPerTrigger="10", **LONG_TTL)
    assert len(kq.sink_rows("same")) == 40
    # As if that run's driver had been on another machine and crashed a moment ago: the lease is fresh for
    # ten minutes, and only the identity it recorded (the offsets it planned) says which query it was.
    left = lease_of(kq)
    foreign_lease(kq, ttl_ms=600_000, query=left["query"])

    with pytest.raises(Exception) as err:  # a different query (new checkpoint) under that job.name
        kq.run_available_now_parquet("other", subscribe=topic)
    assert "host driver-on-another-host, pid 4242" in str(err.value)

    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode(), None, i % 2) for i in range(40, 50)])
    started = time.monotonic()
    kq.run_available_now_parquet("same", subscribe=topic, maxOffsetsPerTrigger="10", **LONG_TTL)  # the same checkpoint
    assert time.monotonic() - started < 120
    assert sorted(int(r.value) for r in kq.sink_rows("same")) == list(range(50))  # exactly once
    after = lease_of(kq)  # None if the runner was killed in the middle of a renewal: it is gone either way
    assert after is None or after["host"] == socket.gethostname()
