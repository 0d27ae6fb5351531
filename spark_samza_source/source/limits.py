"""Read limits: Spark's ReadLimit objects <-> row caps, and the min-rows/max-delay rule.

PySpark (4.2+) has only built-in limits and no composite one, so ``minOffsetsPerTrigger`` with
``maxTriggerDelay`` is enforced here rather than by the engine: a batch waits until enough rows are
available or the delay since the last batch has passed.
"""

from __future__ import annotations

from typing import Any


def max_rows_of(limit: Any) -> int | None:
    """The row cap a ReadLimit asks for, or None for ReadAllAvailable (and anything without a row cap)."""
    value = getattr(limit, "max_rows", None)
    return int(value) if value is not None else None


def default_read_limit(max_rows: int | None):
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    return ReadMaxRows(max_rows) if max_rows is not None else ReadAllAvailable()


class MinRowsGate:
    """``minOffsetsPerTrigger`` + ``maxTriggerDelay``: hold a batch back until enough rows wait or it is late."""

    def __init__(self, min_rows: int | None, max_delay_ms: int, clock) -> None:
        self.min_rows = min_rows
        self.max_delay_ms = max_delay_ms
        self._clock = clock
        self._last_batch_at = clock()

    def allows(self, available_rows: int) -> bool:
        if self.min_rows is None or available_rows >= self.min_rows:
            return True
        return (self._clock() - self._last_batch_at) * 1000 >= self.max_delay_ms

    def batch_planned(self) -> None:
        self._last_batch_at = self._clock()
