"""Log compaction in the development broker, checked against Kafka's documented cleaner behaviour and through
librdkafka (confluent-kafka), which must read the rewritten batches: the surviving records at their original
offsets, its fetch position past every removed offset, tombstones removed only after ``delete.retention.ms``,
keyless records refused on produce, and all of it surviving a crash and an interrupted file swap."""

from __future__ import annotations

import shutil
import struct
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from samza_devkit import compaction_helpers, kafka_helpers
from samza_devkit.compaction_helpers import consume_partition, expected_after_compaction
from samza_devkit.kafka_broker import KafkaDevBroker
from samza_devkit.kafka_helpers import create_topic, unique_topic
from samza_devkit.waits import deadline_after

#: the batches here come from plain (not idempotent) producers, whose emptied batches compaction drops; an idempotent
#: producer's last batch stays as an empty batch (test_idempotent_producers_last_batch_stays_as_an_empty_batch)
PLAIN = {"enable.idempotence": False}


def produce(bootstrap: str, topic: str, records, extra_conf: dict | None = None):
    return kafka_helpers.produce(bootstrap, topic, records, extra_conf={**PLAIN, **(extra_conf or {})})


def produce_batches(bootstrap: str, topic: str, batches):
    return compaction_helpers.produce_batches(bootstrap, topic, batches, extra_conf=PLAIN)

BASE_TS = 1_700_000_000_000
HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A broker in a child process, as the tests' shared broker runs: ``compact`` reaches it through its stdin."""
    with KafkaDevBroker(data_dir=tmp_path_factory.mktemp("compaction")) as b:
        yield b


def compacted_topic(broker, policy="compact", retention_ms=HOUR_MS) -> str:
    return create_topic(broker.bootstrap_servers, unique_topic("cmp"), 1,
                        {"cleanup.policy": policy, "delete.retention.ms": str(retention_ms)})


def rows(records):
    return [(r.offset, r.key, r.value) for r in records]


# a, b, c rewritten across batches; batch 2 loses every record; the last batch (offsets 8..9) is the active one
BATCHES = [
    [(b"a", b"a0", BASE_TS), (b"b", b"b1", BASE_TS + 10), (b"c", b"c2", BASE_TS + 20)],
    [(b"a", b"a3", BASE_TS + 30), (b"b", b"b4", BASE_TS + 40)],
    [(b"d", b"d5", BASE_TS + 50), (b"c", b"c6", BASE_TS + 60), (b"e", None, BASE_TS + 70)],
    [(b"a", b"a8", BASE_TS + 80), (b"d", b"d9", BASE_TS + 90)],
]


def test_compaction_keeps_the_latest_record_of_each_key_at_its_offset_and_librdkafka_reads_past_the_gaps(broker):
    topic = compacted_topic(broker, policy="compact,delete")
    produced = produce_batches(broker.bootstrap_servers, topic, BATCHES)
    assert [r.offset for b in produced for r in b] == list(range(10))
    counts = broker.compact(topic)[0]
    survivors = rows(expected_after_compaction(produced))
    assert survivors == [(4, b"b", b"b4"), (6, b"c", b"c6"), (7, b"e", None), (8, b"a", b"a8"), (9, b"d", b"d9")]
    assert counts["records_before"] == 10 and counts["records_after"] == 5 and counts["batches_dropped"] == 1

    got, end = consume_partition(broker.bootstrap_servers, topic, 0, 0)
    assert got == survivors and end == 10
    # a start inside a gap reads from the next surviving record; a start in a removed batch likewise
    assert consume_partition(broker.bootstrap_servers, topic, 0, 5)[0] == survivors[1:]
    assert consume_partition(broker.bootstrap_servers, topic, 0, 1)[0] == survivors
    # the log start and end offsets do not move, a timestamp lookup lands on the first survivor at/after it
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "probe"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False) == (0, 10)
        found = consumer.offsets_for_times([TopicPartition(topic, 0, BASE_TS + 1)], timeout=30)
        assert found[0].offset == 4
        late = consumer.offsets_for_times([TopicPartition(topic, 0, BASE_TS + 55)], timeout=30)
        assert late[0].offset == 6
    finally:
        consumer.close()
    # a second pass keeps everything: the tombstone is younger than delete.retention.ms (an hour)
    assert broker.compact(topic)[0]["records_after"] == 5
    # the next produced record takes the next offset, never one of the removed ones
    assert produce(broker.bootstrap_servers, topic, [(b"f", b"f10", None, 0)])[0].offset == 10


def test_tombstones_go_only_on_a_pass_after_their_delete_horizon(broker):
    """KIP-534: the first pass keeping a tombstone stamps its batch with now + delete.retention.ms; a pass at or
    after that horizon removes it. ``now_ms`` plays the broker's clock."""
    topic = compacted_topic(broker, retention_ms=HOUR_MS)
    produce_batches(broker.bootstrap_servers, topic, [[(b"k", b"v0"), (b"gone", None)], [(b"k", b"v2")]])
    now = int(time.time() * 1000)
    assert broker.compact(topic, now_ms=now)[0]["tombstones_removed"] == 0
    assert consume_partition(broker.bootstrap_servers, topic, 0, 0)[0] == [(1, b"gone", None), (2, b"k", b"v2")]
    assert broker.compact(topic, now_ms=now + HOUR_MS - 1)[0]["tombstones_removed"] == 0  # still younger
    assert broker.compact(topic, now_ms=now + HOUR_MS)[0]["tombstones_removed"] == 1
    assert consume_partition(broker.bootstrap_servers, topic, 0, 0) == ([(2, b"k", b"v2")], 3)

    zero = compacted_topic(broker, retention_ms=0)
    produce_batches(broker.bootstrap_servers, zero, [[(b"x", None)], [(b"y", b"1")]])
    assert broker.compact(zero)[0]["tombstones_removed"] == 0  # stamped now, kept by this pass
    assert broker.compact(zero)[0]["tombstones_removed"] == 1
    assert consume_partition(broker.bootstrap_servers, zero, 0, 0) == ([(1, b"y", b"1")], 2)


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
def test_records_without_a_key_are_refused_as_kafka_refuses_them(broker, policy):
    topic = compacted_topic(broker, policy=policy)
    with pytest.raises(RuntimeError, match="INVALID_RECORD"):
        produce(broker.bootstrap_servers, topic, [(None, b"no key", None, 0)])
    assert produce(broker.bootstrap_servers, topic, [(b"k", b"keyed", None, 0)])[0].offset == 0
    plain = create_topic(broker.bootstrap_servers, unique_topic("plain"), 1)
    assert produce(broker.bootstrap_servers, plain, [(None, b"no key", None, 0)])[0].offset == 0
    with pytest.raises(RuntimeError, match="only compacted topics"):
        broker.compact(plain)


def test_idempotent_producers_last_batch_stays_as_an_empty_batch(broker):
    """Kafka keeps the last batch of each producer id, emptied, for producer state: a header with its offsets."""
    topic = compacted_topic(broker)
    idem = {"enable.idempotence": True, "linger.ms": "100"}
    produce(broker.bootstrap_servers, topic, [(b"k", b"v0", None, 0)], extra_conf=idem)
    produce(broker.bootstrap_servers, topic, [(b"k", b"v1", None, 0)])
    produce(broker.bootstrap_servers, topic, [(b"k", b"v2", None, 0)])
    broker.compact(topic)
    batches = _stored_batches(broker, topic)
    assert [(base, count) for base, _delta, _pid, count in batches] == [(0, 0), (2, 1)]
    assert batches[0][2] >= 0  # the producer id is kept
    assert consume_partition(broker.bootstrap_servers, topic, 0, 0) == ([(2, b"k", b"v2")], 3)


def test_a_compacted_log_survives_a_crash_and_an_interrupted_swap(tmp_path):
    with KafkaDevBroker(data_dir=tmp_path / "data") as broker:
        topic = compacted_topic(broker)
        produced = produce_batches(broker.bootstrap_servers, topic, BATCHES)
        part = tmp_path / "data" / "topics" / topic / "0"
        broker.stop(_keep_data=True)
        shutil.copytree(part, tmp_path / "before")
        broker.start()
        broker.compact(topic)
        broker.kill()  # SIGKILL right after the pass
        broker.start()
        survivors = rows(expected_after_compaction(produced))
        assert consume_partition(broker.bootstrap_servers, topic, 0, 0) == (survivors, 10)
        # a crash after the commit point of a swap (compacted/ written) but before the files were moved: the
        # next open completes the swap; leftovers of an uncommitted one (compacted.tmp/) are discarded
        broker.stop(_keep_data=True)
        (part / "compacted").mkdir()
        for name in ("log", "index"):
            shutil.move(part / name, part / "compacted" / name)
            shutil.copy(tmp_path / "before" / name, part / name)
        (part / "compacted.tmp").mkdir()
        (part / "compacted.tmp" / "log").write_bytes(b"garbage")
        broker.start()
        assert consume_partition(broker.bootstrap_servers, topic, 0, 0) == (survivors, 10)
        assert not (part / "compacted").exists() and not (part / "compacted.tmp").exists()


def test_background_compaction_runs_without_being_asked(tmp_path):
    with KafkaDevBroker(data_dir=tmp_path, in_process=True, compaction_interval_s=0.2) as broker:
        topic = compacted_topic(broker)
        produce_batches(broker.bootstrap_servers, topic, [[(b"k", b"old")], [(b"k", b"new")]])
        deadline = deadline_after(30)
        while consume_partition(broker.bootstrap_servers, topic, 0, 0)[0] != [(1, b"k", b"new")]:
            assert time.monotonic() < deadline, "the background pass never ran"
            time.sleep(0.2)


def _stored_batches(broker, topic):
    """(base offset, last offset delta, producer id, record count) of the stored batches of partition 0."""
    data = (broker.data_dir / "topics" / topic / "0" / "log").read_bytes()
    out, pos = [], 0
    header = struct.Struct(">qiibIhiqqqhii")
    while pos < len(data):
        base, length, _e, _m, _c, _a, delta, _f, _t, pid, _pe, _s, count = header.unpack_from(data, pos)
        out.append((base, delta, pid, count))
        pos += length + 12
    return out


def test_rewritten_batches_follow_the_record_batch_v2_format(broker):
    """Checked against the protocol documentation with kafka-python's independent decoder: a valid CRC-32C, the
    base offset and last offset delta of the original batch, each record's own offset, and for a batch holding a
    tombstone KIP-534's delete horizon (attribute bit 6, the base timestamp) with the records' timestamps intact."""
    from kafka.record.default_records import DefaultRecordBatch

    topic = compacted_topic(broker, retention_ms=HOUR_MS)
    produce_batches(broker.bootstrap_servers, topic, BATCHES)
    now = int(time.time() * 1000)
    broker.compact(topic, now_ms=now)
    data = (broker.data_dir / "topics" / topic / "0" / "log").read_bytes()
    batches, pos = [], 0
    while pos < len(data):
        batch = DefaultRecordBatch(data[pos:pos + struct.unpack_from(">i", data, pos + 8)[0] + 12])
        assert batch.validate_crc()
        batches.append(batch)
        pos += batch.size_in_bytes
    summary = [(b.base_offset, b.last_offset_delta, b.compression_type, [(r.offset, r.key, r.timestamp) for r in b])
               for b in batches]
    assert summary == [
        (3, 1, 0, [(4, b"b", BASE_TS + 40)]),
        (5, 2, 0, [(6, b"c", BASE_TS + 60), (7, b"e", BASE_TS + 70)]),
        (8, 1, 0, [(8, b"a", BASE_TS + 80), (9, b"d", BASE_TS + 90)]),  # the active batch, untouched
    ]
    assert not batches[0].attributes & 0x40 and batches[0].first_timestamp == BASE_TS + 40
    assert batches[1].attributes & 0x40 and batches[1].first_timestamp == now + HOUR_MS
    assert [b.max_timestamp for b in batches] == [BASE_TS + 40, BASE_TS + 70, BASE_TS + 90]


def test_a_batch_losing_its_last_record_keeps_its_last_offset_and_the_active_batch_is_never_cleaned(broker):
    """Kafka's ``overrideLastOffset``: the batch [0, 1] keeps last offset delta 1 when only offset 0 survives; the
    log's last batch (Kafka's active segment) keeps both records of key x."""
    from kafka.record.default_records import DefaultRecordBatch

    topic = compacted_topic(broker)
    produce_batches(broker.bootstrap_servers, topic,
                    [[(b"k1", b"a"), (b"k2", b"b")], [(b"k2", b"c")], [(b"x", b"1"), (b"x", b"2")]])
    broker.compact(topic)
    assert consume_partition(broker.bootstrap_servers, topic, 0, 0) == (
        [(0, b"k1", b"a"), (2, b"k2", b"c"), (3, b"x", b"1"), (4, b"x", b"2")], 5)
    data = (broker.data_dir / "topics" / topic / "0" / "log").read_bytes()
    first = DefaultRecordBatch(data[:struct.unpack_from(">i", data, 8)[0] + 12])
    assert (first.base_offset, first.last_offset_delta, [r.offset for r in first]) == (0, 1, [0])


@pytest.mark.parametrize(("policy", "refused"), [("compact", True), ("compact,delete", False), ("delete", False)])
def test_delete_records_is_refused_on_a_compact_only_topic_as_kafka_refuses_it(broker, policy, refused):
    """Apache Kafka answers DeleteRecords on a ``cleanup.policy=compact`` topic with POLICY_VIOLATION: records go from
    such a log by compaction alone. The development broker answers the same."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    topic = compacted_topic(broker, policy=policy)
    produce(broker.bootstrap_servers, topic, [(b"k", b"v", None, 0)] * 3)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    future = admin.delete_records([TopicPartition(topic, 0, 2)], request_timeout=30)
    if refused:
        with pytest.raises(KafkaException) as caught:
            list(future.values())[0].result(30)
        assert caught.value.args[0].code() == KafkaError.POLICY_VIOLATION
    else:
        assert list(future.values())[0].result(30).low_watermark == 2
