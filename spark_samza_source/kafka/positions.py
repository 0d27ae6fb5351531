"""Positions in a Kafka partition's log, as pure values: what the log holds now and what of it was lost.

The planner (``planner.py``), the starting strategies (``starting.py``) and the startpoint resolver
(``startpoints.py``) all reason about them; they live apart from those modules so the starting strategies, which
travel to executors inside the options, need nothing driver-side (as Kinesis' ``positions.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.model import SystemStreamPartition, TaskName

#: The admin's ``offsets_for_times``: (topic, partition) -> epoch ms, to (topic, partition) -> the first offset at
#: or after that time (None or negative: no such record). Passed in, so whoever resolves positions stays pure.
OffsetsForTimes = Callable[[Mapping[tuple[str, int], int]], Mapping[tuple[str, int], int | None]]


@dataclass(frozen=True)
class Watermarks:
    """Offsets observed for one partition: ``low`` = log start offset, ``high`` = next offset to be written."""

    low: int
    high: int


@dataclass(frozen=True)
class DataLoss:
    """Offsets ``lost_from`` .. ``lost_until - 1`` of ``ssp`` that ``task`` had still to read, gone."""

    ssp: SystemStreamPartition
    task: TaskName
    lost_from: int
    lost_until: int  # exclusive

    def describe(self) -> str:
        return (
            f"{self.ssp} (task {self.task}): offsets {self.lost_from}..{self.lost_until - 1} are no longer "
            "available (deleted by retention or delete_records, or the topic was re-created)"
        )
