"""A topic deleted and re-created under the same name while a query runs, on Apache Kafka: the topic ID the offset
records tells the new topic from the old one, whose positions mean nothing in it.

The topic is deleted, re-created and written while a batch of the running query is being written (its
foreachBatch call), so the next batch is planned against the new topic; the executors' cached consumers were
reading the old one. ``failOnDataLoss=false``: the new topic is read from its start, every record once, on both
read paths; the progress names the new topic ID and the offsets record it. ``true`` (the default): the query fails
naming the topic and both IDs. The same, with the query stopped meanwhile: test_source_topic_identity.py.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from samza_devkit.checkpoint_log import offset_log
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.query_harness import failure_of

pytestmark = [pytest.mark.spark, pytest.mark.slow]

OLD, NEW = 10, 6  # records in the topic before and after it is re-created


def _topic_id(bootstrap: str, topic: str) -> str | None:
    """The topic's ID; None while the broker does not know the topic yet (Kafka's metadata follows a CreateTopics
    answer by a few milliseconds)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        return str(admin.describe_topics(TopicCollection([topic]))[topic].result(30).topic_id)
    except Exception as err:  # noqa: BLE001 - KafkaException: asked again while the topic is unknown
        if "UNKNOWN_TOPIC" in str(err) or "does not host this topic" in str(err):
            return None
        raise


def _recreate_once(kq, topic: str, ids: list[str]):
    """A foreachBatch hook: at the first batch with rows, delete ``topic``, re-create it and write NEW records;
    ``ids`` gets the old and the new topic ID."""

    def on_batch(batch_id, rows):
        if rows and not ids:
            ids.append(_topic_id(kq.bootstrap, topic))
            admin = AdminClient({"bootstrap.servers": kq.bootstrap})  # kept until the answer is in
            admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
            kq.wait_for(lambda: _recreated(kq.bootstrap, topic), timeout=60, interval=0.1, what="re-creation")
            ids.append(kq.wait_for(lambda: _topic_id(kq.bootstrap, topic), timeout=30, interval=0.1,
                                   what="the new topic's ID"))
            produce(kq.bootstrap, topic, [(b"k", b"new%d" % i, None, i % 2) for i in range(NEW)])

    return on_batch


def _recreated(bootstrap: str, topic: str) -> bool:
    """Create ``topic`` again; False while Kafka is still deleting the old one (TOPIC_ALREADY_EXISTS)."""
    try:
        create_topic(bootstrap, topic, 2)
        return True
    except Exception as err:  # noqa: BLE001 - KafkaException: asked again until the old topic is gone
        if "already exists" in str(err) or "marked for deletion" in str(err):
            return False
        raise


@pytest.fixture
def old_topic(kq):
    topic = create_topic(kq.bootstrap, unique_topic("recreated"), 2)
    produce(kq.bootstrap, topic, [(b"k", b"old%d" % i, None, i % 2) for i in range(OLD)])
    return topic


def test_recreated_while_running_is_read_from_its_start(kq, old_topic, read_path):
    ids: list[str] = []
    query = kq.start_collecting("lenient", on_batch=_recreate_once(kq, old_topic, ids), subscribe=old_topic,
                                failOnDataLoss="false", readPath=read_path)
    kq.wait_for(lambda: len(kq.collected("lenient")) >= OLD + NEW or query.exception(), what="the new topic read")
    assert query.exception() is None, str(query.exception())[-3000:]

    def reported_recreated() -> list:  # the progress of a batch is posted after its sink has run
        reports = [json.loads(p["sources"][0]["latestOffset"]) for p in query.recentProgress]
        return [r["recreatedTopics"] for r in reports if "recreatedTopics" in r]

    try:
        kq.wait_for(reported_recreated, timeout=60, what="a progress naming the re-created topic")
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}; progress: {[p['sources'][0] for p in query.recentProgress]}") from None
    query.stop()
    rows = kq.collected("lenient")
    assert sorted((r.value, r.partition, r.offset) for r in rows) == sorted(
        [(b"old%d" % i, i % 2, i // 2) for i in range(OLD)] + [(b"new%d" % i, i % 2, i // 2) for i in range(NEW)])
    old_id, new_id = ids
    assert old_id != new_id
    assert reported_recreated()[-1] == {old_topic: new_id}
    log = offset_log(kq.checkpoint("lenient"))
    assert [log[b]["topicIds"] for b in (min(log), max(log))] == [{old_topic: old_id}, {old_topic: new_id}]


def test_recreated_while_running_fails_the_query_naming_it(kq, old_topic):
    ids: list[str] = []
    query = kq.start_collecting("strict", on_batch=_recreate_once(kq, old_topic, ids), subscribe=old_topic)
    message = failure_of(query)
    old_id, new_id = ids
    assert f"topic '{old_topic}' was deleted and re-created" in message, message[-2000:]
    assert old_id in message and new_id in message
    assert sorted(r.value for r in kq.collected("strict")) == sorted(b"old%d" % i for i in range(OLD))
