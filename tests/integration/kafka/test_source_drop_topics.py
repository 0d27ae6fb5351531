"""A topic leaves a job (deleted after it was read, or taken out of 'subscribe') only through the option
``dropTopics``, which keeps the checkpoint and every other topic's tasks and positions. Without
it, a ``subscribePattern`` topic deleted after it was fully read would stop the query for good ("disappeared").
Driven as Spark's runner calls the reader, on Apache Kafka. A batch read that starts from the job model stored for
``job.name`` follows the same rule (planned as Spark's ``partitions()`` call plans it)."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient
from pyspark.sql.streaming.datasource import ReadAllAvailable

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from spark_samza_source.core.bounded_filters import PushedFilters
from spark_samza_source.core.errors import PartitionExpansionError
from spark_samza_source.kafka.driver.bounded_read import plan_bounded_read
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kafka.options import KafkaBoundedOptions, KafkaSourceOptions
from spark_samza_source.kafka.source import SamzaKafkaStreamReader


@pytest.fixture
def two_topics(kafka_broker, tmp_path):
    """(reader factory, topic kept (2 partitions), topic to drop (4 partitions), end offset of a batch that read
    both completely)."""
    bootstrap = kafka_broker.bootstrap_servers
    prefix = unique_topic("drop")
    keep = create_topic(bootstrap, f"{prefix}-keep", 2)
    gone = create_topic(bootstrap, f"{prefix}-gone", 4)
    produce(bootstrap, keep, [(b"k", f"{i}".encode(), None, i % 2) for i in range(10)])
    produce(bootstrap, gone, [(b"k", f"{i}".encode(), None, i % 4) for i in range(8)])
    made = []

    def options(**extra: str | None) -> dict[str, str]:
        given = {"kafka.bootstrap.servers": bootstrap, "subscribePattern": f"{prefix}-.*", "job.name": "drop",
                 "metadata.store": f"file://{tmp_path}/meta", "startingOffsets": "earliest",
                 "startpoint.pollInterval": "0", **extra}
        return {k: v for k, v in given.items() if v is not None}

    def reader(**extra: str) -> SamzaKafkaStreamReader:
        r = SamzaKafkaStreamReader(KafkaSourceOptions.parse(options(**extra)), None)
        made.append(r)
        return r

    reader.options = options

    first = reader()
    end = first.latestOffset(first.initialOffset(), ReadAllAvailable())
    first.coordinator.lease.release()
    yield reader, keep, gone, end
    for r in made:
        lease = getattr(r.coordinator, "_lease", None)
        if lease is not None:
            lease.release()


def _delete(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept referenced until the result is in
    admin.delete_topics([topic], operation_timeout=30)[topic].result(30)


def test_a_deleted_pattern_topic_fails_naming_the_option_unless_it_is_dropped(kafka_broker, two_topics):
    reader, keep, gone, end = two_topics
    _delete(kafka_broker.bootstrap_servers, gone)
    with pytest.raises(PartitionExpansionError) as err:
        reader().latestOffset(end, ReadAllAvailable())
    message = str(err.value)
    assert f"'{gone}' (4 partitions)" in message and f".option('dropTopics', '{gone}')" in message

    produce(kafka_broker.bootstrap_servers, keep, [(b"k", b"after", None, p) for p in (0, 1)])
    dropping = reader(dropTopics=gone)
    nxt = dropping.latestOffset(end, ReadAllAvailable())
    def held(offset, topic):
        model = KafkaOffset.from_json(offset).job_model
        return {(t.name, s.partition) for t, ssps in model.tasks.items() for s in ssps if s.stream == topic}

    assert held(nxt, keep) == held(end, keep) == {("Partition 0", 0), ("Partition 1", 1)}
    assert held(nxt, gone) == set() and len(held(end, gone)) == 4
    assert all(gone not in key for by in nxt["positions"].values() for key in by)
    ranges = sorted((r.topic, r.partition, r.start, r.end) for p in dropping.partitions(end, nxt) for r in p.reads)
    assert ranges == [(keep, 0, 5, 6), (keep, 1, 5, 6)], "the kept topic did not go on from its positions"
    # the next trigger plans nothing new: the topic has left for good
    assert dropping.latestOffset(nxt, ReadAllAvailable()) == nxt


def test_a_topic_taken_out_of_subscribe_leaves_through_drop_topics(kafka_broker, two_topics):
    reader, keep, gone, end = two_topics
    with pytest.raises(PartitionExpansionError, match="dropTopics"):
        reader(subscribePattern=None, subscribe=keep).latestOffset(end, ReadAllAvailable())
    dropping = reader(subscribePattern=None, subscribe=keep, dropTopics=f"{gone},never-existed")
    nxt = dropping.latestOffset(end, ReadAllAvailable())
    assert {key: pos for by in nxt["positions"].values() for key, pos in by.items()} == {
        f"kafka.{keep}.0": 5, f"kafka.{keep}.1": 5}


def _bounded_plan(options: dict[str, str]) -> dict[tuple[str, int], tuple[str, int, int]]:
    """(topic, partition) -> (task, start, end) of a batch read with ``job.name`` (the stored job model's tasks)."""
    bounded = KafkaBoundedOptions.parse({k: v for k, v in options.items() if k != "startpoint.pollInterval"}, True)
    return {(r.topic, r.partition): (task.name, r.start, r.end)
            for task, ranges in plan_bounded_read(bounded, PushedFilters()) for r in ranges}


def test_a_batch_read_from_the_stored_job_model_drops_a_topic_only_through_drop_topics(kafka_broker, two_topics):
    # the same rule as the stream's: a topic the stored job model holds and the read no longer reads is refused,
    # naming the option, unless dropTopics names it; the other topics keep the stored model's tasks
    reader, keep, gone, _end = two_topics
    with pytest.raises(PartitionExpansionError) as err:
        _bounded_plan(reader.options(subscribePattern=None, subscribe=keep))
    message = str(err.value)
    assert f"'{gone}' (4 partitions)" in message and f".option('dropTopics', '{gone}')" in message
    assert "jobModel.reset=true" in message  # the batch read starts from the stored model, as a new checkpoint

    planned = _bounded_plan(reader.options(subscribePattern=None, subscribe=keep, dropTopics=gone))
    assert planned == {(keep, 0): ("Partition 0", 0, 5), (keep, 1): ("Partition 1", 0, 5)}
