"""Committed positions are mirrored to the consumer group the user names (kafka.group.id, groupIdPrefix),
checked with Kafka's admin API (list_consumer_groups, list_consumer_group_offsets) as an operator's tool would.

Spark commits a batch to the source one batch late, so each test runs two availableNow queries: the second
one's planning commits the first one's last batch, which writes the mirror.
"""

from __future__ import annotations

import uuid

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic

TIMEOUT = 30


def _group_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    result = admin.list_consumer_group_offsets([request], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def _groups(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the answer is in
    listed = admin.list_consumer_groups(request_timeout=TIMEOUT).result(TIMEOUT)
    assert not listed.errors, listed.errors
    return {g.group_id for g in listed.valid}


def _two_runs(kq, name: str, topic: str, **options: str) -> None:
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode(), None, i % 2) for i in range(40)])
    kq.run_available_now_parquet(name, subscribe=topic, **options)
    produce(kq.bootstrap, topic, [(b"k", b"late", None, p) for p in range(2)])
    kq.run_available_now_parquet(name, subscribe=topic, **options)


def test_kafka_group_id_names_the_group_positions_are_mirrored_to(kq):
    topic = create_topic(kq.bootstrap, unique_topic("named-group"), 2)
    group = f"team-a.orders-{uuid.uuid4().hex[:8]}"
    # Another tool committed to this group before (e.g. an old consumer): the mirror replaces its positions.
    admin = AdminClient({"bootstrap.servers": kq.bootstrap})
    stale = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    admin.alter_consumer_group_offsets([stale], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    _two_runs(kq, "named", topic, **{"kafka.group.id": group})
    assert _group_offsets(kq.bootstrap, group, topic, 2) == {0: 20, 1: 20}
    groups = _groups(kq.bootstrap)
    assert group in groups and f"samza-{kq.job}" not in groups  # the default group is not written


def test_group_id_prefix_replaces_samza_in_the_default_group(kq):
    topic = create_topic(kq.bootstrap, unique_topic("prefixed-group"), 2)
    prefix = f"analytics{uuid.uuid4().hex[:6]}"
    _two_runs(kq, "prefixed", topic, groupIdPrefix=prefix)
    assert _group_offsets(kq.bootstrap, f"{prefix}-{kq.job}", topic, 2) == {0: 20, 1: 20}
    assert f"samza-{kq.job}" not in _groups(kq.bootstrap)
