"""Which reader reads a shard: ``GetRecords`` polling (``reader.ShardReader``) or, for a task given a registered
stream consumer, ``SubscribeToShard`` fan-out (``fanout.SubscribedShardReader``, built on the polling reader).

Executor side: the micro-batch task (``recorded_reads``), the bounded read (``bounded_task``), tools and tests
read a shard through :func:`open_shard_reader` or :func:`read_shard`, above both strategies, so neither strategy's
module imports the other's users.
"""

from __future__ import annotations

from typing import Any

from ..positions import ShardPosition
from .fanout import SubscribedShardReader
from .reader import ShardRead, ShardReader, ShardReadResult, ShardReadSettings, shard_read_args

__all__ = ["read_shard", "open_shard_reader"]


def open_shard_reader(client: Any, read: ShardRead, settings: ShardReadSettings) -> ShardReader:
    """The reader of one :class:`ShardRead` (see the module documentation for the stop rules): nothing is read yet.

    Iterate it to get the rows as Arrow batches while they are read (one or more per ``GetRecords`` response);
    once it is exhausted, ``.result`` says where the read ended (its ``batches`` stay empty); ``.run()`` instead
    reads everything and returns the result with its batches. ``client`` is a boto3 Kinesis client
    (``client.kinesis_client``).
    """
    if read.consumer_arn is not None:
        return SubscribedShardReader(client, read, settings)
    return ShardReader(client, read, settings)


def read_shard(client: Any, stream: str, shard_id: str, start: ShardPosition, **options: Any) -> ShardReadResult:
    """Read shard ``shard_id`` of ``stream`` from ``start`` to the end, at once (see the module documentation for
    the stop rules): :func:`open_shard_reader` then ``run()``, for callers that read one shard by hand.

    The options are the fields of :class:`ShardRead` and :class:`ShardReadSettings` (``task`` is
    required); the result holds every row (``batches``) and where the read ended.
    """
    return open_shard_reader(client, *shard_read_args(stream, shard_id, start, **options)).run()
