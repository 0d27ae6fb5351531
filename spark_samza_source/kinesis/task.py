"""The executor side of a samza-kinesis task: what ``SamzaKinesisStreamReader.read`` runs for one input partition.

Apart from the DataSource glue (``source.py``, which imports the driver's coordinator) so that the task path
imports executor modules only (docs/architecture.md §2): the reader, the recorded batch ends, the client.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..metadata import open_store
from ..source.fault_hooks import SHARD_END_RECORDED, report
from .batch_ends import batch_ends_for, stream_and_record
from .client import AwsClientSettings, kinesis_client
from .input_partition import KinesisTaskPartition
from .options import KinesisSourceOptions

__all__ = ["read_task"]


def read_task(options: KinesisSourceOptions, partition: KinesisTaskPartition) -> Iterator:
    """Read every shard read of ``partition`` (what the driver planned), recording where each shard
    stopped."""
    settings = AwsClientSettings.from_settings(options.client_settings())
    client = kinesis_client(settings)
    store = open_store(options.metadata_store, options.job_name)
    for read in partition.reads:
        ends = batch_ends_for(store, options.stream, read.query_id)
        result = yield from stream_and_record(
            ends, read.batch, client, options.stream, read.shard_id, read.start,
            task=partition.task, ending_sequence=read.ending_sequence, max_records=options.max_records_per_shard,
            max_fetch_time_ms=options.max_fetch_time_ms, fail_on_data_loss=options.fail_on_data_loss,
            settings=settings, until_arrival_ms=read.until_arrival_ms,
        )
        report(options.fault_hooks, SHARD_END_RECORDED, task=partition.task, shard_id=read.shard_id,
               end=result.end, records=result.records)
