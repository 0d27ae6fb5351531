"""Acceptance suite of the Kafka development broker: what Kafka itself answers, seen through a real client.

The broker is driven ONLY through confluent-kafka (librdkafka): ``Producer``, ``Consumer`` with ``assign``
(never ``subscribe``: the dev broker has no group membership) and ``AdminClient``, plus raw sockets for the
malformed-frame case.  Every expectation is Kafka's documented behaviour, so the suite also runs against a
real cluster: ``SAMZA_TEST_KAFKA_BOOTSTRAP=host:port`` (then only the restart/crash tests, which need broker
control, are skipped).

Timestamp lookups (ListOffsets by timestamp, ``offsets_for_times``): Kafka answers the FIRST offset, in
offset order, whose record timestamp is >= the target -- with non-monotonic timestamps that is not the
offset of the closest timestamp (the time index only narrows the scan; the scan itself runs in offset
order).  When no record qualifies, Kafka answers offset -1 / timestamp -1, which librdkafka reports
unchanged as offset -1 (== ``OFFSET_END``).
"""

from __future__ import annotations

import os
import random
import socket
import struct
import threading
import time
import uuid

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from samza_devkit.waits import deadline_after

TIMEOUT = 30.0
REAL_CLUSTER_ENV = "SAMZA_TEST_KAFKA_BOOTSTRAP"


# ---------------------------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _wait_for(predicate, what: str, timeout: float = TIMEOUT, interval: float = 0.05):
    deadline = deadline_after(timeout)
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def _partition_count(client, topic: str) -> int:
    md = client.list_topics(topic, timeout=TIMEOUT).topics.get(topic)
    if md is None or md.error is not None:
        return 0
    return len(md.partitions)


def _new_topic(bootstrap: str, partitions: int = 1, config: dict | None = None, prefix: str = "acc") -> str:
    """Create a uniquely named topic with the AdminClient and wait until its metadata shows it."""
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    admin = _admin(bootstrap)
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=dict(config or {}))],
        operation_timeout=TIMEOUT,
        request_timeout=TIMEOUT,
    )
    assert futures[name].result(TIMEOUT) is None
    _wait_for(lambda: _partition_count(admin, name) == partitions, f"metadata of {name}")
    return name


def _producer(bootstrap: str, **extra) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "allow.auto.create.topics": False}
    conf.update(extra)
    return Producer(conf)


def _consumer(bootstrap: str, **extra) -> Consumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": f"acc-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "error",  # never silently skip: reading out of range must be visible
        "fetch.wait.max.ms": 100,
        "check.crcs": True,  # every batch served (offsets, epochs, LogAppendTime rewritten) must still verify
    }
    conf.update(extra)
    return Consumer(conf)


def _produce_all(producer: Producer, messages) -> list[tuple[int, int]]:
    """Produce each dict of ``Producer.produce`` kwargs; return (partition, offset) per message, in order.

    Fails the test on any delivery error or undelivered message.
    """
    messages = list(messages)
    results: list = [None] * len(messages)

    def report_for(i):
        def report(err, msg):
            results[i] = err if err is not None else (msg.partition(), msg.offset())

        return report

    for i, m in enumerate(messages):
        while True:
            try:
                producer.produce(on_delivery=report_for(i), **m)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(TIMEOUT) == 0, "messages left undelivered"
    errors = [r for r in results if not isinstance(r, tuple)]
    assert errors == [], errors[:5]
    return results


def _consume_exactly(consumer: Consumer, count: int, timeout: float = TIMEOUT) -> list:
    """Poll until ``count`` messages arrived (errors fail the test), then check nothing more comes."""
    out = []
    deadline = deadline_after(timeout)
    while len(out) < count:
        assert time.monotonic() < deadline, f"got {len(out)} of {count} messages"
        for m in consumer.consume(num_messages=min(10_000, count - len(out)), timeout=0.5):
            assert m.error() is None, m.error()
            out.append(m)
    extra = [m for m in consumer.consume(num_messages=10, timeout=0.2) if m.error() is None]
    assert extra == [], f"{len(extra)} unexpected extra messages"
    return out


def _record(m) -> tuple:
    return (m.partition(), m.offset(), m.key(), m.value(), m.headers(), m.timestamp())


def _watermarks(consumer: Consumer, topic: str, partition: int) -> tuple[int, int]:
    return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT, cached=False)


def _list_offset(admin: AdminClient, topic: str, partition: int, spec):
    tp = TopicPartition(topic, partition)
    return admin.list_offsets({tp: spec}, request_timeout=TIMEOUT)[tp].result(TIMEOUT)


def _expected_headers(headers):
    # librdkafka hands back None when a record has no headers at all.
    return list(headers) if headers else None


# ---------------------------------------------------------------------------------------------- tests


def test_create_topic_and_100k_keyed_messages_with_headers_and_nulls_read_back_exactly(bootstrap):
    admin = _admin(bootstrap)
    topic = _new_topic(bootstrap, partitions=3)
    md = admin.list_topics(topic, timeout=TIMEOUT).topics[topic]
    assert md.error is None
    assert sorted(md.partitions) == [0, 1, 2]
    assert all(p.error is None and p.leader >= 0 for p in md.partitions.values())
    # Creating it again is Kafka's TOPIC_ALREADY_EXISTS.
    again = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic]
    with pytest.raises(KafkaException) as excinfo:
        again.result(TIMEOUT)
    assert excinfo.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    invalid = {
        "bad name!": (NewTopic("bad name!", 1, 1), KafkaError.TOPIC_EXCEPTION),
        "x" * 250: (NewTopic("x" * 250, 1, 1), KafkaError.TOPIC_EXCEPTION),  # longer than 249
        "acc-zero": (NewTopic("acc-zero", 0, 1), KafkaError.INVALID_PARTITIONS),
        "acc-rf": (NewTopic("acc-rf", 1, 5), KafkaError.INVALID_REPLICATION_FACTOR),
        "acc-cfg": (
            NewTopic("acc-cfg", 1, 1, config={"message.timestamp.type": "Sometimes"}),
            KafkaError.INVALID_CONFIG,
        ),
    }
    futures = admin.create_topics([new for new, _ in invalid.values()], request_timeout=TIMEOUT)
    for name, (_, code) in invalid.items():
        with pytest.raises(KafkaException) as excinfo:
            futures[name].result(TIMEOUT)
        assert excinfo.value.args[0].code() == code, name
    assert not set(invalid) & set(admin.list_topics(timeout=TIMEOUT).topics)

    n = 100_000
    rng = random.Random(20240601)
    header_shapes = [
        None,
        [("h", b"v"), ("h", b"duplicate key"), ("\u00e9t\u00e9", "caf\u00e9".encode())],
        [("", b""), ("null-value", None)],
        [("bin", bytes(range(256)))],
        [("i", b"")],
    ]
    base_ts = 1_600_000_000_000
    sent = []
    for i in range(n):
        key = None if i % 10 == 0 else (b"" if i % 10 == 1 else b"k%d" % i)
        if i % 13 == 0:
            value = None
        elif i % 13 == 1:
            value = b""
        else:
            value = rng.randbytes(rng.randrange(1, 120))
        sent.append(
            {
                "topic": topic,
                "partition": i % 3,
                "key": key,
                "value": value,
                "headers": header_shapes[i % 5],
                "timestamp": base_ts + i,
            }
        )
    delivered = _produce_all(_producer(bootstrap, **{"linger.ms": 20}), sent)
    # The acknowledged offsets are 0, 1, 2, ... per partition, in produce order.
    for p in range(3):
        assert [o for (part, o) in delivered if part == p] == list(range(len(sent[p::3])))

    consumer = _consumer(bootstrap)
    assert [_watermarks(consumer, topic, p) for p in range(3)] == [(0, len(sent[p::3])) for p in range(3)]
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
    got = _consume_exactly(consumer, n, timeout=120)
    consumer.close()
    by_partition: dict[int, list] = {0: [], 1: [], 2: []}
    for m in got:
        assert m.topic() == topic
        by_partition[m.partition()].append(m)
    for p in range(3):
        expected = sent[p::3]
        msgs = by_partition[p]
        assert [m.offset() for m in msgs] == list(range(len(expected)))  # in order, no gap, no repeat
        for s, m in zip(expected, msgs, strict=True):
            assert m.key() == s["key"]
            assert m.value() == s["value"]
            assert m.headers() == _expected_headers(s["headers"])
            assert m.timestamp() == (TIMESTAMP_CREATE_TIME, s["timestamp"])


def test_watermarks_before_and_after_producing(bootstrap):
    topic = _new_topic(bootstrap, partitions=2)
    consumer = _consumer(bootstrap)
    assert _watermarks(consumer, topic, 0) == (0, 0)
    assert _watermarks(consumer, topic, 1) == (0, 0)
    producer = _producer(bootstrap)
    _produce_all(producer, [{"topic": topic, "partition": 0, "value": b"%d" % i} for i in range(7)])
    assert _watermarks(consumer, topic, 0) == (0, 7)
    assert _watermarks(consumer, topic, 1) == (0, 0)
    _produce_all(producer, [{"topic": topic, "partition": p, "value": b"x"} for p in (0, 1, 1)])
    assert _watermarks(consumer, topic, 0) == (0, 8)
    assert _watermarks(consumer, topic, 1) == (0, 2)
    consumer.close()


# Three produce calls, each flushed on its own: three batches.  Batch A spans 1000..1010 with a duplicate and
# an out-of-order timestamp; batch B starts in the "past" (1005 < A's 1010); there are gaps between the
# batches' ranges (1011..1999, 2201..2999); C has the unique maximum 4000 followed by smaller timestamps.
_TS_BATCHES = [
    [1000, 1000, 1007, 1003, 1010],
    [1005, 2000, 2000, 2100, 2200, 1500],
    [3000, 2500, 4000, 3500, 3000],
]
_TIMESTAMPS = [ts for batch in _TS_BATCHES for ts in batch]


def _kafka_offset_for_time(target: int) -> int:
    """Kafka's answer: the first offset, in offset order, whose timestamp is >= target; else -1."""
    return next((off for off, ts in enumerate(_TIMESTAMPS) if ts >= target), -1)


def _timestamp_targets() -> list[int]:
    targets = {0, 1, 999, 1500, 1999, 2150, 2600, 2999, 3999, 4000, 4001, 10**13}
    for ts in _TIMESTAMPS:
        targets.update((ts - 1, ts, ts + 1))
    return sorted(targets)


def _codecs_decoded_by_the_broker() -> list[str]:
    """Codecs whose batches the broker can look into (timestamp lookups inside a batch need that).

    Kafka decodes all of them.  The dev broker decodes through kafka-python's record classes: none and gzip
    always, snappy/lz4/zstd only when their optional Python packages are installed (otherwise it answers at
    batch granularity, which it documents as a limitation).
    """
    optional = ["snappy", "lz4", "zstd"]
    if os.environ.get(REAL_CLUSTER_ENV):
        return ["none", "gzip", *optional]
    from kafka import codec as kafka_codec

    return ["none", "gzip", *(c for c in optional if getattr(kafka_codec, f"has_{c}")())]


@pytest.mark.parametrize("codec", _codecs_decoded_by_the_broker())
def test_offsets_for_times_and_list_offsets_match_kafka(bootstrap, codec):
    # The expectations cover every kind of answer: before everything, exact hits, between two records,
    # duplicates, between batches, a target only met by a LATER batch's smaller offsets, and after all.
    answers = {t: _kafka_offset_for_time(t) for t in _timestamp_targets()}
    assert answers[0] == 0 and answers[1004] == 2 and answers[1011] == 6 and answers[10**13] == -1
    assert answers[1008] == 4 and answers[1500] == 6  # 1500 at offset 10 is not the first >= 1500

    topic = _new_topic(bootstrap, partitions=1)
    consumer = _consumer(bootstrap)
    admin = _admin(bootstrap)
    # An empty partition: no record qualifies for any timestamp, and there is no max timestamp.
    (tp,) = consumer.offsets_for_times([TopicPartition(topic, 0, 0)], timeout=TIMEOUT)
    assert tp.offset == -1
    empty_max = _list_offset(admin, topic, 0, OffsetSpec.max_timestamp())
    assert (empty_max.offset, empty_max.timestamp) == (-1, -1)

    producer = _producer(bootstrap, **{"compression.type": codec, "linger.ms": 50})
    for i, batch in enumerate(_TS_BATCHES):
        _produce_all(
            producer,
            [{"topic": topic, "partition": 0, "value": b"b%d-%d" % (i, ts), "timestamp": ts} for ts in batch],
        )
    for target, expected in answers.items():
        (tp,) = consumer.offsets_for_times([TopicPartition(topic, 0, target)], timeout=TIMEOUT)
        assert tp.error is None
        assert tp.offset == expected, f"offsets_for_times({target})"
        info = _list_offset(admin, topic, 0, OffsetSpec.for_timestamp(target))
        expected_ts = _TIMESTAMPS[expected] if expected >= 0 else -1
        assert (info.offset, info.timestamp) == (expected, expected_ts), f"list_offsets for_timestamp({target})"
    assert OFFSET_END == -1  # what "no such record" looks like to a librdkafka user

    end = len(_TIMESTAMPS)
    assert _list_offset(admin, topic, 0, OffsetSpec.earliest()).offset == 0
    assert _list_offset(admin, topic, 0, OffsetSpec.latest()).offset == end
    top = _list_offset(admin, topic, 0, OffsetSpec.max_timestamp())
    assert (top.offset, top.timestamp) == (_TIMESTAMPS.index(4000), 4000)
    consumer.close()


def test_create_partitions_2_4_8_seen_by_running_clients(bootstrap):
    topic = _new_topic(bootstrap, partitions=2)
    admin = _admin(bootstrap)
    producer = _producer(bootstrap)
    consumer = _consumer(bootstrap)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
    _produce_all(producer, [{"topic": topic, "partition": p, "value": b"gen2-%d" % p} for p in range(2)])
    got = {(m.partition(), m.offset(), m.value()) for m in _consume_exactly(consumer, 2)}
    assert got == {(0, 0, b"gen2-0"), (1, 0, b"gen2-1")}

    old = 2
    for new in (4, 8):
        assert admin.create_partitions([NewPartitions(topic, new)])[topic].result(TIMEOUT) is None
        # The running clients see the new partitions once their metadata is refreshed.
        _wait_for(lambda n=new: _partition_count(producer, topic) == n, f"producer sees {new}")
        _wait_for(lambda n=new: _partition_count(consumer, topic) == n, f"consumer sees {new}")
        assert _watermarks(consumer, topic, new - 1) == (0, 0)
        delivered = _produce_all(
            producer, [{"topic": topic, "partition": p, "value": b"gen%d-%d" % (new, p)} for p in range(old, new)]
        )
        assert delivered == [(p, 0) for p in range(old, new)]
        consumer.incremental_assign([TopicPartition(topic, p, 0) for p in range(old, new)])
        got = {(m.partition(), m.offset(), m.value()) for m in _consume_exactly(consumer, new - old)}
        assert got == {(p, 0, b"gen%d-%d" % (new, p)) for p in range(old, new)}
        old = new

    # The default (murmur2) partitioner now spreads keys over all 8 partitions.
    delivered = _produce_all(producer, [{"topic": topic, "key": b"key-%d" % i, "value": b"k"} for i in range(200)])
    assert {p for p, _ in delivered} == set(range(8))
    # Fewer partitions than now is refused.
    with pytest.raises(KafkaException) as excinfo:
        admin.create_partitions([NewPartitions(topic, 4)])[topic].result(TIMEOUT)
    assert excinfo.value.args[0].code() == KafkaError.INVALID_PARTITIONS
    assert _partition_count(admin, topic) == 8
    consumer.close()


def test_delete_records_moves_log_start_and_below_it_is_out_of_range(bootstrap):
    topic = _new_topic(bootstrap, partitions=2)
    # linger.ms: one batch of 100, so the new log start (40) falls inside a batch.
    _produce_all(
        _producer(bootstrap, **{"linger.ms": 100}),
        [{"topic": topic, "partition": 0, "value": b"%d" % i, "timestamp": 10_000 + i} for i in range(100)],
    )
    admin = _admin(bootstrap)
    result = admin.delete_records([TopicPartition(topic, 0, 40)], request_timeout=TIMEOUT)
    assert result[TopicPartition(topic, 0)].result(TIMEOUT).low_watermark == 40

    consumer = _consumer(bootstrap)
    assert _watermarks(consumer, topic, 0) == (40, 100)
    assert _watermarks(consumer, topic, 1) == (0, 0)  # the other partition is untouched
    assert _list_offset(admin, topic, 0, OffsetSpec.earliest()).offset == 40
    assert _list_offset(admin, topic, 0, OffsetSpec.latest()).offset == 100
    # Timestamp lookups never answer below the log start: the first offset >= log start with ts >= target.
    found = _list_offset(admin, topic, 0, OffsetSpec.for_timestamp(10_010))
    assert (found.offset, found.timestamp) == (40, 10_040)
    (tp,) = consumer.offsets_for_times([TopicPartition(topic, 0, 10_060)], timeout=TIMEOUT)
    assert tp.offset == 60
    # Deleting beyond the high watermark is Kafka's OFFSET_OUT_OF_RANGE.
    beyond = admin.delete_records([TopicPartition(topic, 0, 101)], request_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as excinfo:
        beyond[TopicPartition(topic, 0)].result(TIMEOUT)
    assert excinfo.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE

    # Fetching below the new start: auto.offset.reset=error surfaces the out-of-range fetch.
    consumer.assign([TopicPartition(topic, 0, 10)])
    deadline = deadline_after(TIMEOUT)
    error = None
    while error is None:
        assert time.monotonic() < deadline, "no OFFSET_OUT_OF_RANGE error below the log start"
        m = consumer.poll(0.2)
        if m is not None:
            assert m.error() is not None, f"record at {m.offset()} served below the log start offset"
            error = m.error()
    assert error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE), error
    consumer.close()

    consumer = _consumer(bootstrap)
    consumer.assign([TopicPartition(topic, 0, 40)])
    msgs = _consume_exactly(consumer, 60)
    assert [(m.offset(), m.value()) for m in msgs] == [(i, b"%d" % i) for i in range(40, 100)]
    consumer.close()


def test_commit_and_fetch_group_offsets(bootstrap):
    topic = _new_topic(bootstrap, partitions=3)
    _produce_all(_producer(bootstrap), [{"topic": topic, "partition": i % 3, "value": b"%d" % i} for i in range(150)])
    group = f"acc-group-{uuid.uuid4().hex[:8]}"
    tps = [TopicPartition(topic, p) for p in range(3)]

    first = _consumer(bootstrap, **{"group.id": group})
    first.assign([TopicPartition(topic, p, 0) for p in range(3)])
    assert [tp.offset for tp in first.committed(tps, timeout=TIMEOUT)] == [OFFSET_INVALID] * 3
    committed = first.commit(
        offsets=[TopicPartition(topic, 0, 42, "meta-0"), TopicPartition(topic, 1, 7)], asynchronous=False
    )
    assert sorted((tp.partition, tp.offset, tp.error) for tp in committed) == [(0, 42, None), (1, 7, None)]
    first.close()

    second = _consumer(bootstrap, **{"group.id": group})
    fetched = second.committed(tps, timeout=TIMEOUT)
    assert [(tp.partition, tp.offset) for tp in fetched] == [(0, 42), (1, 7), (2, OFFSET_INVALID)]
    assert all(tp.error is None for tp in fetched)
    assert fetched[0].metadata == "meta-0"
    # Overwrite one, and an assign without an offset resumes from the committed one.
    second.commit(offsets=[TopicPartition(topic, 1, 45)], asynchronous=False)
    second.close()

    third = _consumer(bootstrap, **{"group.id": group})
    assert [tp.offset for tp in third.committed(tps, timeout=TIMEOUT)] == [42, 45, OFFSET_INVALID]
    third.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    msgs = _consume_exactly(third, (50 - 42) + (50 - 45))
    assert sorted((m.partition(), m.offset()) for m in msgs) == sorted(
        [(0, o) for o in range(42, 50)] + [(1, o) for o in range(45, 50)]
    )
    third.close()

    stranger = _consumer(bootstrap)  # another group sees nothing
    assert [tp.offset for tp in stranger.committed(tps, timeout=TIMEOUT)] == [OFFSET_INVALID] * 3
    stranger.close()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_read_back_byte_exact(bootstrap, codec):
    # The broker stores any codec's batches as produced (its docstring claims all four); gzip is also decoded
    # by it where needed (timestamp lookups, above).
    topic = _new_topic(bootstrap, partitions=2)
    rng = random.Random(codec)
    sent = []
    for i in range(3000):
        if i % 3 == 0:
            value = (b"highly compressible %d " % (i % 10)) * rng.randrange(1, 50)
        elif i % 3 == 1:
            value = rng.randbytes(rng.randrange(0, 300))  # incompressible
        else:
            value = None
        sent.append(
            {
                "topic": topic,
                "partition": i % 2,
                "key": None if i % 4 == 0 else b"key-%d" % (i % 17),
                "value": value,
                "headers": [("n", b"%d" % i)] if i % 5 else None,
                "timestamp": 1_650_000_000_000 + i,
            }
        )
    _produce_all(_producer(bootstrap, **{"compression.type": codec, "linger.ms": 50}), sent)
    consumer = _consumer(bootstrap)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
    got = sorted((_record(m) for m in _consume_exactly(consumer, len(sent))), key=lambda r: (r[0], r[1]))
    consumer.close()
    expected = []
    for p in range(2):
        for off, s in enumerate(sent[p::2]):
            expected.append(
                (p, off, s["key"], s["value"], _expected_headers(s["headers"]), (TIMESTAMP_CREATE_TIME, s["timestamp"]))
            )
    assert got == expected


def test_one_mib_messages(bootstrap):
    mib = 1024 * 1024
    # Kafka's default max.message.bytes (1 MiB + 12) is smaller than a batch holding a 1 MiB value.
    topic = _new_topic(bootstrap, partitions=1, config={"max.message.bytes": str(4 * mib)})
    rng = random.Random(7)
    values = [rng.randbytes(mib), rng.randbytes(mib - 1), b"small", rng.randbytes(mib), rng.randbytes(mib + 100)]
    sent = [
        {"topic": topic, "partition": 0, "key": b"big-%d" % i, "value": v, "headers": [("len", b"%d" % len(v))]}
        for i, v in enumerate(values)
    ]
    producer = _producer(bootstrap, **{"message.max.bytes": 8 * mib, "linger.ms": 0})
    assert _produce_all(producer, sent) == [(0, i) for i in range(len(values))]
    # Default fetch sizes (max.partition.fetch.bytes = 1 MiB): Kafka still returns the first, larger batch.
    consumer = _consumer(bootstrap)
    consumer.assign([TopicPartition(topic, 0, 0)])
    msgs = _consume_exactly(consumer, len(values))
    consumer.close()
    assert [m.offset() for m in msgs] == list(range(len(values)))
    for s, m in zip(sent, msgs, strict=True):
        assert m.key() == s["key"] and m.headers() == s["headers"]
        assert m.value() == s["value"]  # byte for byte


def test_concurrent_producers_and_consumers_account_for_everything(bootstrap):
    topic = _new_topic(bootstrap, partitions=4)
    n_producers, per_producer = 3, 4000
    assignment = {0: [0, 1], 1: [2, 3]}  # consumer index -> partitions
    delivered: dict[int, list[tuple[int, int, bytes]]] = {}
    received: dict[int, list[tuple[int, int, bytes]]] = {c: [] for c in assignment}
    errors: list = []
    targets: dict[int, int] = {}  # partition -> final high watermark, set once all producers are done
    producers_done = threading.Event()

    def produce(pid: int) -> None:
        try:
            producer = _producer(bootstrap)
            msgs = [
                {"topic": topic, "key": b"p%d-k%d" % (pid, seq % 17), "value": b"p%d-s%06d" % (pid, seq)}
                for seq in range(per_producer)
            ]
            acked = _produce_all(producer, msgs)
            delivered[pid] = [(p, o, m["value"]) for (p, o), m in zip(acked, msgs, strict=True)]
        except BaseException as exc:  # surfaced by the main thread
            errors.append(exc)

    def consume(cid: int) -> None:
        try:
            consumer = _consumer(bootstrap)
            consumer.assign([TopicPartition(topic, p, 0) for p in assignment[cid]])
            counts = dict.fromkeys(assignment[cid], 0)
            deadline = deadline_after(90)
            while not (producers_done.is_set() and all(counts[p] >= targets[p] for p in counts)):
                if time.monotonic() > deadline or errors:
                    raise AssertionError(f"consumer {cid} stuck at {counts}")
                for m in consumer.consume(num_messages=1000, timeout=0.2):
                    if m.error() is not None:
                        raise AssertionError(f"consumer {cid}: {m.error()}")
                    received[cid].append((m.partition(), m.offset(), m.value()))
                    counts[m.partition()] += 1
            consumer.close()
        except BaseException as exc:
            errors.append(exc)

    consumers = [threading.Thread(target=consume, args=(c,)) for c in assignment]
    producers = [threading.Thread(target=produce, args=(p,)) for p in range(n_producers)]
    for t in consumers + producers:  # consumers first: they tail the log while it is written
        t.start()
    for t in producers:
        t.join(120)
    if not errors:
        probe = _consumer(bootstrap)
        targets.update({p: _watermarks(probe, topic, p)[1] for p in range(4)})
        probe.close()
    producers_done.set()
    for t in consumers:
        t.join(120)
    assert errors == []
    assert all(not t.is_alive() for t in consumers + producers)

    all_delivered = sorted(r for rs in delivered.values() for r in rs)
    all_received = sorted(r for rs in received.values() for r in rs)
    assert len(all_delivered) == n_producers * per_producer
    assert all_received == all_delivered  # nothing lost, nothing duplicated, same offsets
    assert sum(targets.values()) == n_producers * per_producer
    for p in range(4):
        offsets = [o for (part, o, _) in all_received if part == p]
        assert offsets == list(range(targets[p]))
    # Each producer's messages keep their order within a partition.
    for pid, recs in delivered.items():
        for p in range(4):
            seqs = [v for (part, _o, v) in sorted(recs) if part == p]
            assert seqs == sorted(seqs), f"producer {pid} reordered in partition {p}"


ON_REAL_CLUSTER = bool(os.environ.get(REAL_CLUSTER_ENV))


@pytest.mark.skipif(ON_REAL_CLUSTER, reason="restarts the broker: dev broker only (SAMZA_TEST_KAFKA_BOOTSTRAP set)")
@pytest.mark.parametrize("how", ["restart", "kill"])
def test_restart_on_same_data_dir_keeps_every_acknowledged_message(tmp_path, how):
    from samza_devkit.kafka_broker import KafkaDevBroker

    data_dir = tmp_path / "broker-data"
    broker = KafkaDevBroker(data_dir=data_dir, port=0)
    broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        topic = _new_topic(bootstrap, partitions=3, config={"message.timestamp.type": "LogAppendTime"})
        plain = _new_topic(bootstrap, partitions=1)
        producer = _producer(bootstrap, **{"acks": "all", "linger.ms": 10})
        first = [
            {"topic": topic, "partition": i % 3, "key": b"%d" % i, "value": b"before-%d" % i, "headers": [("i", b"1")]}
            for i in range(3000)
        ]
        acked_first = _produce_all(producer, first)
        _produce_all(producer, [{"topic": plain, "value": b"plain", "timestamp": 12345}])
        group = "restart-group"
        committer = _consumer(bootstrap, **{"group.id": group})
        committer.commit(offsets=[TopicPartition(topic, 1, 17)], asynchronous=False)
        committer.close()
        tail = _consumer(bootstrap)  # tails partition 0 across the restart, same client and connection setup
        tail.assign([TopicPartition(topic, 0, 1000)])
        assert tail.poll(0.3) is None
        port = broker.port

        if how == "restart":
            broker.restart()
        else:
            broker.kill()  # SIGKILL: only what was acknowledged may be relied upon
            broker.start()
        assert broker.port == port and broker.bootstrap_servers == bootstrap

        # The producer created before the restart reconnects and keeps appending after the old offsets.
        second = [{"topic": topic, "partition": i % 3, "value": b"after-%d" % i} for i in range(600)]
        acked_second = _produce_all(producer, second)
        assert acked_second == [(i % 3, 1000 + i // 3) for i in range(600)]
        tailed = _consume_exactly(tail, 200)
        assert [(m.offset(), m.value()) for m in tailed] == [(1000 + i, b"after-%d" % (3 * i)) for i in range(200)]
        tail.close()

        consumer = _consumer(bootstrap, **{"group.id": group})
        assert [_watermarks(consumer, topic, p) for p in range(3)] == [(0, 1200)] * 3
        assert consumer.committed([TopicPartition(topic, 1)], timeout=TIMEOUT)[0].offset == 17
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
        got = {(m.partition(), m.offset()): m for m in _consume_exactly(consumer, 3600)}
        for s, (p, o) in zip(first + second, acked_first + acked_second, strict=True):
            m = got[(p, o)]
            assert (m.key(), m.value(), m.headers()) == (s.get("key"), s["value"], s.get("headers"))
            assert m.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME  # the topic config survived too
        consumer.assign([TopicPartition(plain, 0, 0)])
        (m,) = _consume_exactly(consumer, 1)
        assert (m.value(), m.timestamp()) == (b"plain", (TIMESTAMP_CREATE_TIME, 12345))
        consumer.close()
    finally:
        broker.stop()

    # A brand-new broker process on the same directory (any port) serves the same data.
    with KafkaDevBroker(data_dir=data_dir, port=0) as again:
        consumer = _consumer(again.bootstrap_servers)
        assert [_watermarks(consumer, topic, p) for p in range(3)] == [(0, 1200)] * 3
        consumer.close()


def test_deleted_topic_is_gone_and_recreated_empty(bootstrap):
    admin = _admin(bootstrap)
    topic = _new_topic(bootstrap, partitions=2)
    _produce_all(_producer(bootstrap), [{"topic": topic, "partition": 1, "value": b"old"}] * 5)
    assert admin.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(TIMEOUT) is None
    _wait_for(lambda: topic not in admin.list_topics(timeout=TIMEOUT).topics, "topic deletion")
    futures = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    assert futures[topic].result(TIMEOUT) is None
    _wait_for(lambda: _partition_count(admin, topic) == 3, "re-created topic")
    consumer = _consumer(bootstrap)
    assert [_watermarks(consumer, topic, p) for p in range(3)] == [(0, 0)] * 3
    consumer.close()


def test_log_append_time_topic_uses_broker_time(bootstrap):
    topic = _new_topic(bootstrap, partitions=1, config={"message.timestamp.type": "LogAppendTime"})
    admin = _admin(bootstrap)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource], request_timeout=TIMEOUT)[resource].result(TIMEOUT)
    assert configs["message.timestamp.type"].value == "LogAppendTime"

    producer = _producer(bootstrap, **{"linger.ms": 100})
    before = int(time.time() * 1000)
    _produce_all(producer, [{"topic": topic, "value": b"%d" % i, "timestamp": 1000 + i} for i in range(20)])
    after = int(time.time() * 1000)
    consumer = _consumer(bootstrap)
    consumer.assign([TopicPartition(topic, 0, 0)])
    msgs = _consume_exactly(consumer, 20)
    stamps = set()
    for m in msgs:
        ts_type, ts = m.timestamp()
        assert ts_type == TIMESTAMP_LOG_APPEND_TIME
        assert before - 5 <= ts <= after + 5, (before, ts, after)  # broker time, not the producer's 1000+i
        stamps.add(ts)
    # Timestamp lookups on such a topic use the append time too.
    (tp,) = consumer.offsets_for_times([TopicPartition(topic, 0, 1005)], timeout=TIMEOUT)
    assert tp.offset == 0
    (tp,) = consumer.offsets_for_times([TopicPartition(topic, 0, max(stamps) + 1)], timeout=TIMEOUT)
    assert tp.offset == -1
    consumer.close()


def test_unknown_topic_is_an_error_not_a_hang(bootstrap):
    name = f"acc-missing-{uuid.uuid4().hex[:8]}"
    consumer = _consumer(bootstrap)
    admin = _admin(bootstrap)
    started = time.monotonic()

    md = consumer.list_topics(name, timeout=TIMEOUT).topics[name]
    assert md.error is not None and md.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    with pytest.raises(KafkaException):
        consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=10, cached=False)
    with pytest.raises(KafkaException):
        consumer.offsets_for_times([TopicPartition(name, 0, 1000)], timeout=10)
    with pytest.raises(KafkaException) as excinfo:
        admin.delete_topics([name], operation_timeout=10, request_timeout=10)[name].result(TIMEOUT)
    assert excinfo.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    with pytest.raises(KafkaException) as excinfo:
        admin.create_partitions([NewPartitions(name, 2)], request_timeout=10)[name].result(TIMEOUT)
    assert excinfo.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    producer = _producer(bootstrap, **{"message.timeout.ms": 2000})
    outcome = []
    producer.produce(name, b"x", on_delivery=lambda err, _m: outcome.append(err))
    assert producer.flush(15) == 0
    assert len(outcome) == 1 and outcome[0] is not None
    assert outcome[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._MSG_TIMED_OUT)

    # An assign() to it just yields nothing: poll returns, it does not block.
    consumer.assign([TopicPartition(name, 0, 0)])
    for _ in range(3):
        m = consumer.poll(0.3)
        assert m is None or m.error() is not None
    print(f"missing-topic calls took {time.monotonic() - started:.1f}s")  # each call above is bounded by its timeout
    assert name not in admin.list_topics(timeout=TIMEOUT).topics  # nothing was auto-created
    consumer.close()


def _raw_frame(api_key: int, version: int, corr: int, body: bytes = b"", flexible: bool = False) -> bytes:
    header = struct.pack(">hhih", api_key, version, corr, 3) + b"raw"
    if flexible:
        header += b"\x00"  # empty tagged fields
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
    return buf


def _closed_by_peer(sock: socket.socket, timeout: float = 10.0) -> bool:
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):  # a well-formed error response may come first
            pass
        return True
    except TimeoutError:
        return False
    except OSError:  # reset by peer
        return True


def _round_trip(bootstrap: str, topic: str, value: bytes) -> None:
    (p, off) = _produce_all(_producer(bootstrap, **{"linger.ms": 0}), [{"topic": topic, "value": value}])[0]
    consumer = _consumer(bootstrap)
    consumer.assign([TopicPartition(topic, p, off)])
    (m,) = _consume_exactly(consumer, 1, timeout=15)
    assert m.value() == value
    consumer.close()


def test_malformed_raw_frames_do_not_stop_the_broker(bootstrap):
    topic = _new_topic(bootstrap, partitions=1)
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    addr = (host.strip("[]"), int(port))
    _round_trip(bootstrap, topic, b"before")

    # A connection left holding half a frame must not block anybody else.
    stalled = socket.create_connection(addr, timeout=10)
    stalled.sendall(struct.pack(">i", 1000) + b"\x00\x12\x00")
    rng = random.Random(99)
    garbage = [
        struct.pack(">i", -1),  # negative size
        struct.pack(">i", 0x7FFFFFF0),  # 2 GiB announced: must not be allocated or waited for forever
        struct.pack(">i", 3) + b"abc",  # shorter than a request header
        _raw_frame(0x7FFF, 0, 1),  # unknown API key
        _raw_frame(3, 30000, 2),  # absurd Metadata version
        _raw_frame(3, 12, 3, b"\xff" * 10, flexible=True),  # Metadata v12 body that is nonsense
        _raw_frame(0, 9, 4, b"\x00\x00\x01", flexible=True),  # Produce v9 cut short
        struct.pack(">i", 4092) + rng.randbytes(4092),  # a frame of pure noise
    ]
    for raw in garbage:
        with socket.create_connection(addr, timeout=10) as sock:
            sock.sendall(raw)
            assert _closed_by_peer(sock)
        _round_trip(bootstrap, topic, b"after %d bytes of garbage" % len(raw))

    # The same connection keeps working after a request the broker can answer with an error: ApiVersions v99
    # gets Kafka's v0-format UNSUPPORTED_VERSION (35) answer, then a valid ApiVersions v0 is answered.
    with socket.create_connection(addr, timeout=10) as sock:
        sock.sendall(_raw_frame(18, 99, 77, b"\x00", flexible=True))
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        corr, error = struct.unpack_from(">ih", _recv_exact(sock, size))
        assert (corr, error) == (77, 35)
        sock.sendall(_raw_frame(18, 0, 78))
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        corr, error = struct.unpack_from(">ih", _recv_exact(sock, size))
        assert (corr, error) == (78, 0)

    _round_trip(bootstrap, topic, b"while a half frame is pending")
    stalled.close()
