"""Committed positions are mirrored to the consumer group the user names (kafka.group.id, groupIdPrefix),
checked with Kafka's admin API (list_consumer_groups, list_consumer_group_offsets) as an operator's tool would.

Spark commits a batch to the source one batch late, so each test runs two availableNow queries: the second
one's planning commits the first one's last batch, which writes the mirror.

A busy group is a real consumer subscribed in it (Kafka refuses commits from outside a group while a member runs).
"""

from __future__ import annotations

import contextlib
import time
import uuid

from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.waits import deadline_after

TIMEOUT = 30


@contextlib.contextmanager
def _member_of(bootstrap: str, group: str, topic: str):
    """A consumer subscribed in ``group`` that holds its membership (heartbeats) until the block ends, then leaves."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "latest"})
    consumer.subscribe([topic])
    deadline = deadline_after(TIMEOUT)
    while not consumer.assignment():
        assert time.monotonic() < deadline, f"the consumer never joined {group}"
        consumer.poll(0.2)
    try:
        yield consumer
    finally:
        consumer.close()  # leaves the group: it is Empty again


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


def test_a_group_another_consumer_runs_in_is_left_alone_and_the_query_goes_on(kq):
    """Spark's caution about sharing a group id, as Kafka enforces it: while another consumer runs in the group,
    Kafka refuses offsets from outside it (UNKNOWN_MEMBER_ID). The mirror is for tools, so the query reads on and
    writes nothing there; once the group is empty again, the next commit mirrors the positions."""
    topic = create_topic(kq.bootstrap, unique_topic("busy-group"), 2)
    group = f"shared-{uuid.uuid4().hex[:8]}"
    with _member_of(kq.bootstrap, group, topic) as member:
        admin = AdminClient({"bootstrap.servers": kq.bootstrap})
        described = admin.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)
        assert described.state == ConsumerGroupState.STABLE and len(described.members) == 1
        outside = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 0)])
        refused = admin.alter_consumer_group_offsets([outside], request_timeout=TIMEOUT)[group]
        # what the mirror meets
        try:
            codes = [tp.error.code() for tp in refused.result(TIMEOUT).topic_partitions]
        except Exception as exc:  # noqa: BLE001 - Kafka may refuse the whole request as well as each partition
            codes = [exc.args[0].code()]
        assert codes in ([KafkaError.UNKNOWN_MEMBER_ID], [KafkaError.REBALANCE_IN_PROGRESS]), codes

        _two_runs(kq, "busy", topic, **{"kafka.group.id": group})  # the second run commits the first's batch
        assert len(kq.sink_rows("busy")) == 42  # both queries read everything
        assert _group_offsets(kq.bootstrap, group, topic, 2) == {}  # and wrote nothing into the busy group
        member.poll(0)  # still a member: the refusal above was the group's, not a left group's
    produce(kq.bootstrap, topic, [(b"k", b"later", None, p) for p in range(2)])
    kq.run_available_now_parquet("busy", subscribe=topic, **{"kafka.group.id": group})  # commits the 2nd run's
    assert len(kq.sink_rows("busy")) == 44
    assert _group_offsets(kq.bootstrap, group, topic, 2) == {0: 21, 1: 21}
