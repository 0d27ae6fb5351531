"""Errors raised by the Kinesis system package.

One base class, :class:`KinesisSourceError`, so callers can tell a clear, intended Kinesis failure (a missing
stream, lost data, throttling that does not end, a lease another worker holds) apart from a bug.  Messages name
the operation, the stream, the shard and the positions at fault, and where the stream lives (region, endpoint).
They never contain credentials: access keys, secret keys and session tokens are scrubbed from any text that comes
back from botocore (see :func:`spark_samza_source.kinesis.client.AwsClientSettings.scrub`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import DataLossError, InternalError, SamzaSourceError

if TYPE_CHECKING:
    from .positions import ShardPosition

__all__ = [
    "KinesisSourceError",
    "KinesisStreamNotFoundError",
    "KinesisDataLossError",
    "KinesisThrottledError",
    "KclLeaseConflictError",
    "KinesisPlanError",
    "MapperError",
    "JobModelTooLargeError",
    "AttemptPassedRecordedEndError",
    "UnreachableStoreError",
    "ThrottledAtDeadlineError",
    "PositionFormatError",
]


class KinesisSourceError(SamzaSourceError):
    """A Kinesis (or KCL lease table) operation failed; the message names the operation, stream and shard."""


class KinesisStreamNotFoundError(KinesisSourceError):
    """The stream (or one of its shards) does not exist at the endpoint / in the region the client talks to."""


class KinesisDataLossError(KinesisSourceError, DataLossError):
    """Records the query should read are gone (older than the stream's retention, shard expired) and
    ``failOnDataLoss`` is true, or a retried attempt cannot reproduce the end an earlier attempt recorded. A
    :class:`DataLossError` like the planner's, so ``except DataLossError`` catches a loss whether the driver or an
    executor found it."""


class KinesisThrottledError(KinesisSourceError):
    """Kinesis kept answering ``ProvisionedThroughputExceededException`` / ``LimitExceededException`` (or an
    iterator kept expiring) beyond the bounded number of retries."""


class KclLeaseConflictError(KinesisSourceError):
    """A KCL lease changed under us (its ``leaseCounter`` moved since we last wrote it, or another owner holds it
    and take-over is disabled): some other worker is using the lease table, so we did not overwrite it."""


class KinesisPlanError(InternalError):
    """The recorded ends of a batch do not fit the offset that planned it (a shard missing or unexpected), or the
    planner was handed something that is not a listing, a position or a startpoint; a bug, never the user's."""


class MapperError(InternalError):
    """The mapper was asked something inconsistent (bad counts, a slot out of range, unknown assignment): the
    planner's bug, never the user's (a damaged offset that asks it is reported by the offset parser as damaged)."""


class JobModelTooLargeError(KinesisSourceError):
    """The job model would have more tasks or slots than a Spark query (or a Samza partition id) can hold: the
    option ``tasks``, or a stream's shard count, is too large."""


class AttemptPassedRecordedEndError(KinesisSourceError):
    """Another attempt of the batch recorded an end before this one, which had already handed out rows past it.

    Raised to fail the attempt: Spark discards its rows and the retry reads exactly to ``winner``.
    """

    def __init__(self, message: str, winner: ShardPosition) -> None:
        super().__init__(message)
        self.winner = winner


class UnreachableStoreError(KinesisSourceError):
    """The executor's view of a local ``file:`` metadata store is not the driver's."""


class ThrottledAtDeadlineError(KinesisThrottledError):
    """Still throttled when the caller's deadline came (the shard reader: ``maxFetchTimePerShard``)."""


class PositionFormatError(KinesisSourceError, ValueError):
    """A stored or supplied Kinesis shard position is malformed."""
