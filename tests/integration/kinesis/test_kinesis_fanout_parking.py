"""Parked fan-out subscriptions (``kinesis/executor/parked_subscriptions.py``): the reads of a shard one process makes
batch
after batch go on with one ``SubscribeToShard`` subscription instead of subscribing anew each time (which AWS, and
the bridge, refuse for 5 seconds after the previous call). On kinesis-mock behind the devkit's bridge, read as a
task reads a shard (``shard_reads.open_shard_reader``), without Spark; the bridge counts the subscriptions.

The hard cases on purpose: reads that stop inside an event and inside a KPL aggregate, a parked subscription taken
over by another subscriber or cut while it waits, a read that does not continue where the parked one stands, an
exact re-read through a parked subscription, and expiry.
"""

from __future__ import annotations

import threading
import time

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.waits import deadline_after
from spark_samza_source.kinesis.calls import KinesisCalls
from spark_samza_source.kinesis.driver.consumers import StreamConsumers
from spark_samza_source.kinesis.executor.fanout import STOP_SUBSCRIPTION_IN_USE
from spark_samza_source.kinesis.executor.parked_subscriptions import PARKED
from spark_samza_source.kinesis.executor.reader import STOP_MAX_RECORDS, shard_read_args
from spark_samza_source.kinesis.executor.shard_reads import open_shard_reader
from spark_samza_source.kinesis.positions import ShardPosition

SHARD = "shardId-000000000000"
_TAKEOVER_S = 1.0  # AWS (and the bridge by default): 5 s; shorter where a test must subscribe again
_TRIGGER_S = 0.25


@pytest.fixture(scope="module")
def kinesis(kinesis_mock_endpoint):
    client = kh.kinesis_client(kinesis_mock_endpoint)
    yield client
    client.close()


@pytest.fixture
def bridge(fresh_bridge):
    return fresh_bridge


@pytest.fixture(autouse=True)
def parked():
    """This process's registry, emptied and its expiry restored after each test."""
    ttl = PARKED.ttl_s
    yield PARKED
    PARKED.ttl_s = ttl
    PARKED.close_all()


@pytest.fixture
def shard(kinesis):
    """(stream, consumer ARN): a one-shard stream with a registered ACTIVE consumer."""
    stream = kh.create_stream(kinesis, kh.unique_stream_name("park"), 1)
    arn = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    consumer = StreamConsumers(KinesisCalls(kinesis), stream, arn).ensure_active("parking").arn
    yield stream, consumer
    kh.delete_stream(kinesis, stream)


def put(kinesis, stream: str, tag: str, count: int) -> list[tuple[str, int, bytes]]:
    acks = kh.put_records(kinesis, stream, [(f"pk-{i}", f"{tag}-{i}".encode()) for i in range(count)])
    return [(a.sequence, 0, a.data) for a in acks]


def put_aggregate(kinesis, stream: str, tag: str, count: int) -> list[tuple[str, int, bytes]]:
    [ack] = kh.put_aggregated(kinesis, stream, [[(f"agg-{i}", f"{tag}-{i}".encode()) for i in range(count)]])
    return [(ack.sequence, i, f"{tag}-{i}".encode()) for i in range(count)]


def read(kinesis, shard, start: ShardPosition, **options):
    """One read of the shard as a task makes it: (the reader, its result with the rows)."""
    stream, consumer = shard
    options.setdefault("max_fetch_time_ms", 8_000)
    reader = open_shard_reader(kinesis, *shard_read_args(stream, SHARD, start, task="Task-0", consumer_arn=consumer,
                                                         **options))
    return reader, reader.run()


def rows(result) -> list[tuple[str, int, bytes]]:
    table = result.table()
    return list(zip(table["sequenceNumber"].to_pylist(), table["subSequenceNumber"].to_pylist(),
                    table["data"].to_pylist(), strict=True))


def read_until(kinesis, shard, start: ShardPosition, count: int, max_reads: int = 30, **options):
    """Reads batch after batch from ``start`` until ``count`` rows came: (readers, results, rows, end). A read that
    gave way to a subscription made less than 5 s ago is followed by a pause, as by a query's next trigger."""
    readers, results, got = [], [], []
    while len(got) < count and len(readers) < max_reads:
        reader, result = read(kinesis, shard, start, **options)
        readers.append(reader)
        results.append(result)
        got += rows(result)
        start = result.end
        if result.stop == STOP_SUBSCRIPTION_IN_USE:  # gave way to a recent subscription: as a query, trigger again
            time.sleep(_TRIGGER_S)
    return readers, results, got, start


def test_consecutive_reads_go_on_with_one_subscription_and_never_meet_the_5_second_rule(kinesis, shard, bridge):
    stream, consumer = shard
    first = put(kinesis, stream, "a", 3)
    readers, _, got, end = read_until(kinesis, shard, ShardPosition.trim_horizon(), len(first))
    later = put(kinesis, stream, "b", 2)
    more_readers, _, more, end = read_until(kinesis, shard, end, len(later))
    readers += more_readers
    assert got + more == first + later  # in order, no gap, no duplicate
    assert end == ShardPosition.after_sequence(later[-1][0], -1)
    assert [r.subscriptions for r in readers] == [1] + [0] * (len(readers) - 1)
    assert all(r.resumed for r in readers[1:]) and len(readers) >= 2
    counts = bridge.subscription_counts(consumer_arn=consumer)
    assert (counts.admitted, counts.refused, counts.taken_over) == (1, 0, 0)  # AWS's 5-second rule never met


def test_reads_stopping_inside_an_event_and_inside_a_kpl_aggregate_go_on_exactly(kinesis, shard, bridge):
    """Everything is put before the first read subscribes, so it arrives in few events; reads of 2 rows each stop
    inside them (one inside the aggregate) and each next read goes on from the records the last one kept."""
    stream, consumer = shard
    expected = put(kinesis, stream, "a", 3) + put_aggregate(kinesis, stream, "agg", 5) + put(kinesis, stream, "c", 2)
    readers, results, got, end = read_until(kinesis, shard, ShardPosition.trim_horizon(), len(expected),
                                            max_records=2)
    assert got == expected
    assert results[0].stop == STOP_MAX_RECORDS and results[0].calls == 1  # stopped inside its first event
    assert any(r.end.sub >= 0 for r in results)  # a read ended inside the aggregate
    assert end == ShardPosition.after_sequence(expected[-1][0], -1)
    assert sum(r.subscriptions for r in readers) == 1 and all(r.resumed for r in readers[1:])
    assert bridge.subscription_counts(consumer_arn=consumer).admitted == 1


def test_a_parked_subscription_taken_over_or_cut_while_it_waits_is_renewed_from_its_end(kinesis, shard, bridge):
    """Another subscriber takes the shard over (AWS ends the parked stream with ResourceInUseException), then the
    bridge cuts the connection: each surfaces at the next read, which renews the subscription where the last read
    ended and reads on with no gap and no duplicate."""
    stream, consumer = shard
    bridge.takeover_after_s = _TAKEOVER_S
    first = put(kinesis, stream, "a", 3)
    _, _, got, end = read_until(kinesis, shard, ShardPosition.trim_horizon(), len(first))
    time.sleep(_TAKEOVER_S)
    intruder = kinesis.subscribe_to_shard(ConsumerARN=consumer, ShardId=SHARD,
                                          StartingPosition={"Type": "LATEST"})["EventStream"]
    intruder.close()
    taken = put(kinesis, stream, "b", 2)
    after_takeover, _, more, end = read_until(kinesis, shard, end, len(taken))
    assert bridge.subscription_counts(consumer_arn=consumer).taken_over >= 1  # the parked one (and the intruder's)
    # the first read took the parked subscription and met the takeover; one of the reads subscribed again
    assert after_takeover[0].resumed and sum(r.subscriptions for r in after_takeover) == 1

    assert bridge.cut(consumer_arn=consumer) == 1  # the renewed subscription, parked again
    cut = put(kinesis, stream, "c", 2)
    after_cut, _, last, _ = read_until(kinesis, shard, end, len(cut))
    assert got + more + last == first + taken + cut
    assert after_cut[0].resumed and sum(r.subscriptions for r in after_cut) == 1


def test_a_read_that_does_not_start_where_the_parked_one_ended_closes_it_and_reads_exactly(kinesis, shard, bridge):
    """A retry re-reading an exact range (its start is before the parked end): the parked subscription is closed
    and the retry subscribes anew (waiting out AWS's rule), reading exactly the recorded range; the next batch goes
    on with the retry's own parked subscription."""
    stream, consumer = shard
    bridge.takeover_after_s = _TAKEOVER_S
    expected = put(kinesis, stream, "a", 5)
    _, first = read(kinesis, shard, ShardPosition.trim_horizon(), max_records=2)
    assert first.stop == STOP_MAX_RECORDS
    retry, again = read(kinesis, shard, ShardPosition.trim_horizon(), recorded_end=first.end)
    assert rows(again) == rows(first) == expected[:2] and again.end == first.end
    assert not retry.resumed and retry.subscriptions == 1
    readers, _, rest, _ = read_until(kinesis, shard, again.end, 3)
    assert rest == expected[2:]
    assert readers[0].resumed and sum(r.subscriptions for r in readers) == 0
    assert bridge.subscription_counts(consumer_arn=consumer).admitted == 2


def test_an_exact_reread_where_a_parked_subscription_stands_subscribes_anew_and_reads_the_recorded_range(
        kinesis_mock_endpoint, kinesis, shard, bridge, parked):
    """Batch N ended here (parked); batch N+1's first attempt ran in another process (another client: its own
    subscription, which takes the shard over) and recorded its end; the retry, back in this process, starts where
    the parked subscription stands but is exact: it does not trust that subscription's queued events (an exact read
    that believes stale "caught up" events doubts its recorded end), closes it, subscribes and reads exactly the
    recorded range."""
    stream, consumer = shard
    bridge.takeover_after_s = _TAKEOVER_S
    first = put(kinesis, stream, "a", 3)
    _, _, got, end = read_until(kinesis, shard, ShardPosition.trim_horizon(), len(first))
    time.sleep(_TAKEOVER_S)
    other = kh.kinesis_client(kinesis_mock_endpoint)
    attempt: list = []
    elsewhere = threading.Thread(target=lambda: attempt.append(read_until(other, shard, end, 3)))
    elsewhere.start()
    try:
        _wait_for(lambda: bridge.subscription_counts(consumer_arn=consumer).taken_over >= 1, "the takeover")
        later = put(kinesis, stream, "b", 3)  # after the takeover: the parked subscription never saw them
    finally:
        elsewhere.join(60)
        other.close()
    [(_, _, attempt_rows, attempt_end)] = attempt
    assert attempt_rows == later
    retry, exact = read(kinesis, shard, end, recorded_end=attempt_end)
    assert rows(exact) == attempt_rows and exact.end == attempt_end
    assert not retry.resumed and retry.subscriptions == 1
    assert len(parked) == 2  # the retry's own and the other client's, each parked at the recorded end


def test_a_closed_shard_is_read_to_its_end_by_a_new_subscription_not_the_parked_one(kinesis, shard, bridge):
    """The shard is parked caught up, then gets records and is split while no read is there: the parked
    subscription's queued events said "caught up" before those records came, which on a closed shard would read as
    its end. The read that knows the shard closed subscribes anew and reads the records to SHARD_END."""
    stream, consumer = shard
    bridge.takeover_after_s = _TAKEOVER_S
    first = put(kinesis, stream, "a", 2)
    _, _, got, end = read_until(kinesis, shard, ShardPosition.trim_horizon(), len(first))
    time.sleep(2)  # the parked subscription queues caught-up events
    last = put(kinesis, stream, "b", 3)
    kh.split_shard(kinesis, stream, SHARD)
    ending = next(s for s in kh.list_shards(kinesis, stream) if s["ShardId"] == SHARD)
    ending = ending["SequenceNumberRange"]["EndingSequenceNumber"]
    readers, results, more, end = read_until(kinesis, shard, end, len(last), ending_sequence=ending)
    assert got + more == first + last and end.is_shard_end
    assert not readers[0].resumed and sum(r.subscriptions for r in readers) >= 1


def _wait_for(condition, what: str, timeout_s: float = 30) -> None:
    deadline = deadline_after(timeout_s)
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
        time.sleep(0.05)


def test_a_parked_subscription_not_taken_in_time_is_closed(kinesis, shard, bridge, parked):
    stream, consumer = shard
    bridge.takeover_after_s = _TAKEOVER_S
    parked.ttl_s = 0.5
    expected = put(kinesis, stream, "a", 2)
    _, _, got, end = read_until(kinesis, shard, ShardPosition.trim_horizon(), len(expected))
    assert len(parked) == 1
    time.sleep(parked.ttl_s)
    assert parked.take(("another client", consumer, SHARD)) is None and len(parked) == 0  # reaped on take
    _wait_for(lambda: bridge.open_subscriptions(consumer_arn=consumer) == [], "closed subscription at the bridge")
    later = put(kinesis, stream, "b", 1)
    readers, _, more, _ = read_until(kinesis, shard, end, len(later))
    assert got + more == expected + later
    assert not any(r.resumed for r in readers) and sum(r.subscriptions for r in readers) == 1
