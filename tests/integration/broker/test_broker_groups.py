"""The development broker's consumer-group listing, through confluent-kafka's AdminClient as against a cluster.

Groups on this broker only ever hold committed offsets (no JoinGroup): Kafka shows such a classic group as state
Empty with protocol type "" and no members, lists it from ListGroups (its states and types filters included),
describes a group nobody committed to as Dead (DescribeGroups v6: GROUP_ID_NOT_FOUND), and forgets a group whose
offsets are all gone because their topic was deleted. ``alter_consumer_group_offsets`` (an OffsetCommit from
outside the group, found through FindCoordinator) and ``list_consumer_group_offsets`` (OffsetFetch) are what the
source's mirror uses.
"""

from __future__ import annotations

import uuid

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

TIMEOUT = 30


def _admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


def _commit(admin, group, offsets):
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])
    result = admin.alter_consumer_group_offsets([request], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    assert all(tp.error is None for tp in result.topic_partitions)


def _committed(admin, group, tps):
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in tps])
    result = admin.list_consumer_group_offsets([request], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def _listed(admin, **kwargs):
    result = admin.list_consumer_groups(request_timeout=TIMEOUT, **kwargs).result(TIMEOUT)
    assert not result.errors
    return {g.group_id: g for g in result.valid}


def test_alter_and_list_group_offsets_from_outside_the_group(kafka_broker, kafka_topic):
    admin = _admin(kafka_broker.bootstrap_servers)
    topic = kafka_topic(partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(admin, group, {(topic, 0): 5, (topic, 1): 7})
    assert _committed(admin, group, [(topic, 0), (topic, 1)]) == {(topic, 0): 5, (topic, 1): 7}
    _commit(admin, group, {(topic, 1): 9})  # a later commit replaces that partition's offset only
    assert _committed(admin, group, [(topic, 0), (topic, 1)]) == {(topic, 0): 5, (topic, 1): 9}
    assert _committed(admin, f"never-{group}", [(topic, 0)]) == {(topic, 0): -1001}  # OFFSET_INVALID: none


def test_list_groups_shows_offset_only_groups_as_empty_classic_groups(kafka_broker, kafka_topic):
    admin = _admin(kafka_broker.bootstrap_servers)
    topic = kafka_topic()
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert group not in _listed(admin)
    _commit(admin, group, {(topic, 0): 1})
    listed = _listed(admin)[group]
    assert listed.state == ConsumerGroupState.EMPTY and listed.is_simple_consumer_group
    assert group in _listed(admin, states={ConsumerGroupState.EMPTY})
    assert group not in _listed(admin, states={ConsumerGroupState.STABLE})


def test_describe_groups_empty_and_unknown(kafka_broker, kafka_topic):
    admin = _admin(kafka_broker.bootstrap_servers)
    topic = kafka_topic()
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(admin, group, {(topic, 0): 3})
    futures = admin.describe_consumer_groups([group, f"unknown-{group}"], request_timeout=TIMEOUT)
    described = futures[group].result(TIMEOUT)
    assert described.state == ConsumerGroupState.EMPTY and described.members == []
    assert described.is_simple_consumer_group  # protocol type "" like a group only ever committed to
    try:
        unknown = futures[f"unknown-{group}"].result(TIMEOUT)
    except Exception as err:  # noqa: BLE001 - DescribeGroups v6 answers GROUP_ID_NOT_FOUND
        assert "not found" in str(err).lower()
    else:
        assert unknown.state == ConsumerGroupState.DEAD and unknown.members == []


def test_a_group_whose_topic_is_deleted_is_gone(kafka_broker, kafka_topic):
    admin = _admin(kafka_broker.bootstrap_servers)
    topic = kafka_topic()
    group = f"g-{uuid.uuid4().hex[:8]}"
    _commit(admin, group, {(topic, 0): 2})
    assert group in _listed(admin)
    admin.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)
    assert group not in _listed(admin)
