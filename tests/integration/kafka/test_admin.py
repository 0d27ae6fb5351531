"""KafkaAdmin against the Kafka wire-protocol dev broker (or SAMZA_TEST_KAFKA_BOOTSTRAP), through confluent-kafka."""

from __future__ import annotations

import math
import time
import uuid

import pytest

from samza_devkit.kafka_broker import KafkaDevBroker
from samza_devkit.kafka_helpers import produce
from spark_samza_source.kafka.driver.admin import OFFSETS_PER_CALL, KafkaAdmin
from spark_samza_source.kafka.errors import KafkaSourceError

SECRET = "s3cr3t-Pa55word"


def delete_records_before(bootstrap: str, topic: str, partition: int, offset: int) -> None:
    """AdminClient.delete_records (the client must outlive its futures)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})
    for future in client.delete_records([TopicPartition(topic, partition, offset)], request_timeout=30).values():
        future.result(30)


@pytest.fixture
def admin(kafka_broker):
    a = KafkaAdmin({"bootstrap.servers": kafka_broker.bootstrap_servers})
    yield a
    a.close()


def test_partition_counts_for_named_topics(admin, kafka_topic):
    one, four = kafka_topic(1), kafka_topic(4)
    assert admin.list_partition_counts(topics=[four, one]) == {one: 1, four: 4}


def test_partition_counts_by_pattern_is_a_full_match(admin, kafka_topic):
    prefix = f"pat{uuid.uuid4().hex[:6]}"
    a, b = kafka_topic(2, prefix=f"{prefix}-orders"), kafka_topic(3, prefix=f"{prefix}-orders")
    other = kafka_topic(1, prefix=f"x{prefix}-orders")  # contains the prefix but does not start with it
    assert admin.list_partition_counts(pattern=f"{prefix}-orders-.*") == {a: 2, b: 3}
    assert admin.list_partition_counts(pattern=f"{prefix}-orders") == {}  # partial match is not a match
    assert other in admin.list_partition_counts(pattern=f".*{prefix}-orders-.*")


def test_missing_topic_names_topic_and_servers_never_secrets(kafka_broker, kafka_topic):
    """Backs Guarantees (docs/guarantees.md): a deleted topic's error shows the dropTopics line to add."""
    present = kafka_topic(1)
    conf = {"bootstrap.servers": kafka_broker.bootstrap_servers, "sasl.username": "u", "sasl.password": SECRET}
    with KafkaAdmin(conf) as admin:
        with pytest.raises(KafkaSourceError) as info:
            admin.list_partition_counts(topics=[present, "no-such-topic-xyz"])
    msg = str(info.value)
    assert "no-such-topic-xyz" in msg and kafka_broker.bootstrap_servers in msg
    assert present not in msg and SECRET not in msg
    assert "add the line .option('dropTopics', 'no-such-topic-xyz')" in msg  # how a deleted topic leaves


def test_unreachable_cluster_fails_within_the_api_timeout(caplog):
    conf = {"bootstrap.servers": "127.0.0.1:1", "sasl.username": "u", "sasl.password": SECRET}
    with KafkaAdmin(conf, api_timeout_ms=1500) as admin:
        started = time.monotonic()
        with pytest.raises(KafkaSourceError) as info:
            admin.watermarks([("orders", 0)])
        elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 30, elapsed  # honours the timeout, then gives up (30: slack for a loaded machine)
    assert "watermarks of orders[0]" in str(info.value) and "1.5 s" in str(info.value)
    assert SECRET not in str(info.value) and SECRET not in caplog.text


def test_watermarks_in_bulk_after_produce_and_delete_records(admin, kafka_broker, kafka_topic):
    """Log start and end per partition, a partition that does not exist left out."""
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(3)
    produce(bs, topic, [(None, b"v", None, p) for p in (0, 0, 0, 1, 1, 0) for _ in range(2)])
    marks = admin.watermarks([(topic, 0), (topic, 1), (topic, 2), (topic, 9)])
    assert marks == {(topic, 0): (0, 8), (topic, 1): (0, 4), (topic, 2): (0, 0)}  # partition 9 does not exist
    delete_records_before(bs, topic, 0, 5)
    assert admin.watermarks([(topic, 0), (topic, 1)]) == {(topic, 0): (5, 8), (topic, 1): (0, 4)}


def test_a_lookup_of_partitions_that_all_do_not_exist_leaves_them_out(admin, kafka_topic):
    """librdkafka fails a whole lookup as "unknown partition" when none of its partitions has a leader it knows;
    where the metadata holds none of them either they are missing, as in a partial answer, not an outage."""
    topic = kafka_topic(2)
    assert admin.watermarks([(topic, 7), (topic, 8)]) == {}
    assert admin.watermarks([("no-such-topic-xyz", 0)]) == {}
    assert admin.offsets_for_times({(topic, 9): 0}) == {}


def test_watermarks_and_topic_ids_together_answer_as_the_separate_calls(admin, kafka_broker, kafka_topic):
    """What every trigger asks, in one round trip: the same answers as watermarks() and topic_ids(), a partition
    or topic that does not exist left out of each."""
    bs = kafka_broker.bootstrap_servers
    topic, other = kafka_topic(2), kafka_topic(1)
    produce(bs, topic, [(None, b"v", None, p) for p in (0, 1, 1)])
    delete_records_before(bs, topic, 1, 1)
    tps = [(topic, 0), (topic, 1), (topic, 7), (other, 0)]
    marks, ids = admin.watermarks_and_topic_ids(tps, [topic, other, "no-such-topic-xyz"])
    assert marks == {(topic, 0): (0, 1), (topic, 1): (1, 2), (other, 0): (0, 0)} == admin.watermarks(tps)
    assert ids == admin.topic_ids([topic, other]) and set(ids) == {topic, other} and ids[topic] != ids[other]
    assert admin.watermarks_and_topic_ids([], []) == ({}, {})


def test_watermarks_of_1000_partitions_take_a_few_bulk_requests(tmp_path):
    """Planning a wide topic must not cost a round trip per partition (the time it takes is a benchmark figure:
    benchmarks/kafka_source.py prints planning time for 1,000 partitions, benchmarks/scale.py for 10,000): one
    request per OFFSETS_PER_CALL partitions and offset kind (low, high), all sent before any answer is waited for.
    On the development broker, in this process: it counts the requests it served by API, which Apache Kafka tells
    only through JMX."""
    with KafkaDevBroker(data_dir=tmp_path / "broker", in_process=True) as broker:
        broker.create_topic("wide", 1000)
        tps = [("wide", p) for p in range(1000)]
        with KafkaAdmin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            admin.watermarks(tps[:1])  # client and connection set up
            before = broker.request_counts.get("list_offsets", 0)
            marks = admin.watermarks(tps)
            sent = broker.request_counts.get("list_offsets", 0) - before
    assert len(marks) == 1000 and set(marks.values()) == {(0, 0)}
    expected = 2 * math.ceil(1000 / OFFSETS_PER_CALL)
    assert expected <= 4 and sent == expected, (
        f"{sent} ListOffsets requests for 1000 partitions (expected {expected}: low and high, "
        f"{OFFSETS_PER_CALL} partitions each)")


def test_offsets_for_times_before_inside_after(admin, kafka_broker, kafka_topic):
    topic = kafka_topic(2)
    produce(kafka_broker.bootstrap_servers, topic,
            [(None, b"a", None, 0, 1_000), (None, b"b", None, 0, 2_000), (None, b"c", None, 0, 3_000)])
    asked = {(topic, 0): 500}
    assert admin.offsets_for_times(asked) == {(topic, 0): 0}
    assert admin.offsets_for_times({(topic, 0): 1_500}) == {(topic, 0): 1}
    assert admin.offsets_for_times({(topic, 0): 2_000}) == {(topic, 0): 1}
    assert admin.offsets_for_times({(topic, 0): 3_001, (topic, 1): 0}) == {(topic, 0): None, (topic, 1): None}


def test_group_offsets_mirror_round_trip(admin, kafka_topic):
    topic = kafka_topic(2)
    group = f"samza-test-{uuid.uuid4().hex[:8]}"
    assert admin.group_offsets(group, [(topic, 0), (topic, 1)]) == {(topic, 0): None, (topic, 1): None}
    admin.commit_group_offsets(group, {(topic, 0): 42, (topic, 1): 7})
    assert admin.group_offsets(group, [(topic, 0), (topic, 1)]) == {(topic, 0): 42, (topic, 1): 7}
    admin.commit_group_offsets(group, {(topic, 1): 9})
    assert admin.group_offsets(group, [(topic, 0), (topic, 1)]) == {(topic, 0): 42, (topic, 1): 9}
    # What a standard tool sees: a separate, plain consumer of that group.
    from confluent_kafka import Consumer, TopicPartition

    tool = Consumer({"bootstrap.servers": admin.bootstrap_servers, "group.id": group})
    try:
        seen = tool.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    finally:
        tool.close()
    assert [(tp.partition, tp.offset) for tp in seen] == [(0, 42), (1, 9)]
