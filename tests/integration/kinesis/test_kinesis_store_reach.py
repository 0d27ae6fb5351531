"""samza-kinesis refuses a local metadata store its executors do not share with the driver.

Executors record where each batch ended in the metadata store; with a local ``file:`` store (the default
``samza-metadata`` is one, relative to each process's working directory) on a cluster, each executor would record
into a directory of its own and the query could never move on. The executor's ``read()`` therefore looks for the
driver's job lease in its view of the store, and fails naming ``metadata.store`` and the fix when it is not there.
An executor in another working directory is what a cluster executor is to the default store (Spark runs each
executor in a work directory of its own); the lease is the real one a driver takes.
"""

from __future__ import annotations

import pytest

from spark_samza_source.kinesis.errors import UnreachableStoreError
from spark_samza_source.kinesis.input_partition import KinesisTaskPartition, PlannedShardRead
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.source import SamzaKinesisStreamReader
from spark_samza_source.metadata import open_store
from spark_samza_source.metadata.lease import JobLease

OPTIONS = {"streamName": "clicks", "region": "us-east-1", "endpointUrl": "http://127.0.0.1:9",
           "awsAccessKeyId": "testing", "awsSecretKey": "testing", "job.name": "clicks-etl"}
PARTITION = KinesisTaskPartition("Task-0", (
    PlannedShardRead(batch=0, query_id="q", shard_id="shardId-000000000000", start=ShardPosition.trim_horizon()),))


def test_an_executor_that_does_not_see_the_drivers_local_store_fails_naming_the_option(tmp_path, monkeypatch):
    """The default store, made absolute in each process's working directory: shared in local mode only."""
    options = KinesisSourceOptions.parse({k.lower(): v for k, v in OPTIONS.items()})   # metadata.store: default
    driver_dir, executor_dir = tmp_path / "driver", tmp_path / "executor"
    driver_dir.mkdir()
    executor_dir.mkdir()
    monkeypatch.chdir(driver_dir)
    lease = JobLease(open_store(options.metadata_store, options.job_name), heartbeat=False)
    lease.hold("query-1")
    try:
        reader = SamzaKinesisStreamReader(options, None)
        reader.read(PARTITION).close()      # the driver's own directory (local mode): the read goes ahead

        monkeypatch.chdir(executor_dir)     # an executor elsewhere: its own samza-metadata
        with pytest.raises(UnreachableStoreError) as err:
            reader.read(PARTITION)
    finally:
        monkeypatch.chdir(driver_dir)
        lease.release()
    message = str(err.value)
    assert "option 'metadata.store' is a local directory" in message
    assert str(executor_dir / "samza-metadata") in message and "'samza-metadata'" in message
    assert "dynamodb://" in message and "s3://" in message and "local mode" in message
    assert not (executor_dir / "samza-metadata").exists(), "the check wrote into the executor's directory"
