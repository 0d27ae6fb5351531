"""The driver's job model against Apache Kafka (no Spark needed to see what Spark would get):
broadcast topics that grow, and the stored job model that a new checkpoint starts from (SEP-5, SEP-11).

Backs docs/guarantees.md: "Growing a broadcast topic adds no task" and "A new checkpoint keeps the job's tasks".
"""

from __future__ import annotations

import logging

import pytest

from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from spark_samza_source.core.errors import PartitionExpansionError
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.coordinator import KafkaCoordinator
from spark_samza_source.kafka.options import KafkaSourceOptions

P0, P1 = TaskName("Partition 0"), TaskName("Partition 1")


def coordinator(bootstrap: str, store_uri: str, job: str, **options: str) -> KafkaCoordinator:
    return KafkaCoordinator(KafkaSourceOptions.parse({
        "kafka.bootstrap.servers": bootstrap, "job.name": job, "metadata.store": store_uri,
        "startingOffsets": "earliest", "startpoint.pollInterval": "0", "expansion.settleTime": "0", **options}))


def ssp(topic: str, partition: int) -> SystemStreamPartition:
    return SystemStreamPartition("kafka", topic, partition)


@pytest.mark.parametrize("subscribed", [True, False], ids=["config-subscribed", "config-broadcast-only"])
def test_growing_a_broadcast_topic_adds_its_partitions_to_every_task_and_no_task(kafka_broker, tmp_path, subscribed):
    bootstrap = kafka_broker.bootstrap_servers
    orders = create_topic(bootstrap, unique_topic("orders"), 2)
    config = create_topic(bootstrap, unique_topic("config"), 2)
    subscribe = f"{orders},{config}" if subscribed else orders
    coord = coordinator(bootstrap, f"file://{tmp_path}/meta", "bcast", subscribe=subscribe,
                        **{"task.broadcast.inputs": f"kafka.{config}#[0-1]"})
    try:
        first = coord.initial_offset()
        assert set(first.job_model.tasks) == {P0, P1}
        add_partitions(bootstrap, config, 4)
        produce(bootstrap, config, [(None, b"rate", None, p) for p in (2, 3)])
        grown = coord.latest_offset(first, max_rows=None)
        model = grown.job_model
        assert set(model.tasks) == {P0, P1}, "growing a broadcast topic added tasks"
        for task in (P0, P1):
            assert {s for s in model.tasks[task] if s.stream == config} == {ssp(config, p) for p in range(4)}
            # each task reads the new broadcast partitions from their start, at its own position
            assert grown.positions[(task, ssp(config, 2))] == 1 and grown.positions[(task, ssp(config, 3))] == 1
        assert model.broadcast == frozenset(ssp(config, p) for p in range(4))
    finally:
        coord.lease.release()


def test_a_new_checkpoint_starts_from_the_stored_job_model_and_handles_growth_as_an_expansion(
    kafka_broker, tmp_path, caplog
):
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("restore"), 2)
    store = f"file://{tmp_path}/meta"
    produce(bootstrap, topic, [(f"k{i}".encode(), b"v") for i in range(40)])
    first = coordinator(bootstrap, store, "restore", subscribe=topic)
    try:
        first_model = first.initial_offset().job_model
    finally:
        first.lease.release()
    add_partitions(bootstrap, topic, 4)

    # Same job.name and store, a new checkpoint (initialOffset again): the stored model, not one task per partition.
    with caplog.at_level(logging.INFO, logger="spark_samza_source.kafka.driver.coordinator"):
        second = coordinator(bootstrap, store, "restore", subscribe=topic)
        try:
            start = second.initial_offset()
            assert start.job_model == first_model
            nxt = second.latest_offset(start, max_rows=None)
        finally:
            second.lease.release()
    assert "restored the one stored for job.name=restore" in caplog.text
    assert set(nxt.job_model.tasks) == {P0, P1}
    assert nxt.job_model.tasks[P0] >= {ssp(topic, 0), ssp(topic, 2)}
    # The growth since the stored model is an expansion: partitions 2 and 3 wait for 0 and 1 to be drained.
    assert {held.partition for held in nxt.barriers} == {2, 3}

    # jobModel.reset=true regroups from the current partitions, and says so.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="spark_samza_source.kafka.driver.coordinator"):
        third = coordinator(bootstrap, store, "restore", subscribe=topic, **{"jobModel.reset": "true"})
        try:
            fresh = third.initial_offset()
        finally:
            third.lease.release()
    assert "is replaced (jobModel.reset=true)" in caplog.text
    assert set(fresh.job_model.tasks) == {TaskName(f"Partition {p}") for p in range(4)}


def test_a_stored_job_model_that_cannot_carry_on_fails_at_start_naming_the_reset_option(kafka_broker, tmp_path):
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("shrunk"), 4)
    store = f"file://{tmp_path}/meta"
    coord = coordinator(bootstrap, store, "shrunk", subscribe=topic)
    try:
        coord.initial_offset()
    finally:
        coord.lease.release()
    other = create_topic(bootstrap, unique_topic("other"), 2)  # the job now reads a topic with fewer partitions
    again = coordinator(bootstrap, store, "shrunk", subscribe=other)
    try:
        with pytest.raises(PartitionExpansionError) as err:
            again.initial_offset()
    finally:
        again.lease.release()
    assert "jobModel.reset=true" in str(err.value) and topic in str(err.value)
