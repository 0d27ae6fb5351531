"""The executor side of a samza-kinesis batch read: one task's shard reads, each to the end the driver fixed.

The same shard reader as a streaming batch (``shard_reads.open_shard_reader``), without recording ends in the metadata
store (a batch read writes nothing): each shard is read from its planned start until the planned end (``LATEST`` fixed
at planning, ``AT_TIMESTAMP``: records that arrived before it), its closing sequence number or the sequence number
``endingPosition`` named, whichever comes first.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..client import AwsClientSettings, kinesis_client
from ..input_partition import KinesisTaskPartition
from ..options import KinesisSourceOptions
from .reader import ShardRead, ShardReadSettings
from .shard_reads import open_shard_reader

__all__ = ["read_bounded_task"]

#: a batch read reads its whole range: no per-shard record cap, and up to an hour of fetching per shard
_NO_RECORD_CAP = 1 << 62
_BOUNDED_FETCH_TIME_MS = 3_600_000


def read_bounded_task(options: KinesisSourceOptions, partition: KinesisTaskPartition) -> Iterator:
    settings = AwsClientSettings.from_settings(options.client_settings())
    client = kinesis_client(settings)
    shard_settings = ShardReadSettings(max_records=_NO_RECORD_CAP, max_fetch_time_ms=_BOUNDED_FETCH_TIME_MS,
                                       fail_on_data_loss=options.fail_on_data_loss, aws_settings=settings)
    for planned in partition.reads:  # lineage order: parents before children
        read = ShardRead(options.stream, planned.shard_id, planned.start, partition.task,
                         ending_sequence=planned.ending_sequence, until_arrival_ms=planned.until_arrival_ms)
        yield from open_shard_reader(client, read, shard_settings)
