"""The Spark input partition: exactly one per Samza task in every micro-batch.

Each system derives a frozen, self-validating partition naming the type of what a task reads
(``kafka/input_partition.py``: offset ranges; ``kinesis/input_partition.py``: shard reads), so an executor never
unpacks positional tuples and a malformed plan fails on the driver where it is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql.datasource import InputPartition

from ..core.errors import InternalError


@dataclass(frozen=True)
class TaskInputPartition(InputPartition):
    """A Samza task's work for one batch: its name and what it reads, each a ``READ_TYPE`` value."""

    READ_TYPE: ClassVar[type]

    task: str
    reads: tuple[Any, ...]

    def __init__(self, task: str, reads: tuple[Any, ...]) -> None:  # InputPartition.__init__ sets .value
        reads = tuple(reads)
        kind = type(self).__name__
        if not isinstance(task, str) or not task:
            raise InternalError(f"{kind}.task must be a task name, got {task!r}")
        for read in reads:
            if not isinstance(read, self.READ_TYPE):
                raise InternalError(f"{kind} of {task} reads {self.READ_TYPE.__name__} values, got "
                                 f"{type(read).__name__}")
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "reads", reads)
        object.__setattr__(self, "value", task)
