"""What one samza-kinesis task reads in one batch: built by the driver, carried to the executor.

:class:`PlannedShardRead` (one shard) and :class:`KinesisTaskPartition` (one task: its shard reads) are frozen
dataclasses that validate themselves, so a task never unpacks positional tuples and a malformed plan fails where
it is made, not inside an executor. Imported by both sides (it imports neither).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import InternalError
from ..source.partition import TaskInputPartition
from .positions import ShardPosition


@dataclass(frozen=True)
class PlannedShardRead:
    """The driver's plan for one shard in a task's batch: batch ``batch`` of query ``query_id`` reads ``shard_id``
    from ``start`` up to the end the task records. The executor turns it into the reader's ``ShardRead`` (adding the
    stream, the task, and the end recorded by an earlier attempt).

    ``ending_sequence`` is the shard's ending sequence number once it is closed (None while open);
    ``until_arrival_ms`` is the ``Trigger.AvailableNow`` cut-off (None otherwise); ``consumer_arn`` the registered
    stream consumer to read through with enhanced fan-out (None: ``GetRecords`` polling).
    """

    batch: int
    query_id: str | None
    shard_id: str
    start: ShardPosition
    ending_sequence: str | None = None
    until_arrival_ms: int | None = None
    consumer_arn: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.batch, int) or isinstance(self.batch, bool) or self.batch < 0:
            raise InternalError(f"PlannedShardRead.batch must be an int >= 0, got {self.batch!r}")
        if not isinstance(self.shard_id, str) or not self.shard_id:
            raise InternalError(f"PlannedShardRead.shard_id must be a non-empty string, got {self.shard_id!r}")
        if not isinstance(self.start, ShardPosition):
            raise InternalError(f"PlannedShardRead.start must be a ShardPosition, got {type(self.start).__name__}")
        if self.query_id is not None and not isinstance(self.query_id, str):
            raise InternalError(f"PlannedShardRead.query_id must be a string or None, got {self.query_id!r}")
        if self.ending_sequence is not None and not isinstance(self.ending_sequence, str):
            raise InternalError(f"PlannedShardRead.ending_sequence must be a string or None, "
                                f"got {self.ending_sequence!r}")
        if self.until_arrival_ms is not None and (
            not isinstance(self.until_arrival_ms, int) or isinstance(self.until_arrival_ms, bool)
        ):
            raise InternalError(f"PlannedShardRead.until_arrival_ms must be an int or None, "
                                f"got {self.until_arrival_ms!r}")
        if self.consumer_arn is not None and (not isinstance(self.consumer_arn, str) or not self.consumer_arn):
            raise InternalError(f"PlannedShardRead.consumer_arn must be a non-empty string or None, "
                                f"got {self.consumer_arn!r}")


class KinesisTaskPartition(TaskInputPartition):
    """One Samza task's shard reads for one batch, in the order it reads them (parents before children)."""

    READ_TYPE = PlannedShardRead
