"""The driver lease (one query per job.name and metadata store): acquisition, renewal, expiry, take-over."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import uuid

import pytest

from samza_devkit.waits import deadline_after
from spark_samza_source.core.errors import JobLeaseError
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.metadata import open_store
from spark_samza_source.metadata.lease import (
    KEY,
    MAX_IDENTITIES,
    NAMESPACE,
    JobLease,
    offset_identity,
    query_identity,
)
from spark_samza_source.options.common import DEFAULT_JOB_LEASE_TTL_MS as DEFAULT_TTL_MS

TTL = 10_000


class Clock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture(params=["memory", "file"])
def store_uri(request, tmp_path) -> str:
    return f"memory:lease-{uuid.uuid4().hex}" if request.param == "memory" else f"file://{tmp_path}/md"


def lease(uri: str, clock: Clock, *, host: str = "host-a", pid: int = 1111, machine: str = "machine-a",
          ttl_ms: int = TTL, job: str = "orders-enricher") -> JobLease:
    return JobLease(open_store(uri, job), ttl_ms=ttl_ms, wall_ms=clock, heartbeat=False, host=host, pid=pid,
                       machine=machine)


def stored(uri: str, job: str = "orders-enricher"):
    return open_store(uri, job).get(NAMESPACE, KEY)


def test_first_driver_acquires_and_records_who_and_until_when(store_uri):
    clock = Clock()
    first = lease(store_uri, clock)
    first.hold(query_identity("q1"))
    record = stored(store_uri)
    assert record == first.held
    assert record["owner"] == first.owner_id and len(record["owner"]) == 32
    assert (record["host"], record["pid"], record["machine"]) == ("host-a", 1111, "machine-a")
    assert record["query"] == ["query:q1"]
    assert record["acquiredMs"] == record["renewedMs"] == clock.now and record["ttlMs"] == TTL
    assert set(record) == {"version", "owner", "host", "pid", "machine", "query", "acquiredMs", "renewedMs", "ttlMs"}


def test_a_second_query_fails_fast_naming_job_store_owner_expiry_and_fixes(store_uri):
    clock = Clock()
    lease(store_uri, clock).hold(query_identity("q1"))
    clock.now += 2_500
    second = lease(store_uri, clock, host="host-b", pid=2222, machine="machine-b")
    with pytest.raises(JobLeaseError) as info:
        second.hold(query_identity("q2"))
    message = str(info.value)
    assert "job.name 'orders-enricher' is already in use" in message
    assert f"metadata store '{open_store(store_uri, 'orders-enricher').uri}'" in message
    assert "host host-a, pid 1111" in message
    assert "renewed 2.5 s ago" in message and "TTL 10 s" in message
    assert "expires at 2023-11-14T22:13:30Z" in message  # 1_700_000_000_000 + 10 s
    assert "give this query its own job.name" in message and "stop the other query" in message
    assert "wait until the lease expires" in message
    assert stored(store_uri)["owner"] != second.owner_id


def test_an_expired_lease_is_taken_over_and_the_old_driver_fails_at_its_next_call(store_uri):
    clock = Clock()
    first = lease(store_uri, clock)
    first.hold(query_identity("q1"))
    clock.now += TTL - 1
    with pytest.raises(JobLeaseError):
        lease(store_uri, clock, host="host-b", pid=2222, machine="m-b").hold(query_identity("q2"))
    clock.now += 1  # exactly renewedMs + ttlMs: expired
    second = lease(store_uri, clock, host="host-b", pid=2222, machine="m-b")
    second.hold(query_identity("q2"))
    assert stored(store_uri)["owner"] == second.owner_id
    with pytest.raises(JobLeaseError) as info:
        first.hold(query_identity("q1"))
    message = str(info.value)
    assert "lost the job to another query" in message and "host host-b, pid 2222" in message
    assert "give each its own job.name" in message
    with pytest.raises(JobLeaseError, match="lost the job"):  # and stays lost
        first.renew()
    assert stored(store_uri)["owner"] == second.owner_id


def test_the_same_query_restarted_elsewhere_takes_over_at_once(store_uri):
    clock = Clock()
    first = lease(store_uri, clock)
    first.hold(offset_identity('{"a":1}'))
    first.hold(offset_identity('{"a":1}'), offset_identity('{"a":2}'))
    restarted = lease(store_uri, clock, host="host-b", pid=2222, machine="m-b")
    restarted.hold(offset_identity('{"a":2}'))  # resumes from the last offset the first run planned
    assert stored(store_uri)["owner"] == restarted.owner_id
    first.hold(offset_identity('{"a":2}'))  # nothing new to record and renewed recently: no store access
    clock.now += TTL // 3  # its next renewal (the heartbeat's, or a driver call's) finds the lease gone
    with pytest.raises(JobLeaseError, match="lost the job"):
        first.hold(offset_identity('{"a":2}'))
    other = lease(store_uri, clock, host="host-c", pid=3333, machine="m-c")
    with pytest.raises(JobLeaseError, match="already in use"):
        other.hold(offset_identity('{"a":3}'))  # a different query: its offsets were never this job's


def test_renewal_happens_when_identity_advances_or_a_third_of_the_ttl_passed(store_uri):
    clock = Clock()
    first = lease(store_uri, clock)
    first.hold(query_identity("q1"))
    acquired = stored(store_uri)
    clock.now += TTL // 3 - 1
    first.hold(query_identity("q1"))
    assert stored(store_uri) == acquired  # nothing written: a polling loop costs no store writes
    clock.now += 1
    first.hold(query_identity("q1"))
    renewed = stored(store_uri)
    assert renewed["renewedMs"] == clock.now and renewed["acquiredMs"] == acquired["acquiredMs"]
    ids = [offset_identity(str(i)) for i in range(6)]
    for i in ids:
        first.hold(i)
    assert stored(store_uri)["query"] == list(reversed(ids))[:MAX_IDENTITIES]


def test_renewing_keeps_the_lease_alive_beyond_the_ttl(store_uri):
    clock = Clock()
    first = lease(store_uri, clock)
    first.hold()
    for _ in range(10):
        clock.now += TTL // 2
        first.renew()
    with pytest.raises(JobLeaseError, match="already in use"):
        lease(store_uri, clock, host="host-b", machine="m-b").hold()


def test_a_driver_on_this_machine_whose_process_is_gone_is_replaced_at_once(store_uri):
    clock = Clock()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    lease(store_uri, clock, host="same", pid=dead_pid, machine="this-machine").hold()
    newcomer = lease(store_uri, clock, host="same", pid=os.getpid(), machine="this-machine")
    newcomer.hold()
    assert stored(store_uri)["owner"] == newcomer.owner_id


def test_a_live_driver_on_this_machine_or_an_unknown_machine_is_not_replaced(store_uri):
    clock = Clock()
    lease(store_uri, clock, host="same", pid=os.getppid(), machine="this-machine").hold()  # alive
    with pytest.raises(JobLeaseError, match="already in use"):
        lease(store_uri, clock, host="same", pid=os.getpid(), machine="this-machine").hold()
    with pytest.raises(JobLeaseError, match="already in use"):  # machine unknown: only the TTL counts
        lease(store_uri, clock, host="same", pid=os.getpid(), machine="").hold()


@pytest.mark.parametrize("garbage", [None, "x", 42, [], {"owner": "o"}, {"owner": 1, "query": [], "acquiredMs": 1,
                                                                        "renewedMs": 1, "ttlMs": 1}])
def test_an_unreadable_lease_is_replaced(store_uri, garbage):
    clock = Clock()
    open_store(store_uri, "orders-enricher").put(NAMESPACE, KEY, garbage)
    fresh = lease(store_uri, clock)
    fresh.hold()
    assert stored(store_uri)["owner"] == fresh.owner_id


def test_a_removed_lease_is_taken_back_by_its_driver(store_uri):
    clock = Clock()
    first = lease(store_uri, clock)
    first.hold(query_identity("q1"))
    open_store(store_uri, "orders-enricher").delete(NAMESPACE, KEY)
    clock.now += TTL
    first.hold(query_identity("q1"))
    assert stored(store_uri)["owner"] == first.owner_id


def test_a_renewal_is_one_compare_and_set_and_never_leaves_the_key_absent(store_uri):
    clock = Clock()
    first = lease(store_uri, clock)
    first.hold()
    store = first.store
    calls = []
    for name in ("put_if_absent", "delete_if_equal", "replace_if_equal", "delete", "put"):
        original = getattr(store, name)

        def traced(*args, _name=name, _original=original):
            calls.append(_name)
            seen = _original(*args)
            assert stored(store_uri) is not None, f"the lease was absent right after {_name}"
            return seen

        setattr(store, name, traced)
    clock.now += TTL // 3
    first.renew()
    assert calls == ["replace_if_equal"] and stored(store_uri)["renewedMs"] == clock.now


def test_a_contender_taking_over_just_before_a_renewal_makes_the_renewer_fail(store_uri):
    clock = Clock()
    first = lease(store_uri, clock)
    first.hold()
    store = first.store
    contender = lease(store_uri, clock, host="host-b", machine="m-b")
    original = store.replace_if_equal

    def racing_replace(namespace, key, expected, value):  # the contender's takeover lands first
        if value.get("owner") == first.owner_id:
            contender.hold()
        return original(namespace, key, expected, value)

    store.replace_if_equal = racing_replace
    clock.now += TTL  # expired: the contender may take it over
    with pytest.raises(JobLeaseError, match="lost the job"):
        first.renew()
    assert stored(store_uri)["owner"] == contender.owner_id


def test_jobs_are_independent_and_release_gives_the_job_up(store_uri):
    clock = Clock()
    a = lease(store_uri, clock, job="job-a")
    a.hold()
    lease(store_uri, clock, job="job-b", host="host-b", machine="m-b").hold()  # another job: no conflict
    assert a.release() is True and stored(store_uri, "job-a") is None
    assert a.release() is False
    lease(store_uri, clock, job="job-a", host="host-c", machine="m-c").hold()


def test_heartbeat_renews_in_the_background_and_stops_on_release(tmp_path):
    uri = f"file://{tmp_path}/md"
    beating = JobLease(open_store(uri, "hb"), ttl_ms=1_000)
    beating.hold()
    first = stored(uri, "hb")["renewedMs"]

    def renewed_ms() -> int:  # a renewal replaces the record in place: a reader never finds it missing
        record = stored(uri, "hb")
        assert record is not None, "lease missing"
        return record["renewedMs"]

    deadline = deadline_after(10)
    while renewed_ms() == first and time.monotonic() < deadline:
        time.sleep(0.05)
    assert renewed_ms() > first  # renewed every ttl/3 without any driver call
    assert beating._thread is not None and beating._thread.is_alive()
    beating.release()
    beating._thread.join(5)
    assert not beating._thread.is_alive() and stored(uri, "hb") is None


def test_heartbeat_notices_a_take_over_and_the_next_call_fails(tmp_path):
    uri = f"file://{tmp_path}/md"
    beating = JobLease(open_store(uri, "hb2"), ttl_ms=1_000)
    beating.hold(query_identity("q"))
    # the same query started a second time elsewhere takes over at once
    JobLease(open_store(uri, "hb2"), ttl_ms=1_000, heartbeat=False, host="elsewhere").hold(query_identity("q"))
    beating._thread.join(10)
    assert not beating._thread.is_alive()
    with pytest.raises(JobLeaseError, match="lost the job to another query, the driver on host elsewhere"):
        beating.hold(query_identity("q"))


def test_ttl_below_one_second_is_refused():
    with pytest.raises(JobLeaseError, match="at least 1000 ms"):
        JobLease(open_store("memory:x", "j"), ttl_ms=999)


def test_lease_holds_no_secret_and_is_json():
    clock = Clock()
    first = lease("memory:lease-json", clock)
    first.hold(offset_identity('{"secret": "hunter2"}'))
    text = json.dumps(stored("memory:lease-json"))
    assert "hunter2" not in text and "offset:" in text


KAFKA = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders", "job.name": "orders-job"}
KINESIS = {"streamName": "clicks", "job.name": "clicks-etl", "region": "eu-west-1"}


@pytest.mark.parametrize("parse, base", [(KafkaSourceOptions.parse, KAFKA), (KinesisSourceOptions.parse, KINESIS)])
def test_job_lease_ttl_option(parse, base):
    assert parse(base).job_lease_ttl_ms == DEFAULT_TTL_MS == 60_000
    assert parse({**base, "job.lease.ttl": "5m"}).job_lease_ttl_ms == 300_000
    assert parse({**base, "JOB.LEASE.TTL": "2s"}).job_lease_ttl_ms == 2_000
    with pytest.raises(Exception, match="'job.lease.ttl' must be at least 1000 ms"):
        parse({**base, "job.lease.ttl": "500ms"})
    with pytest.raises(Exception, match="'job.lease.ttl' must be a duration"):
        parse({**base, "job.lease.ttl": "forever"})


@pytest.mark.parametrize("parse, base", [(KafkaSourceOptions.parse, KAFKA), (KinesisSourceOptions.parse, KINESIS)])
def test_the_former_name_job_ownership_ttl_is_read_with_a_warning(parse, base, caplog, monkeypatch):
    from spark_samza_source.options import option

    monkeypatch.setattr(option, "_WARNED_DEPRECATED", set())
    with caplog.at_level(logging.WARNING, logger=option.__name__):
        assert parse({**base, "job.ownership.ttl": "5m"}).job_lease_ttl_ms == 300_000
    assert [r.getMessage() for r in caplog.records if r.name == option.__name__] == [
        "option 'job.ownership.ttl' is deprecated: it is now 'job.lease.ttl' (the old name is still accepted for "
        "now); use 'job.lease.ttl'"]
    with pytest.raises(Exception, match="'job.ownership.ttl' must be at least 1000 ms"):  # the name written
        parse({**base, "job.ownership.ttl": "500ms"})
    with pytest.raises(Exception, match="options 'job.ownership.ttl' and 'job.lease.ttl' are the same option"):
        parse({**base, "job.ownership.ttl": "5m", "job.lease.ttl": "2m"})


def test_a_newcomer_does_not_move_in_while_an_earlier_release_renews_in_two_steps(store_uri):
    """Drivers of earlier releases renewed by delete_if_equal then put_if_absent; during a rolling upgrade a
    newcomer must still not move in during the instant that leaves the key absent."""
    clock = Clock()
    owner = lease(store_uri, clock)
    owner.hold()
    held, renewed = owner.held, dict(owner.held, renewedMs=clock.now + 1)
    store = open_store(store_uri, "orders-enricher")
    waits = []

    def owner_finishes_renewal(seconds):  # while the newcomer waits, the owner's put_if_absent lands
        waits.append(seconds)
        assert owner.store.put_if_absent(NAMESPACE, KEY, renewed)

    newcomer = JobLease(store, ttl_ms=TTL, wall_ms=clock, heartbeat=False, host="host-b", pid=2, machine="m-b",
                           sleep=owner_finishes_renewal)
    create = store.put_if_absent

    def put_if_absent(namespace, key, value):
        created = create(namespace, key, value)
        if not created and not waits:
            assert owner.store.delete_if_equal(NAMESPACE, KEY, held)  # the owner's renewal starts right now
        return created

    store.put_if_absent = put_if_absent
    with pytest.raises(JobLeaseError, match="already in use"):
        newcomer.hold()
    assert waits == [0.2] and stored(store_uri) == renewed


@pytest.mark.parametrize("field, value", [("ttlMs", 10**400), ("renewedMs", 2**63), ("acquiredMs", -1),
                                          ("ttlMs", True)])
def test_a_lease_with_impossible_times_is_unreadable_and_replaced(store_uri, field, value):
    clock = Clock()
    other = lease(store_uri, clock, host="host-b", machine="m-b")
    other.hold()
    store = open_store(store_uri, "orders-enricher")
    store.put(NAMESPACE, KEY, {**stored(store_uri), field: value})  # found by the fuzz tests: an overflow
    fresh = lease(store_uri, clock)
    fresh.hold()
    assert stored(store_uri)["owner"] == fresh.owner_id


class FlakyStore:
    """A store that stops answering on demand (every call raises MetadataStoreError while ``down``)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.down = False

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            if self.down:
                from spark_samza_source.core.errors import MetadataStoreError

                raise MetadataStoreError(f"{name} failed for the lease: no answer from the store (injected)")
            return attr(*args, **kwargs)

        return call


def flaky_lease(clock: Clock) -> tuple[JobLease, FlakyStore]:
    store = FlakyStore(open_store(f"memory:lease-{uuid.uuid4().hex}", "orders-enricher"))
    return JobLease(store, ttl_ms=TTL, wall_ms=clock, heartbeat=False, host="host-a", pid=1111,
                       machine="machine-a"), store


def test_a_store_unreachable_within_the_ttl_fails_the_call_but_not_the_lease():
    clock = Clock()
    driver, store = flaky_lease(clock)
    driver.hold(query_identity("q"))
    store.down = True
    clock.now += TTL // 2
    with pytest.raises(Exception, match="no answer from the store") as caught:
        driver.hold(query_identity("q"))
    assert not isinstance(caught.value, JobLeaseError)
    store.down = False
    clock.now += TTL // 4  # still within the TTL of the last renewal
    driver.hold(query_identity("q"))
    assert driver.held["renewedMs"] == clock.now


@pytest.mark.parametrize("renewer", ["driver call", "heartbeat"])
def test_a_store_unreachable_for_longer_than_the_ttl_stops_the_driver_for_good(renewer):
    """The driver stops with a clear error rather than run on without its lease, even once the store answers
    again (another query may have taken the job over while this driver could not see the store)."""
    clock = Clock()
    driver, store = flaky_lease(clock)
    driver.hold(query_identity("q"))
    store.down = True
    clock.now += TTL + 1
    expected = (r"could not renew its lease on the job for 10\.0 s, longer than job\.lease\.ttl = 10 s: the "
                r"store did not answer \(.*no answer from the store.*\)\. .*stops rather than run on without its "
                r"lease.*restart the query from its checkpoint")
    with pytest.raises(JobLeaseError, match=expected):
        driver.renew() if renewer == "heartbeat" else driver.hold(query_identity("q"))
    store.down = False
    with pytest.raises(JobLeaseError, match=expected):
        driver.hold(query_identity("q"))
