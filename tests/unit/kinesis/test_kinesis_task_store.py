"""A samza-kinesis task opens the metadata store once: it checks there that the store is the driver's
(``executor/store_reach.py``) and records every shard's batch end in the same store object."""

from __future__ import annotations

import pytest

import spark_samza_source.metadata as metadata
from spark_samza_source.kinesis.executor import task as task_module
from spark_samza_source.kinesis.input_partition import KinesisTaskPartition, PlannedShardRead
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.source import SamzaKinesisStreamReader
from spark_samza_source.metadata.memory import MemoryMetadataStore


class FirstStoreReadReached(Exception):
    """The task reached its first batch-end lookup: every store it needs is open by then."""


class StopAtFirstRead(MemoryMetadataStore):
    def get(self, namespace, key):
        raise FirstStoreReadReached(namespace)


def test_a_kinesis_task_opens_the_metadata_store_once(monkeypatch):
    opened = []

    def counting_open(uri, job_name):
        opened.append(uri)
        return StopAtFirstRead(job_name, "task-store-once")

    # wherever the read path looks the opener up: the package, or a name bound at import
    monkeypatch.setattr(metadata, "open_store", counting_open)
    monkeypatch.setattr(task_module, "open_store", counting_open, raising=False)
    options = KinesisSourceOptions.parse({"streamName": "s", "region": "us-east-1", "job.name": "j",
                                          "metadata.store": "memory:task-store-once"})
    partition = KinesisTaskPartition("Task-0", (PlannedShardRead(1, "q", "shardId-000000000000",
                                                                 ShardPosition.trim_horizon()),))
    with pytest.raises(FirstStoreReadReached):
        list(SamzaKinesisStreamReader(options, schema=None).read(partition))
    assert opened == ["memory:task-store-once"]
