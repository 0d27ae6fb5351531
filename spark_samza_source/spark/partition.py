"""The Spark input partition: exactly one per Samza task in every micro-batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import InputPartition


@dataclass(frozen=True)
class TaskInputPartition(InputPartition):
    """A Samza task's work for one batch: its name and what it reads (system-specific, picklable ranges)."""

    task: str
    ranges: tuple[Any, ...]

    def __init__(self, task: str, ranges: tuple[Any, ...]) -> None:  # InputPartition.__init__ sets .value
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "ranges", tuple(ranges))
        object.__setattr__(self, "value", task)
