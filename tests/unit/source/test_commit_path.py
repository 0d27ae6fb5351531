"""The one commit path of both sources (``JobCoordinator.commit``, docs/architecture.md §9), held for each source:
``commit`` returns once its synchronous part is done; the writes for tools (here the checkpoint mirror) run
behind it; the next ``latestOffset`` waits for them, and a write that failed fails the query there, never the
commit itself. The Kafka and Kinesis coordinators run over a ``memory:`` store whose checkpoint writes wait for a
gate or fail; neither reaches a broker or an endpoint on this path."""

from __future__ import annotations

import dataclasses
import threading
import uuid

import pytest

from spark_samza_source.core.errors import MetadataStoreError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.coordinator import KafkaCoordinator
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kinesis.driver.coordinator import KinesisCoordinator
from spark_samza_source.kinesis.driver.planner import initial_offset
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.shards import ShardInfo
from spark_samza_source.metadata.memory import MemoryMetadataStore
from spark_samza_source.options.namespaces import BATCH_ENDS, CHECKPOINTS, SHARD_TASKS


class GatedCheckpointStore(MemoryMetadataStore):
    """Checkpoint-mirror writes wait until ``gate`` is set, then fail when ``fail`` is set."""

    def __init__(self, job_name: str) -> None:
        super().__init__(job_name, uuid.uuid4().hex)
        self.gate = threading.Event()
        self.fail = False

    def put(self, namespace, key, value):
        if namespace == CHECKPOINTS:
            assert self.gate.wait(10), "the checkpoint write was never let through"
            if self.fail:
                raise MetadataStoreError("metadata store unreachable")
        super().put(namespace, key, value)


def kafka_commit():
    """A Kafka coordinator over a gated store, and the offset of a committed batch."""
    options = KafkaSourceOptions.parse({"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "job.name": "j",
                                        "metadata.store": "memory:", "commitOffsetsToKafka": "false"})
    coordinator = KafkaCoordinator(options)
    coordinator._store = GatedCheckpointStore("j")
    ssp, task = SystemStreamPartition("kafka", "t", 0), TaskName("Partition 0")
    return coordinator, KafkaOffset(JobModel({task: frozenset({ssp})}), {(task, ssp): 42})


def kinesis_commit():
    """A Kinesis coordinator over a gated store, and the offset of a committed batch (batch 3)."""
    options = KinesisSourceOptions.parse({"streamName": "clicks", "region": "us-east-1", "job.name": "j",
                                          "metadata.store": "memory:"})
    coordinator = KinesisCoordinator(options)
    coordinator._store = GatedCheckpointStore("j")
    first = initial_offset([ShardInfo("shardId-000000000000")], 1, ShardPosition.trim_horizon(), stream="clicks",
                           query_id="q")
    end = dataclasses.replace(first, batch=3)
    coordinator.batch_ends(end).record(1, "shardId-000000000000", ShardPosition.after_sequence("7"))
    return coordinator, end


SOURCES = [pytest.param(kafka_commit, id="samza-kafka"), pytest.param(kinesis_commit, id="samza-kinesis")]


@pytest.mark.parametrize("make", SOURCES)
def test_commit_returns_before_its_mirror_is_written_and_the_next_plan_waits_for_it(make):
    coordinator, end = make()
    coordinator.commit(end)  # returns while the checkpoint write waits for the gate
    assert coordinator.checkpoint_mirror.read() is None
    threading.Timer(0.2, coordinator.store.gate.set).start()
    coordinator.settle_writes()  # what latestOffset does first
    assert coordinator.checkpoint_mirror.read() is not None
    coordinator.lease.release()


@pytest.mark.parametrize("make", SOURCES)
def test_a_failed_mirror_write_fails_the_next_latest_offset_not_the_commit(make):
    coordinator, end = make()
    coordinator.store.fail = True
    coordinator.store.gate.set()
    coordinator.commit(end)
    with pytest.raises(MetadataStoreError, match="metadata store unreachable"):
        coordinator.latest_offset(end)  # raised before planning: no broker or endpoint is asked
    coordinator.lease.release()


def test_kinesis_writes_its_shard_tasks_and_cleans_up_committed_ends_behind_the_commit():
    coordinator, end = kinesis_commit()
    coordinator.commit(end)
    assert coordinator.store.list(SHARD_TASKS) == {}
    assert coordinator.store.list(BATCH_ENDS) != {}
    coordinator.store.gate.set()
    coordinator.settle_writes()
    assert list(coordinator.store.list(SHARD_TASKS)) == ["clicks"]
    assert coordinator.store.list(BATCH_ENDS) == {}  # batch 1's end: below the committed batch 3
    coordinator.lease.release()
