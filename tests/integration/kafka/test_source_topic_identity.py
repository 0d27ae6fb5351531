"""A topic deleted and re-created under the same name is told apart by its topic ID, recorded in the offset:
without it, a re-created topic with more records than the checkpoint's position would be read from the old
positions, silently skipping what lay below them. Driven as Spark's runner calls the reader, on the development
broker."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient
from pyspark.sql.streaming.datasource import ReadAllAvailable

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from spark_samza_source.core.errors import DataLossError
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.source import SamzaKafkaStreamReader


def _delete_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic], operation_timeout=30)[topic].result(30)


def _topic_id(bootstrap: str, topic: str) -> str:
    from confluent_kafka import TopicCollection

    admin = AdminClient({"bootstrap.servers": bootstrap})
    return str(admin.describe_topics(TopicCollection([topic]))[topic].result(30).topic_id)


@pytest.fixture
def recreated(kafka_broker, tmp_path):
    """(reader factory, topic, end offset of a batch that read 5 records of the old topic, old id, new id);
    the topic is then deleted and re-created with 10 records."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("recreate"), 1)
    made = []

    def reader(**extra: str) -> SamzaKafkaStreamReader:
        r = SamzaKafkaStreamReader(KafkaSourceOptions.parse({
            "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": "recreate",
            "metadata.store": f"file://{tmp_path}/meta", "startingOffsets": "earliest", **extra}), None)
        made.append(r)
        return r

    produce(bootstrap, topic, [(b"k", f"old{i}".encode()) for i in range(5)])
    first = reader()
    end = first.latestOffset(first.initialOffset(), ReadAllAvailable())
    old_id = _topic_id(bootstrap, topic)
    first.coordinator.lease.release()
    _delete_topic(bootstrap, topic)
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [(b"k", f"new{i}".encode()) for i in range(10)])
    new_id = _topic_id(bootstrap, topic)
    assert new_id != old_id
    yield reader, topic, end, old_id, new_id
    for r in made:
        lease = getattr(r.coordinator, "_lease", None)
        if lease is not None:
            lease.release()


def test_a_recreated_topic_fails_the_query_naming_it(recreated):
    reader, topic, end, old_id, new_id = recreated
    with pytest.raises(DataLossError) as err:
        reader().latestOffset(end, ReadAllAvailable())
    message = str(err.value)
    assert f"topic '{topic}' was deleted and re-created" in message and old_id in message and new_id in message


def test_a_recreated_topic_is_read_from_its_start_with_the_loss_reported(recreated):
    reader, topic, end, old_id, new_id = recreated
    assert end.get("topicIds") == {topic: old_id}
    lenient = reader(failOnDataLoss="false")
    nxt = lenient.latestOffset(end, ReadAllAvailable())
    (part,) = lenient.partitions(end, nxt)
    assert [(r.start, r.end) for r in part.reads] == [(0, 10)]
    values = [v for batch in lenient.read(part) for v in batch.column("value").to_pylist()]
    assert values == [f"new{i}".encode() for i in range(10)]
    assert lenient.reportLatestOffset()["recreatedTopics"] == {topic: new_id}
    assert nxt["topicIds"] == {topic: new_id}
