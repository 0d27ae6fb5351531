"""What one samza-kafka task reads in one batch: built by the driver, carried to the executor.

:class:`KafkaRange` (offsets of one topic partition) and :class:`KafkaTaskPartition` (one task: its ranges) are
frozen dataclasses that validate themselves, so a task never unpacks positional tuples and a malformed plan fails
where it is made, not inside an executor. Imported by both sides (it imports neither).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import InternalError
from ..source.partition import TaskInputPartition


@dataclass(frozen=True)
class KafkaRange:
    """Offsets ``[start, end)`` of one topic partition (``end`` exclusive, as Kafka's "next offset")."""

    topic: str
    partition: int
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.partition < 0 or self.start < 0 or self.end < self.start:
            raise InternalError(f"invalid Kafka range {self}")

    @property
    def size(self) -> int:
        return self.end - self.start


class KafkaTaskPartition(TaskInputPartition):
    """One Samza task's offset ranges for one batch, in SSP order."""

    READ_TYPE = KafkaRange
