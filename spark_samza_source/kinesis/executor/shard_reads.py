"""Which reader reads a shard: ``GetRecords`` polling (``reader.ShardStream``) or, for a task given a registered
stream consumer, ``SubscribeToShard`` fan-out (``fanout.SubscribedShardStream``, built on the polling reader).

Executor side: the micro-batch task (``recorded_reads``), the bounded read (``bounded_task``), tools and tests
read a shard through :func:`stream_shard` or :func:`read_shard`, above both strategies, so neither strategy's
module imports the other's users.
"""

from __future__ import annotations

from typing import Any

from ..positions import ShardPosition
from .fanout import SubscribedShardStream
from .reader import ShardReadRequest, ShardReadResult, ShardReadSettings, ShardStream, read_request

__all__ = ["read_shard", "stream_shard"]


def stream_shard(client: Any, request: ShardReadRequest, read: ShardReadSettings) -> ShardStream:
    """A reader of one shard (see the module documentation for the stop rules).

    Iterate it to get the rows as Arrow batches while they are read (one or more per ``GetRecords`` response);
    once it is exhausted, ``.result`` says where the read ended (its ``batches`` stay empty); ``.run()`` instead
    reads everything and returns the result with its batches. ``client`` is a boto3 Kinesis client
    (``client.kinesis_client``).
    """
    if request.consumer_arn is not None:
        return SubscribedShardStream(client, request, read)
    return ShardStream(client, request, read)


def read_shard(client: Any, stream: str, shard_id: str, start: ShardPosition, **options: Any) -> ShardReadResult:
    """Read shard ``shard_id`` of ``stream`` from ``start`` (see the module documentation for the stop rules).

    The options are the fields of :class:`ShardReadRequest` and :class:`ShardReadSettings` (``task`` is
    required); the result holds every row (``batches``) and where the read ended.
    """
    return stream_shard(client, *read_request(stream, shard_id, start, **options)).run()
